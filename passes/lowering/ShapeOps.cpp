//===- ShapeOps.cpp - lower tcc data-movement ops -------------------------===//
//
// Reshapes stay views (collapse_shape/expand_shape); everything else is a
// linalg op that computes each result element: indexing maps do the moving
// where they can (transpose, broadcast_to, slice), tensor.extract where they
// cannot (pad, concat). No tensor.insert_slice: one-shot bufferization would
// turn it into a memref.copy, a runtime call for non-contiguous slices unless
// later canonicalization folds it.
//
//===----------------------------------------------------------------------===//
#include "passes/lowering/Patterns.h"
#include "passes/lowering/Utils.h"

#include "ir/TccOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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
      flat = tensor::CollapseShapeOp::create(
          rewriter, loc, flatType, input, ArrayRef<ReassociationIndices>{all});
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

/// One generic over the result: each element reads the input that covers
/// its position along the axis.
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
    // The non-empty inputs and where each starts along the axis.
    SmallVector<Value> inputs;
    SmallVector<int64_t> starts;
    int64_t offset = 0;
    for (Value in : op.getInputs()) {
      int64_t n = tensorTypeOf(in).getDimSize(axis);
      if (n != 0 && tensorTypeOf(in).getNumElements() != 0) {
        inputs.push_back(in);
        starts.push_back(offset);
      }
      offset += n;
    }
    if (inputs.empty()) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type.getShape(),
                                         type.getElementType()));
      return success();
    }
    if (inputs.size() == 1) {
      rewriter.replaceOp(op, inputs[0]);
      return success();
    }
    Value r = buildElementwise(
        rewriter, loc, ValueRange{}, type,
        [&](ImplicitLocOpBuilder &b, ValueRange) {
          SmallVector<Value> idx;
          for (int64_t d = 0; d < rank; ++d)
            idx.push_back(linalg::IndexOp::create(b, d));
          // Input k, or a later one: nested scf.if on the axis index, so
          // that each element loads from one input only.
          std::function<Value(OpBuilder &, Location, size_t)> pick =
              [&](OpBuilder &nb, Location nl, size_t k) -> Value {
            SmallVector<Value> at(idx);
            Value start = arith::ConstantIndexOp::create(nb, nl, starts[k]);
            at[axis] = arith::SubIOp::create(nb, nl, idx[axis], start);
            auto read = [&](OpBuilder &rb, Location rl) -> Value {
              return tensor::ExtractOp::create(rb, rl, inputs[k], at);
            };
            if (k + 1 == inputs.size())
              return read(nb, nl);
            Value next = arith::ConstantIndexOp::create(nb, nl, starts[k + 1]);
            Value here = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::slt, idx[axis], next);
            // Result types come from the yields.
            auto ifOp = scf::IfOp::create(
                nb, nl, here,
                [&](OpBuilder &tb, Location tl) {
                  scf::YieldOp::create(tb, tl, read(tb, tl));
                },
                [&](OpBuilder &eb, Location el) {
                  scf::YieldOp::create(eb, el, pick(eb, el, k + 1));
                });
            return ifOp.getResult(0);
          };
          return pick(b, b.getLoc(), 0);
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// out[i] = in[start + i * step] per axis: a linalg.generic whose input map
/// is start + step * i, for any sign of step, so that elementwise producers
/// fuse into it. (An extract_slice view would need a non-contiguous copy
/// wherever a kernel returns it.)
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
    // linalg takes loop bounds from operand dimensions read as a plain d_i
    // (start 0, step 1), so those must keep their size; otherwise the
    // elements are read with tensor.extract.
    ArrayRef<int64_t> inShape = tensorTypeOf(input).getShape();
    bool mapsWork = true;
    for (size_t d = 0; d < shape.size(); ++d)
      if (starts[d] == 0 && steps[d] == 1 && inShape[d] != shape[d])
        mapsWork = false;
    if (!mapsWork) {
      Value r = buildElementwise(
          rewriter, loc, ValueRange{}, type,
          [&](ImplicitLocOpBuilder &b, ValueRange) -> Value {
            SmallVector<Value> at;
            for (size_t d = 0; d < shape.size(); ++d) {
              Value i = linalg::IndexOp::create(b, d);
              Value step = arith::ConstantIndexOp::create(b, steps[d]);
              Value start = arith::ConstantIndexOp::create(b, starts[d]);
              Value scaled = arith::MulIOp::create(b, i, step);
              at.push_back(arith::AddIOp::create(b, scaled, start));
            }
            return tensor::ExtractOp::create(b, input, at);
          });
      rewriter.replaceOp(op, r);
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

/// A generic that reads the input inside and yields the pad value outside.
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
    ArrayRef<int64_t> begin = op.getPads().take_front(type.getRank());
    rewriter.replaceOp(op, padTensor(rewriter, loc, input, type.getShape(),
                                     begin, {}, value));
    return success();
  }
};

} // namespace

void mlir::tcc::populateShapeLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, BroadcastToLowering,
               ConcatLowering, SliceLowering, PadLowering>(
      patterns.getContext());
}
