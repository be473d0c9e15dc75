//===- FoldBatchNorm.cpp - batch norm into the convolution before it ------===//
//
// batch_norm(conv2d(x, w, b)) = conv2d(x, w * s[o], (b - mean) * s + beta)
// with s = scale / sqrt(var + eps), when the convolution's result feeds the
// batch norm alone. The new weight and bias are tcc ops on the params (run
// once at load where the params are known), computed in f32 for narrow types
// and rounded once to the weight's type: docs/numerics.md.
//
//===----------------------------------------------------------------------===//
#include "passes/ConvLayout.h"
#include "passes/Passes.h"
#include "passes/lowering/Utils.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCFOLDBATCHNORM
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

Value mlir::tcc::castElements(PatternRewriter &rewriter, Location loc, Value v,
                              Type elt) {
  auto ty = cast<RankedTensorType>(v.getType());
  if (ty.getElementType() == elt)
    return v;
  return CastOp::create(rewriter, loc, ty.clone(elt), v);
}

Value mlir::tcc::reshapeTo(PatternRewriter &rewriter, Location loc, Value v,
                           ArrayRef<int64_t> shape) {
  auto ty = cast<RankedTensorType>(v.getType());
  if (ty.getShape() == shape)
    return v;
  return ReshapeOp::create(rewriter, loc, ty.clone(shape), v);
}

BatchNormCoefficients
mlir::tcc::batchNormCoefficients(PatternRewriter &rewriter, BatchNormOp op) {
  Location loc = op.getLoc();
  Type compute = lowering::computeType(op.getType().getElementType());
  auto f = [&](Value v) { return castElements(rewriter, loc, v, compute); };
  auto vecType = cast<RankedTensorType>(f(op.getVar()).getType());
  Value eps = ConstantOp::create(
      rewriter, loc, vecType,
      rewriter.getFloatAttr(compute, op.getEps().convertToDouble()));
  Value var = AddOp::create(rewriter, loc, vecType, f(op.getVar()), eps);
  Value inv = RsqrtOp::create(rewriter, loc, var);
  Value mul = MulOp::create(rewriter, loc, vecType, f(op.getScale()), inv);
  Value shifted = MulOp::create(rewriter, loc, vecType, f(op.getMean()), mul);
  Value add = SubOp::create(rewriter, loc, vecType, f(op.getBias()), shifted);
  return {mul, add, compute};
}

namespace {

/// batch_norm(conv2d) or batch_norm(transpose(conv2d {nhwc})) back to NCHW.
/// Output channels are the weight's axis 0 and the bias in both layouts.
struct FoldIntoConv : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp bn,
                                PatternRewriter &rewriter) const override {
    Value in = bn.getInput();
    auto transpose = in.getDefiningOp<TransposeOp>();
    if (transpose) {
      if (transpose.getPerm() != ArrayRef<int64_t>{0, 3, 1, 2} ||
          !in.hasOneUse())
        return failure();
      in = transpose.getInput();
    }
    auto conv = in.getDefiningOp<Conv2dOp>();
    if (!conv || !conv->hasOneUse() || conv.getNhwc() != (bool)transpose)
      return failure();
    Location loc = bn.getLoc();
    Type elt = conv.getType().getElementType();
    BatchNormCoefficients k = batchNormCoefficients(rewriter, bn);
    Value w = conv.getWeight();
    auto wType = cast<RankedTensorType>(w.getType());
    int64_t o = wType.getShape()[0];
    Value mul = reshapeTo(rewriter, loc, k.mul, {o, 1, 1, 1});
    Value wf = castElements(rewriter, loc, w, k.compute);
    Value scaled =
        MulOp::create(rewriter, loc, wf.getType(), wf, mul).getResult();
    Value newW = castElements(rewriter, loc, scaled, elt);
    Value add = k.add;
    if (Value b = conv.getBias()) {
      Value bf = castElements(rewriter, loc, b, k.compute);
      Value bs = MulOp::create(rewriter, loc, bf.getType(), bf, k.mul);
      add = AddOp::create(rewriter, loc, bf.getType(), bs, k.add);
    }
    Value newB = castElements(rewriter, loc, add, elt);
    // Built where the batch norm is: every param it reads is defined there.
    OperationState state(conv.getLoc(), conv->getName());
    state.addOperands({conv.getInput(), newW, newB});
    state.addAttributes(conv->getAttrs());
    state.addTypes(conv.getType());
    Value folded = rewriter.create(state)->getResult(0);
    if (transpose)
      folded =
          TransposeOp::create(rewriter, transpose.getLoc(), transpose.getType(),
                              folded, transpose.getPermAttr());
    rewriter.replaceOp(bn, folded);
    return success();
  }
};

struct TccFoldBatchNorm
    : mlir::tcc::impl::TccFoldBatchNormBase<TccFoldBatchNorm> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldIntoConv>(&getContext());
    // One rewrite per batch norm, none creating another: no iteration
    // limit is needed.
    GreedyRewriteConfig config;
    config.setMaxIterations(GreedyRewriteConfig::kNoLimit)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
