//===- ChainAlgebra.cpp - derive the corrections of a reduction chain -----===//
//
// Each value of a chain gets a *form* relative to the running values (the
// results of the chain's reductions) it reads:
//   pure     reads no running value;
//   row      does not vary along the axis (a function of running values);
//   mult     exp(la(r)) · pa(r) · B(x);
//   add      a(r) + B(x);
//   prod     (a_u(r) + B_u(x)) · (a_w(r) + B_w(x)), only as a sum's input.
// The forms follow from the homomorphisms of the scalar ops (exp turns add
// into mult, mul and div multiply mult forms, add and sub add add forms); a
// reduction's rule follows from its input's form and its reducer. Anything
// else is refused with the op and the condition that failed.
//
//===----------------------------------------------------------------------===//
#include "passes/ChainAlgebra.h"
#include "passes/lowering/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::tcc;

namespace {

ExprPtr node(Expr::Kind k, ExprPtr l = nullptr, ExprPtr r = nullptr,
             Value row = nullptr) {
  auto e = std::make_shared<Expr>();
  e->kind = k;
  e->lhs = std::move(l);
  e->rhs = std::move(r);
  e->row = row;
  return e;
}

ExprPtr zero() { return node(Expr::Zero); }
ExprPtr one() { return node(Expr::One); }
ExprPtr rowExpr(Value v) { return node(Expr::Row, nullptr, nullptr, v); }

bool isZero(const ExprPtr &e) { return e->kind == Expr::Zero; }
bool isOne(const ExprPtr &e) { return e->kind == Expr::One; }

ExprPtr add(ExprPtr l, ExprPtr r) {
  if (isZero(l))
    return r;
  if (isZero(r))
    return l;
  return node(Expr::Add, l, r);
}
ExprPtr neg(ExprPtr l) {
  if (isZero(l))
    return l;
  if (l->kind == Expr::Neg)
    return l->lhs;
  return node(Expr::Neg, l);
}
ExprPtr sub(ExprPtr l, ExprPtr r) {
  if (isZero(r))
    return l;
  if (isZero(l))
    return neg(r);
  return node(Expr::Sub, l, r);
}
ExprPtr mul(ExprPtr l, ExprPtr r) {
  if (isOne(l))
    return r;
  if (isOne(r))
    return l;
  if (isZero(l) || isZero(r))
    return zero();
  return node(Expr::Mul, l, r);
}
ExprPtr div(ExprPtr l, ExprPtr r) {
  if (isOne(r))
    return l;
  return node(Expr::Div, l, r);
}

/// A value's form relative to the running values (see the file comment).
struct Form {
  bool pure = false, row = false;
  bool mult = false, additive = false, prod = false;
  ExprPtr la, pa, a, au, aw;
  Value u, w;
  SmallVector<unsigned> deps;
  std::string why; // set when no form applies

  static Form failed(std::string why) {
    Form f;
    f.why = std::move(why);
    return f;
  }
  bool ok() const { return why.empty(); }
};

std::string opName(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "'";
}

double constantValue(Operation *op, bool &ok) {
  ok = false;
  auto c = dyn_cast_or_null<ConstantOp>(op);
  if (!c)
    return 0;
  ok = true;
  if (auto f = dyn_cast<FloatAttr>(c.getValue()))
    return f.getValueAsDouble();
  return double(cast<IntegerAttr>(c.getValue()).getInt());
}

bool isConstant(Value v, double want) {
  bool ok;
  double got = constantValue(v.getDefiningOp(), ok);
  return ok && got == want;
}

} // namespace

Value mlir::tcc::evaluate(const ExprPtr &e, ExprEmitter &em) {
  switch (e->kind) {
  case Expr::Zero:
    return em.constant(0.0);
  case Expr::One:
    return em.constant(1.0);
  case Expr::Row:
    return em.row(e->row);
  default:
    break;
  }
  Value l = evaluate(e->lhs, em);
  Value r = e->rhs ? evaluate(e->rhs, em) : Value();
  if (!l || (e->rhs && !r))
    return {};
  return em.apply(e->kind, l, r);
}

namespace {

class Deriver {
public:
  Deriver(ChainOp chain, SmallVector<ChainReduction> &reds,
          SmallVector<int64_t> &space, int64_t axis)
      : chain(chain), reds(reds), space(space), axis(axis) {}

  bool varies(Value v) const {
    ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
    int64_t p = axis - int64_t(space.size() - s.size());
    return p >= 0 && s[p] == space[axis] && space[axis] > 1;
  }

