//===- HostRegionTiles.cpp - a region group as a loop over output tiles ---===//
//
// On the host, a region group's kernel (tcc.kind = "region", one chain of
// convolutions and pools with their epilogues, region::isHostChain) computes
// the last member's output tile by tile. Its convolutions and max pools are
// lowered here to linalg generics that read an explicit tensor.pad of their
// input (the stock lowering reads padding through tensor.extract in a
// generic's body and regroups channels with reshapes, which tiling cannot
// see through); the rest goes through the tcc-to-linalg patterns. Then the
// last op is tiled over (batch, H, W) by the group's plan tile and every
// producer in the kernel is fused into the tile loop by MLIR's
// TilingInterface (scf::tileConsumerAndFuseProducersUsingSCF): each member
// is recomputed over the halo its consumer's tile needs, and the padded
// slices at the image's border come from tensor.pad's own tiling. Values
// stay per tile; only the last member's tiles are written to the result.
// tcc-host-region-grid later hands the tile loop to the runtime's threads.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/lowering/Patterns.h"
#include "passes/lowering/Utils.h"

#include "ir/TccAttrs.h"
#include "ir/TccOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCHOSTREGIONTILES
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::lowering;

namespace {

/// `x` with `low` and `high` rows and columns of `value` around its spatial
/// axes (ah, aw); `x` itself when there are none.
Value padSpatial(OpBuilder &b, Location loc, Value x, unsigned ah, unsigned aw,
                 std::array<int64_t, 2> low, std::array<int64_t, 2> high,
                 Value value) {
  if (low[0] == 0 && low[1] == 0 && high[0] == 0 && high[1] == 0)
    return x;
  SmallVector<int64_t> lo(4, 0), hi(4, 0);
  lo[ah] = low[0];
  lo[aw] = low[1];
  hi[ah] = high[0];
  hi[aw] = high[1];
  RankedTensorType t = tensorTypeOf(x);
  SmallVector<int64_t> shape(t.getShape());
  for (unsigned d = 0; d < 4; ++d)
    shape[d] += lo[d] + hi[d];
  return tensor::PadOp::create(
      b, loc, t.clone(shape), x, getAsIndexOpFoldResult(b.getContext(), lo),
      getAsIndexOpFoldResult(b.getContext(), hi), value);
}

/// A convolution with groups 1 or depthwise (multiplier 1) as a reduction
/// generic over its zero-padded input accumulating in the compute type, and
/// an element-wise generic adding the bias and rounding to the result type.
/// Other groupings are left to the stock lowering (not fused through).
LogicalResult lowerConv(RewriterBase &rewriter, Conv2dOp op) {
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  bool nhwc = op.getNhwc();
  unsigned ah = nhwc ? 1 : 2, aw = nhwc ? 2 : 3, ac = nhwc ? 3 : 1;
  RankedTensorType xt = tensorTypeOf(op.getInput());
  RankedTensorType wt = tensorTypeOf(op.getWeight());
  RankedTensorType rt = op.getType();
  int64_t c = xt.getDimSize(ac);
  bool depthwise = op.getGroups() == c && c > 1 && wt.getDimSize(0) == c &&
                   wt.getDimSize(nhwc ? 3 : 1) == 1;
  if (op.getGroups() != 1 && !depthwise)
    return failure();
  ArrayRef<int64_t> pads = op.getPads(), st = op.getStrides(),
                    dil = op.getDilations();
  Type elt = rt.getElementType(), acc = computeType(elt);
  rewriter.setInsertionPoint(op);
  Value padded =
      padSpatial(rewriter, loc, op.getInput(), ah, aw, {pads[0], pads[1]},
                 {pads[2], pads[3]}, scalarConstant(rewriter, loc, elt, 0));
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto zero = getAffineConstantExpr(0, ctx);
  // Loops: the result's four axes, then the reduction axes.
  AffineExpr n = d(0), oh = d(ah), ow = d(aw), o = d(ac);
  AffineExpr ih = oh * st[0] + d(4) * dil[0], iw = ow * st[1] + d(5) * dil[1];
  unsigned loops = depthwise ? 6 : 7;
  AffineMap inMap, wMap;
  if (depthwise) {
    inMap = nhwc ? AffineMap::get(6, 0, {n, ih, iw, o}, ctx)
                 : AffineMap::get(6, 0, {n, o, ih, iw}, ctx);
    wMap = nhwc ? AffineMap::get(6, 0, {o, d(4), d(5), zero}, ctx)
                : AffineMap::get(6, 0, {o, zero, d(4), d(5)}, ctx);
  } else {
    inMap = nhwc ? AffineMap::get(7, 0, {n, ih, iw, d(6)}, ctx)
                 : AffineMap::get(7, 0, {n, d(6), ih, iw}, ctx);
    wMap = nhwc ? AffineMap::get(7, 0, {o, d(4), d(5), d(6)}, ctx)
                : AffineMap::get(7, 0, {o, d(6), d(4), d(5)}, ctx);
  }
  AffineMap outMap = AffineMap::get(loops, 0, {d(0), d(1), d(2), d(3)}, ctx);
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.append(loops - 4, utils::IteratorType::reduction);
  Value init = filledTensor(rewriter, loc, rt.getShape(),
                            scalarConstant(rewriter, loc, acc, 0));
  auto conv = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()},
      ValueRange{padded, op.getWeight()}, init,
      ArrayRef<AffineMap>{inMap, wMap, outMap}, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        ImplicitLocOpBuilder b(l, nb);
        Value p = arith::MulFOp::create(b, toCompute(b, args[0]),
                                        toCompute(b, args[1]));
        linalg::YieldOp::create(
            b, arith::AddFOp::create(b, args[2], p).getResult());
      });
  // The bias is [C], read along the channel axis.
  SmallVector<Value> inputs{conv.getResult(0)};
  AffineMap id = AffineMap::getMultiDimIdentityMap(4, ctx);
  SmallVector<AffineMap> maps{id};
  if (op.getBias()) {
    inputs.push_back(op.getBias());
    maps.push_back(AffineMap::get(4, 0, {d(ac)}, ctx));
  }
  maps.push_back(id);
  Value out = emptyTensor(rewriter, loc, rt.getShape(), elt);
  Value result =
      linalg::GenericOp::create(
          rewriter, loc, TypeRange{rt}, inputs, out, maps, parallelIterators(4),
          [&](OpBuilder &nb, Location l, ValueRange args) {
            ImplicitLocOpBuilder b(l, nb);
            Value v = args[0];
            if (inputs.size() > 1)
              v = arith::AddFOp::create(b, v, toCompute(b, args[1]));
            linalg::YieldOp::create(b, convertScalar(b, v, elt));
          })
          .getResult(0);
  rewriter.replaceOp(op, result);
  return success();
}

