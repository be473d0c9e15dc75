//===- Elementwise.cpp - lower elementwise tcc ops and sources ------------===//
//
// Each elementwise op becomes one linalg.generic whose operands are read
// through broadcast indexing maps. Arithmetic runs in the compute type (f32
// for f16/bf16/f8) and the result is rounded once to the result dtype;
// select, the logical ops and cast move or convert elements directly.
//
//===----------------------------------------------------------------------===//
#include "passes/ScalarForm.h"
#include "passes/lowering/Patterns.h"
#include "passes/lowering/Utils.h"

#include "ir/TccOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::lowering;

namespace {

using CmpF = arith::CmpFPredicate;
using CmpI = arith::CmpIPredicate;

bool isFloat(Value v) { return isa<FloatType>(v.getType()); }

Value fconst(ImplicitLocOpBuilder &b, Type t, double v) {
  return scalarConstant(b, b.getLoc(), t, v);
}

/// 1 / (1 + exp(-x)): exp overflows to inf for very negative x and the
/// quotient correctly becomes 0.
Value sigmoid(ImplicitLocOpBuilder &b, Value x) {
  Type t = x.getType();
  Value e = math::ExpOp::create(b, arith::NegFOp::create(b, x));
  Value one = fconst(b, t, 1.0);
  return arith::DivFOp::create(b, one, arith::AddFOp::create(b, one, e));
}

/// Integer division truncating toward zero that never traps: x / 0 is 0 and
/// INT_MIN / -1 wraps to INT_MIN.
Value safeDivSI(ImplicitLocOpBuilder &b, Value x, Value y) {
  Type t = x.getType();
  Value zero = intConstant(b, b.getLoc(), t, 0);
  Value one = intConstant(b, b.getLoc(), t, 1);
  Value min = extremeConstant(b, b.getLoc(), t, false);
  Value minusOne = intConstant(b, b.getLoc(), t, -1);
  Value byZero = arith::CmpIOp::create(b, CmpI::eq, y, zero);
  Value isMin = arith::CmpIOp::create(b, CmpI::eq, x, min);
  Value byMinusOne = arith::CmpIOp::create(b, CmpI::eq, y, minusOne);
  Value overflow = arith::AndIOp::create(b, isMin, byMinusOne);
  Value bad = arith::OrIOp::create(b, byZero, overflow);
  Value divisor = arith::SelectOp::create(b, bad, one, y);
  Value q = arith::DivSIOp::create(b, x, divisor);
  return arith::SelectOp::create(b, byZero, zero, q);
}

/// Integer power as repeated multiplication (wrapping). A negative exponent
/// gives 0, except for bases 1 (gives 1) and -1 (gives +-1 by parity).
Value intPow(ImplicitLocOpBuilder &b, Value base, Value exp) {
  Type t = base.getType();
  Location loc = b.getLoc();
  Value zero = intConstant(b, loc, t, 0);
  Value one = intConstant(b, loc, t, 1);
  Value negative = arith::CmpIOp::create(b, CmpI::slt, exp, zero);
  Value e0 = arith::SelectOp::create(b, negative, zero, exp);
  // Square-and-multiply over the exponent's bits, low bit first.
  auto loop = scf::WhileOp::create(
      b, TypeRange{t, t, t}, ValueRange{one, base, e0},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        ImplicitLocOpBuilder ib(nl, nb);
        Value zero = intConstant(ib, nl, t, 0);
        Value more = arith::CmpIOp::create(ib, CmpI::ne, args[2], zero);
        scf::ConditionOp::create(ib, more, args);
      },
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        ImplicitLocOpBuilder ib(nl, nb);
        Value c0 = intConstant(ib, nl, t, 0);
        Value c1 = intConstant(ib, nl, t, 1);
        Value low = arith::AndIOp::create(ib, args[2], c1);
        Value odd = arith::CmpIOp::create(ib, CmpI::ne, low, c0);
        Value prod = arith::MulIOp::create(ib, args[0], args[1]);
        Value acc = arith::SelectOp::create(ib, odd, prod, args[0]);
        Value sq = arith::MulIOp::create(ib, args[1], args[1]);
        Value rest = arith::ShRUIOp::create(ib, args[2], c1);
        scf::YieldOp::create(ib, ValueRange{acc, sq, rest});
      });
  Value expLow = arith::AndIOp::create(b, exp, one);
  Value expOdd = arith::CmpIOp::create(b, CmpI::ne, expLow, zero);
  Value minusOne = intConstant(b, loc, t, -1);
  Value isOne = arith::CmpIOp::create(b, CmpI::eq, base, one);
  Value isMinusOne = arith::CmpIOp::create(b, CmpI::eq, base, minusOne);
  Value sign = arith::SelectOp::create(b, expOdd, minusOne, one);
  Value negResult = arith::SelectOp::create(b, isMinusOne, sign, zero);
  negResult = arith::SelectOp::create(b, isOne, one, negResult);
  return arith::SelectOp::create(b, negative, negResult, loop.getResult(0));
}

