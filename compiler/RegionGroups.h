//===- RegionGroups.h - region groups for the manifest ----------*- C++ -*-===//
#ifndef TCC_COMPILER_REGIONGROUPS_H
#define TCC_COMPILER_REGIONGROUPS_H

#include "mlir/IR/BuiltinOps.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace tcc {

/// How a kernel function of the entry runs: the device symbols of its
/// launches (in launch order) and the indices of its launches in the
/// manifest's `launches` (one call or, after tcc-dedup-kernels, several).
struct KernelFunctionLaunches {
  std::vector<std::string> symbols;
  std::vector<int64_t> launches;
};

/// The region groups tcc-region-fusion chose in `module` (ops marked
/// `tcc.region_group`, wherever outlining put them), in group order: per
/// group `group`, `ops` (the members' op names) and, from its
/// #tcc.region_plan, `tile`, `predicted_us`, `unfused_us` and
/// `shared_bytes`; then, from `launchesOf` (keyed by kernel function name),
/// `kernels` (the symbols its members' kernel functions launch), `launches`
/// (their indices in the manifest's launches) and `kernel`: the one region
/// kernel the group became (`<function>_region`, built by the region
/// template from the kernel function tcc-form-groups made of it), or null
/// with `unfused_reason`. An empty array when there are none.
/// Informational: the manifest's `region_groups`, which `tcc inspect` shows
/// (with measured times, given a profile).
nlohmann::json regionGroupsJson(
    mlir::ModuleOp module,
    const std::map<std::string, KernelFunctionLaunches> &launchesOf);

} // namespace tcc

#endif // TCC_COMPILER_REGIONGROUPS_H
