//===- ExpForm.cpp - shares of a sum scaled by exp of a row value ---------===//
#include "passes/ExpForm.h"
#include "passes/ScalarForm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace {

/// A value with its exact widenings looked through (leaves compare so).
Value unwiden(Value v) {
  while (auto ext = v.getDefiningOp<arith::ExtFOp>())
    v = ext.getIn();
  return v;
}

/// How a value depends on r: not at all (Free), as a + k·r with a a sum
/// of multiples of values free of r (Affine; `terms`, with `offset` where
/// a constant is added), or as exp(a + k·r)·h, h free of r (Scaled).
struct Form {
  enum Kind { Free, Affine, Scaled } kind = Free;
  double k = 0;
  llvm::MapVector<Value, double> terms;
  bool offset = false;
};

/// The value of `v` when it is a float constant, or arithmetic of such
/// (the reciprocal 1/c that a division by c became is not folded yet).
std::optional<double> floatConstant(Value v, int depth = 0) {
  APFloat f(0.0);
  if (matchPattern(v, m_ConstantFloat(&f)))
    return f.convertToDouble();
  Operation *op = v.getDefiningOp();
  if (!op || depth > 4 || op->getNumResults() != 1)
    return std::nullopt;
  SmallVector<double> in;
  for (Value operand : op->getOperands()) {
    std::optional<double> c = floatConstant(operand, depth + 1);
    if (!c)
      return std::nullopt;
    in.push_back(*c);
  }
  if (isa<arith::DivFOp>(op) && in[1] != 0.0)
    return in[0] / in[1];
  if (isa<arith::MulFOp>(op))
    return in[0] * in[1];
  if (isa<arith::NegFOp>(op))
    return -in[0];
  if (isa<arith::ExtFOp>(op))
    return in[0];
  return std::nullopt;
}

bool isZero(Value v) {
  std::optional<double> c = floatConstant(v);
  return c && *c == 0.0;
}

Form scaled(const Form &a, double by);
Form added(const Form &a, const Form &b, double sign);

/// A value free of r as an affine form of leaves: sums, differences and
/// products by constants looked through (0.5·x is 0.5 times the leaf x),
/// a constant an offset.
Form linearOf(Value v, int depth = 0) {
  Form a;
  a.kind = Form::Affine;
  if (std::optional<double> c = floatConstant(v)) {
    a.offset = *c != 0.0;
    return a;
  }
  Operation *op = v.getDefiningOp();
  if (op && depth < 8) {
    if (isa<arith::AddFOp, arith::SubFOp>(op))
      return added(linearOf(op->getOperand(0), depth + 1),
                   linearOf(op->getOperand(1), depth + 1),
                   isa<arith::SubFOp>(op) ? -1.0 : 1.0);
    if (isa<arith::NegFOp>(op))
      return scaled(linearOf(op->getOperand(0), depth + 1), -1.0);
    // Not through a truncation: bf16(x) may exceed the max of x.
    if (isa<arith::ExtFOp>(op))
      return linearOf(op->getOperand(0), depth + 1);
    if (isa<arith::MulFOp, arith::DivFOp>(op)) {
      bool div = isa<arith::DivFOp>(op);
      for (int i = 0; i < (div ? 1 : 2); ++i)
        if (std::optional<double> c = floatConstant(op->getOperand(1 - i));
            c && *c != 0.0)
          return scaled(linearOf(op->getOperand(i), depth + 1),
                        div ? 1.0 / *c : *c);
    }
  }
  a.terms[unwiden(v)] = 1.0;
  return a;
}

/// `f` (Free or Affine) as an affine form.
Form asAffine(const Form &f, Value v) {
  return f.kind == Form::Free ? linearOf(v) : f;
}

Form scaled(const Form &a, double by) {
  Form f = a;
  f.k *= by;
  for (auto &t : f.terms)
    t.second *= by;
  return f;
}

