//===- Npy.cpp - NumPy .npy files for tcc run -----------------------------===//
//
// Layout: "\x93NUMPY", major and minor version bytes, the header length
// (u16 for 1.0, u32 for 2.0/3.0, little-endian), then the header: a Python
// dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw data.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Npy.h"

#include "runtime/src/FileIO.h"

#include <cstring>

namespace tcc::npy {
namespace {

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
/// Larger arrays are refused; this keeps size arithmetic far from overflow.
constexpr uint64_t kMaxBytes = uint64_t(1) << 48;

struct Descr {
  const char *text;
  DType dtype;
};
const Descr kDescrs[] = {{"<f8", DType::F64}, {"<f4", DType::F32},
                         {"<f2", DType::F16}, {"|i1", DType::I8},
                         {"<i4", DType::I32}, {"<i8", DType::I64},
                         {"|b1", DType::Bool}};

const char *descrOf(DType t) {
  for (const Descr &d : kDescrs)
    if (d.dtype == t)
      return d.text;
  return nullptr;
}

/// Header text quoted in a message: control and non-ASCII bytes as \xNN, so
/// that an error stays one printable line.
std::string printable(const std::string &text) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text.substr(0, 64)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += (char)c;
    } else {
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return text.size() > 64 ? out + "..." : out;
}

/// A cursor over the header's dict literal: only what np.save writes.
class HeaderParser {
public:
  HeaderParser(const std::string &text, std::string &error)
      : s(text), error(error) {}

  bool parse(std::string &descr, bool &fortran, std::vector<int64_t> &shape) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skipSpace();
    if (!expect('{'))
      return false;
    for (;;) {
      skipSpace();
      if (peek() == '}')
        break;
      std::string key;
      if (!string(key))
        return false;
      skipSpace();
      if (!expect(':'))
        return false;
      skipSpace();
      if (key == "descr") {
        if (peek() == '[')
          return fail("structured dtypes are not supported");
        if (!string(descr))
          return false;
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (!boolean(fortran))
          return false;
        haveFortran = true;
      } else if (key == "shape") {
        if (!tuple(shape))
          return false;
        haveShape = true;
      } else {
        return fail("unexpected key '" + printable(key) + "' in the header");
      }
      skipSpace();
      if (peek() == ',')
        ++pos;
    }
    if (!haveDescr || !haveFortran || !haveShape)
      return fail("header lacks one of 'descr', 'fortran_order', 'shape'");
    return true;
  }

private:
  char peek() const { return pos < s.size() ? s[pos] : '\0'; }
  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' ||
                              s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }
  bool fail(const std::string &msg) {
    error = msg;
    return false;
  }
  bool expect(char c) {
    if (peek() != c)
      return fail(std::string("malformed header: expected '") + c + "'");
    ++pos;
    return true;
  }
  bool string(std::string &out) {
    char q = peek();
    if (q != '\'' && q != '"')
      return fail("malformed header: expected a string");
    size_t end = s.find(q, pos + 1);
    if (end == std::string::npos)
      return fail("malformed header: unterminated string");
    out = s.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    return true;
  }
  bool boolean(bool &out) {
    if (s.compare(pos, 4, "True") == 0) {
      out = true;
      pos += 4;
      return true;
    }
    if (s.compare(pos, 5, "False") == 0) {
      out = false;
      pos += 5;
      return true;
    }
    return fail("malformed header: expected True or False");
  }
  bool tuple(std::vector<int64_t> &out) {
    if (!expect('('))
      return false;
    for (;;) {
      skipSpace();
      if (peek() == ')') {
        ++pos;
        return true;
      }
      if (peek() < '0' || peek() > '9')
        return fail("malformed header: expected a dimension");
      uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        v = v * 10 + (uint64_t)(s[pos++] - '0');
        if (v > kMaxBytes)
          return fail("dimension too large");
      }
      if (peek() == 'L') // Python 2 longs
        ++pos;
      if (out.size() >= 64)
        return fail("too many dimensions");
      out.push_back((int64_t)v);
      skipSpace();
      if (peek() == ',')
        ++pos;
      else if (peek() != ')')
        return fail("malformed header: expected ',' or ')' in the shape");
    }
  }

  const std::string &s;
  size_t pos = 0;
  std::string &error;
};

