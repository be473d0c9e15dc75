//===- Reductions.cpp - lower tcc reductions ------------------------------===//
//
// Max and min reduce in the compute type (f32 for f16/bf16/f8). Float sums
// and means accumulate in f64 whatever the input: this loop adds one element
// after another, and an f32 running sum loses about log2(n) bits (it stops
// growing at 2^24 ones), where PyTorch's blocked sums stay within rounding.
// Integer sums accumulate in the integer type itself (wrapping sums are the
// same whatever the width of the accumulator). The result is rounded once.
//
//===----------------------------------------------------------------------===//
#include "passes/lowering/Patterns.h"
#include "passes/lowering/Utils.h"

#include "ir/TccOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::lowering;

namespace {

enum class Kind { Sum, Max, Min, Mean };

/// Reduces `input` over `axes` in the compute type; returns the accumulator
/// (not yet converted to the result type).
Value reduceInCompute(OpBuilder &b, Location loc, Value input,
                      ArrayRef<int64_t> axes, bool keepdims, Kind kind) {
  Type elt = tensorTypeOf(input).getElementType();
  Type acc = computeType(elt);
  bool isFloat = isa<FloatType>(acc);
  bool wideSum = isFloat && (kind == Kind::Sum || kind == Kind::Mean);
  if (wideSum)
    acc = b.getF64Type();
  // Max starts at -inf (INT_MIN): an all -inf row reduces to -inf.
  Value init = kind == Kind::Max || kind == Kind::Min
                   ? extremeConstant(b, loc, acc, kind == Kind::Min)
                   : scalarConstant(b, loc, acc, 0.0);
  return buildReduction(
      b, loc, input, axes, keepdims, init,
      [&](ImplicitLocOpBuilder &ib, Value x, Value a) -> Value {
        x = toCompute(ib, x);
        if (wideSum && x.getType() != acc)
          x = arith::ExtFOp::create(ib, acc, x);
        switch (kind) {
        case Kind::Sum:
        case Kind::Mean:
          return isFloat ? (Value)arith::AddFOp::create(ib, a, x)
                         : (Value)arith::AddIOp::create(ib, a, x);
        case Kind::Max: // maximumf/minimumf propagate NaN
          return isFloat ? (Value)arith::MaximumFOp::create(ib, a, x)
                         : (Value)arith::MaxSIOp::create(ib, a, x);
        case Kind::Min:
          return isFloat ? (Value)arith::MinimumFOp::create(ib, a, x)
                         : (Value)arith::MinSIOp::create(ib, a, x);
        }
        llvm_unreachable("reduction kind");
      });
}

template <typename OpTy, Kind kind>
struct ReduceLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value acc = reduceInCompute(rewriter, loc, op.getInput(), op.getAxes(),
                                op.getKeepdims(), kind);
    RankedTensorType resultType = op.getType();
    Type elt = resultType.getElementType();
    if (kind != Kind::Mean) {
      rewriter.replaceOp(op, convertTensor(rewriter, loc, acc, elt));
      return success();
    }
    int64_t count = 1;
    ArrayRef<int64_t> shape = tensorTypeOf(op.getInput()).getShape();
    for (int64_t a : op.getAxes())
      count *= shape[a];
    // An empty reduction divides 0 by 0: NaN, as torch.mean.
    Value mean = buildElementwise(
        rewriter, loc, acc, resultType,
        [&](ImplicitLocOpBuilder &b, ValueRange args) {
          Value n = scalarConstant(b, loc, args[0].getType(), (double)count);
          return convertScalar(b, arith::DivFOp::create(b, args[0], n), elt);
        });
    rewriter.replaceOp(op, mean);
    return success();
  }
};