Form added(const Form &a, const Form &b, double sign) {
  Form f = a;
  f.k += sign * b.k;
  f.offset |= b.offset;
  for (auto &[v, c] : b.terms)
    f.terms[v] += sign * c;
  return f;
}

bool sameForm(const Form &a, const Form &b) {
  if (a.kind != b.kind || a.k != b.k || a.offset != b.offset ||
      a.terms.size() != b.terms.size())
    return false;
  for (auto &[v, c] : a.terms) {
    auto it = b.terms.find(v);
    if (it == b.terms.end() || it->second != c)
      return false;
  }
  return true;
}

class Analysis {
public:
  explicit Analysis(Value r) : r(r) {}

  std::optional<Form> of(Value v) {
    if (v == r) {
      Form f;
      f.kind = Form::Affine;
      f.k = 1.0;
      return f;
    }
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
    Value lhs = op->getNumOperands() > 0 ? op->getOperand(0) : Value();
    Value rhs = op->getNumOperands() > 1 ? op->getOperand(1) : Value();
    if (isa<arith::AddFOp, arith::SubFOp>(op)) {
      double sign = isa<arith::SubFOp>(op) ? -1.0 : 1.0;
      if (affine(in[0]) && affine(in[1]))
        return added(asAffine(in[0], lhs), asAffine(in[1], rhs), sign);
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
            return scaled(a, div ? 1.0 / *c : *c);
        if (a.kind == Form::Scaled && o.kind == Form::Free)
          return a;
        // Not a product of two exponentials: either factor may overflow
        // against a block's max where their product would not.
      }
      return std::nullopt;
    }
    if (isa<arith::NegFOp>(op))
      return in[0].kind == Form::Affine ? scaled(in[0], -1.0) : in[0];
    if (isa<arith::ExtFOp, arith::TruncFOp>(op))
      return in[0];
    if (isa<math::ExpOp>(op)) {
      if (in[0].kind != Form::Affine)
        return std::nullopt;
      Form f = in[0];
      f.kind = Form::Scaled;
      return f;
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
      if (sameForm(t, e))
        return t;
      return std::nullopt;
    }
    return std::nullopt;
  }
};

/// Whether `a` and `b` are the same value, or computed alike by pure ops
/// from the same values (a score change a fusion cloned into the max's
/// body and into the exponential's op).
bool sameValue(Value a, Value b) {
  return mlir::tcc::sameComputation(a, b, unwiden);
}

} // namespace

std::optional<double> mlir::tcc::commonExpExponent(ArrayRef<Value> shares,
                                                   Value r,
                                                   ArrayRef<Value> reduced) {
  Analysis analysis(r);
  std::optional<double> k;
  for (auto [s, v] : llvm::zip_equal(shares, reduced)) {
    std::optional<Form> f = analysis.of(s);
    if (!f)
      return std::nullopt;
    // A share that is zero whatever r is (a constant) fits any k.
    if (f->kind == Form::Free && isZero(s))
      continue;
    if (f->kind != Form::Scaled || f->k == 0.0 || (k && *k != f->k) ||
        f->offset)
      return std::nullopt;
    // The exponent is k·(r - v), v what the max (min) reduced here: the
    // same terms as v's, times -k (both read through the same products by
    // constants, e.g. a softcap's).
    Form want = scaled(linearOf(v), -f->k);
    if (want.offset)
      return std::nullopt;
    // Term by term, each of v's matched once (two clones of one term of
    // v must not both match it).
    SmallVector<std::pair<Value, double>> left;
    for (auto &[t, c] : want.terms)
      if (c != 0.0)
        left.push_back({t, c});
    if (left.empty())
      return std::nullopt;
    for (auto &[t, c] : f->terms) {
      if (c == 0.0)
        continue;
      auto it = llvm::find_if(left, [&, &t = t, &c = c](auto &w) {
        return w.second == c && sameValue(w.first, t);
      });
      if (it == left.end())
        return std::nullopt;
      left.erase(it);
    }
    if (!left.empty())
      return std::nullopt;
    k = f->k;
  }
  return k;
}
