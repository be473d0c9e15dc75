//===- Profile.h - per-launch times for tcc bench and inspect ---*- C++ -*-===//
//
// `tcc bench --profile FILE` times every launch of a run and writes a
// profile (JSON, docs/runtime.md); `tcc inspect --profile FILE` checks that
// the profile is of the bundle inspected and adds the measured times to its
// manifest.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TOOLS_PROFILE_H
#define TCC_RUNTIME_TOOLS_PROFILE_H

#include "runtime/include/tccrt.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tcc::runner {

/// The profile's "format" and "version".
constexpr const char *kProfileFormat = "tcc-profile";
constexpr int kProfileVersion = 1;

/// Runs `model` (bound, warmed up) `iters` times, timing each launch with
/// tccrt_model_profile_runs, and sets `profile`'s "run", "launches" (per
/// launch: its index, kernel symbol or null for a copy, grid and block,
/// mean, min and max time and mean gap before it, in microseconds),
/// "kernels" (per symbol: calls a run, mean time a call, total a run and
/// share of the launches' total, largest total first) and the sums. False
/// with `why` on failure.
bool profileModel(tccrt_model *model, uint64_t iters, nlohmann::json &profile,
                  std::string &why);

/// Checks that `profile` (read from `profileName`) was measured on the
/// bundle whose manifest is `manifest` and whose manifest checksum is
/// `manifestHash` (the same launches, kernel by kernel, and the same
/// checksum when the profile records one), then adds the figures to
/// `manifest`: its "profile" (the source, timer, run time and per-kernel
/// table of calls, mean time and share) and, in each region group,
/// "measured_us", the sum of the mean times of the group's launches. False
/// with `why` when the profile is malformed or of another bundle.
bool mergeProfile(nlohmann::json &manifest, uint64_t manifestHash,
                  const nlohmann::json &profile, const std::string &profileName,
                  std::string &why);

/// "0123456789abcdef": how a profile records the manifest checksum.
std::string hex64(uint64_t value);

} // namespace tcc::runner

#endif // TCC_RUNTIME_TOOLS_PROFILE_H
