//===- Utils.cpp - helpers shared by the tcc lowering patterns -----------===//
//
// The f8 conversions are written with integer operations: the LLVM lowering
// of arith.extf/truncf does not handle f8 types (and only some GPUs convert
// f8 natively), and integer code is the same on every target. f16 and bf16
// use arith.extf/truncf, which LLVM and `arith-expand{include-bf16}` lower
// with round-to-nearest-even. docs/numerics.md has the rules.
//
//===----------------------------------------------------------------------===//
#include "passes/lowering/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace mlir::tcc::lowering {

bool isF8(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }

bool isNarrowFloat(Type t) { return t.isF16() || t.isBF16() || isF8(t); }

Type computeType(Type t) {
  return isNarrowFloat(t) ? Float32Type::get(t.getContext()) : t;
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

Value intConstant(OpBuilder &b, Location loc, Type type, int64_t v) {
  if (type.isIndex())
    return arith::ConstantIndexOp::create(b, loc, v);
  unsigned width = cast<IntegerType>(type).getWidth();
  APInt value(width, (uint64_t)v, /*isSigned=*/true, /*implicitTrunc=*/true);
  return arith::ConstantOp::create(b, loc, IntegerAttr::get(type, value));
}

static Value floatConstant(OpBuilder &b, Location loc, Type type, double v) {
  return arith::ConstantOp::create(b, loc, scalarAttr(type, v));
}

TypedAttr scalarAttr(Type type, double v) {
  if (auto it = dyn_cast<IntegerType>(type)) {
    unsigned w = it.getWidth();
    if (w == 1)
      return IntegerAttr::get(type, APInt(1, v != 0 ? 1 : 0));
    APInt x = APInt::getZero(w); // NaN stays 0
    double lim = std::ldexp(1.0, w - 1);
    if (v >= lim)
      x = APInt::getSignedMaxValue(w);
    else if (v < -lim)
      x = APInt::getSignedMinValue(w);
    else if (!std::isnan(v))
      x = APInt(w, (uint64_t)(int64_t)std::trunc(v), /*isSigned=*/true,
                /*implicitTrunc=*/true);
    return IntegerAttr::get(type, x);
  }
  auto ft = cast<FloatType>(type);
  const llvm::fltSemantics &sem = ft.getFloatSemantics();
  bool negative = std::signbit(v);
  if (std::isnan(v))
    return FloatAttr::get(type, APFloat::getNaN(sem, negative));
  APFloat r(v);
  bool losesInfo = false;
  r.convert(sem, APFloat::rmNearestTiesToEven, &losesInfo);
  if (isF8(type)) {
    // f8 saturates finite overflow; only e5m2 can hold an infinity.
    bool keepInf = std::isinf(v) && isa<Float8E5M2Type>(type);
    if (!keepInf && (r.isInfinity() || r.isNaN()))
      r = APFloat::getLargest(sem, negative);
  }
  return FloatAttr::get(type, r);
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double v) {
  return arith::ConstantOp::create(b, loc, scalarAttr(type, v));
}

Value extremeConstant(OpBuilder &b, Location loc, Type type, bool highest) {
  if (auto it = dyn_cast<IntegerType>(type)) {
    unsigned w = it.getWidth();
    APInt x = w == 1 ? APInt(1, highest ? 1 : 0)
                     : (highest ? APInt::getSignedMaxValue(w)
                                : APInt::getSignedMinValue(w));
    return arith::ConstantOp::create(b, loc, IntegerAttr::get(type, x));
  }
  const llvm::fltSemantics &sem = cast<FloatType>(type).getFloatSemantics();
  APFloat x = isa<Float8E4M3FNType>(type)
                  ? APFloat::getLargest(sem, /*Negative=*/!highest)
                  : APFloat::getInf(sem, /*Negative=*/!highest);
  return arith::ConstantOp::create(b, loc, FloatAttr::get(type, x));
}

//===----------------------------------------------------------------------===//
// Narrow float conversions
//===----------------------------------------------------------------------===//

namespace {
/// Bit layout of a float narrower than f32 and how it overflows; the same
/// rules as runtime/src/DType.cpp, which the frontend and runtime use.
struct SmallFloat {
  unsigned expBits, mantBits;
  bool hasInf;   // the top exponent holds inf and NaN (IEEE style)
  bool saturate; // finite overflow gives the largest finite value
  uint64_t nanBits, maxBits; // without the sign
};

SmallFloat smallFloatOf(Type t) {
  if (t.isF16())
    return {5, 10, true, false, 0x7E00, 0x7BFF};
  if (t.isBF16())
    return {8, 7, true, false, 0x7FC0, 0x7F7F};
  if (isa<Float8E4M3FNType>(t))
    return {4, 3, false, true, 0x7F, 0x7E};
  assert(isa<Float8E5M2Type>(t) && "not a narrow float");
  return {5, 2, true, true, 0x7E, 0x7B};
}

/// Integer arithmetic on one type for the conversions. Operands are values
/// or constants; every call creates its ops in a fixed order (nested builder
/// calls as arguments would leave the order to the host compiler).
struct Bits {
  ImplicitLocOpBuilder &b;
  Type ty;
  Value c(uint64_t v) { return intConstant(b, b.getLoc(), ty, (int64_t)v); }
  Value andi(Value x, uint64_t y) {
    Value cy = c(y);
    return arith::AndIOp::create(b, x, cy);
  }
  Value ori(Value x, Value y) { return arith::OrIOp::create(b, x, y); }
  Value addi(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value addi(Value x, uint64_t y) { return addi(x, c(y)); }
  Value subi(Value x, uint64_t y) {
    Value cy = c(y);
    return arith::SubIOp::create(b, x, cy);
  }
  Value shl(Value x, uint64_t n) {
    Value cn = c(n);
    return arith::ShLIOp::create(b, x, cn);
  }
  Value shr(Value x, uint64_t n) {
    Value cn = c(n);
    return arith::ShRUIOp::create(b, x, cn);
  }
  Value cmp(arith::CmpIPredicate p, Value x, uint64_t y) {
    Value cy = c(y);
    return arith::CmpIOp::create(b, p, x, cy);
  }
  Value sel(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, cond, x, y);
  }
  /// cond ? y : x, with y a constant.
  Value override(Value cond, uint64_t y, Value x) {
    Value cy = c(y);
    return arith::SelectOp::create(b, cond, cy, x);
  }
};
} // namespace

/// f8 -> f32, exact.
static Value decodeF8(ImplicitLocOpBuilder &b, Value v) {
  SmallFloat f = smallFloatOf(v.getType());
  Type f32 = b.getF32Type();
  Bits i{b, b.getI32Type()};
  using P = arith::CmpIPredicate;
  Value byte = arith::BitcastOp::create(b, b.getI8Type(), v);
  Value bits = arith::ExtUIOp::create(b, i.ty, byte);
  Value sign = i.shl(i.andi(bits, 0x80), 24);
  Value mag = i.andi(bits, 0x7F);
  Value mant = i.andi(mag, (1u << f.mantBits) - 1);
  Value expField = i.shr(mag, f.mantBits);
  int bias = (1 << (f.expBits - 1)) - 1;
  // Normal numbers: shift the fields into place and re-bias the exponent.
  Value normal = i.addi(i.shl(mag, 23 - f.mantBits),
                        uint64_t(127 - bias) << 23);
  // Subnormals are mant * 2^(1 - bias - mantBits), exact in f32.
  Value mantF = arith::UIToFPOp::create(b, f32, mant);
  Value quantum = floatConstant(b, b.getLoc(), f32,
                                std::ldexp(1.0, 1 - bias - (int)f.mantBits));
  Value sub = arith::MulFOp::create(b, mantF, quantum);
  Value subBits = arith::BitcastOp::create(b, i.ty, sub);
  Value isSub = i.cmp(P::eq, expField, 0);
  Value out = i.sel(isSub, subBits, normal);
  if (f.hasInf) {
    Value top = i.cmp(P::eq, expField, (1u << f.expBits) - 1);
    Value isInf = i.cmp(P::eq, mant, 0);
    Value special = i.override(isInf, 0x7F800000, i.c(0x7FC00000));
    out = i.sel(top, special, out);
  } else {
    Value isNaN = i.cmp(P::eq, mag, 0x7F);
    out = i.override(isNaN, 0x7FC00000, out);
  }
  return arith::BitcastOp::create(b, f32, i.ori(out, sign));
}

/// f32 or f64 -> a narrow float, rounding to nearest even once.
static Value encodeSmallFloat(ImplicitLocOpBuilder &b, Value x, Type target) {
  SmallFloat f = smallFloatOf(target);
  auto srcTy = cast<FloatType>(x.getType());
  unsigned w = srcTy.getWidth();
  unsigned srcMant = srcTy.getFPMantissaWidth() - 1;
  int srcBias = w == 32 ? 127 : 1023;
  int bias = (1 << (f.expBits - 1)) - 1;
  Bits i{b, b.getIntegerType(w)};
  using P = arith::CmpIPredicate;

  Value bits = arith::BitcastOp::create(b, i.ty, x);
  Value absBits = i.andi(bits, (uint64_t(1) << (w - 1)) - 1);
  Value signBit = i.shr(bits, w - 1);
  uint64_t infBits = ((uint64_t(1) << (w - 1 - srcMant)) - 1) << srcMant;

  // Normal results: re-bias the exponent, then drop the extra mantissa bits
  // rounding to nearest even; a carry correctly bumps the exponent.
  unsigned shift = srcMant - f.mantBits;
  Value rebased = i.subi(absBits, uint64_t(srcBias - bias) << srcMant);
  Value lsb = i.andi(i.shr(rebased, shift), 1);
  Value biased = i.addi(rebased, (uint64_t(1) << (shift - 1)) - 1);
  Value normal = i.shr(i.addi(biased, lsb), shift);

  // Subnormal results: scale |x| so that the subnormal quantum is 1 and round
  // to an integer; 2^mantBits is the smallest normal's code, as it should be.
  // The clamp keeps fptoui defined for the inputs that take the other path.
  Value absX = math::AbsFOp::create(b, x);
  Value scale = floatConstant(b, b.getLoc(), srcTy,
                              std::ldexp(1.0, bias - 1 + (int)f.mantBits));
  Value scaled = arith::MulFOp::create(b, absX, scale);
  Value limit = floatConstant(b, b.getLoc(), srcTy,
                              std::ldexp(1.0, f.mantBits + 1));
  scaled = arith::MinNumFOp::create(b, scaled, limit);
  Value rounded = math::RoundEvenOp::create(b, scaled);
  Value sub = arith::FPToUIOp::create(b, i.ty, rounded);

  Value isNormal =
      i.cmp(P::uge, absBits, uint64_t(srcBias + 1 - bias) << srcMant);
  Value code = i.sel(isNormal, normal, sub);
  uint64_t infCode = ((uint64_t(1) << f.expBits) - 1) << f.mantBits;
  Value overflow = i.cmp(P::ugt, code, f.maxBits);
  code = i.override(overflow, f.saturate || !f.hasInf ? f.maxBits : infCode,
                    code);
  Value isInf = i.cmp(P::eq, absBits, infBits);
  code = i.override(isInf, f.hasInf ? infCode : f.maxBits, code);
  Value isNaN = i.cmp(P::ugt, absBits, infBits);
  code = i.override(isNaN, f.nanBits, code);
  unsigned width = f.expBits + f.mantBits + 1;
  code = i.ori(code, i.shl(signBit, width - 1));
  Value narrow = arith::TruncIOp::create(b, b.getIntegerType(width), code);
  return arith::BitcastOp::create(b, target, narrow);
}

/// Float (f32 or f64) to a signed integer: truncation toward zero, saturating
/// at the type's limits, NaN giving 0, and never a poison fptosi.
static Value floatToInt(ImplicitLocOpBuilder &b, Value x, IntegerType to) {
  using P = arith::CmpFPredicate;
  Type ft = x.getType();
  double lim = std::ldexp(1.0, to.getWidth() - 1);
  Value hi = floatConstant(b, b.getLoc(), ft, lim);
  Value lo = floatConstant(b, b.getLoc(), ft, -lim);
  Value zero = floatConstant(b, b.getLoc(), ft, 0.0);
  Value tooBig = arith::CmpFOp::create(b, P::OGE, x, hi);
  Value tooSmall = arith::CmpFOp::create(b, P::OLT, x, lo);
  Value aboveLo = arith::CmpFOp::create(b, P::OGE, x, lo);
  Value belowHi = arith::CmpFOp::create(b, P::OLT, x, hi);
  Value inRange = arith::AndIOp::create(b, aboveLo, belowHi);
  Value safe = arith::SelectOp::create(b, inRange, x, zero);
  Value r = arith::FPToSIOp::create(b, to, safe);
  Value max = extremeConstant(b, b.getLoc(), to, true);
  r = arith::SelectOp::create(b, tooBig, max, r);
  Value min = extremeConstant(b, b.getLoc(), to, false);
  return arith::SelectOp::create(b, tooSmall, min, r);
}

Value convertScalar(ImplicitLocOpBuilder &b, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  Type f32 = b.getF32Type(), f64 = b.getF64Type();
  if (from.isInteger(1)) {
    if (isa<IntegerType>(to))
      return arith::ExtUIOp::create(b, to, v);
    Value one = scalarConstant(b, b.getLoc(), to, 1);
    Value zero = scalarConstant(b, b.getLoc(), to, 0);
    return arith::SelectOp::create(b, v, one, zero);
  }
  if (to.isInteger(1)) {
    if (isa<IntegerType>(from)) {
      Value zero = intConstant(b, b.getLoc(), from, 0);
      return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, v, zero);
    }
    Value x = toCompute(b, v);
    Value zero = floatConstant(b, b.getLoc(), x.getType(), 0.0);
    // une: NaN converts to true, as in C, NumPy and PyTorch.
    return arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, x, zero);
  }
  if (auto fromInt = dyn_cast<IntegerType>(from)) {
    if (auto toInt = dyn_cast<IntegerType>(to)) {
      if (toInt.getWidth() > fromInt.getWidth())
        return arith::ExtSIOp::create(b, to, v);
      return arith::TruncIOp::create(b, to, v);
    }
    if (to.isF32() || to.isF64())
      return arith::SIToFPOp::create(b, to, v);
    // Through a type that holds the integer exactly, or at least every
    // integer the target does not round to inf or saturate: f32 for f16, f8
    // and i8 sources; f64 for i32/i64 to bf16 (i64 beyond 2^53 rounds twice).
    Type mid = to.isBF16() && fromInt.getWidth() > 16 ? f64 : f32;
    Value exact = arith::SIToFPOp::create(b, mid, v);
    return convertScalar(b, exact, to);
  }
  if (isa<IntegerType>(to))
    return floatToInt(b, toCompute(b, v), cast<IntegerType>(to));

  // Float to float: widen exactly to f32 first, then round once.
  Value x = v;
  if (isF8(from))
    x = decodeF8(b, v);
  else if (from.isF16() || from.isBF16())
    x = arith::ExtFOp::create(b, f32, v);
  if (x.getType() == to)
    return x;
  if (to.isF64())
    return arith::ExtFOp::create(b, f64, x);
  if (to.isF32())
    return arith::TruncFOp::create(b, f32, x);
  // f64 -> bf16 would round twice through arith-expand's f32 step.
  if (isF8(to) || (to.isBF16() && x.getType().isF64()))
    return encodeSmallFloat(b, x, to);
  return arith::TruncFOp::create(b, to, x);
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elt) {
  return tensor::EmptyOp::create(b, loc, shape, elt);
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Value scalar) {
  Value empty = emptyTensor(b, loc, shape, scalar.getType());
  return linalg::FillOp::create(b, loc, scalar, empty).getResult(0);
}

