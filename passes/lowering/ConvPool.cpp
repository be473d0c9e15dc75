//===- ConvPool.cpp - lower convolution, pooling and batch_norm -----------===//
//
// NCHW, and channels last (`nhwc`) for conv2d and the pools. Convolutions
// are linalg.generics over the grouped layout of linalg.conv_2d_ngchw_gfchw
// (input [N, G, C/G, H, W], filter [G, O/G, C/G, KH, KW]; nhwc: input
// [N, H, W, G, C/G], filter [G, O/G, KH, KW, C/G]) reached with expand_shape
// views, reading an explicitly padded input; they accumulate in the compute
// type and add the bias in the epilogue that rounds to the result type. Both
// layouts compute every output element with the same products summed in the
// same (c, kh, kw) set, so they agree up to summation order. A transposed
// convolution is a convolution of the stride-dilated, padded input with the
// spatially flipped kernel. Pooling windows read a padded input through
// `oh * stride + kh` maps; an unused [KH, KW] operand gives the window loops
// their bounds, as linalg's own pooling ops do.
//
//===----------------------------------------------------------------------===//
#include "passes/lowering/Patterns.h"
#include "passes/lowering/Utils.h"

#include "ir/TccOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::lowering;

namespace {

/// The axes of H and W: 2, 3 in NCHW, 1, 2 in NHWC.
std::pair<int64_t, int64_t> spatialAxes(bool nhwc) {
  return nhwc ? std::make_pair(1, 2) : std::make_pair(2, 3);
}

/// `input` [N, C, H, W] ([N, H, W, C] when `nhwc`) placed at (top, left) in
/// a tensor of height h and width w filled with `value`; the strides space
/// the input's rows and columns out (for transposed convolutions).
Value padSpatial(OpBuilder &b, Location loc, Value input, int64_t h, int64_t w,
                 int64_t top, int64_t left, Value value, int64_t strideH = 1,
                 int64_t strideW = 1, bool nhwc = false) {
  ArrayRef<int64_t> s = tensorTypeOf(input).getShape();
  auto [ah, aw] = spatialAxes(nhwc);
  if (h == s[ah] && w == s[aw] && strideH == 1 && strideW == 1)
    return input;
  SmallVector<int64_t> shape(s), offsets(4, 0), strides(4, 1);
  shape[ah] = h;
  shape[aw] = w;
  offsets[ah] = top;
  offsets[aw] = left;
  strides[ah] = strideH;
  strides[aw] = strideW;
  return padTensor(b, loc, input, shape, offsets, strides, value);
}

/// Splits dimension `dim` of `t` into [groups, size / groups].
Value splitGroups(OpBuilder &b, Location loc, Value t, int64_t dim,
                  int64_t groups) {
  RankedTensorType ty = tensorTypeOf(t);
  SmallVector<int64_t> shape(ty.getShape());
  shape[dim] /= groups;
  shape.insert(shape.begin() + dim, groups);
  SmallVector<ReassociationIndices> reassoc;
  for (int64_t d = 0, e = ty.getRank(); d < e; ++d) {
    if (d < dim)
      reassoc.push_back({d});
    else if (d == dim)
      reassoc.push_back({d, d + 1});
    else
      reassoc.push_back({d + 1});
  }
  return tensor::ExpandShapeOp::create(b, loc, ty.clone(shape), t, reassoc);
}

/// The channel-vector map (d0, d1, ...) -> (d`channel`).
AffineMap channelMap(unsigned rank, MLIRContext *ctx, unsigned channel = 1) {
  return AffineMap::get(rank, 0, getAffineDimExpr(channel, ctx), ctx);
}

/// acc [N, O, H, W] ([N, H, W, O] when `nhwc`) (+ bias[O]) rounded to the
/// result type.
Value convEpilogue(OpBuilder &b, Location loc, Value acc, Value bias,
                   RankedTensorType resultType, bool nhwc = false) {
  Type elt = resultType.getElementType();
  if (!bias)
    return convertTensor(b, loc, acc, elt);
  MLIRContext *ctx = b.getContext();
  Value init = emptyTensor(b, loc, resultType.getShape(), elt);
  AffineMap id = AffineMap::getMultiDimIdentityMap(4, ctx);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, ValueRange{acc, bias}, init,
      SmallVector<AffineMap>{id, channelMap(4, ctx, nhwc ? 3 : 1), id},
      parallelIterators(4), [&](OpBuilder &nb, Location nl, ValueRange a) {
        ImplicitLocOpBuilder ib(nl, nb);
        Value sum = arith::AddFOp::create(ib, a[0], toCompute(ib, a[1]));
        linalg::YieldOp::create(ib, convertScalar(ib, sum, elt));
      });
  return generic.getResult(0);
}