/// Integer clamp bounds: the smallest integer >= lo and the largest <= hi,
/// saturated to the type.
Value intBound(ImplicitLocOpBuilder &b, Type t, double v, bool lower) {
  return fconst(b, t, lower ? std::ceil(v) : std::floor(v));
}

//===----------------------------------------------------------------------===//
// Scalar bodies, on operands already in the compute type.
//===----------------------------------------------------------------------===//

template <typename OpTy>
Value computeScalar(OpTy op, ImplicitLocOpBuilder &b, ValueRange a);

#define TCC_FLOAT_UNARY(OP, MATH)                                              \
  template <>                                                                  \
  Value computeScalar(OP, ImplicitLocOpBuilder & b, ValueRange a) {            \
    return MATH::create(b, a[0]);                                              \
  }
TCC_FLOAT_UNARY(ExpOp, math::ExpOp)
TCC_FLOAT_UNARY(LogOp, math::LogOp)
TCC_FLOAT_UNARY(SqrtOp, math::SqrtOp)
TCC_FLOAT_UNARY(RsqrtOp, math::RsqrtOp)
TCC_FLOAT_UNARY(TanhOp, math::TanhOp)
TCC_FLOAT_UNARY(ErfOp, math::ErfOp)
TCC_FLOAT_UNARY(FloorOp, math::FloorOp)
TCC_FLOAT_UNARY(CeilOp, math::CeilOp)
#undef TCC_FLOAT_UNARY

template <> Value computeScalar(NegOp, ImplicitLocOpBuilder &b, ValueRange a) {
  if (isFloat(a[0]))
    return arith::NegFOp::create(b, a[0]);
  return arith::SubIOp::create(
      b, intConstant(b, b.getLoc(), a[0].getType(), 0), a[0]);
}

template <> Value computeScalar(AbsOp, ImplicitLocOpBuilder &b, ValueRange a) {
  if (isFloat(a[0]))
    return math::AbsFOp::create(b, a[0]);
  return math::AbsIOp::create(b, a[0]);
}

template <>
Value computeScalar(ReciprocalOp, ImplicitLocOpBuilder &b, ValueRange a) {
  return arith::DivFOp::create(b, fconst(b, a[0].getType(), 1.0), a[0]);
}

template <>
Value computeScalar(SigmoidOp, ImplicitLocOpBuilder &b, ValueRange a) {
  return sigmoid(b, a[0]);
}

template <> Value computeScalar(SiluOp, ImplicitLocOpBuilder &b, ValueRange a) {
  return arith::MulFOp::create(b, a[0], sigmoid(b, a[0]));
}

template <> Value computeScalar(ReluOp, ImplicitLocOpBuilder &b, ValueRange a) {
  Type t = a[0].getType();
  // maximumf propagates NaN: relu(NaN) is NaN.
  if (isFloat(a[0]))
    return arith::MaximumFOp::create(b, a[0], fconst(b, t, 0.0));
  return arith::MaxSIOp::create(b, a[0], intConstant(b, b.getLoc(), t, 0));
}

template <> Value computeScalar(GeluOp op, ImplicitLocOpBuilder &b,
                                ValueRange a) {
  Value x = a[0];
  Type t = x.getType();
  Value half = fconst(b, t, 0.5), one = fconst(b, t, 1.0);
  Value inner;
  if (op.getTanhApprox()) {
    // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
    Value x3 = arith::MulFOp::create(b, arith::MulFOp::create(b, x, x), x);
    Value poly = arith::AddFOp::create(
        b, x, arith::MulFOp::create(b, fconst(b, t, 0.044715), x3));
    inner = math::TanhOp::create(
        b, arith::MulFOp::create(b, fconst(b, t, std::sqrt(2.0 / M_PI)),
                                 poly));
  } else {
    inner = math::ErfOp::create(
        b, arith::MulFOp::create(b, x, fconst(b, t, M_SQRT1_2)));
  }
  Value halfX = arith::MulFOp::create(b, half, x);
  Value factor = arith::AddFOp::create(b, one, inner);
  return arith::MulFOp::create(b, halfX, factor);
}

