//===- Tuner.h - tcc tune: schedules measured, learned and searched -*- C++
//-*-===//
//
// `tcc tune MODEL --work DIR` (docs/cli.md) tunes the schedules of a
// model's matmul template kernels in rounds. A round compiles candidates:
// for each kernel signature (its problem), a model of that matmul alone,
// compiled once per proposed schedule with a one-record tuning records
// file, into DIR/round-N/cN.tccb, listed in DIR/round-N/candidates.json.
// `tcc tune-measure DIR/round-N` times them on the GPU (the runtime-only
// CLI has it, for a GPU machine without the compiler) into
// measurements.json. The next `tcc tune` reads every round's measurements,
// trains the cost model (CostModel.h) on them and proposes the next round
// by its gradient search (Search.h); `--finish` writes DIR/records.json
// with the fastest measured schedule of each signature, which `tcc compile
// --tuning-records` applies.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_TUNING_TUNER_H
#define TCC_COMPILER_TUNING_TUNER_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace tcc::tuning {

struct TuneOptions {
  std::string workDir;
  /// The compile target ("sm_90a"); records are for it.
  std::string target;
  /// Candidates a round measures, shared among the model's signatures.
  int roundSize = 32;
  /// Write the records instead of another round.
  bool finish = false;
  uint64_t seed = 0;
};

/// Compiles the model at `modelPath` with the tuning records file
/// `recordsPath` (empty: none) into bundle bytes; false after printing why.
using CompileFn = std::function<bool(const std::string &modelPath,
                                     const std::string &recordsPath,
                                     std::vector<uint8_t> &bundle)>;
/// A bundle's manifest (as `tcc inspect` prints it).
using InspectFn = std::function<bool(const std::vector<uint8_t> &bundle,
                                     nlohmann::json &manifest)>;

/// One `tcc tune` step (a round, or the records with `finish`); the exit
/// status, after one "tcc: error: ..." line on `err` on failure.
int tune(const std::string &modelPath, const TuneOptions &options,
         const CompileFn &compile, const InspectFn &inspect, std::ostream &out,
         std::ostream &err);

} // namespace tcc::tuning

#endif // TCC_COMPILER_TUNING_TUNER_H
