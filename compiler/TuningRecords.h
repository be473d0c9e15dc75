//===- TuningRecords.h - measured schedules for compile time -*- C++ -*-===//
//
// A tuning records file (`tcc compile --tuning-records FILE`, docs/cli.md)
// holds schedules measured for kernels: each record names the GPU it was
// measured on, the kernel's signature (its template family and problem), the
// template and the template's version it was built with, the schedule, and
// the time. Compiling, a kernel whose signature a record for the target GPU
// and the template's current version holds is built with the record's
// schedule, if the template accepts it; a record for another GPU or an older
// template version is ignored with a warning, never applied.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_TUNINGRECORDS_H
#define TCC_COMPILER_TUNINGRECORDS_H

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tcc {

struct TuningRecord {
  std::string gpu;    ///< A target name ("sm_90a").
  std::string kernel; ///< The template family ("matmul").
  nlohmann::json signature = nlohmann::json::object();
  std::string templ; ///< The template the schedule is for ("wgmma", "mma").
  int64_t templateVersion = 0;
  nlohmann::json schedule = nlohmann::json::object();
  double ms = 0; ///< The measured time (informative).
};

/// The current version of each template's schedule space: a record made
/// with another version is stale (its knobs may mean something else).
int64_t templateVersion(const std::string &templ);

class TuningRecords {
public:
  /// Reads `path` (empty: no records). On failure `error` is one line.
  bool load(const std::string &path, std::string &error);

  bool empty() const { return records.empty(); }

  /// The record for a `kernel` with `signature` on `gpu` and its
  /// template's current version, or null. Records of the same signature
  /// for another GPU or a stale version add a line to `warnings`.
  const TuningRecord *find(const std::string &kernel,
                           const nlohmann::json &signature,
                           const std::string &gpu,
                           std::vector<std::string> &warnings) const;

private:
  std::string path;
  std::vector<TuningRecord> records;
};

} // namespace tcc

#endif // TCC_COMPILER_TUNINGRECORDS_H
