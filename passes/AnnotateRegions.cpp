//===- AnnotateRegions.cpp - tiles and halos of region groups -------------===//
//
// Records what passes/RegionAnalysis.h derives for each member of a region
// group as a typed attribute, so that lit tests pin the analysis and the
// region fusion's cost model and search can read it. Groups are marked by
// hand (`tcc.region_group = N`) or by tcc-region-fusion, whose plan gives the
// group's tile.
//
//===----------------------------------------------------------------------===//
#include "ir/TccAttrs.h"
#include "passes/Passes.h"
#include "passes/RegionAnalysis.h"

#include <map>

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCANNOTATEREGIONS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

constexpr StringLiteral kGroupAttr = "tcc.region_group";
constexpr StringLiteral kRegionAttr = "tcc.region";
constexpr StringLiteral kPlanAttr = "tcc.region_plan";

/// "HxW" with both parts positive decimal integers.
std::optional<std::array<int64_t, 2>> parseTile(StringRef text) {
  auto [h, w] = text.split('x');
  std::array<int64_t, 2> tile;
  if (h.getAsInteger(10, tile[0]) || w.getAsInteger(10, tile[1]) ||
      tile[0] <= 0 || tile[1] <= 0)
    return std::nullopt;
  return tile;
}

struct TccAnnotateRegions
    : mlir::tcc::impl::TccAnnotateRegionsBase<TccAnnotateRegions> {
  using TccAnnotateRegionsBase::TccAnnotateRegionsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    std::optional<std::array<int64_t, 2>> size = parseTile(tile);
    if (!size) {
      func.emitError() << "tcc-annotate-regions: tile '" << tile
                       << "' is not HxW with H and W positive integers";
      return signalPassFailure();
    }
    // Ordered by group number, members in walk order: diagnostics come in a
    // fixed order.
    std::map<int64_t, SmallVector<Operation *>> groups;
    bool bad = false;
    func.walk([&](Operation *op) {
      Attribute attr = op->getAttr(kGroupAttr);
      if (!attr)
        return;
      auto id = dyn_cast<IntegerAttr>(attr);
      if (!id) {
        op->emitError() << kGroupAttr << " must be an integer";
        bad = true;
        return;
      }
      groups[id.getInt()].push_back(op);
    });
    for (auto &[id, members] : groups) {
      // A group tcc-region-fusion chose has its own tile.
      std::array<int64_t, 2> groupTile = *size;
      for (Operation *op : members)
        if (auto plan = op->getAttrOfType<tcc::RegionPlanAttr>(kPlanAttr))
          groupTile = {plan.getTileH(), plan.getTileW()};
      tcc::region::RegionError error;
      FailureOr<tcc::region::GroupFootprint> footprint =
          tcc::region::groupFootprint(members, groupTile, error);
      if (failed(footprint)) {
        Operation *at = error.op ? error.op : func.getOperation();
        at->emitError() << "region group " << id << ": " << error.message;
        bad = true;
        continue;
      }
      for (const tcc::region::MemberTile &m : footprint->members)
        m.op->setAttr(kRegionAttr,
                      tcc::RegionTileAttr::get(
                          &getContext(), m.out[0], m.out[1], m.in[0], m.in[1],
                          m.halo[0], m.halo[1], m.flops, m.executed));
    }
    if (bad)
      signalPassFailure();
  }
};

} // namespace