  /// Forms are kept behind pointers: computing one adds others.
  const Form &formOf(Value v) {
    auto it = forms.find(v);
    if (it != forms.end())
      return *it->second;
    auto f = std::make_unique<Form>(compute(v));
    return *(forms[v] = std::move(f));
  }

  llvm::DenseMap<Operation *, unsigned> index;

private:
  Form compute(Value v) {
    Operation *def = v.getDefiningOp();
    Form f;
    if (!def || !chain->isProperAncestor(def)) {
      f.pure = true;
      return withPure(f);
    }
    auto red = index.find(def);
    if (red != index.end()) {
      const ChainReduction &r = reds[red->second];
      if (r.reducer == Reducer::Dot)
        return Form::failed(opName(def) +
                            " (P·V) is read by a later reduction");
      if (!def->getAttrOfType<BoolAttr>("keepdims").getValue())
        return Form::failed(opName(def) +
                            " without keepdims is read by a later reduction");
      f.deps.push_back(red->second);
      f.row = true;
      return withRow(f, v);
    }
    // Dependencies of the operands.
    SmallVector<const Form *> in;
    for (Value o : def->getOperands()) {
      const Form &of = formOf(o);
      if (!of.ok())
        return of;
      in.push_back(&of);
      for (unsigned d : of.deps)
        if (!llvm::is_contained(f.deps, d))
          f.deps.push_back(d);
    }
    llvm::sort(f.deps);
    if (f.deps.empty()) {
      f.pure = true;
      return withPure(f);
    }
    if (!varies(v)) {
      f.row = true;
      return withRow(f, v);
    }
    return combine(def, v, in, std::move(f));
  }

  static Form withPure(Form f) {
    f.mult = f.additive = true;
    f.la = zero();
    f.pa = one();
    f.a = zero();
    return f;
  }
  static Form withRow(Form f, Value v) {
    f.mult = f.additive = true;
    f.la = zero();
    f.pa = rowExpr(v);
    f.a = rowExpr(v);
    return f;
  }

  /// Whether `v` is a non-varying value reading no running value (a scale).
  bool isInvariant(Value v, const Form &f) { return f.pure && !varies(v); }

  Form combine(Operation *def, Value v, ArrayRef<const Form *> in, Form f) {
    auto fail = [&](StringRef what) {
      return Form::failed(opName(def) + " " + what.str());
    };
    auto setProd = [&](const Form &x, const Form &y, Value xv, Value yv) {
      f.prod = true;
      f.au = x.a;
      f.aw = y.a;
      f.u = xv;
      f.w = yv;
    };
    if (isa<AddOp, SubOp>(def)) {
      if (!in[0]->additive || !in[1]->additive)
        return fail("adds a value of no additive form a(r) + B(x)");
      f.additive = true;
      f.a = isa<AddOp>(def) ? add(in[0]->a, in[1]->a) : sub(in[0]->a, in[1]->a);
      return f;
    }
    if (isa<NegOp>(def)) {
      if (in[0]->additive) {
        f.additive = true;
        f.a = neg(in[0]->a);
      }
      if (in[0]->mult) {
        f.mult = true;
        f.la = in[0]->la;
        f.pa = neg(in[0]->pa);
      }
      return f;
    }
    if (isa<MulOp, DivOp>(def)) {
      bool isMul = isa<MulOp>(def);
      Value lhs = def->getOperand(0), rhs = def->getOperand(1);
      if (in[0]->mult && in[1]->mult) {
        f.mult = true;
        f.la = isMul ? add(in[0]->la, in[1]->la) : sub(in[0]->la, in[1]->la);
        f.pa = isMul ? mul(in[0]->pa, in[1]->pa) : div(in[0]->pa, in[1]->pa);
      }
      // (a + B) · c and (a + B) / c for an invariant c stay additive.
      if (in[0]->additive && isInvariant(rhs, *in[1])) {
        f.additive = true;
        f.a = isMul ? mul(in[0]->a, rowExpr(rhs)) : div(in[0]->a, rowExpr(rhs));
      } else if (isMul && in[1]->additive && isInvariant(lhs, *in[0])) {
        f.additive = true;
        f.a = mul(rowExpr(lhs), in[1]->a);
      }
      if (isMul && in[0]->additive && in[1]->additive)
        setProd(*in[0], *in[1], lhs, rhs);
      if (!f.mult && !f.additive && !f.prod)
        return fail(isMul ? "multiplies values of no common form"
                          : "divides by a value depending on the element and "
                            "a running value");
      return f;
    }
    if (isa<PowOp>(def)) {
      if (isConstant(def->getOperand(1), 2.0) && in[0]->additive) {
        setProd(*in[0], *in[0], def->getOperand(0), def->getOperand(0));
        return f;
      }
      return fail("is not a square of an additive form");
    }
    if (isa<ExpOp>(def)) {
      if (!in[0]->additive)
        return fail("of a value of no additive form a(r) + B(x)");
      f.mult = true;
      f.la = in[0]->a;
      f.pa = one();
      return f;
    }
    if (isa<CastOp, BroadcastToOp>(def)) {
      if (isa<CastOp>(def) &&
          (!isa<FloatType>(getElementTypeOrSelf(def->getOperand(0))) ||
           !isa<FloatType>(getElementTypeOrSelf(v))))
        return fail("converts between a float and an integer");
      Form g = *in[0];
      g.deps = f.deps;
      return g;
    }
    if (auto sel = dyn_cast<SelectOp>(def)) {
      if (!in[0]->pure)
        return fail("selects by a condition depending on a running value");
      // A masked element contributes 0 whatever the running values.
      if (in[1]->mult && isConstant(sel.getB(), 0.0)) {
        f.mult = true;
        f.la = in[1]->la;
        f.pa = in[1]->pa;
        return f;
      }
      if (in[2]->mult && isConstant(sel.getA(), 0.0)) {
        f.mult = true;
        f.la = in[2]->la;
        f.pa = in[2]->pa;
        return f;
      }
      return fail("selects between values depending on running values "
                  "(only a branch of 0 keeps a product form)");
    }
    return fail("of an element and a running value has no factorization "
                "A(r) (x) B(x)");
  }