/// A max pool (no ceil mode) as a reduction generic over its input padded
/// with the type's lowest value, which never wins a window.
LogicalResult lowerMaxPool(RewriterBase &rewriter, MaxPool2dOp op) {
  if (op.getCeilMode())
    return failure();
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  bool nhwc = op.getNhwc();
  unsigned ah = nhwc ? 1 : 2, aw = nhwc ? 2 : 3;
  RankedTensorType xt = tensorTypeOf(op.getInput());
  RankedTensorType rt = op.getType();
  ArrayRef<int64_t> pads = op.getPads(), st = op.getStrides(),
                    k = op.getKernel();
  Type elt = rt.getElementType(), acc = computeType(elt);
  rewriter.setInsertionPoint(op);
  // Pad at the end to what the last window reads (at most the end pads).
  std::array<int64_t, 2> high;
  for (unsigned i = 0; i < 2; ++i) {
    int64_t in = xt.getDimSize(i ? aw : ah), out = rt.getDimSize(i ? aw : ah);
    high[i] = std::max<int64_t>(0, (out - 1) * st[i] + k[i] - pads[i] - in);
  }
  Value padded =
      padSpatial(rewriter, loc, op.getInput(), ah, aw, {pads[0], pads[1]}, high,
                 extremeConstant(rewriter, loc, elt, /*highest=*/false));
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  AffineExpr ih = d(ah) * st[0] + d(4), iw = d(aw) * st[1] + d(5);
  SmallVector<AffineExpr> in{d(0), d(1), d(2), d(3)};
  in[ah] = ih;
  in[aw] = iw;
  AffineMap inMap = AffineMap::get(6, 0, in, ctx);
  AffineMap windowMap = AffineMap::get(6, 0, {d(4), d(5)}, ctx);
  AffineMap outMap = AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx);
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.append(2, utils::IteratorType::reduction);
  Value window = emptyTensor(rewriter, loc, {k[0], k[1]}, acc);
  Value init = filledTensor(rewriter, loc, rt.getShape(),
                            extremeConstant(rewriter, loc, acc, false));
  auto pool = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, ValueRange{padded, window},
      init, ArrayRef<AffineMap>{inMap, windowMap, outMap}, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        ImplicitLocOpBuilder b(l, nb);
        linalg::YieldOp::create(
            b, arith::MaximumFOp::create(b, args[2], toCompute(b, args[0]))
                   .getResult());
      });
  rewriter.replaceOp(op, convertTensor(rewriter, loc, pool.getResult(0), elt));
  return success();
}

