//===- Json.cpp - JSON reading with pointers and one-line errors ----------===//
#include "frontend/Json.h"
#include "runtime/src/JsonDepth.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace tcc {

void Diagnostics::error(const std::string &pointer,
                        const std::string &message) {
  if (count >= maxErrors)
    return;
  ++count;
  // Messages are single printable lines by contract, whatever names or
  // library messages they quote.
  std::string line = pointer.empty() ? file + ": " + message
                                     : file + ": " + pointer + ": " + message;
  for (char &c : line)
    if ((unsigned char)c < 0x20 || c == 0x7f)
      c = '?';
  out.push_back(std::move(line));
  if (count == maxErrors)
    out.push_back(file + ": too many errors, stopping");
}

std::string pointerAppend(const std::string &base, std::string_view key) {
  std::string p = base + "/";
  for (char c : key) {
    if (c == '~')
      p += "~0";
    else if (c == '/')
      p += "~1";
    else
      p += c;
  }
  return p;
}

std::string pointerAppend(const std::string &base, size_t index) {
  return base + "/" + std::to_string(index);
}

namespace {

std::string lineColumn(std::string_view text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

/// Builds the document from nlohmann's SAX events, following them to know
/// the pointer of the value being read at any moment (where a syntax error
/// is reported) and to report duplicate keys. nlohmann's DOM parser with a
/// callback, used before, scans the parent container each time an object
/// ends: quadratic in the number of nodes of a model.
class SaxReader {
public:
  using string_t = Json::string_t;
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using binary_t = Json::binary_t;

  SaxReader(Json &root, Diagnostics &diag) : root(root), diag(diag) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(number_integer_t v) { return value(v); }
  bool number_unsigned(number_unsigned_t v) { return value(v); }
  bool number_float(number_float_t v, const string_t &) { return value(v); }
  bool string(string_t &v) { return value(std::move(v)); }
  bool binary(binary_t &v) { return value(std::move(v)); }
  bool start_object(std::size_t) { return open(false); }
  bool start_array(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(string_t &k) {
    Frame &f = frames.back();
    f.key = k;
    f.awaitingValue = true;
    if (!f.keys.insert(f.key).second) {
      diag.error(pointerAppend(f.pointer, f.key),
                 "duplicate key \"" + f.key + "\"");
      duplicates = true;
    }
    slot = &(*stack.back())[k];
    return true;
  }
  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &ex) {
    error = ex.what();
    errorByte = position;
    syntaxError = ex.id / 100 == 1;
    return false;
  }

  /// Pointer of the value the parser was reading when it stopped.
  std::string current() const {
    if (frames.empty())
      return "";
    const Frame &f = frames.back();
    if (f.isArray)
      return pointerAppend(f.pointer, f.index);
    return f.awaitingValue ? pointerAppend(f.pointer, f.key) : f.pointer;
  }

  bool sawDuplicates() const { return duplicates; }
  /// The parser's message, where it stopped (empty when it did not).
  std::string error;
  size_t errorByte = 0;
  bool syntaxError = false;

private:
  struct Frame {
    bool isArray;
    size_t index;
    std::string key;
    bool awaitingValue;
    std::string pointer;
    std::unordered_set<std::string> keys;
  };

  std::string nextChild() {
    if (frames.empty())
      return "";
    Frame &f = frames.back();
    if (f.isArray)
      return pointerAppend(f.pointer, f.index++);
    f.awaitingValue = false;
    return pointerAppend(f.pointer, f.key);
  }

  /// Places a new value in the container being read; returns it.
  template <typename V> Json *place(V &&v) {
    if (stack.empty()) {
      root = Json(std::forward<V>(v));
      return &root;
    }
    Json &parent = *stack.back();
    if (parent.is_array()) {
      parent.emplace_back(std::forward<V>(v));
      return &parent.back();
    }
    *slot = Json(std::forward<V>(v));
    return slot;
  }

  template <typename V> bool value(V &&v) {
    nextChild();
    place(std::forward<V>(v));
    return true;
  }

  bool open(bool isArray) {
    std::string p = nextChild();
    frames.push_back({isArray, 0, "", false, std::move(p), {}});
    stack.push_back(
        place(isArray ? Json::value_t::array : Json::value_t::object));
    return true;
  }

  bool close() {
    if (!frames.empty())
      frames.pop_back();
    if (!stack.empty())
      stack.pop_back();
    return true;
  }

  Json &root;
  Diagnostics &diag;
  std::vector<Frame> frames;
  /// The containers being read, innermost last.
  std::vector<Json *> stack;
  /// Where the value of the last key read goes.
  Json *slot = nullptr;
  bool duplicates = false;
};

/// nlohmann's messages start with "[json.exception.parse_error.101] ".
std::string stripExceptionTag(const std::string &what) {
  if (!what.empty() && what[0] == '[') {
    size_t close = what.find("] ");
    if (close != std::string::npos)
      return what.substr(close + 2);
  }
  return what;
}

/// True when the text around `offset` is a NaN or Infinity literal, which
/// JSON does not have but Python's json module writes.
bool looksLikeNonFinite(std::string_view text, size_t offset) {
  auto isTok = [](char c) {
    return std::isalnum((unsigned char)c) || c == '+' || c == '-' || c == '.';
  };
  if (offset > text.size())
    offset = text.size();
  size_t b = offset;
  while (b > 0 && isTok(text[b - 1]))
    --b;
  size_t e = b;
  while (e < text.size() && isTok(text[e]) && e - b < 16)
    ++e;
  std::string tok;
  for (size_t i = b; i < e; ++i)
    tok += (char)std::tolower((unsigned char)text[i]);
  if (!tok.empty() && (tok[0] == '-' || tok[0] == '+'))
    tok.erase(0, 1);
  return tok.rfind("nan", 0) == 0 || tok.rfind("inf", 0) == 0;
}

} // namespace

std::optional<Json> parseJson(std::string_view text, Diagnostics &diag) {
  size_t deep = findNestingBeyond(text, kMaxJsonDepth);
  if (deep != std::string_view::npos) {
    diag.error("", lineColumn(text, deep) + ": JSON nested deeper than " +
                       std::to_string(kMaxJsonDepth) + " levels");
    return std::nullopt;
  }
  Json root;
  SaxReader reader(root, diag);
  try {
    if (Json::sax_parse(text.begin(), text.end(), &reader,
                        Json::input_format_t::json, /*strict=*/true,
                        /*ignore_comments=*/false)) {
      if (reader.sawDuplicates())
        return std::nullopt;
      return std::optional<Json>(std::move(root));
    }
  } catch (const std::exception &e) {
    diag.error(reader.current(), std::string("cannot parse: ") + e.what());
    return std::nullopt;
  }
  std::string msg = "invalid JSON: ";
  if (reader.syntaxError && reader.errorByte > 0 &&
      looksLikeNonFinite(text, reader.errorByte - 1))
    msg += lineColumn(text, reader.errorByte - 1) +
           ": NaN and Infinity are not JSON numbers";
  else
    msg +=
        stripExceptionTag(reader.error.empty() ? "cannot parse" : reader.error);
  // Number overflow (1e400) and the like are reported the same way.
  diag.error(reader.current(), msg);
  return std::nullopt;
}

std::string jsonTypeName(const Json &v) {
  switch (v.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::boolean:
    return "a boolean";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
    return "an integer";
  case Json::value_t::number_float:
    return "a fractional number";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  default:
    return "an unsupported value";
  }
}

std::string closestMatch(std::string_view word,
                         const std::vector<std::string> &candidates) {
  // Short words allow one edit; longer ones about a third of their length,
  // at most 8. Hints are for typos, so long words get none.
  if (word.size() > 64)
    return "";
  unsigned limit =
      word.size() <= 3 ? 1 : std::clamp<unsigned>(word.size() / 3, 2, 8);
  llvm::StringRef w(word.data(), word.size());
  std::string best;
  unsigned bestDist = limit + 1;
  for (const std::string &c : candidates) {
    // Lengths further apart than the limit cannot be within it: skip the
    // quadratic distance.
    size_t gap = c.size() > word.size() ? c.size() - word.size()
                                        : word.size() - c.size();
    if (gap > limit)
      continue;
    unsigned d = w.edit_distance(c, /*AllowReplacements=*/true,
                                 /*MaxEditDistance=*/limit);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return best;
}

bool checkKeys(const Json &obj, const std::string &pointer,
               const std::vector<std::string> &allowed, const char *what,
               Diagnostics &diag) {
  bool ok = true;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string &key = it.key();
    bool known = false;
    for (const std::string &a : allowed)
      known |= a == key;
    if (known)
      continue;
    ok = false;
    std::string msg = "unknown key \"" + key + "\" in " + what;
    std::string hint = closestMatch(key, allowed);
    if (!hint.empty()) {
      msg += "; did you mean \"" + hint + "\"?";
    } else if (allowed.empty()) {
      msg += " (it takes none)";
    } else {
      msg += " (expected";
      for (size_t i = 0; i < allowed.size(); ++i)
        msg += (i ? ", " : " ") + allowed[i];
      msg += ")";
    }
    diag.error(pointerAppend(pointer, key), msg);
  }
  return ok;
}

std::optional<int64_t> readInt(const Json &v, const std::string &pointer,
                               Diagnostics &diag) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > (uint64_t)std::numeric_limits<int64_t>::max()) {
      diag.error(pointer, "integer " + std::to_string(u) + " out of range");
      return std::nullopt;
    }
    return (int64_t)u;
  }
  if (v.is_number_integer())
    return v.get<int64_t>();
  if (v.is_number_float()) {
    diag.error(pointer, "expected an integer, got " + v.dump());
    return std::nullopt;
  }
  diag.error(pointer, "expected an integer, got " + jsonTypeName(v));
  return std::nullopt;
}