/// The grouped convolution shared by conv2d and conv_transpose2d:
/// out[n, g, f, y, x] += in[n, g, c, inH(y, kh), inW(x, kw)] *
/// filter[filterMap(g, f, c, kh, kw)], returning acc as [N, G*F, OH, OW].
/// With `nhwc` the loops are (n, y, x, g, f, kh, kw, c), the accumulator
/// [N, OH, OW, G, F] and the result [N, OH, OW, G*F]. The maps are over
/// those loops.
Value groupedConv(OpBuilder &b, Location loc, Value in, Value filter,
                  AffineMap inMap, AffineMap filterMap,
                  ArrayRef<int64_t> outShape, int64_t groups, Type acc,
                  bool nhwc = false) {
  MLIRContext *ctx = b.getContext();
  int64_t n = outShape[0];
  SmallVector<int64_t> accShape =
      nhwc ? SmallVector<int64_t>{n, outShape[1], outShape[2], groups,
                                  outShape[3] / groups}
           : SmallVector<int64_t>{n, groups, outShape[1] / groups, outShape[2],
                                  outShape[3]};
  Value init = filledTensor(b, loc, accShape, scalarConstant(b, loc, acc, 0));
  SmallVector<AffineExpr> outExprs;
  for (unsigned d = 0; d < 5; ++d)
    outExprs.push_back(getAffineDimExpr(d, ctx));
  SmallVector<utils::IteratorType> iters = parallelIterators(5);
  iters.append(3, utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{in, filter}, init,
      SmallVector<AffineMap>{inMap, filterMap,
                             AffineMap::get(8, 0, outExprs, ctx)},
      iters, [&](OpBuilder &nb, Location nl, ValueRange a) {
        ImplicitLocOpBuilder ib(nl, nb);
        Value x = convertScalar(ib, a[0], acc);
        Value w = convertScalar(ib, a[1], acc);
        Value prod = arith::MulFOp::create(ib, x, w);
        Value sum = arith::AddFOp::create(ib, a[2], prod);
        linalg::YieldOp::create(ib, sum);
      });
  SmallVector<ReassociationIndices> merge =
      nhwc ? SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}}
           : SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}};
  auto flatType = RankedTensorType::get(outShape, acc);
  return tensor::CollapseShapeOp::create(b, loc, flatType, generic.getResult(0),
                                         merge);
}