/// argmax/argmin as a reduction over (value, index) pairs. The combine is a
/// total order, so any reduction order gives the same answer: NaN beats
/// everything (as NumPy), then the larger (smaller) value, then the lower
/// index.
template <typename OpTy, bool isMax>
struct ArgLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = op.getInput();
    ArrayRef<int64_t> inShape = tensorTypeOf(input).getShape();
    int64_t rank = inShape.size(), axis = op.getAxis();
    Type acc = computeType(tensorTypeOf(input).getElementType());
    Type i64 = rewriter.getI64Type();

    SmallVector<int64_t> outShape = reducedShape(inShape, {axis}, false);
    Value vals = filledTensor(rewriter, loc, outShape,
                              extremeConstant(rewriter, loc, acc, !isMax));
    Value idxs = filledTensor(rewriter, loc, outShape,
                              intConstant(rewriter, loc, i64, 0));
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iters;
    for (int64_t d = 0; d < rank; ++d) {
      iters.push_back(d == axis ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
      if (d != axis)
        outExprs.push_back(getAffineDimExpr(d, ctx));
    }
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
    SmallVector<AffineMap> maps = {
        AffineMap::getMultiDimIdentityMap(rank, ctx), outMap, outMap};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{vals.getType(), idxs.getType()}, input,
        ValueRange{vals, idxs}, maps, iters,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          ImplicitLocOpBuilder b(nl, nb);
          Value x = toCompute(b, args[0]);
          Value best = args[1], bestIdx = args[2];
          Value i = arith::IndexCastOp::create(
              b, i64, linalg::IndexOp::create(b, axis));
          Value lower = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                              i, bestIdx);
          Value better;
          if (isa<FloatType>(acc)) {
            using P = arith::CmpFPredicate;
            Value xNaN = arith::CmpFOp::create(b, P::UNO, x, x);
            Value bNaN = arith::CmpFOp::create(b, P::UNO, best, best);
            Value gt = arith::CmpFOp::create(b, isMax ? P::OGT : P::OLT, x,
                                             best);
            Value eq = arith::CmpFOp::create(b, P::OEQ, x, best);
            Value ordered = arith::OrIOp::create(
                b, gt, arith::AndIOp::create(b, eq, lower));
            // x NaN: wins unless best is an earlier NaN; best NaN: stays.
            Value trueV = intConstant(b, nl, b.getI1Type(), 1);
            Value bNumber = arith::XOrIOp::create(b, bNaN, trueV);
            Value ifXNaN = arith::OrIOp::create(b, bNumber, lower);
            Value ifXNumber = arith::AndIOp::create(b, bNumber, ordered);
            better = arith::SelectOp::create(b, xNaN, ifXNaN, ifXNumber);
          } else {
            using P = arith::CmpIPredicate;
            Value gt = arith::CmpIOp::create(b, isMax ? P::sgt : P::slt, x,
                                             best);
            Value eq = arith::CmpIOp::create(b, P::eq, x, best);
            better = arith::OrIOp::create(
                b, gt, arith::AndIOp::create(b, eq, lower));
          }
          linalg::YieldOp::create(
              b, ValueRange{arith::SelectOp::create(b, better, x, best),
                            arith::SelectOp::create(b, better, i, bestIdx)});
        });
    Value result = generic.getResult(1);
    if (op.getKeepdims()) {
      SmallVector<ReassociationIndices> groups;
      ReassociationIndices pending;
      for (int64_t d = 0; d < rank; ++d) {
        pending.push_back(d);
        if (d != axis) {
          groups.push_back(pending);
          pending.clear();
        }
      }
      if (!groups.empty())
        groups.back().append(pending.begin(), pending.end());
      result = tensor::ExpandShapeOp::create(rewriter, loc, op.getType(),
                                             result, groups);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Counts the indices outside [-bound, bound) into a tensor<i32>.
struct IndexCheckLowering : OpRewritePattern<IndexCheckOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(IndexCheckOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value indices = op.getIndices();
    int64_t bound = op.getBound();
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < tensorTypeOf(indices).getRank(); ++d)
      axes.push_back(d);
    Value zero = intConstant(rewriter, loc, rewriter.getI32Type(), 0);
    Value count = buildReduction(
        rewriter, loc, indices, axes, /*keepdims=*/false, zero,
        [&](ImplicitLocOpBuilder &b, Value x, Value acc) -> Value {
          using P = arith::CmpIPredicate;
          // In i64: an axis may be longer than i32 indices can count.
          Type i64 = b.getI64Type();
          if (x.getType() != i64)
            x = arith::ExtSIOp::create(b, i64, x);
          Value hi = intConstant(b, b.getLoc(), i64, bound);
          Value lo = intConstant(b, b.getLoc(), i64, -bound);
          Value below = arith::CmpIOp::create(b, P::slt, x, lo);
          Value above = arith::CmpIOp::create(b, P::sge, x, hi);
          Value bad = arith::OrIOp::create(b, below, above);
          Value one = arith::ExtUIOp::create(b, b.getI32Type(), bad);
          return arith::AddIOp::create(b, acc, one);
        });
    rewriter.replaceOp(op, count);
    return success();
  }
};

} // namespace

void mlir::tcc::populateReductionLoweringPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ReduceLowering<ReduceSumOp, Kind::Sum>,
               ReduceLowering<ReduceMaxOp, Kind::Max>,
               ReduceLowering<ReduceMinOp, Kind::Min>,
               ReduceLowering<ReduceMeanOp, Kind::Mean>,
               ArgLowering<ArgmaxOp, true>, ArgLowering<ArgminOp, false>,
               IndexCheckLowering>(ctx);
}