Value padTensor(OpBuilder &b, Location loc, Value input,
                ArrayRef<int64_t> shape, ArrayRef<int64_t> offsets,
                ArrayRef<int64_t> strides, Value padValue) {
  RankedTensorType inType = tensorTypeOf(input);
  if (inType.getNumElements() == 0)
    return filledTensor(b, loc, shape, padValue);
  auto type = RankedTensorType::get(shape, inType.getElementType());
  return buildElementwise(
      b, loc, ValueRange{}, type, [&](ImplicitLocOpBuilder &ib, ValueRange) {
        using P = arith::CmpIPredicate;
        Value inside;
        SmallVector<Value> at;
        for (int64_t d = 0, e = shape.size(); d < e; ++d) {
          int64_t stride = strides.empty() ? 1 : strides[d];
          int64_t size = inType.getDimSize(d);
          Value i = linalg::IndexOp::create(ib, d);
          if (offsets[d] == 0 && stride == 1 && size == shape[d]) {
            at.push_back(i); // an unpadded dimension
            continue;
          }
          Value off = arith::ConstantIndexOp::create(ib, offsets[d]);
          Value t = arith::SubIOp::create(ib, i, off);
          Value zero = arith::ConstantIndexOp::create(ib, 0);
          Value end = arith::ConstantIndexOp::create(ib, (size - 1) * stride);
          Value lo = arith::CmpIOp::create(ib, P::sge, t, zero);
          Value hi = arith::CmpIOp::create(ib, P::sle, t, end);
          Value ok = arith::AndIOp::create(ib, lo, hi);
          Value q = t;
          if (stride != 1) {
            Value s = arith::ConstantIndexOp::create(ib, stride);
            Value rem = arith::RemSIOp::create(ib, t, s);
            Value onGrid = arith::CmpIOp::create(ib, P::eq, rem, zero);
            ok = arith::AndIOp::create(ib, ok, onGrid);
            q = arith::DivSIOp::create(ib, t, s);
          }
          // Clamped so that the read stays inside even where it is unused.
          Value last = arith::ConstantIndexOp::create(ib, size - 1);
          q = arith::MaxSIOp::create(ib, q, zero);
          q = arith::MinSIOp::create(ib, q, last);
          at.push_back(q);
          inside = inside ? (Value)arith::AndIOp::create(ib, inside, ok) : ok;
        }
        Value elem = tensor::ExtractOp::create(ib, input, at);
        if (!inside) // nothing padded
          return elem;
        return (Value)arith::SelectOp::create(ib, inside, elem, padValue);
      });
}

