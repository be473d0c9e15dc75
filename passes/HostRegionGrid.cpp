//===- HostRegionGrid.cpp - a region kernel's tiles as its grid -----------===//
//
// A host region kernel (tcc-host-region-tiles) is one loop nest over the
// last member's output tiles; tcc-partition-grid, which splits linalg ops by
// rows, leaves it whole (grid 1). This pass runs after it and makes the tile
// loop the grid: the outermost loop of the nest with more than one
// iteration (the batch loop, else the row-tile loop) runs iterations
// [begin, end) of its range in a call, and `tcc.grid` is its trip count, so
// the runtime's threads compute disjoint tiles. Each tile's intermediates
// are allocated inside the loop body: calls share nothing but the inputs
// they read and the disjoint tiles of the result they write.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCHOSTREGIONGRID
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

std::optional<int64_t> tripCount(scf::ForOp loop) {
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0)
    return std::nullopt;
  return *ub <= *lb ? 0 : (*ub - *lb + *step - 1) / *step;
}

struct TccHostRegionGrid
    : mlir::tcc::impl::TccHostRegionGridBase<TccHostRegionGrid> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr("tcc.region_tiles") || func.isExternal())
      return;
    auto grid = func->getAttrOfType<IntegerAttr>("tcc.grid");
    unsigned n = func.getNumArguments();
    if (!grid || grid.getInt() != 1 || n < 2 ||
        !func.getArgument(n - 1).getType().isIndex()) {
      func.emitError("a region kernel must come from tcc-partition-grid "
                     "unsplit (grid 1, begin and end arguments)");
      return signalPassFailure();
    }
    Value begin = func.getArgument(n - 2), end = func.getArgument(n - 1);
    SmallVector<scf::ForOp> top;
    for (Operation &op : func.getBody().front())
      if (auto loop = dyn_cast<scf::ForOp>(op))
        top.push_back(loop);
    if (top.size() != 1)
      return; // no tile loop (one tile): the kernel runs whole
    scf::ForOp loop = top.front();
    // Down the nest while a loop runs once and holds one loop.
    while (tripCount(loop) == 1) {
      SmallVector<scf::ForOp> inner(loop.getBody()->getOps<scf::ForOp>());
      if (inner.size() != 1)
        break;
      loop = inner.front();
    }
    std::optional<int64_t> trips = tripCount(loop);
    if (!trips || *trips < 2)
      return;
    // Iterations [begin, end): lb + i * step, the end clamped to ub.
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    Value lb = loop.getLowerBound(), step = loop.getStep();
    Value from = arith::AddIOp::create(
        b, loc, lb, arith::MulIOp::create(b, loc, begin, step));
    Value to = arith::MinSIOp::create(
        b, loc, loop.getUpperBound(),
        arith::AddIOp::create(b, loc, lb,
                              arith::MulIOp::create(b, loc, end, step)));
    loop.getLowerBoundMutable().assign(from);
    loop.getUpperBoundMutable().assign(to);
    func->setAttr("tcc.grid", b.getI64IntegerAttr(*trips));
  }
};

} // namespace