struct TccHostRegionTiles
    : mlir::tcc::impl::TccHostRegionTilesBase<TccHostRegionTiles> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    linalg::registerTilingInterfaceExternalModels(registry);
    tensor::registerTilingInterfaceExternalModels(registry);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto kind = func->getAttrOfType<StringAttr>("tcc.kind");
    if (!kind || kind.getValue() != "region" || func.isExternal())
      return;
    std::array<int64_t, 2> tile = {tileH, tileW};
    func.walk([&](Operation *op) {
      if (auto plan = op->getAttrOfType<RegionPlanAttr>("tcc.region_plan"))
        tile = {plan.getTileH(), plan.getTileW()};
    });
    if (tile[0] < 1 || tile[1] < 1) {
      func.emitError("region tile must be positive");
      return signalPassFailure();
    }

    // Members first, then everything else through the stock patterns.
    IRRewriter rewriter(func.getContext());
    SmallVector<Operation *> members;
    func.walk([&](Operation *op) {
      if (isa<Conv2dOp, MaxPool2dOp>(op))
        members.push_back(op);
    });
    // The members' layout (isHostChain: one for the chain).
    bool nhwc = false;
    for (Operation *op : members)
      if (auto conv = dyn_cast<Conv2dOp>(op))
        nhwc = conv.getNhwc();
      else
        nhwc = cast<MaxPool2dOp>(op).getNhwc();
    for (Operation *op : members) {
      if (auto conv = dyn_cast<Conv2dOp>(op))
        (void)lowerConv(rewriter, conv);
      else
        (void)lowerMaxPool(rewriter, cast<MaxPool2dOp>(op));
    }
    RewritePatternSet patterns(func.getContext());
    populateTccToLinalgPatterns(patterns);
    if (failed(applyPatternsGreedily(func, std::move(patterns)))) {
      func.emitError("region kernel: lowering to linalg did not converge");
      return signalPassFailure();
    }

    // The kernel's one result is the last member's (isHostChain).
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (ret.getNumOperands() != 1)
      return;
    auto consumer = ret.getOperand(0).getDefiningOp<linalg::LinalgOp>();
    if (!consumer || consumer->getNumResults() != 1 ||
        tensorTypeOf(ret.getOperand(0)).getRank() != 4)
      return;
    auto tileable = dyn_cast<TilingInterface>(consumer.getOperation());
    if (!tileable) {
      consumer->emitError("region kernel: no TilingInterface on its last op");
      return signalPassFailure();
    }
    // Tile batch by 1 and the spatial axes by the plan's tile: the loops
    // the result's map reaches those axes with.
    unsigned ah = nhwc ? 1 : 2, aw = nhwc ? 2 : 3;
    AffineMap outMap =
        consumer.getIndexingMapMatchingResult(consumer->getResult(0));
    SmallVector<OpFoldResult> sizes(consumer.getNumLoops(),
                                    rewriter.getIndexAttr(0));
    auto setSize = [&](unsigned axis, int64_t size) {
      if (auto dim = dyn_cast<AffineDimExpr>(outMap.getResult(axis)))
        sizes[dim.getPosition()] = rewriter.getIndexAttr(size);
    };
    setSize(0, 1);
    setSize(ah, tile[0]);
    setSize(aw, tile[1]);

    scf::SCFTileAndFuseOptions options;
    options.tilingOptions.setTileSizes(sizes);
    options.tilingOptions.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
    rewriter.setInsertionPoint(consumer);
    FailureOr<scf::SCFTileAndFuseResult> tiled =
        scf::tileConsumerAndFuseProducersUsingSCF(rewriter, tileable, options);
    if (failed(tiled)) {
      consumer->emitError("region kernel: tiling its last op failed");
      return signalPassFailure();
    }
    for (OpResult r : consumer->getResults())
      if (Value v = tiled->replacements.lookup(r))
        rewriter.replaceAllUsesWith(r, v);
    // The fused ops' destinations are slices of whole-size tensor.empty ops
    // outside the loop: one buffer that the threads' overlapping halo tiles
    // would share (one thread zeroing an accumulator another is summing
    // into). Each tile gets its own.
    if (!tiled->loops.empty()) {
      Operation *outer = tiled->loops.front();
      SmallVector<tensor::ExtractSliceOp> shared;
      outer->walk([&](tensor::ExtractSliceOp slice) {
        auto empty = slice.getSource().getDefiningOp<tensor::EmptyOp>();
        if (empty && !outer->isAncestor(empty) &&
            slice.getType().getRank() == slice.getSourceType().getRank())
          shared.push_back(slice);
      });
      for (tensor::ExtractSliceOp slice : shared) {
        rewriter.setInsertionPoint(slice);
        Value own = tensor::EmptyOp::create(rewriter, slice.getLoc(),
                                            slice.getMixedSizes(),
                                            slice.getType().getElementType());
        rewriter.replaceOp(slice, own);
      }
    }
    func->setAttr("tcc.region_tiles", rewriter.getUnitAttr());
  }
};

} // namespace
