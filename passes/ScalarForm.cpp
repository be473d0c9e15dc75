//===- ScalarForm.cpp - tcc's elementwise ops as scalar arithmetic --------===//
#include "passes/ScalarForm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <utility>

namespace mlir::tcc {

/// The value of a constant of one value (a scalar or a splat), as a double.
std::optional<double> constantValue(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  Attribute a = c.getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(a)) {
    if (!dense.isSplat())
      return std::nullopt;
    a = dense.getSplatValue<Attribute>();
  }
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(a))
    return double(i.getType().isInteger(1) ? i.getValue().getZExtValue()
                                           : i.getValue().getSExtValue());
  return std::nullopt;
}

/// A division by the constant `v`, in f32: (c, 1/c rounded, whether x * (1/c)
/// is exact: c a power of two), when c and 1/c are normal numbers.
std::optional<std::tuple<float, float, bool>> divisorReciprocal(Value v) {
  std::optional<double> c = constantValue(v);
  if (!c)
    return std::nullopt;
  float cf = float(*c), rc = 1.0f / cf;
  if (!std::isnormal(cf) || !std::isnormal(rc))
    return std::nullopt;
  int exponent;
  return std::make_tuple(cf, rc, std::fabs(std::frexp(cf, &exponent)) == 0.5f);
}

bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i])
      return false;
  return true;
}

bool isScalarOp(Operation *op) {
  // A clamp of floats (scores clipped to a range); an integer one's bounds
  // round as the lowering's do, not here.
  if (auto clamp = dyn_cast<ClampOp>(op))
    return isa<FloatType>(cast<ShapedType>(clamp.getType()).getElementType());
  // pow of floats (a scale written pow(d, -0.5), scores squared); an
  // integer pow's loop is the lowering's.
  if (auto pow = dyn_cast<PowOp>(op))
    return isa<FloatType>(cast<ShapedType>(pow.getType()).getElementType());
  // A broadcast is the element it reads (the kernel reads captured
  // tensors at the score's position, broadcast).
  return isa<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp,
             SigmoidOp, ReluOp, FloorOp, CeilOp, NotOp, AddOp, SubOp, MulOp,
             DivOp, MaximumOp, MinimumOp, EqualOp, NotEqualOp, LessOp,
             LessEqualOp, GreaterOp, GreaterEqualOp, AndOp, OrOp, SelectOp,
             CastOp, ConstantOp, IotaOp, BroadcastToOp>(op);
}

