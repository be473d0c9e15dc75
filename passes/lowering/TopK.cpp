//===- TopK.cpp - lower tcc.topk ------------------------------------------===//
//
// k rounds of selection, O(n k) per row, all rows in parallel: round j is a
// linalg.generic reduction that picks, in every row, the best element ranked
// after round j-1's pick. The ranking is a total order on (value, index): by
// value, NaN counting as larger than any number (as torch.topk: first when
// largest, last otherwise), then the lower index first. So no element is
// picked twice, ties keep the lower index first, and no round needs to know
// more than the previous pick. The values are read back from the input at
// the picked indices, bit-exact.
//
//===----------------------------------------------------------------------===//
#include "passes/lowering/Patterns.h"
#include "passes/lowering/Utils.h"

#include "ir/TccOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::lowering;

namespace {

/// Whether (va, ia) ranks before (vb, ib).
Value ranksBefore(ImplicitLocOpBuilder &b, bool largest, Value va, Value ia,
                  Value vb, Value ib) {
  Value lowerIdx =
      arith::CmpIOp::create(b, arith::CmpIPredicate::slt, ia, ib);
  if (!isa<FloatType>(va.getType())) {
    using P = arith::CmpIPredicate;
    Value better = arith::CmpIOp::create(b, largest ? P::sgt : P::slt, va, vb);
    Value tie = arith::CmpIOp::create(b, P::eq, va, vb);
    return arith::OrIOp::create(b, better,
                                arith::AndIOp::create(b, tie, lowerIdx));
  }
  using P = arith::CmpFPredicate;
  Value aNaN = arith::CmpFOp::create(b, P::UNO, va, va);
  Value bNaN = arith::CmpFOp::create(b, P::UNO, vb, vb);
  Value better = arith::CmpFOp::create(b, largest ? P::OGT : P::OLT, va, vb);
  Value tie = arith::CmpFOp::create(b, P::OEQ, va, vb);
  Value ordered =
      arith::OrIOp::create(b, better, arith::AndIOp::create(b, tie, lowerIdx));
  Value bothNaN = arith::AndIOp::create(b, aNaN, bNaN);
  // Exactly one NaN: it ranks first when largest, last otherwise.
  Value oneNaN = largest ? aNaN : bNaN;
  Value anyNaN = arith::OrIOp::create(b, aNaN, bNaN);
  Value r = arith::SelectOp::create(b, anyNaN, oneNaN, ordered);
  return arith::SelectOp::create(b, bothNaN, lowerIdx, r);
}

struct TopkLowering : OpRewritePattern<TopkOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TopkOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = op.getInput();
    RankedTensorType inType = tensorTypeOf(input);
    ArrayRef<int64_t> inShape = inType.getShape();
    int64_t rank = inShape.size(), axis = op.getAxis(), k = op.getK();
    bool largest = op.getLargest();
    Type acc = computeType(inType.getElementType());
    Type i64 = rewriter.getI64Type();
    RankedTensorType idxType = tensorTypeOf(op.getIndices());

    // The picks so far. Round j reads its predecessor's pick back from here
    // (at j - 1), so the loop carries only this tensor and one-shot
    // bufferization updates it in place. Zeros, not tensor.empty: round 0
    // reads it too (and ignores the value).
    SmallVector<int64_t> rowShape = reducedShape(inShape, {axis}, false);
    Value indices0 = filledTensor(rewriter, loc, idxType.getShape(),
                                  intConstant(rewriter, loc, i64, 0));