  ChainOp chain;
  SmallVector<ChainReduction> &reds;
  SmallVector<int64_t> &space;
  int64_t axis;
  llvm::DenseMap<Value, std::unique_ptr<Form>> forms;
};

std::optional<Reducer> reducerOf(Operation *op) {
  if (isa<ReduceSumOp>(op))
    return Reducer::Sum;
  if (isa<ReduceMeanOp>(op))
    return Reducer::Mean;
  if (isa<ReduceMaxOp>(op))
    return Reducer::Max;
  if (isa<ReduceMinOp>(op))
    return Reducer::Min;
  return std::nullopt;
}

} // namespace

std::unique_ptr<ChainAlgebra> ChainAlgebra::derive(ChainOp chain,
                                                   std::string &reason) {
  auto alg = std::make_unique<ChainAlgebra>();
  alg->axis = chain.getAxis();
  Block &body = chain.getBody().front();
  // The space: the first reduction's input.
  for (Operation &op : body)
    if (reducerOf(&op)) {
      alg->space.assign(
          cast<RankedTensorType>(op.getOperand(0).getType()).getShape().begin(),
          cast<RankedTensorType>(op.getOperand(0).getType()).getShape().end());
      break;
    }
  if (alg->space.empty()) {
    reason = "the chain holds no reduction";
    return nullptr;
  }
  int64_t rank = alg->space.size();
  ArrayRef<int64_t> space = alg->space;
  auto isFull = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape() == space;
  };
  for (Operation &op : body) {
    if (std::optional<Reducer> r = reducerOf(&op)) {
      auto axes = op.getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
      if (axes.size() != 1 || axes[0] != alg->axis ||
          !isFull(op.getOperand(0))) {
        reason = opName(&op) + " does not reduce the chain's axis of its shape";
        return nullptr;
      }
      ChainReduction cr;
      cr.op = &op;
      cr.reducer = *r;
      cr.input = op.getOperand(0);
      alg->reductions.push_back(cr);
    } else if (auto mm = dyn_cast<MatmulOp>(&op)) {
      if (isFull(mm.getResult()))
        continue; // a producer (q·kᵀ): an element-wise leaf of the chain
      if (!isFull(mm.getA()) || mm.getTransposeA() || alg->axis != rank - 1) {
        reason = opName(&op) +
                 " contracts the axis other than as P·V with P the chain's "
                 "tensor on the left, untransposed";
        return nullptr;
      }
      ChainReduction cr;
      cr.op = &op;
      cr.reducer = Reducer::Dot;
      cr.input = mm.getA();
      cr.other = mm.getB();
      alg->reductions.push_back(cr);
    }
  }

  Deriver d(chain, alg->reductions, alg->space, alg->axis);
  for (auto [i, r] : llvm::enumerate(alg->reductions))
    d.index[r.op] = i;
  for (ChainReduction &r : alg->reductions) {
    const Form &f = d.formOf(r.input);
    std::string prefix = opName(r.op) + ": ";
    if (!f.ok()) {
      reason = prefix + f.why;
      return nullptr;
    }
    r.deps = f.deps;
    if (f.deps.empty()) {
      r.rule = CorrectionRule::Independent;
      continue;
    }
    bool sumLike = r.reducer == Reducer::Sum || r.reducer == Reducer::Mean ||
                   r.reducer == Reducer::Dot;
    if (sumLike && f.mult) {
      r.rule = CorrectionRule::Scale;
      r.logFactor = f.la;
      r.plainFactor = f.pa;
    } else if (sumLike && r.reducer != Reducer::Dot && f.additive) {
      r.rule = CorrectionRule::Shift;
      r.shift = f.a;
    } else if (sumLike && r.reducer != Reducer::Dot && f.prod) {
      r.rule = CorrectionRule::ShiftedProduct;
      r.shiftU = f.au;
      r.shiftW = f.aw;
      r.u = f.u;
      r.w = f.w;
    } else if (!sumLike && f.additive) {
      r.rule = CorrectionRule::Shift;
      r.shift = f.a;
    } else if (!sumLike && f.mult && isOne(f.pa)) {
      // exp(la) > 0: scaling by a positive factor commutes with max/min.
      r.rule = CorrectionRule::Scale;
      r.logFactor = f.la;
      r.plainFactor = f.pa;
    } else {
      reason = prefix +
               (sumLike ? std::string("its input is neither A(r)·B(x) nor "
                                      "a(r) + B(x) nor a product of two such "
                                      "sums (P·V: only A(r)·B(x))")
                        : std::string("its input is neither a(r) + B(x) nor "
                                      "exp(a(r))·B(x): the factor is not "
                                      "proven positive, as max/min needs"));
      return nullptr;
    }
  }

  // The element a scalar contribution reads: the single varying leaf of the
  // first reduction's input (the scores).
  SmallVector<Value> stack{alg->reductions.front().input};
  llvm::SmallPtrSet<Operation *, 16> seen;
  SmallVector<Value> leaves;
  while (!stack.empty()) {
    Value v = stack.pop_back_val();
    Operation *def = v.getDefiningOp();
    bool inside = def && chain->isProperAncestor(def);
    if (!inside || isa<MatmulOp, IotaOp>(def)) {
      if (d.varies(v) && !llvm::is_contained(leaves, v))
        leaves.push_back(v);
      continue;
    }
    if (!seen.insert(def).second)
      continue;
    for (Value o : def->getOperands())
      stack.push_back(o);
  }
  if (leaves.size() == 1)
    alg->elementLeaf = leaves.front();
  return alg;
}

