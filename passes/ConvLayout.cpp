//===- ConvLayout.cpp - channels-last convolutions ------------------------===//
//
// tcc-conv-layout: convolutions that want NHWC (tensor cores) are rewritten
// to the `nhwc` form between two transposes; general rules then push every
// transpose towards the outputs through the ops that can take the permuted
// layout, where a transpose meets its inverse and both fold away
// (TransposeOp::fold). A conv net ends up with a transpose after its input
// and before its outputs, and wherever an op cannot take NHWC.
//
//===----------------------------------------------------------------------===//
#include "passes/ConvLayout.h"
#include "passes/Passes.h"
#include "passes/lowering/Utils.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCCONVLAYOUT
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

bool mlir::tcc::convUsesTensorCores(Type elt, bool allowTf32) {
  return elt.isF16() || elt.isBF16() || (elt.isF32() && allowTf32);
}

namespace {

constexpr int64_t kToNhwc[] = {0, 2, 3, 1};
constexpr int64_t kToNchw[] = {0, 3, 1, 2};

SmallVector<int64_t> inversePerm(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> inv(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inv[p] = i;
  return inv;
}

/// The shape of transpose(shape, perm): dim i is shape[perm[i]].
SmallVector<int64_t> permuted(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> out;
  for (int64_t p : perm)
    out.push_back(shape[p]);
  return out;
}

/// Whether transpose(shape, perm) keeps the order of the axes longer than 1,
/// so that it moves no element: a reshape.
bool isReshape(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (shape[p] == 1)
      continue;
    if (p < last)
      return false;
    last = p;
  }
  return true;
}

RankedTensorType withShape(Value v, ArrayRef<int64_t> shape) {
  return cast<RankedTensorType>(v.getType()).clone(shape);
}

Value transposeOf(PatternRewriter &rewriter, Location loc, Value v,
                  ArrayRef<int64_t> perm) {
  auto type = cast<RankedTensorType>(v.getType());
  return TransposeOp::create(rewriter, loc,
                             type.clone(permuted(type.getShape(), perm)), v,
                             rewriter.getDenseI64ArrayAttr(perm));
}

/// `op` again with other operands and result types, its attributes
/// changed by `attrs` (a null value removes one).
Operation *rebuild(PatternRewriter &rewriter, Operation *op,
                   ValueRange operands, TypeRange types,
                   ArrayRef<NamedAttribute> attrs = {}) {
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  NamedAttrList list(op->getAttrs());
  for (const NamedAttribute &a : attrs) {
    if (a.getValue())
      list.set(a.getName(), a.getValue());
    else
      list.erase(a.getName());
  }
  state.addAttributes(list);
  state.addTypes(types);
  return rewriter.create(state);
}

/// The transpose `v` comes from, if any.
TransposeOp transposeDef(Value v) { return v.getDefiningOp<TransposeOp>(); }

//===----------------------------------------------------------------------===//
// Choosing NHWC
//===----------------------------------------------------------------------===//

/// conv2d(x, w) -> transpose(conv2d {nhwc}(transpose(x), transpose(w))).
struct ConvToNhwc : OpRewritePattern<Conv2dOp> {
  ConvToNhwc(MLIRContext *ctx, std::function<bool(Conv2dOp)> wanted)
      : OpRewritePattern(ctx), wanted(std::move(wanted)) {}
  LogicalResult matchAndRewrite(Conv2dOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNhwc() || !wanted(op))
      return failure();
    Location loc = op.getLoc();
    SmallVector<Value> operands = {
        transposeOf(rewriter, loc, op.getInput(), kToNhwc),
        transposeOf(rewriter, loc, op.getWeight(), kToNhwc)};
    if (op.getBias())
      operands.push_back(op.getBias());
    RankedTensorType type =
        withShape(op, permuted(op.getType().getShape(), kToNhwc));
    Operation *conv = rebuild(
        rewriter, op, operands, type,
        {rewriter.getNamedAttr(op.getNhwcAttrName(), rewriter.getUnitAttr())});
    rewriter.replaceOp(op,
                       transposeOf(rewriter, loc, conv->getResult(0), kToNchw));
    return success();
  }
  std::function<bool(Conv2dOp)> wanted;
};