Value buildScalarOp(OpBuilder &b, Location loc, Operation *op, ValueRange in) {
  Type f32 = b.getF32Type();
  Type elem = cast<ShapedType>(op->getResult(0).getType()).getElementType();
  Type st = isa<FloatType>(elem) ? f32 : elem;
  Value r;
  bool fl = isa<FloatType>(in[0].getType());
  // The float or the integer op of a binary tcc op.
  auto bin = [&](auto typeTag) -> Value {
    using Ops = decltype(typeTag);
    if (fl)
      return Ops::first_type::create(b, loc, in[0], in[1]);
    return Ops::second_type::create(b, loc, in[0], in[1]);
  };
  auto cmp = [&](arith::CmpFPredicate f, arith::CmpIPredicate i) -> Value {
    if (fl)
      return arith::CmpFOp::create(b, loc, f, in[0], in[1]);
    return arith::CmpIOp::create(b, loc, i, in[0], in[1]);
  };
  Value one = fl ? arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, 1.0))
                       .getResult()
                 : Value();
  if (isa<AddOp>(op))
    r = bin(std::pair<arith::AddFOp, arith::AddIOp>());
  else if (isa<SubOp>(op))
    r = bin(std::pair<arith::SubFOp, arith::SubIOp>());
  else if (isa<MulOp>(op))
    r = bin(std::pair<arith::MulFOp, arith::MulIOp>());
  else if (isa<DivOp>(op) && fl && divisorReciprocal(op->getOperand(1))) {
    // x / c, c constant: an IEEE division is a long sequence per
    // score (softcap's s / 50). q = x * (1/c) and one fma step
    // (q + (x - q*c) / c) give the correctly rounded quotient but for
    // results near the ends of the f32 range.
    auto [c, rc, exact] = *divisorReciprocal(op->getOperand(1));
    Value cV = arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, c));
    Value rcV = arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, rc));
    r = arith::MulFOp::create(b, loc, in[0], rcV);
    if (!exact) {
      Value e = math::FmaOp::create(b, loc, arith::NegFOp::create(b, loc, r),
                                    cV, in[0]);
      r = math::FmaOp::create(b, loc, e, rcV, r);
    }
  } else if (isa<DivOp>(op))
    r = bin(std::pair<arith::DivFOp, arith::DivSIOp>());
  else if (isa<BroadcastToOp>(op))
    r = in[0];
  else if (isa<PowOp>(op))
    r = math::PowFOp::create(b, loc, in[0], in[1]);
  else if (isa<MaximumOp>(op))
    r = bin(std::pair<arith::MaximumFOp, arith::MaxSIOp>());
  else if (isa<MinimumOp>(op))
    r = bin(std::pair<arith::MinimumFOp, arith::MinSIOp>());
  else if (isa<EqualOp>(op))
    r = cmp(arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq);
  else if (isa<NotEqualOp>(op))
    r = cmp(arith::CmpFPredicate::UNE, arith::CmpIPredicate::ne);
  else if (isa<LessOp>(op))
    r = cmp(arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt);
  else if (isa<LessEqualOp>(op))
    r = cmp(arith::CmpFPredicate::OLE, arith::CmpIPredicate::sle);
  else if (isa<GreaterOp>(op))
    r = cmp(arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt);
  else if (isa<GreaterEqualOp>(op))
    r = cmp(arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge);
  else if (isa<AndOp>(op))
    r = arith::AndIOp::create(b, loc, in[0], in[1]);
  else if (isa<OrOp>(op))
    r = arith::OrIOp::create(b, loc, in[0], in[1]);
  else if (isa<NotOp>(op))
    r = arith::XOrIOp::create(
        b, loc, in[0], arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  else if (isa<SelectOp>(op))
    r = arith::SelectOp::create(b, loc, in[0], in[1], in[2]);
  else if (isa<NegOp>(op))
    r = fl ? arith::NegFOp::create(b, loc, in[0]).getResult()
           : arith::SubIOp::create(
                 b, loc,
                 arith::ConstantOp::create(b, loc, b.getIntegerAttr(st, 0)),
                 in[0])
                 .getResult();
  else if (isa<AbsOp>(op))
    r = fl ? math::AbsFOp::create(b, loc, in[0]).getResult()
           : math::AbsIOp::create(b, loc, in[0]).getResult();
  else if (isa<ReluOp>(op))
    r = fl ? arith::MaximumFOp::create(
                 b, loc, in[0],
                 arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, 0)))
                 .getResult()
           : arith::MaxSIOp::create(
                 b, loc, in[0],
                 arith::ConstantOp::create(b, loc, b.getIntegerAttr(st, 0)))
                 .getResult();
  else if (auto clamp = dyn_cast<ClampOp>(op)) {
    // maximumf, then minimumf: NaN propagates; min > max gives max, as
    // the lowering and torch.clamp. Bounds are rounded to the op's type
    // first, as the model's are.
    r = in[0];
    auto bound = [&](double v) {
      APFloat f(v);
      bool lost;
      f.convert(cast<FloatType>(elem).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      return arith::ConstantOp::create(
          b, loc, b.getFloatAttr(f32, f.convertToDouble()));
    };
    if (auto lo = clamp.getMin())
      r = arith::MaximumFOp::create(b, loc, r, bound(lo->convertToDouble()));
    if (auto hi = clamp.getMax())
      r = arith::MinimumFOp::create(b, loc, r, bound(hi->convertToDouble()));
  } else if (isa<ExpOp>(op))
    r = math::ExpOp::create(b, loc, in[0]);
  else if (isa<LogOp>(op))
    r = math::LogOp::create(b, loc, in[0]);
  else if (isa<SqrtOp>(op))
    r = math::SqrtOp::create(b, loc, in[0]);
  else if (isa<RsqrtOp>(op))
    r = math::RsqrtOp::create(b, loc, in[0]);
  else if (isa<ReciprocalOp>(op))
    r = arith::DivFOp::create(b, loc, one, in[0]);
  else if (isa<TanhOp>(op))
    r = math::TanhOp::create(b, loc, in[0]);
  else if (isa<SigmoidOp>(op))
    r = arith::DivFOp::create(
        b, loc, one,
        arith::AddFOp::create(
            b, loc, one,
            math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, in[0]))));
  else if (isa<FloorOp>(op))
    r = math::FloorOp::create(b, loc, in[0]);
  else if (isa<CeilOp>(op))
    r = math::CeilOp::create(b, loc, in[0]);
  else if (isa<CastOp>(op)) {
    Type from = in[0].getType();
    if (isa<FloatType>(from) && isa<FloatType>(st))
      r = in[0];
    else if (isa<FloatType>(from))
      r = st.isInteger(1)
              ? arith::CmpFOp::create(
                    b, loc, arith::CmpFPredicate::UNE, in[0],
                    arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, 0)))
                    .getResult()
              : arith::FPToSIOp::create(b, loc, st, in[0]).getResult();
    else if (isa<FloatType>(st))
      r = from.isInteger(1)
              ? arith::UIToFPOp::create(b, loc, st, in[0]).getResult()
              : arith::SIToFPOp::create(b, loc, st, in[0]).getResult();
    else if (from.getIntOrFloatBitWidth() == st.getIntOrFloatBitWidth())
      r = in[0];
    else if (st.isInteger(1))
      r = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne, in[0],
          arith::ConstantOp::create(b, loc, b.getIntegerAttr(from, 0)));
    else if (from.getIntOrFloatBitWidth() < st.getIntOrFloatBitWidth())
      r = from.isInteger(1)
              ? arith::ExtUIOp::create(b, loc, st, in[0]).getResult()
              : arith::ExtSIOp::create(b, loc, st, in[0]).getResult();
    else
      r = arith::TruncIOp::create(b, loc, st, in[0]);
  }
  return r;
}

namespace {
bool sameComputationAt(Value a, Value b, llvm::function_ref<Value(Value)> strip,
                       int depth) {
  if (strip) {
    a = strip(a);
    b = strip(b);
  }
  if (a == b)
    return true;
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  if (!x || !y || depth > 16 || x->getNumRegions() || y->getNumRegions() ||
      !isMemoryEffectFree(x) || !isMemoryEffectFree(y) ||
      cast<OpResult>(a).getResultNumber() !=
          cast<OpResult>(b).getResultNumber())
    return false;
  return OperationEquivalence::isEquivalentTo(
      x, y,
      [&](Value l, Value r) {
        return success(sameComputationAt(l, r, strip, depth + 1));
      },
      /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
}
} // namespace

bool sameComputation(Value a, Value b, llvm::function_ref<Value(Value)> strip) {
  return sameComputationAt(a, b, strip, 0);
}

} // namespace mlir::tcc