bool fail(std::string &error, std::string message) {
  error = std::move(message);
  return false;
}

uint64_t getLE(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

} // namespace

bool isNpyDType(DType t) { return descrOf(t) != nullptr; }

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

bool parse(const std::vector<uint8_t> &bytes, Array &out, std::string &error) {
  const uint8_t *p = bytes.data();
  if (bytes.size() < kMagicLen + 2 || std::memcmp(p, kMagic, kMagicLen) != 0)
    return fail(error, "not a .npy file (bad magic)");
  int major = p[6], minor = p[7];
  if (major < 1 || major > 3 || minor != 0)
    return fail(error, "unsupported .npy version " + std::to_string(major) +
                           "." + std::to_string(minor));
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t start = kMagicLen + 2 + lenBytes;
  if (bytes.size() < start)
    return fail(error, "truncated .npy header");
  uint64_t headerLen = getLE(p + kMagicLen + 2, (int)lenBytes);
  if (headerLen > bytes.size() - start)
    return fail(error, "truncated .npy header");
  std::string header(p + start, p + start + headerLen);

  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  if (!HeaderParser(header, error).parse(descr, fortran, shape))
    return false;
  if (fortran)
    return fail(error, "Fortran-order arrays are not supported (save a C-order "
                       "array, e.g. np.ascontiguousarray)");
  const Descr *found = nullptr;
  for (const Descr &d : kDescrs)
    if (descr == d.text ||
        // NumPy spells one-byte types '|i1', some writers '<i1'.
        (descr.size() == 3 && d.text[0] == '|' && descr[0] == '<' &&
         descr.compare(1, 2, d.text + 1) == 0))
      found = &d;
  if (!found) {
    if (!descr.empty() && descr[0] == '>')
      return fail(error, "big-endian data ('" + printable(descr) +
                           "') is not supported");
    return fail(error, "dtype '" + printable(descr) +
                           "' is not supported (supported: <f8 "
                           "<f4 <f2 |i1 <i4 <i8 |b1)");
  }
  uint64_t size = dtypeSize(found->dtype);
  for (int64_t d : shape) {
    if (d && size > kMaxBytes / (uint64_t)d)
      return fail(error, "array too large");
    size *= (uint64_t)d;
  }
  uint64_t have = bytes.size() - start - headerLen;
  if (have != size)
    return fail(error, "data has " + std::to_string(have) +
                           " bytes but shape " + shapeString(shape) + " of " +
                           descr + " needs " + std::to_string(size));
  out.dtype = found->dtype;
  out.shape = std::move(shape);
  out.data.assign(p + start + headerLen, p + bytes.size());
  if (out.dtype == DType::Bool)
    for (uint8_t &b : out.data)
      b = b != 0;
  return true;
}

bool readFile(const std::string &path, Array &out, std::string &error) {
  std::vector<uint8_t> bytes;
  if (!io::readRegularFile(path, bytes, error))
    return false;
  if (!parse(bytes, out, error))
    return fail(error, path + ": " + error);
  return true;
}

std::vector<uint8_t> serialize(const Array &a) {
  std::string dict =
      std::string("{'descr': '") + descrOf(a.dtype) +
      "', 'fortran_order': False, 'shape': " + shapeString(a.shape) + ", }";
  // Pad so that the data starts at a multiple of 64, as NumPy does.
  size_t lenBytes = dict.size() + 1 + 10 < 65536 ? 2 : 4;
  size_t preamble = kMagicLen + 2 + lenBytes;
  size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - preamble - dict.size() - 1, ' ');
  dict += '\n';

  std::vector<uint8_t> out(kMagic, kMagic + kMagicLen);
  out.push_back(lenBytes == 2 ? 1 : 2);
  out.push_back(0);
  for (size_t i = 0; i < lenBytes; ++i)
    out.push_back((uint8_t)(dict.size() >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

bool writeFile(const std::string &path, const Array &a, std::string &error) {
  std::vector<uint8_t> bytes = serialize(a);
  return io::writeFileAtomically(path, bytes.data(), bytes.size(), error);
}

} // namespace tcc::npy