/// conv_transpose2d(x, w) (groups 1) as the channels-last convolution it
/// equals, so that it runs on tensor cores: x with s - 1 zeros inserted
/// between neighbours (reshape to [N, H, 1, W, 1, C], pad, reshape), padded
/// by d(k - 1) - pad (cropped where that is negative; output_padding adds at
/// the end), convolved at stride 1 with the weight flipped in space and
/// taken as [O, KH, KW, C]. The zeros cost s_h * s_w times the products of
/// the direct form, which on tensor cores is still far ahead of it (U-Net's
/// 2x2 up-convolutions: 2 ms each as loops). The weight's flip and transpose
/// work on params alone, so they run once at load.
struct ConvTransposeToNhwc : OpRewritePattern<ConvTranspose2dOp> {
  ConvTransposeToNhwc(MLIRContext *ctx, std::function<bool(Type)> wanted)
      : OpRewritePattern(ctx), wanted(std::move(wanted)) {}
  LogicalResult matchAndRewrite(ConvTranspose2dOp op,
                                PatternRewriter &rewriter) const override {
    auto inTy = cast<RankedTensorType>(op.getInput().getType());
    auto wTy = cast<RankedTensorType>(op.getWeight().getType());
    if (op.getGroups() != 1 || !wanted(op.getType().getElementType()) ||
        !inTy.hasStaticShape() || !wTy.hasStaticShape() ||
        !op.getType().hasStaticShape() || op.getStrides().size() != 2 ||
        op.getPads().size() != 4 || op.getDilations().size() != 2 ||
        op.getOutputPadding().size() != 2)
      return failure();
    if (succeeded(rewriteByPhases(op, rewriter)))
      return success();
    Location loc = op.getLoc();
    ArrayRef<int64_t> in = inTy.getShape(), wShape = wTy.getShape();
    int64_t n = in[0], c = in[1], h = in[2], w = in[3];
    int64_t o = wShape[1], kh = wShape[2], kw = wShape[3];
    int64_t sh = op.getStrides()[0], sw = op.getStrides()[1];
    int64_t dh = op.getDilations()[0], dw = op.getDilations()[1];
    ArrayRef<int64_t> pads = op.getPads(), outPad = op.getOutputPadding();
    Value x = transposeOf(rewriter, loc, op.getInput(), kToNhwc);
    if (sh > 1 || sw > 1) {
      x = reshapeTo(rewriter, loc, x, {n, h, 1, w, 1, c});
      x = PadOp::create(rewriter, loc, withShape(x, {n, h, sh, w, sw, c}), x,
                        rewriter.getDenseI64ArrayAttr(
                            {0, 0, 0, 0, 0, 0, 0, 0, sh - 1, 0, sw - 1, 0}),
                        rewriter.getF64FloatAttr(0.0));
      x = reshapeTo(rewriter, loc, x, {n, h * sh, w * sw, c});
    }
    // Around the H*s rows (the last s - 1 of them zeros already): top and
    // bottom amounts, negative ones cropped.
    int64_t top = dh * (kh - 1) - pads[0], left = dw * (kw - 1) - pads[1];
    int64_t bottom = dh * (kh - 1) - pads[2] + outPad[0] - (sh - 1);
    int64_t right = dw * (kw - 1) - pads[3] + outPad[1] - (sw - 1);
    int64_t hs = h * sh, ws = w * sw;
    if (top > 0 || left > 0 || bottom > 0 || right > 0) {
      auto pos = [](int64_t v) { return std::max<int64_t>(v, 0); };
      hs += pos(top) + pos(bottom);
      ws += pos(left) + pos(right);
      x = PadOp::create(
          rewriter, loc, withShape(x, {n, hs, ws, c}), x,
          rewriter.getDenseI64ArrayAttr(
              {0, pos(top), pos(left), 0, 0, pos(bottom), pos(right), 0}),
          rewriter.getF64FloatAttr(0.0));
    }
    if (top < 0 || left < 0 || bottom < 0 || right < 0) {
      auto neg = [](int64_t v) { return std::max<int64_t>(-v, 0); };
      hs -= neg(top) + neg(bottom);
      ws -= neg(left) + neg(right);
      if (hs < 1 || ws < 1)
        return failure();
      x = SliceOp::create(
          rewriter, loc, withShape(x, {n, hs, ws, c}), x,
          rewriter.getDenseI64ArrayAttr({0, neg(top), neg(left), 0}),
          rewriter.getDenseI64ArrayAttr({1, 1, 1, 1}));
    }
    // [C, O, KH, KW] flipped in space, then [O, KH, KW, C].
    Value wt =
        SliceOp::create(rewriter, loc, wTy, op.getWeight(),
                        rewriter.getDenseI64ArrayAttr({0, 0, kh - 1, kw - 1}),
                        rewriter.getDenseI64ArrayAttr({1, 1, -1, -1}));
    const int64_t toOhwi[] = {1, 2, 3, 0};
    wt = transposeOf(rewriter, loc, wt, toOhwi);
    RankedTensorType outTy = op.getType();
    RankedTensorType nhwcTy =
        withShape(op, permuted(outTy.getShape(), kToNhwc));
    if (nhwcTy.getDimSize(1) != hs - dh * (kh - 1) ||
        nhwcTy.getDimSize(2) != ws - dw * (kw - 1) || nhwcTy.getDimSize(3) != o)
      return failure();
    auto conv =
        Conv2dOp::create(rewriter, loc, nhwcTy, x, wt, op.getBias(),
                         rewriter.getDenseI64ArrayAttr({1, 1}),
                         rewriter.getDenseI64ArrayAttr({0, 0, 0, 0}),
                         rewriter.getDenseI64ArrayAttr({dh, dw}),
                         rewriter.getI64IntegerAttr(1), rewriter.getUnitAttr());
    rewriter.replaceOp(op, transposeOf(rewriter, loc, conv, kToNchw));
    return success();
  }

