//===- RegionGroups.cpp - region groups for the manifest ------------------===//
#include "compiler/RegionGroups.h"
#include "ir/TccAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>

nlohmann::json tcc::regionGroupsJson(
    mlir::ModuleOp module,
    const std::map<std::string, KernelFunctionLaunches> &launchesOf) {
  using nlohmann::json;
  std::map<int64_t, json> groups;
  // Per group, the kernel functions holding its members, in walk order.
  std::map<int64_t, std::vector<mlir::func::FuncOp>> functionsOf;
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
    auto &functions = functionsOf[id.getInt()];
    auto f = op->getParentOfType<mlir::func::FuncOp>();
    if (f &&
        std::find(functions.begin(), functions.end(), f) == functions.end())
      functions.push_back(f);
  });
  json list = json::array();
  for (auto &[id, g] : groups) {
    const std::vector<mlir::func::FuncOp> &functions = functionsOf[id];
    std::vector<std::string> symbols;
    std::vector<int64_t> launches;
    for (mlir::func::FuncOp f : functions) {
      auto it = launchesOf.find(f.getSymName().str());
      if (it == launchesOf.end())
        continue;
      for (const std::string &s : it->second.symbols)
        if (std::find(symbols.begin(), symbols.end(), s) == symbols.end())
          symbols.push_back(s);
      launches.insert(launches.end(), it->second.launches.begin(),
                      it->second.launches.end());
    }
    std::sort(launches.begin(), launches.end());
    g["kernels"] = symbols;
    g["launches"] = launches;
    // tcc-form-groups makes a group one kernel function of kind "region";
    // the region template builds it as `<function>_region`, or it runs as
    // generic kernels when the template refuses it.
    std::string reason;
    if (functions.size() != 1) {
      reason = "its members are in " + std::to_string(functions.size()) +
               " kernel functions (tcc-form-groups did not form it)";
    } else {
      mlir::func::FuncOp f = functions.front();
      auto kind = f->getAttrOfType<mlir::StringAttr>("tcc.kind");
      std::string regionSymbol = f.getSymName().str() + "_region";
      if (!kind || kind.getValue() != "region")
        reason = "its kernel function is not a region group (tcc-form-groups "
                 "did not form it)";
      else if (symbols != std::vector<std::string>{regionSymbol})
        reason = "the region template refused it (the compile's warning "
                 "'region group runs unfused' says why); it runs as generic "
                 "kernels";
    }
    if (reason.empty()) {
      g["kernel"] = symbols.front();
    } else {
      g["kernel"] = nullptr;
      g["unfused_reason"] = reason;
    }
    list.push_back(std::move(g));
  }
  return list;
}