struct Conv2dLowering : OpRewritePattern<Conv2dOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Conv2dOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = op.getInput();
    ArrayRef<int64_t> xs = tensorTypeOf(x).getShape();
    ArrayRef<int64_t> pads = op.getPads(), st = op.getStrides(),
                      dil = op.getDilations();
    int64_t groups = op.getGroups();
    bool nhwc = op.getNhwc();
    auto [ah, aw] = spatialAxes(nhwc);
    Type elt = tensorTypeOf(x).getElementType();
    Type acc = computeType(elt);

    Value padded =
        padSpatial(rewriter, loc, x, xs[ah] + pads[0] + pads[2],
                   xs[aw] + pads[1] + pads[3], pads[0], pads[1],
                   scalarConstant(rewriter, loc, elt, 0), 1, 1, nhwc);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap inMap, filterMap;
    Value in, filter;
    if (nhwc) {
      // [N, H, W, G, C/G] x [G, O/G, KH, KW, C/G]; loops n, oh, ow, g, f,
      // kh, kw, c: the channels are innermost in both operands.
      in = splitGroups(rewriter, loc, padded, 3, groups);
      filter = splitGroups(rewriter, loc, op.getWeight(), 0, groups);
      inMap = AffineMap::get(8, 0,
                             {d(0), d(1) * st[0] + d(5) * dil[0],
                              d(2) * st[1] + d(6) * dil[1], d(3), d(7)},
                             ctx);
      filterMap = AffineMap::get(8, 0, {d(3), d(4), d(5), d(6), d(7)}, ctx);
    } else {
      in = splitGroups(rewriter, loc, padded, 1, groups);
      filter = splitGroups(rewriter, loc, op.getWeight(), 0, groups);
      // Loops: n, g, f, oh, ow, c, kh, kw.
      inMap = AffineMap::get(8, 0,
                             {d(0), d(1), d(5), d(3) * st[0] + d(6) * dil[0],
                              d(4) * st[1] + d(7) * dil[1]},
                             ctx);
      filterMap = AffineMap::get(8, 0, {d(1), d(2), d(5), d(6), d(7)}, ctx);
    }
    Value accT = groupedConv(rewriter, loc, in, filter, inMap, filterMap,
                             op.getType().getShape(), groups, acc, nhwc);
    rewriter.replaceOp(op, convEpilogue(rewriter, loc, accT, op.getBias(),
                                        op.getType(), nhwc));
    return success();
  }
};

/// Transposed convolution: the input, its rows and columns spaced `stride`
/// apart, sits inside a zero border of dilation * (k - 1) (plus
/// output_padding at the end); then out[y] = sum z[y + padTop + dilation *
/// (k - 1 - kh)] * w[kh], i.e. a convolution with the flipped kernel.
struct ConvTranspose2dLowering : OpRewritePattern<ConvTranspose2dOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvTranspose2dOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = op.getInput();
    ArrayRef<int64_t> xs = tensorTypeOf(x).getShape();
    ArrayRef<int64_t> ws = tensorTypeOf(op.getWeight()).getShape();
    ArrayRef<int64_t> pads = op.getPads(), st = op.getStrides(),
                      dil = op.getDilations(), outPad = op.getOutputPadding();
    int64_t groups = op.getGroups();
    Type elt = tensorTypeOf(x).getElementType();
    Type acc = computeType(elt);

    int64_t borderH = dil[0] * (ws[2] - 1), borderW = dil[1] * (ws[3] - 1);
    int64_t zh = (xs[2] - 1) * st[0] + 1 + 2 * borderH + outPad[0];
    int64_t zw = (xs[3] - 1) * st[1] + 1 + 2 * borderW + outPad[1];
    Value z = padSpatial(rewriter, loc, x, zh, zw, borderH, borderW,
                         scalarConstant(rewriter, loc, elt, 0), st[0], st[1]);
    Value in = splitGroups(rewriter, loc, z, 1, groups);
    // Weight [C, O/G, KH, KW] -> [G, C/G, O/G, KH, KW].
    Value filter = splitGroups(rewriter, loc, op.getWeight(), 0, groups);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap inMap = AffineMap::get(
        8, 0,
        {d(0), d(1), d(5), d(3) + (pads[0] + borderH) - d(6) * dil[0],
         d(4) + (pads[1] + borderW) - d(7) * dil[1]},
        ctx);
    AffineMap filterMap =
        AffineMap::get(8, 0, {d(1), d(5), d(2), d(6), d(7)}, ctx);
    Value accT = groupedConv(rewriter, loc, in, filter, inMap, filterMap,
                             op.getType().getShape(), groups, acc);
    rewriter.replaceOp(
        op, convEpilogue(rewriter, loc, accT, op.getBias(), op.getType()));
    return success();
  }
};