SmallVector<utils::IteratorType> parallelIterators(unsigned n) {
  return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

AffineMap broadcastMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                       MLIRContext *ctx) {
  assert(in.size() <= out.size() && "operand ranks exceed the result's");
  size_t lead = out.size() - in.size();
  SmallVector<AffineExpr> exprs;
  for (size_t i = 0; i < in.size(); ++i) {
    bool broadcast = in[i] == 1 && out[lead + i] != 1;
    exprs.push_back(broadcast ? getAffineConstantExpr(0, ctx)
                              : getAffineDimExpr(lead + i, ctx));
  }
  return AffineMap::get(out.size(), 0, exprs, ctx);
}

Value buildElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                       RankedTensorType resultType, ScalarFn fn) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(tensorTypeOf(in).getShape(), shape, ctx));
  maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  Value init = emptyTensor(b, loc, shape, resultType.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps,
      parallelIterators(shape.size()),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        ImplicitLocOpBuilder ib(nloc, nb);
        Value r = fn(ib, args.drop_back());
        linalg::YieldOp::create(ib, r);
      });
  return generic.getResult(0);
}

Value convertTensor(OpBuilder &b, Location loc, Value t, Type elt) {
  RankedTensorType ty = tensorTypeOf(t);
  if (ty.getElementType() == elt)
    return t;
  return buildElementwise(b, loc, t, ty.clone(elt),
                          [&](ImplicitLocOpBuilder &ib, ValueRange a) {
                            return convertScalar(ib, a[0], elt);
                          });
}

