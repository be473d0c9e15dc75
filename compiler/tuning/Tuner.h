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
  /// How a round's schedules are chosen: "model" (the cost model's search,
  /// random before there are measurements to train it on), "random", or
  /// "grid" (the space in its order): the last two as baselines.
  std::string strategy = "model";
  /// With a measure function (a GPU beside the compiler): rounds to run,
  /// each measured at once, before the records are written; 0: one round
  /// (or the records, with `finish`), measured elsewhere.
  int rounds = 0;
  /// With `rounds`: stop starting rounds once measuring took this long.
  double budgetSeconds = 0;
};

/// Compiles the model at `modelPath` with the tuning records file
/// `recordsPath` (empty: none) into bundle bytes; false after printing why.
using CompileFn = std::function<bool(const std::string &modelPath,
                                     const std::string &recordsPath,
                                     std::vector<uint8_t> &bundle)>;
/// A bundle's manifest (as `tcc inspect` prints it).
using InspectFn = std::function<bool(const std::vector<uint8_t> &bundle,
                                     nlohmann::json &manifest)>;

/// Times a round folder's candidates (tcc tune-measure); the exit status.
using MeasureFn = std::function<int(const std::string &roundDir)>;

/// One `tcc tune` step (a round, or the records with `finish`), or with
/// `measure` and `options.rounds` the whole loop; the exit status, after
/// one "tcc: error: ..." line on `err` on failure. `finish` also writes
/// DIR/curve.csv: after each measurement in order, the model's matmul time
/// if every kernel ran its signature's fastest schedule measured so far
/// (the tuning curve), against the seconds spent measuring.
int tune(const std::string &modelPath, const TuneOptions &options,
         const CompileFn &compile, const InspectFn &inspect, std::ostream &out,
         std::ostream &err, const MeasureFn &measure = nullptr);

} // namespace tcc::tuning

#endif // TCC_COMPILER_TUNING_TUNER_H
