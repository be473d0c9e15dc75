//===- ExpForm.cpp - shares of a sum scaled by exp of a row value ---------===//
#include "passes/ExpForm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace {

/// How a value depends on r: not at all (Free), as a + k·r (Affine) or as
/// exp(a + k·r)·h (Scaled), a and h free of r.
struct Form {
  enum Kind { Free, Affine, Scaled } kind = Free;
  double k = 0;
};

std::optional<double> floatConstant(Value v) {
  APFloat f(0.0);
  if (!matchPattern(v, m_ConstantFloat(&f)))
    return std::nullopt;
  return f.convertToDouble();
}

bool isZero(Value v) {
  std::optional<double> c = floatConstant(v);
  return c && *c == 0.0;
}

class Analysis {
public:
  explicit Analysis(Value r) : r(r) {}

  std::optional<Form> of(Value v) {
    if (v == r)
      return Form{Form::Affine, 1.0};
    auto it = memo.find(v);
    if (it != memo.end())
      return it->second;
    // Marked free first: a cycle through a region (none in this IR) stops.
    memo[v] = Form{};
    std::optional<Form> f = compute(v);
    memo[v] = f;
    return f;
  }

private:
  Value r;
  llvm::DenseMap<Value, std::optional<Form>> memo;

  std::optional<Form> compute(Value v) {
    Operation *op = v.getDefiningOp();
    if (!op)
      return Form{};
    SmallVector<Form> in;
    bool allFree = true;
    for (Value operand : op->getOperands()) {
      std::optional<Form> f = of(operand);
      if (!f)
        return std::nullopt;
      allFree &= f->kind == Form::Free;
      in.push_back(*f);
    }
    // An op with regions is free only where nothing inside reads r.
    bool readsR = false;
    for (Region &region : op->getRegions())
      region.walk([&](Operation *inner) {
        for (Value operand : inner->getOperands())
          if (!region.isAncestor(operand.getParentRegion())) {
            std::optional<Form> f = of(operand);
            readsR |= !f || f->kind != Form::Free;
          }
      });
    if (readsR)
      return std::nullopt;
    if (allFree)
      return Form{};

    auto affine = [](const Form &f) { return f.kind != Form::Scaled; };
    auto kOf = [](const Form &f) { return f.kind == Form::Free ? 0.0 : f.k; };
    Value lhs = op->getNumOperands() > 0 ? op->getOperand(0) : Value();
    Value rhs = op->getNumOperands() > 1 ? op->getOperand(1) : Value();
    if (isa<arith::AddFOp, arith::SubFOp>(op)) {
      double sign = isa<arith::SubFOp>(op) ? -1.0 : 1.0;
      if (affine(in[0]) && affine(in[1]))
        return Form{Form::Affine, kOf(in[0]) + sign * kOf(in[1])};
      // A scaled value plus zero (a sum's neutral) stays scaled.
      if (in[0].kind == Form::Scaled && isZero(rhs))
        return in[0];
      if (in[1].kind == Form::Scaled && isZero(lhs) && sign > 0)
        return in[1];
      return std::nullopt;
    }
    if (isa<arith::MulFOp, arith::DivFOp>(op)) {
      bool div = isa<arith::DivFOp>(op);
      for (int i = 0; i < 2; ++i) {
        const Form &a = in[i], &o = in[1 - i];
        if (div && i == 1)
          break; // r under the divisor: no form
        // (a + k·r)·c and (a + k·r)/c with a constant c.
        if (a.kind == Form::Affine && o.kind == Form::Free)
          if (std::optional<double> c = floatConstant(i ? lhs : rhs);
              c && *c != 0.0)
            return Form{Form::Affine, div ? a.k / *c : a.k * *c};
        if (a.kind == Form::Scaled && o.kind == Form::Free)
          return a;
        if (!div && a.kind == Form::Scaled && o.kind == Form::Scaled)
          return Form{Form::Scaled, a.k + o.k};
      }
      return std::nullopt;
    }
    if (isa<arith::NegFOp, arith::ExtFOp, arith::TruncFOp>(op)) {
      Form f = in[0];
      if (isa<arith::NegFOp>(op) && f.kind == Form::Affine)
        f.k = -f.k;
      return f;
    }
    if (isa<math::ExpOp>(op)) {
      if (in[0].kind != Form::Affine)
        return std::nullopt;
      return Form{Form::Scaled, in[0].k};
    }
    if (auto select = dyn_cast<arith::SelectOp>(op)) {
      if (in[0].kind != Form::Free)
        return std::nullopt;
      // A masked-out position's zero is any scaled value's zero.
      const Form &t = in[1], &e = in[2];
      if (t.kind == Form::Free && isZero(select.getTrueValue()))
        return e.kind == Form::Scaled ? std::optional<Form>(e) : std::nullopt;
      if (e.kind == Form::Free && isZero(select.getFalseValue()))
        return t.kind == Form::Scaled ? std::optional<Form>(t) : std::nullopt;
      if (t.kind == e.kind && t.k == e.k)
        return t;
      return std::nullopt;
    }
    return std::nullopt;
  }
};

} // namespace

std::optional<double> mlir::tcc::commonExpExponent(ArrayRef<Value> shares,
                                                   Value r) {
  Analysis analysis(r);
  std::optional<double> k;
  for (Value s : shares) {
    std::optional<Form> f = analysis.of(s);
    if (!f)
      return std::nullopt;
    // A share that is zero whatever r is (a constant) fits any k.
    if (f->kind == Form::Free && isZero(s))
      continue;
    if (f->kind != Form::Scaled || f->k == 0.0 || (k && *k != f->k))
      return std::nullopt;
    k = f->k;
  }
  return k;
}
