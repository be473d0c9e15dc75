//===- RegionGroups.cpp - region groups for the manifest ------------------===//
#include "compiler/RegionGroups.h"
#include "ir/TccAttrs.h"

#include <map>

nlohmann::json tcc::regionGroupsJson(mlir::ModuleOp module) {
  using nlohmann::json;
  std::map<int64_t, json> groups;
  module.walk([&](mlir::Operation *op) {
    auto id = op->getAttrOfType<mlir::IntegerAttr>("tcc.region_group");
    if (!id)
      return;
    json &g = groups[id.getInt()];
    if (g.is_null())
      g = {{"group", id.getInt()}, {"ops", json::array()}};
    g["ops"].push_back(op->getName().getStringRef().str());
    if (auto plan =
            op->getAttrOfType<mlir::tcc::RegionPlanAttr>("tcc.region_plan")) {
      g["tile"] = {plan.getTileH(), plan.getTileW()};
      g["predicted_us"] = double(plan.getPredictedNs()) / 1000;
      g["unfused_us"] = double(plan.getUnfusedNs()) / 1000;
      g["shared_bytes"] = plan.getShared();
    }
  });
  json list = json::array();
  for (auto &[id, g] : groups)
    list.push_back(std::move(g));
  return list;
}