  /// The sub-pixel form, for strides above 1 without dilation: output row
  /// u = q * s + r (u counted from the top pad) sums x[q - m] * w[r + s * m]
  /// over m < ceil((k - r) / s), a stride-1 convolution of x with phase r's
  /// taps reversed. All s_h * s_w phases run as one convolution with the
  /// phases as output channels, ordered (r_h, r_w, o), and an M_h x M_w
  /// kernel (M = ceil(k / s); the taps a short phase lacks are zeros); its
  /// [N, Q_h, Q_w, s_h, s_w, O] result interleaves into [N, Q_h * s_h,
  /// Q_w * s_w, O] and is cropped to the output. Unlike the zero-insertion
  /// form it multiplies no inserted zero: s_h * s_w times fewer products
  /// (U-Net's 2x2 up-convolutions become one 1x1 convolution). The weight's
  /// and the bias's rearrangement work on params alone, so they run at load.
  LogicalResult rewriteByPhases(ConvTranspose2dOp op,
                                PatternRewriter &rewriter) const {
    ArrayRef<int64_t> strides = op.getStrides(), pads = op.getPads();
    if (op.getDilations()[0] != 1 || op.getDilations()[1] != 1 ||
        (strides[0] == 1 && strides[1] == 1))
      return failure();
    auto inTy = cast<RankedTensorType>(op.getInput().getType());
    auto wTy = cast<RankedTensorType>(op.getWeight().getType());
    ArrayRef<int64_t> in = inTy.getShape(), wShape = wTy.getShape();
    RankedTensorType nhwcTy =
        withShape(op, permuted(op.getType().getShape(), kToNhwc));
    int64_t n = in[0], c = in[1], o = wShape[1];
    // Per spatial dim: input size, kernel, stride, top pad, output size,
    // taps per phase and the phase grid's rows.
    int64_t size[2], k[2], s[2], top[2], out[2], taps[2], rows[2];
    for (int d = 0; d < 2; ++d) {
      size[d] = in[2 + d];
      k[d] = wShape[2 + d];
      s[d] = strides[d];
      top[d] = pads[d];
      out[d] = nhwcTy.getDimSize(1 + d);
      taps[d] = llvm::divideCeil(k[d], s[d]);
      rows[d] = llvm::divideCeil(top[d] + out[d], s[d]);
    }
    int64_t phases = s[0] * s[1];
    Location loc = op.getLoc();
    Value x = transposeOf(rewriter, loc, op.getInput(), kToNhwc);
    // Rows q < Q read x[q - m]: rows of x at or past Q are never read.
    if (rows[0] < size[0] || rows[1] < size[1]) {
      size[0] = std::min(size[0], rows[0]);
      size[1] = std::min(size[1], rows[1]);
      x = SliceOp::create(rewriter, loc, withShape(x, {n, size[0], size[1], c}),
                          x, rewriter.getDenseI64ArrayAttr({0, 0, 0, 0}),
                          rewriter.getDenseI64ArrayAttr({1, 1, 1, 1}));
    }
    // [C, O, KH, KW], zeros to M * s taps, split as [C, O, M, s] (tap
    // m * s + r), m reversed, then [(r_h, r_w, O), M_h, M_w, C].
    Value wt = op.getWeight();
    int64_t fullH = taps[0] * s[0], fullW = taps[1] * s[1];
    if (fullH != k[0] || fullW != k[1])
      wt = PadOp::create(rewriter, loc, withShape(wt, {c, o, fullH, fullW}), wt,
                         rewriter.getDenseI64ArrayAttr(
                             {0, 0, 0, 0, 0, 0, fullH - k[0], fullW - k[1]}),
                         rewriter.getF64FloatAttr(0.0));
    wt = reshapeTo(rewriter, loc, wt, {c, o, taps[0], s[0], taps[1], s[1]});
    if (taps[0] > 1 || taps[1] > 1)
      wt = SliceOp::create(
          rewriter, loc, cast<RankedTensorType>(wt.getType()), wt,
          rewriter.getDenseI64ArrayAttr({0, 0, taps[0] - 1, 0, taps[1] - 1, 0}),
          rewriter.getDenseI64ArrayAttr({1, 1, -1, 1, -1, 1}));
    const int64_t toPhasesFirst[] = {3, 5, 1, 2, 4, 0};
    wt = transposeOf(rewriter, loc, wt, toPhasesFirst);
    wt = reshapeTo(rewriter, loc, wt, {phases * o, taps[0], taps[1], c});
    // The bias once per phase (a small derived param, made at load).
    Value bias = op.getBias();
    if (bias) {
      bias = reshapeTo(rewriter, loc, bias, {1, o});
      bias = BroadcastToOp::create(rewriter, loc, withShape(bias, {phases, o}),
                                   bias);
      bias = reshapeTo(rewriter, loc, bias, {phases * o});
    }
    // x[q - m] for m < M: M - 1 rows of zeros on top, and below up to Q.
    auto conv = Conv2dOp::create(
        rewriter, loc, withShape(x, {n, rows[0], rows[1], phases * o}), x, wt,
        bias, rewriter.getDenseI64ArrayAttr({1, 1}),
        rewriter.getDenseI64ArrayAttr(
            {taps[0] - 1, taps[1] - 1, rows[0] - size[0], rows[1] - size[1]}),
        rewriter.getDenseI64ArrayAttr({1, 1}), rewriter.getI64IntegerAttr(1),
        rewriter.getUnitAttr());
    Value y =
        reshapeTo(rewriter, loc, conv, {n, rows[0], rows[1], s[0], s[1], o});
    const int64_t interleave[] = {0, 1, 3, 2, 4, 5};
    y = transposeOf(rewriter, loc, y, interleave);
    y = reshapeTo(rewriter, loc, y, {n, rows[0] * s[0], rows[1] * s[1], o});
    if (rows[0] * s[0] != out[0] || rows[1] * s[1] != out[1])
      y = SliceOp::create(rewriter, loc, nhwcTy, y,
                          rewriter.getDenseI64ArrayAttr({0, top[0], top[1], 0}),
                          rewriter.getDenseI64ArrayAttr({1, 1, 1, 1}));
    rewriter.replaceOp(op, transposeOf(rewriter, loc, y, kToNchw));
    return success();
  }
  std::function<bool(Type)> wanted;
};