std::optional<double> readNumber(const Json &v, const std::string &pointer,
                                 Diagnostics &diag) {
  if (!v.is_number()) {
    diag.error(pointer, "expected a number, got " + jsonTypeName(v));
    return std::nullopt;
  }
  double d = v.get<double>();
  if (!std::isfinite(d)) { // The parser refuses these; be sure anyway.
    diag.error(pointer, "number is not finite");
    return std::nullopt;
  }
  return d;
}

std::optional<bool> readBool(const Json &v, const std::string &pointer,
                             Diagnostics &diag) {
  if (!v.is_boolean()) {
    diag.error(pointer, "expected true or false, got " + jsonTypeName(v));
    return std::nullopt;
  }
  return v.get<bool>();
}

std::optional<std::string> readString(const Json &v, const std::string &pointer,
                                      Diagnostics &diag) {
  if (!v.is_string()) {
    diag.error(pointer, "expected a string, got " + jsonTypeName(v));
    return std::nullopt;
  }
  return v.get<std::string>();
}

std::optional<std::vector<int64_t>> readIntList(const Json &v,
                                                const std::string &pointer,
                                                Diagnostics &diag,
                                                size_t maxLen) {
  if (!v.is_array()) {
    diag.error(pointer, "expected a list of integers, got " + jsonTypeName(v));
    return std::nullopt;
  }
  if (v.size() > maxLen) {
    diag.error(pointer, "list has " + std::to_string(v.size()) +
                            " entries, at most " + std::to_string(maxLen) +
                            " allowed");
    return std::nullopt;
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    std::optional<int64_t> x = readInt(v[i], pointerAppend(pointer, i), diag);
    if (!x)
      return std::nullopt;
    out.push_back(*x);
  }
  return out;
}

} // namespace tcc