int ChainAlgebra::indexOf(Operation *op) const {
  for (auto [i, r] : llvm::enumerate(reductions))
    if (r.op == op)
      return i;
  return -1;
}

bool ChainAlgebra::varies(Value v) const {
  ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
  int64_t p = axis - int64_t(space.size() - s.size());
  return p >= 0 && s[p] == space[axis] && space[axis] > 1;
}

//===----------------------------------------------------------------------===//
// Scalar API
//===----------------------------------------------------------------------===//

namespace {

/// One tcc op on scalars of a float compute type (f32 for narrow floats).
Value scalarOp(OpBuilder &b, Location loc, Operation *op, ValueRange a) {
  auto f = [&](double v) {
    return lowering::scalarConstant(b, loc, a[0].getType(), v);
  };
  if (isa<AddOp>(op))
    return arith::AddFOp::create(b, loc, a[0], a[1]);
  if (isa<SubOp>(op))
    return arith::SubFOp::create(b, loc, a[0], a[1]);
  if (isa<MulOp>(op))
    return arith::MulFOp::create(b, loc, a[0], a[1]);
  if (isa<DivOp>(op))
    return arith::DivFOp::create(b, loc, a[0], a[1]);
  if (isa<MaximumOp>(op))
    return arith::MaximumFOp::create(b, loc, a[0], a[1]);
  if (isa<MinimumOp>(op))
    return arith::MinimumFOp::create(b, loc, a[0], a[1]);
  if (isa<NegOp>(op))
    return arith::NegFOp::create(b, loc, a[0]);
  if (isa<ExpOp>(op))
    return math::ExpOp::create(b, loc, a[0]);
  if (isa<LogOp>(op))
    return math::LogOp::create(b, loc, a[0]);
  if (isa<SqrtOp>(op))
    return math::SqrtOp::create(b, loc, a[0]);
  if (isa<RsqrtOp>(op))
    return math::RsqrtOp::create(b, loc, a[0]);
  if (isa<TanhOp>(op))
    return math::TanhOp::create(b, loc, a[0]);
  if (isa<ReciprocalOp>(op))
    return arith::DivFOp::create(b, loc, f(1.0), a[0]);
  if (isa<CastOp, BroadcastToOp>(op))
    return a[0];
  if (isa<SelectOp>(op))
    return arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
  return {};
}

/// Rebuilds chain values on scalars: reductions are running values, the
/// element leaf is `element`, constants are constants.
class ScalarEmitter : public ExprEmitter {
public:
  ScalarEmitter(OpBuilder &b, Location loc, const ChainAlgebra &alg,
                ValueRange runs, Value element, Type type)
      : b(b), loc(loc), alg(alg), runs(runs), element(element), type(type) {}