/// Shared by the pooling ops: a generic over [N, C, OH, OW, KH, KW] reading
/// `padded` at (oh * sh + kh, ow * sw + kw); with `nhwc` over
/// [N, OH, OW, C, KH, KW].
Value poolWindow(OpBuilder &b, Location loc, Value padded,
                 ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                 ArrayRef<int64_t> outShape, Value init, CombineFn combine,
                 bool nhwc = false) {
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  unsigned lh = nhwc ? 1 : 2, lw = lh + 1;
  SmallVector<AffineExpr> in = {d(0), d(1), d(2), d(3)};
  in[lh] = d(lh) * strides[0] + d(4);
  in[lw] = d(lw) * strides[1] + d(5);
  AffineMap inMap = AffineMap::get(6, 0, in, ctx);
  AffineMap windowMap = AffineMap::get(6, 0, {d(4), d(5)}, ctx);
  AffineMap outMap = AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx);
  Value window = emptyTensor(b, loc, kernel, b.getI8Type());
  Value acc = filledTensor(b, loc, outShape, init);
  SmallVector<utils::IteratorType> iters = parallelIterators(4);
  iters.append(2, utils::IteratorType::reduction);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{acc.getType()}, ValueRange{padded, window}, acc,
      SmallVector<AffineMap>{inMap, windowMap, outMap}, iters,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        ImplicitLocOpBuilder ib(nl, nb);
        linalg::YieldOp::create(ib, combine(ib, a[0], a[2]));
      });
  return generic.getResult(0);
}

/// The input padded to cover every window: pads at the start, and at the end
/// whatever the last window (ceil_mode may push it past the end padding)
/// needs.
template <typename OpTy>
Value padForPooling(OpBuilder &b, OpTy op, Value value) {
  ArrayRef<int64_t> xs = tensorTypeOf(op.getInput()).getShape();
  ArrayRef<int64_t> out = op.getType().getShape();
  ArrayRef<int64_t> pads = op.getPads(), st = op.getStrides(),
                    k = op.getKernel();
  auto [ah, aw] = spatialAxes(op.getNhwc());
  int64_t h = std::max((out[ah] - 1) * st[0] + k[0], pads[0] + xs[ah]);
  int64_t w = std::max((out[aw] - 1) * st[1] + k[1], pads[1] + xs[aw]);
  return padSpatial(b, op.getLoc(), op.getInput(), h, w, pads[0], pads[1],
                    value, 1, 1, op.getNhwc());
}

/// The output element a 4-D all-parallel generic's body is at.
SmallVector<Value> outputPosition(ImplicitLocOpBuilder &b) {
  SmallVector<Value> at;
  for (int64_t d = 0; d < 4; ++d)
    at.push_back(linalg::IndexOp::create(b, d));
  return at;
}

/// Windows of at most this many taps are unrolled (directPool).
constexpr int64_t kMaxUnrolledTaps = 64;