SmallVector<int64_t> reducedShape(ArrayRef<int64_t> in, ArrayRef<int64_t> axes,
                                  bool keepdims) {
  SmallVector<int64_t> out;
  for (int64_t d = 0; d < (int64_t)in.size(); ++d) {
    if (!llvm::is_contained(axes, d))
      out.push_back(in[d]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

Value buildReduction(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> axes, bool keepdims, Value init,
                     CombineFn combine) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> inShape = tensorTypeOf(input).getShape();
  unsigned rank = inShape.size();
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  // Kept dimensions of the keepdims shape, each with the reduced unit
  // dimensions around it, for the expand_shape that restores them.
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  for (unsigned d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(axes, (int64_t)d);
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    pending.push_back(d);
    if (!reduced) {
      outExprs.push_back(getAffineDimExpr(d, ctx));
      groups.push_back(pending);
      pending.clear();
    }
  }
  if (!groups.empty())
    groups.back().append(pending.begin(), pending.end());

  SmallVector<int64_t> outShape = reducedShape(inShape, axes, false);
  Value acc = filledTensor(b, loc, outShape, init);
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, ctx),
      AffineMap::get(rank, 0, outExprs, ctx)};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{acc.getType()}, input, acc, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        ImplicitLocOpBuilder ib(nloc, nb);
        linalg::YieldOp::create(ib, combine(ib, args[0], args[1]));
      });
  Value result = generic.getResult(0);
  if (!keepdims || axes.empty())
    return result;
  auto keptType = RankedTensorType::get(reducedShape(inShape, axes, true),
                                        init.getType());
  return tensor::ExpandShapeOp::create(b, loc, keptType, result, groups);
}

} // namespace mlir::tcc::lowering
