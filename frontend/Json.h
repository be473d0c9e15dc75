//===- Json.h - JSON reading with pointers and one-line errors ----*- C++
//-*-===//
//
// Everything the frontend reads from a user's JSON goes through these helpers,
// so that each problem is reported once, at the RFC 6901 pointer of the
// offending value, and no input can make nlohmann::json throw out of the
// frontend or recurse deeply.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTEND_JSON_H
#define TCC_FRONTEND_JSON_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tcc {

using Json = nlohmann::json;

/// Deepest nesting of arrays and objects any JSON text may have.
constexpr int kMaxJsonDepth = 64;

/// Collects the one-line errors of one input file.
class Diagnostics {
public:
  Diagnostics(std::string file, std::vector<std::string> &out, size_t maxErrors)
      : file(std::move(file)), out(out), maxErrors(maxErrors) {}

  /// Reports `message` at JSON pointer `pointer` ("" is the whole file).
  void error(const std::string &pointer, const std::string &message);
  bool hasErrors() const { return count != 0; }
  size_t errorCount() const { return count; }
  /// True once maxErrors errors were reported: callers stop early.
  bool full() const { return count >= maxErrors; }
  const std::string &fileName() const { return file; }

private:
  std::string file;
  std::vector<std::string> &out;
  size_t maxErrors;
  size_t count = 0;
};

/// `base` extended by one reference token (escaped as RFC 6901 says).
std::string pointerAppend(const std::string &base, std::string_view key);
std::string pointerAppend(const std::string &base, size_t index);

/// Parses JSON text. Refuses nesting deeper than kMaxJsonDepth before parsing,
/// reports syntax errors at the pointer of the value being read and duplicate
/// object keys at the pointer of the second one.
std::optional<Json> parseJson(std::string_view text, Diagnostics &diag);

/// Short name of a JSON value's type, for messages: "a string", "an array"...
std::string jsonTypeName(const Json &v);

/// Reports every key of object `obj` (at `pointer`) not in `allowed`, with
/// the closest allowed key as a hint. Returns false when there was one.
bool checkKeys(const Json &obj, const std::string &pointer,
               const std::vector<std::string> &allowed, const char *what,
               Diagnostics &diag);

/// The closest of `candidates` to `word` when it is close enough to be a
/// likely typo, else "".
std::string closestMatch(std::string_view word,
                         const std::vector<std::string> &candidates);

/// Typed reads that report a wrong type at `pointer` and return nullopt.
std::optional<int64_t> readInt(const Json &v, const std::string &pointer,
                               Diagnostics &diag);
std::optional<double> readNumber(const Json &v, const std::string &pointer,
                                 Diagnostics &diag);
std::optional<bool> readBool(const Json &v, const std::string &pointer,
                             Diagnostics &diag);
std::optional<std::string> readString(const Json &v, const std::string &pointer,
                                      Diagnostics &diag);
/// A list of integers, at most `maxLen` of them.
std::optional<std::vector<int64_t>> readIntList(const Json &v,
                                                const std::string &pointer,
                                                Diagnostics &diag,
                                                size_t maxLen);

} // namespace tcc

#endif // TCC_FRONTEND_JSON_H
