//===- JsonPointers.h - every place in a JSON value, for mutation tests ---===//
//
// Shared by the manifest mutation tests of tests/unit and tests/gpu (whose
// build has none of TestUtil.h's compiler and Python settings).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_JSONPOINTERS_H
#define TCC_TESTS_UNIT_JSONPOINTERS_H

#include <nlohmann/json.hpp>

#include <vector>

namespace tcc::test {

/// Every JSON pointer into `v`, itself included, each prefixed by `at`: the
/// places a mutation test replaces with junk.
inline std::vector<nlohmann::json::json_pointer> jsonPointers(
    const nlohmann::json &v,
    const nlohmann::json::json_pointer &at = nlohmann::json::json_pointer()) {
  std::vector<nlohmann::json::json_pointer> out{at};
  if (v.is_object())
    for (auto it = v.begin(); it != v.end(); ++it)
      for (auto &p : jsonPointers(it.value(), at / it.key()))
        out.push_back(std::move(p));
  else if (v.is_array())
    for (size_t i = 0; i < v.size(); ++i)
      for (auto &p : jsonPointers(v[i], at / i))
        out.push_back(std::move(p));
  return out;
}

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_JSONPOINTERS_H