    SmallVector<AffineExpr> rowExprs;
    SmallVector<utils::IteratorType> iters;
    for (int64_t d = 0; d < rank; ++d) {
      iters.push_back(d == axis ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
      if (d != axis)
        rowExprs.push_back(getAffineDimExpr(d, ctx));
    }
    AffineMap rowMap = AffineMap::get(rank, 0, rowExprs, ctx);
    AffineMap idMap = AffineMap::getMultiDimIdentityMap(rank, ctx);

    Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value ub = arith::ConstantIndexOp::create(rewriter, loc, k);
    Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto loop = scf::ForOp::create(
        rewriter, loc, lb, ub, step, ValueRange{indices0},
        [&](OpBuilder &nb, Location nl, Value j, ValueRange state) {
          Value picks = state[0];
          Value bestVal0 =
              filledTensor(nb, nl, rowShape, scalarConstant(nb, nl, acc, 0));
          Value bestIdx0 =
              filledTensor(nb, nl, rowShape, intConstant(nb, nl, i64, -1));
          auto round = linalg::GenericOp::create(
              nb, nl, TypeRange{bestVal0.getType(), bestIdx0.getType()},
              ValueRange{input}, ValueRange{bestVal0, bestIdx0},
              SmallVector<AffineMap>{idMap, rowMap, rowMap}, iters,
              [&](OpBuilder &bb, Location bl, ValueRange a) {
                ImplicitLocOpBuilder b(bl, bb);
                using P = arith::CmpIPredicate;
                Value x = toCompute(b, a[0]);
                Value i = arith::IndexCastOp::create(
                    b, i64, linalg::IndexOp::create(b, axis));
                Value bestVal = a[1], bestIdx = a[2];
                // The previous round's pick in this row.
                Value zeroIdx = arith::ConstantIndexOp::create(b, 0);
                Value oneIdx = arith::ConstantIndexOp::create(b, 1);
                Value first = arith::CmpIOp::create(b, P::eq, j, zeroIdx);
                Value before = arith::SubIOp::create(b, j, oneIdx);
                before = arith::MaxSIOp::create(b, before, zeroIdx);
                SmallVector<Value> at;
                for (int64_t d = 0; d < rank; ++d) {
                  Value coord =
                      d == axis ? before : linalg::IndexOp::create(b, d);
                  at.push_back(coord);
                }
                Value prevIdx = tensor::ExtractOp::create(b, picks, at);
                at[axis] = arith::IndexCastOp::create(b, b.getIndexType(),
                                                      prevIdx);
                Value prevVal =
                    toCompute(b, tensor::ExtractOp::create(b, input, at));
                Value eligible = arith::OrIOp::create(
                    b, first, ranksBefore(b, largest, prevVal, prevIdx, x, i));
                Value none = arith::CmpIOp::create(
                    b, P::slt, bestIdx, intConstant(b, bl, i64, 0));
                Value beats = ranksBefore(b, largest, x, i, bestVal, bestIdx);
                Value better = arith::OrIOp::create(b, none, beats);
                Value take = arith::AndIOp::create(b, eligible, better);
                linalg::YieldOp::create(
                    b, ValueRange{arith::SelectOp::create(b, take, x, bestVal),
                                  arith::SelectOp::create(b, take, i,
                                                          bestIdx)});
              });
          // Store this round's picks at position j along the axis: an
          // in-place elementwise update of the picks (O(k) per row and
          // round), which bufferizes without a copy.
          auto store = linalg::GenericOp::create(
              nb, nl, TypeRange{picks.getType()},
              ValueRange{round.getResult(1)}, ValueRange{picks},
              SmallVector<AffineMap>{rowMap, idMap},
              parallelIterators(rank),
              [&](OpBuilder &bb, Location bl, ValueRange a) {
                ImplicitLocOpBuilder b(bl, bb);
                Value column = linalg::IndexOp::create(b, axis);
                Value here = arith::CmpIOp::create(
                    b, arith::CmpIPredicate::eq, column, j);
                Value v = arith::SelectOp::create(b, here, a[0], a[1]);
                linalg::YieldOp::create(b, v);
              });
          Value stored = store.getResult(0);
          scf::YieldOp::create(nb, nl, ValueRange{stored});
        });
    Value indices = loop.getResult(0);

    // The values, read back at the picked indices.
    RankedTensorType valType = tensorTypeOf(op.getValues());
    Value valInit = emptyTensor(rewriter, loc, valType.getShape(),
                                valType.getElementType());
    auto values = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valType}, indices, valInit,
        SmallVector<AffineMap>{idMap, idMap}, parallelIterators(rank),
        [&](OpBuilder &bb, Location bl, ValueRange a) {
          ImplicitLocOpBuilder b(bl, bb);
          SmallVector<Value> coords;
          for (int64_t d = 0; d < rank; ++d)
            coords.push_back(
                d == axis ? (Value)arith::IndexCastOp::create(
                                b, b.getIndexType(), a[0])
                          : (Value)linalg::IndexOp::create(b, d));
          Value elem = tensor::ExtractOp::create(b, input, coords);
          linalg::YieldOp::create(b, elem);
        });
    rewriter.replaceOp(op, {values.getResult(0), indices});
    return success();
  }
};

} // namespace

void mlir::tcc::populateTopKLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<TopkLowering>(patterns.getContext());
}