//===----------------------------------------------------------------------===//
// Pushing transposes towards the outputs
//===----------------------------------------------------------------------===//

/// pool(transpose(x NHWC -> NCHW)) -> transpose(pool {nhwc}(x)).
template <typename PoolOp> struct PoolToNhwc : OpRewritePattern<PoolOp> {
  using OpRewritePattern<PoolOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(PoolOp op,
                                PatternRewriter &rewriter) const override {
    TransposeOp t = transposeDef(op.getInput());
    if (op.getNhwc() || !t || t.getPerm() != ArrayRef<int64_t>(kToNchw))
      return failure();
    RankedTensorType type =
        withShape(op, permuted(op.getType().getShape(), kToNhwc));
    Operation *pool = rebuild(
        rewriter, op, t.getInput(), type,
        {rewriter.getNamedAttr(op.getNhwcAttrName(), rewriter.getUnitAttr())});
    rewriter.replaceOp(
        op, transposeOf(rewriter, op.getLoc(), pool->getResult(0), kToNchw));
    return success();
  }
};

/// How an operand of an op that a transpose passes through gets to the
/// transpose's input layout.
enum class Operand {
  Transposed, ///< a transpose by the same permutation: its input
  Reshaped,   ///< its permuted form moves nothing ([1, C, 1, 1]): a reshape
  Moved,      ///< a real transpose by the inverse permutation
};

