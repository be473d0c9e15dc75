//===- PrecisionTuner.h - tcc tune-precision: plans under a budget -*- C++
//-*-===//
//
// `tcc tune-precision MODEL --calibration DIR --error-budget E -o PLAN`
// (docs/precision.md) plans the precision of every output tile of the
// model's matmuls whose operands are model inputs or params, from
// calibration data:
//
//   1. each tile's error in each precision, measured: the tile's output
//      (sampled elements of it) computed from the operands rounded as the
//      plan's semantics round them, against float64 on the unrounded
//      operands; a plan's error is then exact to compute (the tiles'
//      squared errors add up);
//   2. rules propose a plan from tile statistics (the blocks' dynamic
//      range: the ratio of their largest magnitude to their RMS);
//   3. an evolutionary search, seeded with the rule plan, the uniform plans
//      and a greedy one, refines plans to the fastest whose error is within
//      the budget, under a time model of the mixed kernel;
//   4. the chosen plan's error on held-out calibration data, and the
//      time-error Pareto front of every plan evaluated, as a table and an
//      SVG plot.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_TUNING_PRECISIONTUNER_H
#define TCC_COMPILER_TUNING_PRECISIONTUNER_H

#include "frontend/ModelImporter.h"

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace tcc::tuning {

struct PrecisionTuneOptions {
  /// NAME.npy, or NAME.0.npy, NAME.1.npy, ... for several samples of each
  /// model input a planned matmul reads; the last of several is held out.
  std::string calibrationDir;
  /// The largest relative Frobenius error ||C_plan - C|| / ||C|| of each
  /// planned matmul's output, C computed in float64.
  double errorBudget = 0;
  /// The search plans to margin x budget on the calibration samples, so
  /// that data it did not see stays within the budget.
  double margin = 0.9;
  std::string outPlan;   ///< the plan file written
  std::string reportDir; ///< report.md, pareto.svg, pareto.json (optional)
  int64_t tileM = 128, tileN = 128;
  /// The precisions a tile may take (the format's names).
  std::vector<std::string> precisions = {"f32",    "bf16",   "f16",
                                         "f8e4m3", "f8e5m2", "i8"};
  uint64_t seed = 0;
  /// Wall time of each matmul's evolutionary search.
  double searchSeconds = 2.0;
  /// Output elements sampled per tile for its error (0: every element).
  int64_t samplesPerTile = 64;
};

/// Runs `probe` (a copy of the model returning, besides its outputs, the
/// operands it computes) on the host once per sample: sample s's inputs
/// as NAME=FILE.npy specs, every output to outDirs[s]/NAME.npy. False with
/// one line in `error`.
using ProbeFn = std::function<bool(
    ImportedModel &probe, const std::vector<std::vector<std::string>> &specs,
    const std::vector<std::string> &outDirs, std::string &error)>;

/// Plans `model` (imported from `modelPath`); 0 on success, 1 after one
/// line on `err` (bad options or data, an unreachable budget). Without a
/// `probe`, matmuls of operands the model computes are not planned.
int tunePrecision(ImportedModel &model, const std::string &modelPath,
                  const PrecisionTuneOptions &options, const ProbeFn &probe,
                  std::ostream &out, std::ostream &err);

} // namespace tcc::tuning

#endif // TCC_COMPILER_TUNING_PRECISIONTUNER_H
