//===- RegionGroups.h - region groups for the manifest ----------*- C++ -*-===//
#ifndef TCC_COMPILER_REGIONGROUPS_H
#define TCC_COMPILER_REGIONGROUPS_H

#include "mlir/IR/BuiltinOps.h"

#include <nlohmann/json.hpp>

namespace tcc {

/// The region groups tcc-region-fusion chose in `module` (ops marked
/// `tcc.region_group`, wherever outlining put them), in group order: per
/// group `group`, `ops` (the members' op names) and, from its
/// #tcc.region_plan, `tile`, `predicted_us`, `unfused_us` and
/// `shared_bytes`. An empty array when there are none. Informational: the
/// manifest's `region_groups`, which `tcc inspect` shows.
nlohmann::json regionGroupsJson(mlir::ModuleOp module);

} // namespace tcc

#endif // TCC_COMPILER_REGIONGROUPS_H