/// The shape of `v` aligned to `rank` at the end, as broadcasting does.
SmallVector<int64_t> alignedShape(Value v, int64_t rank) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(rank - type.getRank(), 1);
  llvm::append_range(shape, type.getShape());
  return shape;
}

std::optional<Operand> classify(Value v, ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  TransposeOp t = transposeDef(v);
  if (t && t.getPerm() == perm)
    return Operand::Transposed;
  if (cast<RankedTensorType>(v.getType()).getRank() > rank)
    return std::nullopt;
  if (isReshape(alignedShape(v, rank), inversePerm(perm)))
    return Operand::Reshaped;
  return Operand::Moved;
}

/// `v` in the transpose's input layout (see Operand). A scalar or all-ones
/// operand of lower rank broadcasts the same way in any layout: unchanged.
Value untransposed(PatternRewriter &rewriter, Location loc, Value v,
                   ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  SmallVector<int64_t> inv = inversePerm(perm);
  SmallVector<int64_t> shape = alignedShape(v, rank);
  switch (*classify(v, perm)) {
  case Operand::Transposed:
    return transposeDef(v).getInput();
  case Operand::Reshaped:
    if (cast<RankedTensorType>(v.getType()).getRank() < rank &&
        llvm::all_of(shape, [](int64_t d) { return d == 1; }))
      return v;
    return reshapeTo(rewriter, loc, v, permuted(shape, inv));
  case Operand::Moved:
    return transposeOf(rewriter, loc, reshapeTo(rewriter, loc, v, shape), inv);
  }
  llvm_unreachable("all operand kinds handled");
}

/// Only transposes from NHWC back to NCHW move: the pass makes them after
/// channels-last ops, and they move towards the outputs, so the rewriting
/// ends. (The NCHW -> NHWC ones before convolutions stay where they are,
/// meeting the others as they arrive.)
bool movable(TransposeOp t) {
  return t && t.getPerm() == ArrayRef<int64_t>(kToNchw);
}

/// f(transpose(a, p), b) -> transpose(f(a, b'), p) for elementwise ops,
/// where b' is b in a's layout: a's own input where b is transposed too, a
/// reshape of a broadcast param, else b transposed, when operands without a
/// transpose are no more than those with one (the transposes at worst move
/// from the result to them: a concat of an NHWC skip connection and an
/// NCHW upsampled tensor gets one transpose, on the latter).
struct PushThroughElementwise : RewritePattern {
  PushThroughElementwise(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isElementwise(op) || op->getNumResults() != 1)
      return failure();
    return pushThrough(rewriter, op, op->getOperands(), {});
  }

  /// Rebuilds `op` on `operands` in the layout before a movable transpose
  /// of one of them, with the result permuted back, its attributes changed
  /// by `attrs` (a function of the permutation).
  static LogicalResult pushThrough(
      PatternRewriter &rewriter, Operation *op, ValueRange operands,
      function_ref<SmallVector<NamedAttribute>(ArrayRef<int64_t>)> attrs) {
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !llvm::any_of(operands, [&](Value v) {
          return movable(transposeDef(v)) && type.getRank() == 4;
        }))
      return failure();
    ArrayRef<int64_t> perm = kToNchw;
    // Check first, so that a refused op leaves nothing behind.
    int64_t transposed = 0, moved = 0;
    for (Value v : operands) {
      std::optional<Operand> kind = classify(v, perm);
      if (!kind)
        return failure();
      transposed += *kind == Operand::Transposed;
      moved += *kind == Operand::Moved;
    }
    if (moved > transposed)
      return failure();
    Location loc = op->getLoc();
    SmallVector<Value> newOperands;
    for (Value v : operands)
      newOperands.push_back(untransposed(rewriter, loc, v, perm));
    SmallVector<NamedAttribute> changed;
    if (attrs)
      changed = attrs(perm);
    Operation *rebuilt = rebuild(
        rewriter, op, newOperands,
        type.clone(permuted(type.getShape(), inversePerm(perm))), changed);
    rewriter.replaceOp(op,
                       transposeOf(rewriter, loc, rebuilt->getResult(0), perm));
    return success();
  }
};