/// The pool as one all-parallel generic over the output whose body walks
/// the window's taps unrolled: a tap inside the image reads the input
/// (tensor.extract at oh * sh - pad_top + kh, ...), one outside it
/// contributes `outside` instead, and `finish` turns the accumulator
/// (combined from `init` in (kh, kw) order) into the output element. One
/// loop nest, where a padded copy and a reduction over the window are three
/// (the copy, the accumulator's fill, the window loop): on a GPU three
/// launches, at batch 1 each costing more than the pool's work.
template <typename OpTy>
Value directPool(
    OpBuilder &b, OpTy op, Value init, Value outside, CombineFn combine,
    function_ref<Value(ImplicitLocOpBuilder &, Value acc)> finish) {
  Value input = op.getInput();
  ArrayRef<int64_t> xs = tensorTypeOf(input).getShape();
  ArrayRef<int64_t> k = op.getKernel(), st = op.getStrides(),
                    pads = op.getPads();
  // Plain variables: the body's lambda captures them.
  int64_t ah = spatialAxes(op.getNhwc()).first,
          aw = spatialAxes(op.getNhwc()).second;
  return buildElementwise(
      b, op.getLoc(), ValueRange{}, op.getType(),
      [&](ImplicitLocOpBuilder &ib, ValueRange) {
        auto index = [&](int64_t v) {
          return arith::ConstantIndexOp::create(ib, v);
        };
        SmallVector<Value> at = outputPosition(ib);
        // The window's first row and column (may be negative), and for
        // each tap offset whether it is inside the image.
        auto origin = [&](int64_t axis, int64_t attr) {
          Value scaled = arith::MulIOp::create(ib, at[axis], index(st[attr]));
          return arith::SubIOp::create(ib, scaled, index(pads[attr]));
        };
        Value top = origin(ah, 0), left = origin(aw, 1);
        auto inside = [&](Value first, int64_t tap, int64_t size,
                          Value &pos) -> Value {
          pos = arith::AddIOp::create(ib, first, index(tap));
          Value lo = arith::CmpIOp::create(ib, arith::CmpIPredicate::sge, pos,
                                           index(0));
          Value hi = arith::CmpIOp::create(ib, arith::CmpIPredicate::slt, pos,
                                           index(size));
          Value ok = arith::AndIOp::create(ib, lo, hi);
          // Clamped, so that the load stays in bounds where it is unused.
          pos = arith::SelectOp::create(ib, ok, pos, index(0));
          return ok;
        };
        SmallVector<Value> rows, rowOk, cols, colOk;
        for (int64_t i = 0; i < k[0]; ++i) {
          Value pos;
          rowOk.push_back(inside(top, i, xs[ah], pos));
          rows.push_back(pos);
        }
        for (int64_t j = 0; j < k[1]; ++j) {
          Value pos;
          colOk.push_back(inside(left, j, xs[aw], pos));
          cols.push_back(pos);
        }
        Value acc = init;
        for (int64_t i = 0; i < k[0]; ++i) {
          for (int64_t j = 0; j < k[1]; ++j) {
            SmallVector<Value> tap(at);
            tap[ah] = rows[i];
            tap[aw] = cols[j];
            Value x = toCompute(ib, tensor::ExtractOp::create(ib, input, tap));
            Value ok = arith::AndIOp::create(ib, rowOk[i], colOk[j]);
            acc = combine(ib, arith::SelectOp::create(ib, ok, x, outside), acc);
          }
        }
        return finish(ib, acc);
      });
}

/// Whether `op` takes directPool: a small static window.
template <typename OpTy> bool unrollsWindow(OpTy op) {
  ArrayRef<int64_t> k = op.getKernel();
  return k.size() == 2 && k[0] * k[1] <= kMaxUnrolledTaps &&
         tensorTypeOf(op.getInput()).hasStaticShape() &&
         op.getType().hasStaticShape();
}

/// Padding holds the type's lowest value, which never beats a real element
/// (every window holds one); maximumf propagates NaN.
struct MaxPool2dLowering : OpRewritePattern<MaxPool2dOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaxPool2dOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type elt = op.getType().getElementType();
    Type acc = computeType(elt);
    auto maximum = [](ImplicitLocOpBuilder &b, Value x, Value a) -> Value {
      return arith::MaximumFOp::create(b, a, x);
    };
    if (unrollsWindow(op)) {
      Value lowest = extremeConstant(rewriter, loc, acc, /*highest=*/false);
      rewriter.replaceOp(op, directPool(rewriter, op, lowest, lowest, maximum,
                                        [&](ImplicitLocOpBuilder &b, Value a) {
                                          return convertScalar(b, a, elt);
                                        }));
      return success();
    }
    Value padded = padForPooling(
        rewriter, op, extremeConstant(rewriter, loc, elt, /*highest=*/false));
    Value r = poolWindow(
        rewriter, loc, padded, op.getKernel(), op.getStrides(),
        op.getType().getShape(), extremeConstant(rewriter, loc, acc, false),
        [](ImplicitLocOpBuilder &b, Value x, Value a) -> Value {
          return arith::MaximumFOp::create(b, a, toCompute(b, x));
        },
        op.getNhwc());
    rewriter.replaceOp(op, convertTensor(rewriter, loc, r, elt));
    return success();
  }
};