template <> Value computeScalar(ClampOp op, ImplicitLocOpBuilder &b,
                                ValueRange a) {
  Value x = a[0];
  Type t = x.getType();
  // maximumf/minimumf propagate NaN; min > max gives max, as torch.clamp.
  if (isFloat(x)) {
    if (auto lo = op.getMin())
      x = arith::MaximumFOp::create(b, x, fconst(b, t, lo->convertToDouble()));
    if (auto hi = op.getMax())
      x = arith::MinimumFOp::create(b, x, fconst(b, t, hi->convertToDouble()));
    return x;
  }
  if (auto lo = op.getMin())
    x = arith::MaxSIOp::create(b, x, intBound(b, t, lo->convertToDouble(),
                                              /*lower=*/true));
  if (auto hi = op.getMax())
    x = arith::MinSIOp::create(b, x, intBound(b, t, hi->convertToDouble(),
                                              /*lower=*/false));
  return x;
}

#define TCC_BINARY(OP, FOP, IOP)                                               \
  template <>                                                                  \
  Value computeScalar(OP, ImplicitLocOpBuilder & b, ValueRange a) {            \
    if (isFloat(a[0]))                                                         \
      return FOP::create(b, a[0], a[1]);                                       \
    return IOP::create(b, a[0], a[1]);                                         \
  }
TCC_BINARY(AddOp, arith::AddFOp, arith::AddIOp)
TCC_BINARY(SubOp, arith::SubFOp, arith::SubIOp)
TCC_BINARY(MulOp, arith::MulFOp, arith::MulIOp)
TCC_BINARY(MaximumOp, arith::MaximumFOp, arith::MaxSIOp)
TCC_BINARY(MinimumOp, arith::MinimumFOp, arith::MinSIOp)
#undef TCC_BINARY

template <> Value computeScalar(DivOp, ImplicitLocOpBuilder &b, ValueRange a) {
  if (isFloat(a[0]))
    return arith::DivFOp::create(b, a[0], a[1]);
  return safeDivSI(b, a[0], a[1]);
}

template <> Value computeScalar(PowOp, ImplicitLocOpBuilder &b, ValueRange a) {
  if (isFloat(a[0]))
    return math::PowFOp::create(b, a[0], a[1]);
  return intPow(b, a[0], a[1]);
}

/// Comparisons: ordered float predicates (false on NaN) except not_equal,
/// which is true on NaN as in NumPy; bools compare as 0 < 1.
Value compare(ImplicitLocOpBuilder &b, ValueRange a, CmpF fp, CmpI sp,
              CmpI up) {
  if (isFloat(a[0]))
    return arith::CmpFOp::create(b, fp, a[0], a[1]);
  return arith::CmpIOp::create(b, a[0].getType().isInteger(1) ? up : sp,
                               a[0], a[1]);
}

#define TCC_COMPARE(OP, FP, SP, UP)                                            \
  template <>                                                                  \
  Value computeScalar(OP, ImplicitLocOpBuilder & b, ValueRange a) {            \
    return compare(b, a, CmpF::FP, CmpI::SP, CmpI::UP);                        \
  }
TCC_COMPARE(EqualOp, OEQ, eq, eq)
TCC_COMPARE(NotEqualOp, UNE, ne, ne)
TCC_COMPARE(LessOp, OLT, slt, ult)
TCC_COMPARE(LessEqualOp, OLE, sle, ule)
TCC_COMPARE(GreaterOp, OGT, sgt, ugt)
TCC_COMPARE(GreaterEqualOp, OGE, sge, uge)
#undef TCC_COMPARE