/// The axis of the transpose's input that axis `a` of its result is.
int64_t sourceAxis(ArrayRef<int64_t> perm, int64_t a) { return perm[a]; }

/// concat(transpose(x_i, p), axis) -> transpose(concat(x_i, p[axis]), p).
struct PushThroughConcat : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    // concat does not broadcast: every input has the result's rank.
    return PushThroughElementwise::pushThrough(
        rewriter, op, op.getInputs(), [&](ArrayRef<int64_t> perm) {
          return SmallVector<NamedAttribute>{rewriter.getNamedAttr(
              op.getAxisAttrName(),
              rewriter.getI64IntegerAttr(sourceAxis(perm, op.getAxis())))};
        });
  }
};

/// Per-axis lists follow their axes: out[perm[i]] = in[i].
SmallVector<int64_t> perAxis(ArrayRef<int64_t> values, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> out(values.size());
  for (auto [i, p] : llvm::enumerate(perm))
    out[p] = values[i];
  return out;
}

/// pad and slice: their per-axis attributes permuted.
struct PushThroughPad : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    if (!movable(transposeDef(op.getInput())))
      return failure();
    return PushThroughElementwise::pushThrough(
        rewriter, op, op.getInput(), [&](ArrayRef<int64_t> perm) {
          size_t rank = perm.size();
          ArrayRef<int64_t> pads = op.getPads();
          SmallVector<int64_t> newPads = perAxis(pads.take_front(rank), perm);
          llvm::append_range(newPads, perAxis(pads.drop_front(rank), perm));
          return SmallVector<NamedAttribute>{rewriter.getNamedAttr(
              op.getPadsAttrName(), rewriter.getDenseI64ArrayAttr(newPads))};
        });
  }
};

struct PushThroughSlice : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    if (!movable(transposeDef(op.getInput())))
      return failure();
    return PushThroughElementwise::pushThrough(
        rewriter, op, op.getInput(), [&](ArrayRef<int64_t> perm) {
          return SmallVector<NamedAttribute>{
              rewriter.getNamedAttr(
                  op.getStartsAttrName(),
                  rewriter.getDenseI64ArrayAttr(perAxis(op.getStarts(), perm))),
              rewriter.getNamedAttr(
                  op.getStepsAttrName(),
                  rewriter.getDenseI64ArrayAttr(perAxis(op.getSteps(), perm)))};
        });
  }
};

/// gather(transpose(x, p), idx, axis) with a rank-1 index (the result has
/// the data's axes) -> transpose(gather(x, idx, p[axis]), p): nearest
/// resize is two of these.
struct PushThroughGather : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    TransposeOp t = transposeDef(op.getData());
    if (!movable(t) ||
        cast<RankedTensorType>(op.getIndices().getType()).getRank() != 1)
      return failure();
    ArrayRef<int64_t> perm = t.getPerm();
    Location loc = op.getLoc();
    auto type = op.getType();
    Operation *moved =
        rebuild(rewriter, op, {t.getInput(), op.getIndices()},
                type.clone(permuted(type.getShape(), inversePerm(perm))),
                {rewriter.getNamedAttr(op.getAxisAttrName(),
                                       rewriter.getI64IntegerAttr(
                                           sourceAxis(perm, op.getAxis())))});
    rewriter.replaceOp(op,
                       transposeOf(rewriter, loc, moved->getResult(0), perm));
    return success();
  }
};

/// reduce(transpose(x, p), axes, keepdims) -> transpose(reduce(x, p[axes]),
/// p): the reduced axes stay as size 1 where the permutation puts them.
template <typename ReduceOp>
struct PushThroughReduce : OpRewritePattern<ReduceOp> {
  using OpRewritePattern<ReduceOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    if (!movable(transposeDef(op.getInput())) || !op.getKeepdims())
      return failure();
    return PushThroughElementwise::pushThrough(
        rewriter, op, op.getInput(), [&](ArrayRef<int64_t> perm) {
          SmallVector<int64_t> axes;
          for (int64_t a : op.getAxes())
            axes.push_back(sourceAxis(perm, a));
          llvm::sort(axes);
          return SmallVector<NamedAttribute>{rewriter.getNamedAttr(
              op.getAxesAttrName(), rewriter.getDenseI64ArrayAttr(axes))};
        });
  }
};

