//===- TuneMeasure.h - tcc tune-measure: time a tuning round ---*- C++ -*-===//
//
// The GPU half of `tcc tune` (compiler/tuning/Tuner.h): times each
// candidate bundle of a round folder (DIR/candidates.json) as `tcc bench`
// does (device events, median of `iters` after `warmup`) and writes
// DIR/measurements.json after every candidate, so that a run cut short
// keeps what it measured. Shared by the full `tcc` and the runtime-only one
// (a GPU machine without the compiler).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TOOLS_TUNEMEASURE_H
#define TCC_RUNTIME_TOOLS_TUNEMEASURE_H

#include <ostream>
#include <string>

namespace tcc::runner {

/// The exit status: 0 when every candidate was timed (a candidate that
/// fails to load or run is reported and left out), 1 after one
/// "tcc: error: ..." line when the folder cannot be read or written.
int tuneMeasure(const std::string &roundDir, int warmup, int iters,
                std::ostream &out, std::ostream &err);

} // namespace tcc::runner

#endif // TCC_RUNTIME_TOOLS_TUNEMEASURE_H