/// Sums over zero-padded windows, then divides by the PyTorch divisor: the
/// window clipped to the padded input (count_include_pad) or to the input.
struct AvgPool2dLowering : OpRewritePattern<AvgPool2dOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AvgPool2dOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type elt = type.getElementType();
    Type acc = computeType(elt);
    ArrayRef<int64_t> xs = tensorTypeOf(op.getInput()).getShape();
    SmallVector<int64_t> pads(op.getPads()), st(op.getStrides()),
        k(op.getKernel());
    bool includePad = op.getCountIncludePad();
    // Plain variables: the divisor's lambda captures them.
    int64_t ah = spatialAxes(op.getNhwc()).first,
            aw = spatialAxes(op.getNhwc()).second;
    // The window's sum divided by its divisor, at the output position the
    // enclosing generic is at.
    auto average =
        [&](ImplicitLocOpBuilder &b, Value sum) {
          Type i64 = b.getI64Type();
          auto c = [&](int64_t v) { return intConstant(b, loc, i64, v); };
          // Window extent along one axis, from the output index.
          auto extent = [&](unsigned dim, int axis) -> Value {
            Value o = arith::IndexCastOp::create(
                b, i64, linalg::IndexOp::create(b, dim));
            Value stride = c(st[axis]), padBegin = c(pads[axis]);
            Value size = c(k[axis]);
            int64_t inSize = xs[axis ? aw : ah];
            Value paddedEnd = c(inSize + pads[axis + 2]);
            Value scaled = arith::MulIOp::create(b, o, stride);
            Value start = arith::SubIOp::create(b, scaled, padBegin);
            Value windowEnd = arith::AddIOp::create(b, start, size);
            Value end = arith::MinSIOp::create(b, windowEnd, paddedEnd);
            if (!includePad) {
              Value zero = c(0), inEnd = c(inSize);
              start = arith::MaxSIOp::create(b, start, zero);
              end = arith::MinSIOp::create(b, end, inEnd);
            }
            return arith::SubIOp::create(b, end, start);
          };
          Value rows = extent(ah, 0);
          Value cols = extent(aw, 1);
          Value count = arith::MulIOp::create(b, rows, cols);
          Value divisor = arith::SIToFPOp::create(b, acc, count);
          return convertScalar(b, arith::DivFOp::create(b, sum, divisor), elt);
        };
    Value zero = scalarConstant(rewriter, loc, acc, 0);
    auto add = [](ImplicitLocOpBuilder &b, Value x, Value a) -> Value {
      return arith::AddFOp::create(b, a, x);
    };
    if (unrollsWindow(op)) {
      rewriter.replaceOp(op,
                         directPool(rewriter, op, zero, zero, add, average));
      return success();
    }
    Value padded =
        padForPooling(rewriter, op, scalarConstant(rewriter, loc, elt, 0));
    Value sum = poolWindow(
        rewriter, loc, padded, k, st, type.getShape(), zero,
        [&](ImplicitLocOpBuilder &b, Value x, Value a) -> Value {
          return add(b, toCompute(b, x), a);
        },
        op.getNhwc());
    Value r = buildElementwise(rewriter, loc, sum, type,
                               [&](ImplicitLocOpBuilder &b, ValueRange a) {
                                 return average(b, a[0]);
                               });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Images of at most this many pixels take directGlobalPool.
constexpr int64_t kMaxDirectImage = 1024;

/// A global average pool as one all-parallel generic over the output, each
/// element summing its channel's image in a loop (in `acc`): one loop nest
/// where a reduction is three (the accumulator's fill, the sum, the
/// division); a CNN's head at batch 1 pools a 7x7 or 13x13 image, far less
/// work than the launches.
Value directGlobalPool(OpBuilder &b, GlobalAvgPool2dOp op, Type acc,
                       double count) {
  Value input = op.getInput();
  ArrayRef<int64_t> xs = tensorTypeOf(input).getShape();
  int64_t ah = spatialAxes(op.getNhwc()).first,
          aw = spatialAxes(op.getNhwc()).second;
  Type elt = op.getType().getElementType();
  return buildElementwise(
      b, op.getLoc(), ValueRange{}, op.getType(),
      [&](ImplicitLocOpBuilder &ib, ValueRange) {
        auto index = [&](int64_t v) {
          return arith::ConstantIndexOp::create(ib, v);
        };
        SmallVector<Value> at = outputPosition(ib);
        Value zero = scalarConstant(ib, ib.getLoc(), acc, 0);
        auto loop = scf::ForOp::create(
            ib, index(0), index(xs[ah] * xs[aw]), index(1), ValueRange{zero},
            [&](OpBuilder &nb, Location nl, Value pixel, ValueRange sum) {
              ImplicitLocOpBuilder lb(nl, nb);
              SmallVector<Value> tap(at);
              Value width = arith::ConstantIndexOp::create(lb, xs[aw]);
              tap[ah] = arith::DivUIOp::create(lb, pixel, width);
              tap[aw] = arith::RemUIOp::create(lb, pixel, width);
              Value x =
                  toCompute(lb, tensor::ExtractOp::create(lb, input, tap));
              if (x.getType() != acc)
                x = arith::ExtFOp::create(lb, acc, x);
              scf::YieldOp::create(
                  lb, ValueRange{arith::AddFOp::create(lb, sum[0], x)});
            });
        Value n = scalarConstant(ib, ib.getLoc(), acc, count);
        return convertScalar(
            ib, arith::DivFOp::create(ib, loop.getResult(0), n), elt);
      });
}