/// batch_norm(transpose(x)) as elementwise ops x * mul + add with [1, C,
/// 1, ...] coefficients (batchNormCoefficients, in f32 for narrow types and
/// rounded once, as the batch_norm lowering computes it), which the
/// transpose then passes through.
struct DecomposeTransposedBatchNorm : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    if (!movable(transposeDef(op.getInput())))
      return failure();
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    BatchNormCoefficients k = batchNormCoefficients(rewriter, op);
    SmallVector<int64_t> shape(type.getRank(), 1);
    shape[1] = type.getShape()[1];
    Value mul = reshapeTo(rewriter, loc, k.mul, shape);
    Value add = reshapeTo(rewriter, loc, k.add, shape);
    Value x = castElements(rewriter, loc, op.getInput(), k.compute);
    Value y = MulOp::create(rewriter, loc, x.getType(), x, mul);
    y = AddOp::create(rewriter, loc, x.getType(), y, add);
    rewriter.replaceOp(op,
                       castElements(rewriter, loc, y, type.getElementType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Transposes that move nothing
//===----------------------------------------------------------------------===//

/// [N, 1, 1, C] -> [N, C, 1, 1] and the like: a reshape.
struct TransposeToReshape : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!isReshape(op.getInput().getType().getShape(), op.getPerm()))
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
    return success();
  }
};

struct TccConvLayout : mlir::tcc::impl::TccConvLayoutBase<TccConvLayout> {
  using TccConvLayoutBase::TccConvLayoutBase;
  void runOnOperation() override {
    if (layout != "auto" && layout != "nhwc" && layout != "nchw") {
      getOperation().emitError("unknown conv layout '")
          << layout << "' (known: auto, nchw, nhwc)";
      return signalPassFailure();
    }
    if (layout == "nchw")
      return;
    bool all = layout == "nhwc";
    bool cores = tensorCores, tf32 = allowTf32;
    auto wanted = [all, cores, tf32](Conv2dOp op) {
      return all || (cores &&
                     convUsesTensorCores(op.getType().getElementType(), tf32));
    };
    auto wantedType = [all, cores, tf32](Type elt) {
      return all || (cores && convUsesTensorCores(elt, tf32));
    };
    bool any = false;
    getOperation().walk(
        [&](Conv2dOp op) { any |= !op.getNhwc() && wanted(op); });
    getOperation().walk([&](ConvTranspose2dOp op) {
      any |= op.getGroups() == 1 && wantedType(op.getType().getElementType());
    });
    if (!any)
      return;
    MLIRContext *ctx = &getContext();
    RewritePatternSet push(ctx);
    push.add<ConvToNhwc>(ctx, wanted);
    push.add<ConvTransposeToNhwc>(ctx, wantedType);
    push.add<PoolToNhwc<MaxPool2dOp>, PoolToNhwc<AvgPool2dOp>,
             PoolToNhwc<GlobalAvgPool2dOp>, PushThroughElementwise,
             PushThroughConcat, PushThroughPad, PushThroughSlice,
             PushThroughGather, PushThroughReduce<ReduceSumOp>,
             PushThroughReduce<ReduceMaxOp>, PushThroughReduce<ReduceMinOp>,
             PushThroughReduce<ReduceMeanOp>, DecomposeTransposedBatchNorm>(
        ctx);
    // Every rule moves an NHWC -> NCHW transpose down or removes one, so
    // the rewriting ends; a deep net (DenseNet's 120 convolutions) may need
    // more sweeps than the default ten.
    GreedyRewriteConfig config;
    config.setMaxIterations(GreedyRewriteConfig::kNoLimit)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(push), config)))
      return signalPassFailure();
    // Only once nothing moves: a transpose that became a reshape would no
    // longer pass through the ops after it.
    RewritePatternSet reshapes(ctx);
    reshapes.add<TransposeToReshape>(ctx);
    addReshapeFolds(reshapes);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(reshapes), config)))
      signalPassFailure();
  }
};

} // namespace
