//===- ShapeOps.cpp - lower tcc data-movement ops -------------------------===//
//
// Views stay views where tensor ops express them (reshapes, unit-stride
// slices); everything else is a linalg op whose indexing maps do the moving.
//
//===----------------------------------------------------------------------===//
#include "passes/lowering/Patterns.h"
#include "passes/lowering/Utils.h"

#include "ir/TccOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::lowering;

namespace {

/// A row-major reshape: one collapse_shape or expand_shape when the shapes
/// nest, else a collapse to 1-D followed by an expand.
struct ReshapeLowering : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    RankedTensorType inType = tensorTypeOf(input), outType = op.getType();
    if (inType == outType) {
      rewriter.replaceOp(op, input);
      return success();
    }
    int64_t inRank = inType.getRank(), outRank = outType.getRank();
    if (inRank > outRank) {
      if (auto groups = getReassociationIndicesForCollapse(
              inType.getShape(), outType.getShape())) {
        rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(op, outType,
                                                             input, *groups);
        return success();
      }
    } else if (inRank < outRank) {
      if (auto groups = getReassociationIndicesForCollapse(
              outType.getShape(), inType.getShape())) {
        rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, outType, input,
                                                           *groups);
        return success();
      }
    }
    // Through 1-D. Rank 0 <-> [1] needs no reassociation groups.
    int64_t n = inType.getNumElements();
    auto flatType = RankedTensorType::get({n}, inType.getElementType());
    Value flat;
    if (inRank == 0) {
      flat = tensor::ExpandShapeOp::create(rewriter, loc, flatType, input,
                                           ArrayRef<ReassociationIndices>{});
    } else {
      ReassociationIndices all;
      for (int64_t d = 0; d < inRank; ++d)
        all.push_back(d);
      flat = tensor::CollapseShapeOp::create(rewriter, loc, flatType, input,
                                             ArrayRef<ReassociationIndices>{all});
    }
    if (outRank == 0) {
      rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
          op, outType, flat, ArrayRef<ReassociationIndices>{});
      return success();
    }
    ReassociationIndices all;
    for (int64_t d = 0; d < outRank; ++d)
      all.push_back(d);
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
        op, outType, flat, ArrayRef<ReassociationIndices>{all});
    return success();
  }
};

struct TransposeLowering : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> perm = op.getPerm();
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity &= perm[i] == (int64_t)i;
    if (identity) {
      rewriter.replaceOp(op, op.getInput());
      return success();
    }
    RankedTensorType type = op.getType();
    Value init = emptyTensor(rewriter, op.getLoc(), type.getShape(),
                             type.getElementType());
    auto t = linalg::TransposeOp::create(rewriter, op.getLoc(), op.getInput(),
                                         init, perm);
    rewriter.replaceOp(op, t.getResult());
    return success();
  }
};

struct BroadcastToLowering : OpRewritePattern<BroadcastToOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastToOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getInput().getType() == op.getType()) {
      rewriter.replaceOp(op, op.getInput());
      return success();
    }
    Value r = buildElementwise(
        rewriter, op.getLoc(), op.getInput(), op.getType(),
        [](ImplicitLocOpBuilder &, ValueRange a) { return a[0]; });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Each input is inserted at its offset along the axis of an empty result.
struct ConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    if (op.getInputs().size() == 1) {
      rewriter.replaceOp(op, op.getInputs()[0]);
      return success();
    }
    int64_t axis = op.getAxis(), rank = type.getRank();
    Value result =
        emptyTensor(rewriter, loc, type.getShape(), type.getElementType());
    int64_t offset = 0;
    for (Value in : op.getInputs()) {
      ArrayRef<int64_t> shape = tensorTypeOf(in).getShape();
      if (shape[axis] == 0)
        continue;
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      offsets[axis] = rewriter.getIndexAttr(offset);
      SmallVector<OpFoldResult> sizes, strides(rank, rewriter.getIndexAttr(1));
      for (int64_t s : shape)
        sizes.push_back(rewriter.getIndexAttr(s));
      result = tensor::InsertSliceOp::create(rewriter, loc, in, result,
                                             offsets, sizes, strides);
      offset += shape[axis];
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// out[i] = in[start + i * step] per axis. Unit and positive steps are a
/// tensor.extract_slice (a view); negative steps a linalg.generic whose input
/// map is start + step * i.
struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = op.getType();
    Value input = op.getInput();
    if (input.getType() == type && llvm::all_of(op.getSteps(), [](int64_t s) {
          return s == 1;
        })) {
      rewriter.replaceOp(op, input);
      return success();
    }
    ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps();
    ArrayRef<int64_t> shape = type.getShape();
    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, shape,
                                         type.getElementType()));
      return success();
    }
    if (llvm::all_of(steps, [](int64_t s) { return s > 0; })) {
      SmallVector<OpFoldResult> offsets, sizes, strides;
      for (size_t d = 0; d < shape.size(); ++d) {
        offsets.push_back(rewriter.getIndexAttr(starts[d]));
        sizes.push_back(rewriter.getIndexAttr(shape[d]));
        strides.push_back(rewriter.getIndexAttr(steps[d]));
      }
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          op, type, input, offsets, sizes, strides);
      return success();
    }
    SmallVector<AffineExpr> exprs;
    for (size_t d = 0; d < shape.size(); ++d)
      exprs.push_back(getAffineDimExpr(d, ctx) * steps[d] + starts[d]);
    SmallVector<AffineMap> maps = {
        AffineMap::get(shape.size(), 0, exprs, ctx),
        AffineMap::getMultiDimIdentityMap(shape.size(), ctx)};
    Value init = emptyTensor(rewriter, loc, shape, type.getElementType());
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, input, init, maps,
        parallelIterators(shape.size()),
        [](OpBuilder &nb, Location nl, ValueRange args) {
          linalg::YieldOp::create(nb, nl, args[0]);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// A fill with the pad value and the input inserted at its offsets.
struct PadLowering : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Value input = op.getInput();
    if (input.getType() == type) {
      rewriter.replaceOp(op, input);
      return success();
    }
    Value value = scalarConstant(rewriter, loc, type.getElementType(),
                                 op.getValue().convertToDouble());
    Value result = filledTensor(rewriter, loc, type.getShape(), value);
    ArrayRef<int64_t> inShape = tensorTypeOf(input).getShape();
    if (tensorTypeOf(input).getNumElements() != 0) {
      SmallVector<OpFoldResult> offsets, sizes;
      for (size_t d = 0; d < inShape.size(); ++d) {
        offsets.push_back(rewriter.getIndexAttr(op.getPads()[d]));
        sizes.push_back(rewriter.getIndexAttr(inShape[d]));
      }
      SmallVector<OpFoldResult> strides(inShape.size(),
                                        rewriter.getIndexAttr(1));
      result = tensor::InsertSliceOp::create(rewriter, loc, input, result,
                                             offsets, sizes, strides);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::tcc::populateShapeLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, BroadcastToLowering,
               ConcatLowering, SliceLowering, PadLowering>(
      patterns.getContext());
}
