//===- Gather.cpp - lower tcc.gather and tcc.take_along_axis --------------===//
//
// A linalg.generic over the result reads each index and extracts the data
// element it names. Negative indices count from the end (ONNX); indices still
// out of range are clamped so that no read leaves the data, and the paired
// tcc.index_check reports the run as failed.
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

/// An index into an axis of size `n` > 0: wrapped once if negative, then
/// clamped into [0, n).
Value normaliseIndex(ImplicitLocOpBuilder &b, Value idx, int64_t n) {
  using P = arith::CmpIPredicate;
  Type i64 = b.getI64Type();
  Location loc = b.getLoc();
  if (idx.getType() != i64)
    idx = arith::ExtSIOp::create(b, i64, idx);
  Value zero = intConstant(b, loc, i64, 0);
  Value wrapped = arith::AddIOp::create(b, idx, intConstant(b, loc, i64, n));
  idx = arith::SelectOp::create(
      b, arith::CmpIOp::create(b, P::slt, idx, zero), wrapped, idx);
  idx = arith::MaxSIOp::create(b, idx, zero);
  idx = arith::MinSIOp::create(b, idx, intConstant(b, loc, i64, n - 1));
  return arith::IndexCastOp::create(b, b.getIndexType(), idx);
}

/// Builds a generic over `resultType` reading `indices` through `indexMap`;
/// `coords` gives the data coordinates from the loop indices and the
/// normalised index.
Value buildGather(OpBuilder &rewriter, Location loc, Value data,
                  Value indices, AffineMap indexMap,
                  RankedTensorType resultType, int64_t axisSize,
                  function_ref<SmallVector<Value>(ArrayRef<Value> loopIdx,
                                                  Value idx)>
                      coords) {
  MLIRContext *ctx = rewriter.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  if (axisSize == 0) // nothing to read: zeros, and index_check fails the run
    return filledTensor(
        rewriter, loc, shape,
        scalarConstant(rewriter, loc, resultType.getElementType(), 0));
  Value init = emptyTensor(rewriter, loc, shape, resultType.getElementType());
  SmallVector<AffineMap> maps = {
      indexMap, AffineMap::getMultiDimIdentityMap(shape.size(), ctx)};
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{resultType}, indices, init, maps,
      parallelIterators(shape.size()),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        ImplicitLocOpBuilder b(nl, nb);
        SmallVector<Value> loopIdx;
        for (unsigned d = 0; d < shape.size(); ++d)
          loopIdx.push_back(linalg::IndexOp::create(b, d));
        Value idx = normaliseIndex(b, args[0], axisSize);
        Value elem =
            tensor::ExtractOp::create(b, data, coords(loopIdx, idx));
        linalg::YieldOp::create(b, elem);
      });
  return generic.getResult(0);
}

/// ONNX Gather: out[pre, idx..., post] = data[pre, indices[idx...], post].
struct GatherLowering : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    MLIRContext *ctx = rewriter.getContext();
    int64_t axis = op.getAxis();
    ArrayRef<int64_t> dataShape = tensorTypeOf(op.getData()).getShape();
    int64_t q = tensorTypeOf(op.getIndices()).getRank();
    unsigned rank = op.getType().getRank();
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < q; ++d)
      exprs.push_back(getAffineDimExpr(axis + d, ctx));
    AffineMap indexMap = AffineMap::get(rank, 0, exprs, ctx);
    Value r = buildGather(
        rewriter, op.getLoc(), op.getData(), op.getIndices(), indexMap,
        op.getType(), dataShape[axis],
        [&](ArrayRef<Value> loopIdx, Value idx) {
          SmallVector<Value> c(loopIdx.begin(), loopIdx.begin() + axis);
          c.push_back(idx);
          c.append(loopIdx.begin() + axis + q, loopIdx.end());
          return c;
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// ONNX GatherElements: out[i] = data[i with i[axis] = indices[i]].
struct TakeAlongAxisLowering : OpRewritePattern<TakeAlongAxisOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TakeAlongAxisOp op,
                                PatternRewriter &rewriter) const override {
    int64_t axis = op.getAxis();
    ArrayRef<int64_t> dataShape = tensorTypeOf(op.getData()).getShape();
    unsigned rank = op.getType().getRank();
    Value r = buildGather(
        rewriter, op.getLoc(), op.getData(), op.getIndices(),
        AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext()),
        op.getType(), dataShape[axis],
        [&](ArrayRef<Value> loopIdx, Value idx) {
          SmallVector<Value> c(loopIdx.begin(), loopIdx.end());
          c[axis] = idx;
          return c;
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

void mlir::tcc::populateGatherLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<GatherLowering, TakeAlongAxisLowering>(patterns.getContext());
}