  Value row(Value v) override { return value(v); }
  Value constant(double v) override {
    return lowering::scalarConstant(b, loc, type, v);
  }
  Value apply(Expr::Kind k, Value l, Value r) override {
    switch (k) {
    case Expr::Add:
      return arith::AddFOp::create(b, loc, l, r);
    case Expr::Sub:
      return arith::SubFOp::create(b, loc, l, r);
    case Expr::Mul:
      return arith::MulFOp::create(b, loc, l, r);
    case Expr::Div:
      return arith::DivFOp::create(b, loc, l, r);
    case Expr::Neg:
      return arith::NegFOp::create(b, loc, l);
    case Expr::Exp:
      return math::ExpOp::create(b, loc, l);
    default:
      return {};
    }
  }

  Value value(Value v) {
    if (Value known = memo.lookup(v))
      return known;
    Value out;
    Operation *def = v.getDefiningOp();
    int idx = def ? alg.indexOf(def) : -1;
    if (alg.getElementLeaf() && v == alg.getElementLeaf()) {
      out = element;
    } else if (idx >= 0) {
      out = runs[idx];
    } else if (auto c = dyn_cast_or_null<ConstantOp>(def)) {
      bool ok;
      if (isa<FloatType>(c.getValue().getType()))
        out = constant(constantValue(c, ok));
    } else if (def && def->getNumRegions() == 0) {
      SmallVector<Value> ops;
      for (Value o : def->getOperands()) {
        Value s = value(o);
        if (!s)
          return {};
        ops.push_back(s);
      }
      out = scalarOp(b, loc, def, ops);
    }
    if (out)
      memo[v] = out;
    return out;
  }

private:
  OpBuilder &b;
  Location loc;
  const ChainAlgebra &alg;
  ValueRange runs;
  Value element;
  Type type;
  llvm::DenseMap<Value, Value> memo;
};

} // namespace

Value ChainAlgebra::buildCorrection(OpBuilder &b, Location loc, unsigned j,
                                    ValueRange oldRuns,
                                    ValueRange newRuns) const {
  const ChainReduction &r = reductions[j];
  Type t = newRuns.front().getType();
  ScalarEmitter olds(b, loc, *this, oldRuns, Value(), t);
  ScalarEmitter news(b, loc, *this, newRuns, Value(), t);
  switch (r.rule) {
  case CorrectionRule::Independent:
    return lowering::scalarConstant(b, loc, t, 0.0);
  case CorrectionRule::Shift: {
    Value n = evaluate(r.shift, news), o = evaluate(r.shift, olds);
    return n && o ? arith::SubFOp::create(b, loc, n, o).getResult() : Value();
  }
  case CorrectionRule::Scale: {
    Value ln = evaluate(r.logFactor, news), lo = evaluate(r.logFactor, olds);
    Value pn = evaluate(r.plainFactor, news),
          po = evaluate(r.plainFactor, olds);
    if (!ln || !lo || !pn || !po)
      return {};
    Value e =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, ln, lo));
    return arith::MulFOp::create(b, loc, e,
                                 arith::DivFOp::create(b, loc, pn, po));
  }
  case CorrectionRule::ShiftedProduct:
    return {}; // needs the auxiliary sums: tensor-level only
  }
  return {};
}

Value ChainAlgebra::buildContribution(OpBuilder &b, Location loc, unsigned j,
                                      Value element, ValueRange runs) const {
  if (!elementLeaf)
    return {};
  ScalarEmitter em(b, loc, *this, runs, element, element.getType());
  // Any other varying leaf (a mask, a bias) has no scalar here: the walk
  // fails on it because it is a block argument or an iota.
  return em.value(reductions[j].input);
}