struct GlobalAvgPool2dLowering : OpRewritePattern<GlobalAvgPool2dOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GlobalAvgPool2dOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type elt = type.getElementType();
    // A mean over the whole image: accumulated in f64 as reduce_mean is, so
    // large images keep f32 accuracy (see Reductions.cpp).
    Type acc = rewriter.getF64Type();
    ArrayRef<int64_t> xs = tensorTypeOf(op.getInput()).getShape();
    auto [ah, aw] = spatialAxes(op.getNhwc());
    Value sum = buildReduction(
        rewriter, loc, op.getInput(), {ah, aw}, /*keepdims=*/true,
        scalarConstant(rewriter, loc, acc, 0),
        [acc](ImplicitLocOpBuilder &b, Value x, Value a) -> Value {
          Value wide = toCompute(b, x);
          if (wide.getType() != acc)
            wide = arith::ExtFOp::create(b, acc, wide);
          return arith::AddFOp::create(b, a, wide);
        });
    double count = (double)(xs[ah] * xs[aw]);
    if (xs[ah] * xs[aw] <= kMaxDirectImage && type.hasStaticShape()) {
      rewriter.replaceOp(op, directGlobalPool(rewriter, op, acc, count));
      return success();
    }
    Value r = buildElementwise(
        rewriter, loc, sum, type, [&](ImplicitLocOpBuilder &b, ValueRange a) {
          Value n = scalarConstant(b, loc, acc, count);
          return convertScalar(b, arith::DivFOp::create(b, a[0], n), elt);
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// (x - mean) * rsqrt(var + eps) * scale + bias, per channel (axis 1).
struct BatchNormLowering : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = op.getType();
    unsigned rank = type.getRank();
    Type elt = type.getElementType();
    double eps = op.getEps().convertToDouble();
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap ch = channelMap(rank, ctx);
    Value init = emptyTensor(rewriter, loc, type.getShape(), elt);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type},
        ValueRange{op.getInput(), op.getScale(), op.getBias(), op.getMean(),
                   op.getVar()},
        init, SmallVector<AffineMap>{id, ch, ch, ch, ch, id},
        parallelIterators(rank), [&](OpBuilder &nb, Location nl, ValueRange a) {
          ImplicitLocOpBuilder b(nl, nb);
          Value x = toCompute(b, a[0]), scale = toCompute(b, a[1]),
                bias = toCompute(b, a[2]), mean = toCompute(b, a[3]),
                var = toCompute(b, a[4]);
          Value e = scalarConstant(b, nl, x.getType(), eps);
          Value inv =
              math::RsqrtOp::create(b, arith::AddFOp::create(b, var, e));
          Value y = arith::MulFOp::create(
              b, arith::MulFOp::create(b, arith::SubFOp::create(b, x, mean),
                                       inv),
              scale);
          y = arith::AddFOp::create(b, y, bias);
          linalg::YieldOp::create(b, convertScalar(b, y, elt));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void mlir::tcc::populateConvPoolLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<Conv2dLowering, ConvTranspose2dLowering, MaxPool2dLowering,
               AvgPool2dLowering, GlobalAvgPool2dLowering, BatchNormLowering>(
      patterns.getContext());
}