/// An op computed in the compute type of its operands and rounded once to
/// its result type.
template <typename OpTy>
struct ComputeLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Type resultElt = resultType.getElementType();
    Value r = buildElementwise(
        rewriter, op.getLoc(), op->getOperands(), resultType,
        [&](ImplicitLocOpBuilder &b, ValueRange args) {
          SmallVector<Value> c;
          for (Value v : args)
            c.push_back(toCompute(b, v));
          return convertScalar(b, computeScalar(op, b, c), resultElt);
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Ops that only select or convert elements, on their stored values.
template <typename OpTy> Value rawScalar(ImplicitLocOpBuilder &b, ValueRange a,
                                         Type resultElt);
template <> Value rawScalar<SelectOp>(ImplicitLocOpBuilder &b, ValueRange a,
                                      Type) {
  return arith::SelectOp::create(b, a[0], a[1], a[2]);
}
template <> Value rawScalar<AndOp>(ImplicitLocOpBuilder &b, ValueRange a,
                                   Type) {
  return arith::AndIOp::create(b, a[0], a[1]);
}
template <> Value rawScalar<OrOp>(ImplicitLocOpBuilder &b, ValueRange a,
                                  Type) {
  return arith::OrIOp::create(b, a[0], a[1]);
}
template <> Value rawScalar<NotOp>(ImplicitLocOpBuilder &b, ValueRange a,
                                   Type) {
  return arith::XOrIOp::create(b, a[0],
                               intConstant(b, b.getLoc(), b.getI1Type(), 1));
}
template <> Value rawScalar<CastOp>(ImplicitLocOpBuilder &b, ValueRange a,
                                    Type resultElt) {
  return convertScalar(b, a[0], resultElt);
}

template <typename OpTy> struct RawLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    if (isa<CastOp>(op.getOperation()) &&
        op->getOperand(0).getType() == resultType) {
      rewriter.replaceOp(op, op->getOperand(0));
      return success();
    }
    Value r = buildElementwise(
        rewriter, op.getLoc(), op->getOperands(), resultType,
        [&](ImplicitLocOpBuilder &b, ValueRange args) {
          return rawScalar<OpTy>(b, args, resultType.getElementType());
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

/// A scalar splat is a linalg.fill, never a dense constant: a constant
/// tensor would be materialised element by element in the binary.
struct ConstantLowering : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConstantOp op,
                                PatternRewriter &rewriter) const override {
    Value scalar =
        arith::ConstantOp::create(rewriter, op.getLoc(), op.getValue());
    rewriter.replaceOp(op, filledTensor(rewriter, op.getLoc(),
                                        op.getType().getShape(), scalar));
    return success();
  }
};

struct IotaLowering : OpRewritePattern<IotaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(IotaOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    int64_t axis = op.getAxis();
    Value r = buildElementwise(
        rewriter, op.getLoc(), ValueRange{}, type,
        [&](ImplicitLocOpBuilder &b, ValueRange) {
          Value i = arith::IndexCastOp::create(
              b, b.getI64Type(), linalg::IndexOp::create(b, axis));
          return convertScalar(b, i, type.getElementType());
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

// The elementwise ops by how they compute: in the compute type, rounded once
// (ComputeLowering), or on their stored values (RawLowering).
#define TCC_COMPUTE_OPS                                                        \
  NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp,           \
      SigmoidOp, ReluOp, SiluOp, ErfOp, FloorOp, CeilOp, GeluOp, ClampOp,      \
      AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp, EqualOp,        \
      NotEqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp
#define TCC_RAW_OPS SelectOp, AndOp, OrOp, NotOp, CastOp

namespace {
template <typename... Ops> void addComputeLowerings(RewritePatternSet &p) {
  p.add<ComputeLowering<Ops>...>(p.getContext());
}
template <typename... Ops> void addRawLowerings(RewritePatternSet &p) {
  p.add<RawLowering<Ops>...>(p.getContext());
}
} // namespace

void mlir::tcc::populateElementwiseLoweringPatterns(
    RewritePatternSet &patterns) {
  addComputeLowerings<TCC_COMPUTE_OPS>(patterns);
  addRawLowerings<TCC_RAW_OPS>(patterns);
  patterns.add<ConstantLowering, IotaLowering>(patterns.getContext());
}

bool mlir::tcc::hasElementwiseScalar(Operation *op) {
  return isa<TCC_COMPUTE_OPS, TCC_RAW_OPS>(op);
}

Value mlir::tcc::buildElementwiseScalar(OpBuilder &builder, Location loc,
                                        Operation *op, ValueRange args) {
  ImplicitLocOpBuilder b(loc, builder);
  Type resultElt =
      cast<ShapedType>(op->getResult(0).getType()).getElementType();
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case<TCC_COMPUTE_OPS>([&](auto concrete) {
        SmallVector<Value> c;
        for (Value v : args)
          c.push_back(toCompute(b, v));
        return convertScalar(b, computeScalar(concrete, b, c), resultElt);
      })
      .Case<TCC_RAW_OPS>([&](auto concrete) {
        return rawScalar<decltype(concrete)>(b, args, resultElt);
      })
      .Default([](Operation *) { return Value(); });
}
#undef TCC_COMPUTE_OPS
#undef TCC_RAW_OPS
