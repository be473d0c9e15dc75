//===- AttentionMatch.cpp - plain attention recognised in a chain ---------===//
#include "passes/AttentionMatch.h"
#include "passes/ScalarForm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <functional>
#include <tuple>
#include <utility>

namespace mlir::tcc {
namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

bool isLastAxisKeepdims(Operation *op, int64_t rank) {
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
  auto keep = op->getAttrOfType<BoolAttr>("keepdims");
  return axes && keep && keep.getValue() && axes.size() == 1 &&
         axes[0] == rank - 1;
}

/// A value of positions only: built from iotas and constants by scalar ops.
bool positional(Value v, Block *body) {
  Operation *op = v.getDefiningOp();
  if (!op || op->getBlock() != body || !isScalarOp(op))
    return false;
  if (isa<ConstantOp>(op))
    return bool(constantValue(v));
  if (isa<IotaOp>(op))
    return true;
  return llvm::all_of(op->getOperands(),
                      [&](Value o) { return positional(o, body); });
}

/// The input of `v` when `v` is a reshape that only adds or drops axes of
/// size 1 (its other sizes the input's, in order), else null.
Value unitReshapeSource(Value v) {
  auto r = v.getDefiningOp<ReshapeOp>();
  if (!r)
    return {};
  auto nonUnit = [](Type t) {
    SmallVector<int64_t> out;
    for (int64_t d : cast<RankedTensorType>(t).getShape())
      if (d != 1)
        out.push_back(d);
    return out;
  };
  return nonUnit(r.getInput().getType()) == nonUnit(v.getType()) ? r.getInput()
                                                                    : Value();
}

bool isOutside(Value v, Block *body) {
  Operation *op = v.getDefiningOp();
  return op ? op->getBlock() != body
            : cast<BlockArgument>(v).getOwner() != body;
}

/// A value the score changes may read besides the score, for scores of
/// shape `scores`: positions, tensors captured from outside the chain that
/// broadcast to the scores (read per score by the kernel), and scalar ops
/// of those.
bool scoreFree(Value v, Block *body, ArrayRef<int64_t> scores) {
  if (isOutside(v, body))
    return broadcastsTo(typeOf(v).getShape(), scores);
  if (positional(v, body))
    return true;
  Operation *op = v.getDefiningOp();
  if (!isScalarOp(op) || isa<ConstantOp, IotaOp>(op))
    return false;
  return llvm::all_of(op->getOperands(),
                      [&](Value o) { return scoreFree(o, body, scores); });
}

/// An integer value of positions as a * q + b * k + c, where q and k are the
/// last two axes of scores of rank `rank`.
std::optional<LinearConstraint> affineOf(Value v, int64_t rank) {
  Operation *op = v.getDefiningOp();
  if (!op || !typeOf(v).getElementType().isSignlessInteger())
    return std::nullopt;
  if (auto c = constantValue(v))
    return LinearConstraint{0, 0, int64_t(*c)};
  // Broadcasting aligns trailing axes: the positions are the input's.
  if (auto b = dyn_cast<BroadcastToOp>(op))
    return affineOf(b.getInput(), rank);
  if (auto iota = dyn_cast<IotaOp>(op)) {
    RankedTensorType t = typeOf(v);
    int64_t axis = iota.getAxis() + (rank - t.getRank());
    if (t.getDimSize(iota.getAxis()) == 1)
      return LinearConstraint{0, 0, 0};
    if (axis == rank - 2)
      return LinearConstraint{1, 0, 0};
    if (axis == rank - 1)
      return LinearConstraint{0, 1, 0};
    return std::nullopt;
  }
  auto both = [&](int sign) -> std::optional<LinearConstraint> {
    auto l = affineOf(op->getOperand(0), rank);
    auto r = affineOf(op->getOperand(1), rank);
    if (!l || !r)
      return std::nullopt;
    return LinearConstraint{l->a + sign * r->a, l->b + sign * r->b,
                            l->c + sign * r->c};
  };
  if (isa<AddOp>(op))
    return both(1);
  if (isa<SubOp>(op))
    return both(-1);
  if (isa<NegOp>(op)) {
    auto x = affineOf(op->getOperand(0), rank);
    if (!x)
      return std::nullopt;
    return LinearConstraint{-x->a, -x->b, -x->c};
  }
  if (isa<MulOp>(op)) {
    auto l = affineOf(op->getOperand(0), rank);
    auto r = affineOf(op->getOperand(1), rank);
    if (!l || !r)
      return std::nullopt;
    if (l->a == 0 && l->b == 0)
      return LinearConstraint{l->c * r->a, l->c * r->b, l->c * r->c};
    if (r->a == 0 && r->b == 0)
      return LinearConstraint{r->c * l->a, r->c * l->b, r->c * l->c};
  }
  return std::nullopt;
}

/// A condition of positions as a conjunction of linear constraints;
/// `negated`: of not(cond). A negation turns and into or, so it passes
/// through not and or, and negates one inequality (not(e >= 0) is
/// -e - 1 >= 0 over the integers): an additive mask of the positions it
/// removes, select(col > row, -inf, 0), keeps not(col > row), and
/// masked_fill's export, where(not(keep), -inf, s), not(not(keep)).
bool constraintsOf(Value cond, int64_t rank, SmallVector<LinearConstraint> &out,
                   bool negated = false) {
  Operation *op = cond.getDefiningOp();
  if (!op)
    return false;
  if (isa<NotOp>(op))
    return constraintsOf(op->getOperand(0), rank, out, !negated);
  if ((isa<AndOp>(op) && !negated) || (isa<OrOp>(op) && negated))
    return constraintsOf(op->getOperand(0), rank, out, negated) &&
           constraintsOf(op->getOperand(1), rank, out, negated);
  if (!isa<GreaterEqualOp, GreaterOp, LessEqualOp, LessOp, EqualOp>(op))
    return false;
  auto l = affineOf(op->getOperand(0), rank);
  auto r = affineOf(op->getOperand(1), rank);
  if (!l || !r)
    return false;
  LinearConstraint d{l->a - r->a, l->b - r->b, l->c - r->c}; // l - r
  LinearConstraint n{-d.a, -d.b, -d.c};                      // r - l
  LinearConstraint kept;
  if (isa<GreaterEqualOp>(op))
    kept = d;
  else if (isa<GreaterOp>(op))
    kept = {d.a, d.b, d.c - 1};
  else if (isa<LessEqualOp>(op))
    kept = n;
  else if (isa<LessOp>(op))
    kept = {n.a, n.b, n.c - 1};
  else if (negated) // not(l == r) is a disjunction
    return false;
  else {
    out.push_back(d);
    out.push_back(n);
    return true;
  }
  if (negated)
    kept = {-kept.a, -kept.b, -kept.c - 1};
  out.push_back(kept);
  return true;
}

/// Whether some query row keeps no key.
bool someRowEmpty(ArrayRef<LinearConstraint> mask, int64_t lq, int64_t lk) {
  for (int64_t q = 0; q < lq; ++q) {
    // Each constraint bounds k: b * k >= -(a * q + c).
    double lo = 0, hi = double(lk - 1);
    bool empty = false;
    for (const LinearConstraint &c : mask) {
      double rest = -double(c.a * q + c.c);
      if (c.b == 0) {
        empty |= rest > 0;
        continue;
      }
      double bound = rest / double(c.b);
      if (c.b > 0)
        lo = std::max(lo, std::ceil(bound));
      else
        hi = std::min(hi, std::floor(bound));
    }
    if (empty || lo > hi)
      return true;
  }
  return false;
}

/// The K or V that `v` repeats over query heads (GQA, MQA), with the ops
/// that repeat it and its number of heads; `v` itself (heads: those of `v`)
/// when it is not repeated. Heads are the axis before the last two.
Value unrepeated(Value v, int64_t &kvHeads, SmallVector<Operation *> &ops) {
  RankedTensorType t = typeOf(v);
  int64_t rank = t.getRank();
  kvHeads = rank >= 3 ? t.getDimSize(rank - 3) : 1;
  if (rank < 3)
    return v;
  ArrayRef<int64_t> shape = t.getShape();
  // Heads as two axes, [B, Hkv, G, L, D]: K broadcast over the groups
  // (tcc-form-chains makes a matmul's broadcast explicit), or over both
  // (MQA). Its heads are those of its axes 1 and 2 (the match checks that
  // they map query heads to theirs as h / G).
  if (rank == 5) {
    if (auto b = v.getDefiningOp<BroadcastToOp>()) {
      ArrayRef<int64_t> in = typeOf(b.getInput()).getShape();
      if (in.size() == 5 && in[2] == 1 && (in[1] == 1 || in[1] == shape[1]) &&
          in[0] == shape[0] && in.take_back(2) == shape.take_back(2)) {
        ops.push_back(b);
        v = b.getInput();
      }
    }
    kvHeads = typeOf(v).getDimSize(1) * typeOf(v).getDimSize(2);
    return v;
  }
  // MQA: one head broadcast to all.
  if (auto b = v.getDefiningOp<BroadcastToOp>()) {
    ArrayRef<int64_t> in = typeOf(b.getInput()).getShape();
    if (in.size() == shape.size() && in[rank - 3] == 1 &&
        llvm::all_of(llvm::seq<int64_t>(0, rank), [&](int64_t i) {
          return i == rank - 3 || in[i] == shape[i];
        })) {
      ops.push_back(b);
      kvHeads = 1;
      return b.getInput();
    }
  }
  // GQA: [.., Hkv, L, D] -> [.., Hkv, 1, L, D] -> [.., Hkv, G, L, D]
  // -> [.., Hkv * G, L, D].
  auto merge = v.getDefiningOp<ReshapeOp>();
  auto b = merge ? merge.getInput().getDefiningOp<BroadcastToOp>()
                 : BroadcastToOp();
  auto split = b ? b.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
  if (!split)
    return v;
  ArrayRef<int64_t> wide = typeOf(b.getResult()).getShape();
  ArrayRef<int64_t> narrow = typeOf(b.getInput()).getShape();
  ArrayRef<int64_t> base = typeOf(split.getInput()).getShape();
  if (wide.size() != size_t(rank + 1) || narrow.size() != wide.size() ||
      base.size() != size_t(rank))
    return v;
  int64_t h = rank - 3; // the heads axis of v and of the base
  bool ok = narrow[h + 1] == 1 && wide[h] * wide[h + 1] == shape[h] &&
            narrow[h] == wide[h] && base[h] == wide[h];
  for (int64_t i = 0; i < rank && ok; ++i) {
    if (i == h)
      continue;
    int64_t w = i < h ? i : i + 1; // the same axis in the 5-D shapes
    ok = shape[i] == base[i] && wide[w] == shape[i] && narrow[w] == shape[i];
  }
  if (!ok)
    return v;
  ops.append({split, b, merge});
  kvHeads = base[h];
  return split.getInput();
}

/// The strides of rank 4 of a tensor of rank 5 whose heads are axes 1 and
/// 2 (`shape`, `strides`: attention's logical axes), those axes merged:
/// one of them of size 1, or axis 1 stepping over axis 2 whole. nullopt
/// when the heads are not one axis in memory.
std::optional<SmallVector<int64_t>> mergeGroups(ArrayRef<int64_t> shape,
                                                ArrayRef<int64_t> strides) {
  int64_t heads;
  if (shape[2] == 1)
    heads = strides[1];
  else if (shape[1] == 1 || strides[1] == strides[2] * shape[2])
    heads = strides[2];
  else
    return std::nullopt;
  return SmallVector<int64_t>{strides[0], heads, strides[3], strides[4]};
}

/// Q, K or V of rank 5 (`mergeGroups`) as the op reads it: through the
/// views readThroughViews finds, or as it is (`axes` and `strides` its
/// layout), with strides of rank 4.
std::optional<AttentionOperandView> groupedView(Value v, ArrayRef<int64_t> axes,
                                                ArrayRef<int64_t> strides,
                                                ChainOp chain) {
  ArrayRef<int64_t> own = typeOf(v).getShape();
  SmallVector<int64_t> shape;
  for (int64_t a = 0; a < int64_t(own.size()); ++a)
    shape.push_back(own[axes.empty() ? a : axes[a]]);
  AttentionOperandView view = readThroughViews(v, axes, strides, chain);
  for (bool through : {true, false}) {
    if (!through)
      view = {v, SmallVector<int64_t>(strides), 0};
    SmallVector<int64_t> given =
        view.strides.empty() ? packedStrides(shape) : view.strides;
    auto merged = mergeGroups(shape, given);
    if (merged) {
      view.strides = *merged;
      return view;
    }
  }
  return std::nullopt;
}

/// Whether `t` swaps the last two axes and keeps the others.
bool isLastTwoSwap(TransposeOp t) {
  ArrayRef<int64_t> perm = t.getPerm();
  int64_t r = perm.size();
  if (r < 2 || perm[r - 2] != r - 1 || perm[r - 1] != r - 2)
    return false;
  return llvm::equal(perm.drop_back(2), llvm::seq<int64_t>(0, r - 2));
}

/// Whether `op` is a cast from one float type to another.
bool isFloatCast(Operation *op) {
  auto c = dyn_cast<CastOp>(op);
  return c && isa<FloatType>(typeOf(c.getInput()).getElementType()) &&
         isa<FloatType>(typeOf(c.getResult()).getElementType());
}

/// `v` less the casts between float types that produced it, which are
/// appended to `ops` (a model in f16 casts P to V's dtype, or sums in f32).
Value uncast(Value v, SmallVectorImpl<Operation *> &ops) {
  while (auto c = v.getDefiningOp<CastOp>()) {
    if (!isFloatCast(c))
      break;
    ops.push_back(c);
    v = c.getInput();
  }
  return v;
}

/// One term of a conjunction: a boolean value, or its negation.
struct Literal {
  Value v;
  bool negated = false;
};

/// Appends the literals whose conjunction is `v` (`negated`: not v):
/// and(a, b) is a's and b's, not(a) the negation of a's, not(or(a, b)) the
/// negations of a's and b's; anything else is one literal.
void conjuncts(Value v, bool negated, SmallVectorImpl<Literal> &out) {
  Operation *op = v.getDefiningOp();
  if (isa_and_nonnull<NotOp>(op))
    return conjuncts(op->getOperand(0), !negated, out);
  if ((isa_and_nonnull<AndOp>(op) && !negated) ||
      (isa_and_nonnull<OrOp>(op) && negated)) {
    conjuncts(op->getOperand(0), negated, out);
    conjuncts(op->getOperand(1), negated, out);
    return;
  }
  out.push_back({v, negated});
}

/// Whether every literal of `a` is one of `b`'s (the same polarity, the
/// same value or one computed alike).
bool literalsWithin(ArrayRef<Literal> a, ArrayRef<Literal> b) {
  return llvm::all_of(a, [&](const Literal &x) {
    return llvm::any_of(b, [&](const Literal &y) {
      return x.negated == y.negated && sameComputation(x.v, y.v);
    });
  });
}

/// P zeroed where keys are dropped, between softmax and P·V: select(keep,
/// P, 0), select(drop, 0, P) or P * cast(keep) (float casts and nested ones
/// between). Returns P and appends the zeroing ops to `ops`, the literals
/// of the keys they keep to `keep`; `select` becomes true when one is a
/// select (which makes a NaN row zeros, where a product keeps it NaN).
Value unzeroed(Value v, SmallVectorImpl<Operation *> &ops,
               SmallVectorImpl<Literal> &keep, bool &select) {
  for (;;) {
    v = uncast(v, ops);
    Operation *op = v.getDefiningOp();
    auto isZero = [](Value z) {
      std::optional<double> c = uniformValue(z);
      return c && *c == 0;
    };
    if (auto sel = dyn_cast_or_null<SelectOp>(op)) {
      int kept = isZero(sel.getB()) ? 1 : isZero(sel.getA()) ? 2 : 0;
      Value p = kept == 1 ? sel.getA() : sel.getB();
      if (!kept || p.getType() != sel.getType())
        return v;
      conjuncts(sel.getCond(), /*negated=*/kept == 2, keep);
      select = true;
      ops.push_back(op);
      v = p;
      continue;
    }
    if (auto mul = dyn_cast_or_null<MulOp>(op)) {
      bool found = false;
      for (int i : {1, 0}) {
        auto c = mul->getOperand(i).getDefiningOp<CastOp>();
        Value p = mul->getOperand(1 - i);
        if (!c || !typeOf(c.getInput()).getElementType().isInteger(1) ||
            p.getType() != mul.getType())
          continue;
        conjuncts(c.getInput(), /*negated=*/false, keep);
        ops.push_back(op);
        v = p;
        found = true;
        break;
      }
      if (found)
        continue;
    }
    return v;
  }
}

/// `x` as `numerator` / sum or `numerator` * reciprocal(sum) (either
/// order; float casts and a broadcast of the sum between), or as
/// exp(t - log(sum)) where the sum is of exp(t) (the exponential of a
/// log-softmax: `numerator` is exp(t), the sum's terms): the sum, with the
/// ops from `x` to it appended to `ops`; null (and `ops` unchanged) when
/// `x` is none of these.
ReduceSumOp quotientBySum(Value x, Value &numerator,
                          SmallVectorImpl<Operation *> &ops) {
  SmallVector<Operation *> path;
  Operation *op = x.getDefiningOp();
  Value divisor;
  if (auto div = dyn_cast_if_present<DivOp>(op)) {
    numerator = div.getLhs();
    divisor = div.getRhs();
  } else if (auto mul = dyn_cast_if_present<MulOp>(op)) {
    for (auto [a, b] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())}) {
      auto r = uncast(b, path).getDefiningOp<ReciprocalOp>();
      if (r) {
        path.push_back(r);
        numerator = a;
        divisor = r.getInput();
        break;
      }
      path.clear();
    }
  } else if (auto outer = dyn_cast_if_present<ExpOp>(op)) {
    auto sub = uncast(outer.getInput(), path).getDefiningOp<SubOp>();
    Value logged = sub ? uncast(sub.getRhs(), path) : Value();
    if (auto b = logged ? logged.getDefiningOp<BroadcastToOp>() : nullptr) {
      path.push_back(b);
      logged = uncast(b.getInput(), path);
    }
    auto log = logged ? logged.getDefiningOp<LogOp>() : LogOp();
    SmallVector<Operation *> shared; // t's casts: exp(t)'s as much
    auto s = log ? uncast(log.getInput(), shared).getDefiningOp<ReduceSumOp>()
                 : ReduceSumOp();
    auto terms =
        s ? uncast(s.getInput(), shared).getDefiningOp<ExpOp>() : ExpOp();
    if (terms &&
        uncast(terms.getInput(), shared) == uncast(sub.getLhs(), shared)) {
      path.append({sub, log});
      numerator = s.getInput();
      divisor = log.getInput();
    } else {
      path.clear();
    }
  }
  if (divisor) {
    divisor = uncast(divisor, path);
    // The sum broadcast to P's shape first, as the max may be.
    if (auto b = divisor.getDefiningOp<BroadcastToOp>()) {
      path.push_back(b);
      divisor = uncast(b.getInput(), path);
    }
  }
  auto sum = divisor ? divisor.getDefiningOp<ReduceSumOp>() : ReduceSumOp();
  if (!sum)
    return ReduceSumOp();
  ops.push_back(op);
  ops.append(path);
  return sum;
}

} // namespace

SmallVector<int64_t> packedStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

SmallVector<int64_t> stridesThroughTranspose(TransposeOp t) {
  SmallVector<int64_t> packed = packedStrides(typeOf(t.getResult()).getShape());
  SmallVector<int64_t> strides(packed.size());
  for (auto [j, axis] : llvm::enumerate(t.getPerm()))
    strides[axis] = packed[j];
  return strides;
}

bool isLayoutTranspose(TransposeOp t) {
  ArrayRef<int64_t> perm = t.getPerm();
  return !perm.empty() && perm.back() == int64_t(perm.size()) - 1 &&
         !llvm::equal(perm, llvm::seq<int64_t>(0, perm.size()));
}

Location attentionResultLoc(ChainOp chain) {
  Block &body = chain.getBody().front();
  Value result = body.getTerminator()->getOperand(0);
  if (auto t = result.getDefiningOp<TransposeOp>();
      t && t->getBlock() == &body && isLayoutTranspose(t))
    result = t.getInput();
  Operation *op = result.getDefiningOp();
  return op ? op->getLoc() : chain.getLoc();
}

bool isPositional(Value v, Block *block) { return positional(v, block); }

std::optional<AttentionMatch> matchAttention(ChainOp chain, std::string &why) {
  auto fail = [&](const char *reason) -> std::optional<AttentionMatch> {
    why = reason;
    return std::nullopt;
  };
  Block &body = chain.getBody().front();
  auto outside = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def ? def->getBlock() != &body
               : cast<BlockArgument>(v).getOwner() != &body;
  };
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return fail("the chain has more than one result");
  // The ops of softmax and P·V, as the model writes them: P normalised
  // before P·V (exp(.) / sum), or P·V normalised after it (the template
  // divides O by the sum at the end, so both are what it computes).
  SmallVector<Operation *> pattern;
  // The result transposed back to the model's layout in the chain: written
  // with strides.
  Value result = yield.getOperand(0);
  SmallVector<int64_t> oStrides;
  Operation *oLayout = nullptr;
  if (auto t = result.getDefiningOp<TransposeOp>();
      t && t->getBlock() == &body && isLayoutTranspose(t)) {
    oStrides = stridesThroughTranspose(t);
    oLayout = t;
    result = t.getInput();
  }
  Value out = uncast(result, pattern);
  SmallVector<Operation *> post;
  Value numerator;
  ReduceSumOp sum = quotientBySum(out, numerator, post);
  MatmulOp pv;
  if (sum && (pv = uncast(numerator, post).getDefiningOp<MatmulOp>())) {
    pattern.append(post);
  } else {
    sum = ReduceSumOp();
    pv = out.getDefiningOp<MatmulOp>();
  }
  if (!pv || pv.getTransposeA() || pv.getTransposeB())
    return fail("the chain does not end in P·V (or P·V over a sum)");
  Value e = uncast(pv.getA(), pattern);
  // P zeroed where the masks drop keys (a "safe softmax": rows that keep no
  // key become zeros, not NaN): checked against the masks below.
  SmallVector<Literal> zeroKeep;
  bool zeroSelect = false;
  if (!sum)
    e = unzeroed(e, pattern, zeroKeep, zeroSelect);
  if (!sum) {
    Value p = e;
    if (!(sum = quotientBySum(p, e, pattern)))
      return fail("P is not normalised by a sum, before or after P·V");
    e = uncast(e, pattern);
  }
  int64_t rank = typeOf(e).getRank();
  auto exp = e.getDefiningOp<ExpOp>();
  if (!exp || uncast(sum.getInput(), pattern) != e ||
      !isLastAxisKeepdims(sum, rank))
    return fail("P is not exp(.) over its sum along the keys");
  pattern.append({exp, sum, pv});
  // exp(s - max(s)), the max maybe broadcast to the scores' shape; or
  // exp(s): the same softmax, which the template computes less the max.
  // Float casts may stand on either side (the format's softmax over 16-bit
  // scores takes the max in their dtype, then subtracts in f32): they are
  // the softmax's, as the template computes it in f32.
  // `v` as s - max(s) (its ops in `ops`, s in `in`; `ok` false when the
  // max is another value's); nullopt when it subtracts no max.
  struct Shift {
    Value in;
    SmallVector<Operation *> ops;
    bool ok = true;
  };
  auto shiftOf = [&](Value v) -> std::optional<Shift> {
    auto sub = v.getDefiningOp<SubOp>();
    if (!sub)
      return std::nullopt;
    Shift sh;
    Value rowMax = uncast(sub.getRhs(), sh.ops);
    auto broadcast = rowMax.getDefiningOp<BroadcastToOp>();
    if (broadcast)
      rowMax = uncast(broadcast.getInput(), sh.ops);
    auto max = rowMax.getDefiningOp<ReduceMaxOp>();
    if (!max)
      return std::nullopt;
    sh.in = uncast(max.getInput(), sh.ops);
    sh.ok =
        uncast(sub.getLhs(), sh.ops) == sh.in && isLastAxisKeepdims(max, rank);
    sh.ops.append({sub, max});
    if (broadcast)
      sh.ops.push_back(broadcast);
    return sh;
  };
  Value x = exp.getInput();
  std::optional<Shift> shift = shiftOf(x);
  // exp(c · (s - max s)) with a constant c > 0 (a temperature applied after
  // the shift): the softmax of c · s, whose max is c · max s.
  double expFactor = 1.0;
  if (!shift) {
    SmallVector<Operation *> ops;
    Operation *op = uncast(x, ops).getDefiningOp();
    for (int i : {1, 0}) {
      if (!isa_and_nonnull<MulOp, DivOp>(op) || (i == 0 && isa<DivOp>(op)))
        break;
      std::optional<double> c = uniformValue(op->getOperand(i));
      if (!c || !(*c > 0) || !std::isfinite(*c) ||
          typeOf(op->getOperand(1 - i)) != typeOf(op->getResult(0)))
        continue;
      shift = shiftOf(uncast(op->getOperand(1 - i), ops));
      if (shift) {
        expFactor = isa<MulOp>(op) ? *c : 1.0 / *c;
        shift->ops.append(ops);
        shift->ops.push_back(op);
      }
      break;
    }
  }
  if (shift) {
    if (!shift->ok)
      return fail("the exponent is not the scores less their max");
    x = shift->in;
    pattern.append(shift->ops);
  }

  AttentionMatch m;
  m.chain = chain;
  m.softmaxInput = x;
  m.expFactor = expFactor;
  // The score changes: the element-wise ops from Q·Kᵀ to softmax's input.
  // A change may read the score more than once (s · sigmoid(s), a leaky
  // select): the changes are a DAG, computed per score as written. They
  // are found back from softmax's input; `mods` lists them in the block's
  // order, which is topological.
  const char *badChange = nullptr;
  llvm::SmallPtrSet<Operation *, 16> inChanges;
  MatmulOp qk;
  std::function<void(Value)> visit = [&](Value s) {
    Operation *op = s.getDefiningOp();
    if (badChange || (op && inChanges.contains(op)))
      return;
    if (!op || op->getBlock() != &body) {
      badChange = "the scores do not come from Q·Kᵀ in the chain";
      return;
    }
    if (auto mm = dyn_cast<MatmulOp>(op)) {
      if (qk && qk != mm)
        badChange = "the scores come from two products";
      qk = mm;
      return;
    }
    if (!isScalarOp(op) || isa<ConstantOp, IotaOp>(op)) {
      badChange = "a change of the scores has no scalar form";
      return;
    }
    inChanges.insert(op);
    ArrayRef<int64_t> scoreShape = typeOf(op->getResult(0)).getShape();
    bool readsScore = false;
    for (Value o : op->getOperands()) {
      if (scoreFree(o, &body, scoreShape))
        continue;
      readsScore = true;
      if (typeOf(o).getShape() != scoreShape) {
        badChange = "a change of the scores broadcasts them";
        return;
      }
      visit(o);
    }
    // Reading no score: the scores come from outside (a full-size operand
    // from before the chain: the cast of the format's softmax over them),
    // or the change is a constant.
    if (!readsScore && !badChange)
      badChange = llvm::any_of(op->getOperands(),
                               [&](Value o) {
                                 return isOutside(o, &body) &&
                                        typeOf(o).getShape() == scoreShape;
                               })
                      ? "the scores do not come from Q·Kᵀ in the chain"
                      : "a change of the scores reads no score";
  };
  visit(m.softmaxInput);
  if (badChange || !qk)
    return fail(badChange ? badChange : "the scores are not Q·Kᵀ");
  SmallVector<Operation *> mods;
  for (Operation &op : body)
    if (inChanges.contains(&op))
      mods.push_back(&op);
  // The tail: the changes from the last one back that read one score value
  // each, the one before; what precedes it (a change reading the score
  // twice and its operands) is score code as a whole. Masks, key masks and
  // scales are taken from the tail only: they move to the end of the
  // changes, which only a chain of them allows.
  size_t tailStart = mods.size();
  for (Value s = m.softmaxInput; tailStart > 0;) {
    Operation *op = s.getDefiningOp();
    if (op != mods[tailStart - 1])
      break;
    Value read;
    int reads = 0;
    for (Value o : op->getOperands())
      if (!scoreFree(o, &body, typeOf(op->getResult(0)).getShape())) {
        read = o;
        ++reads;
      }
    if (reads != 1)
      break;
    --tailStart;
    s = read;
  }
  // Q·Kᵀ with K [.., Lk, D], or Q·Kt with K given transposed, [.., D, Lk].
  if (qk.getTransposeA())
    return fail("the scores are not Q·Kᵀ");
  m.kTransposed = !qk.getTransposeB();
  m.scores = qk.getResult();
  m.q = qk.getA();
  int64_t kHeads, vHeads;
  // K repeated over query heads, then its last two axes swapped (GQA's
  // repeat_kv, then k.transpose(2, 3), as Hugging Face writes it): the
  // swap is Q·Kᵀ's, the repeat K's as ever.
  // (The repeat's ops come first in kvOps: producers before users.)
  Value kOperand = qk.getB();
  TransposeOp swap;
  if (auto t = kOperand.getDefiningOp<TransposeOp>();
      t && m.kTransposed && isLastTwoSwap(t)) {
    SmallVector<Operation *> repeat;
    int64_t heads;
    if (unrepeated(t.getInput(), heads, repeat) != t.getInput()) {
      swap = t;
      kOperand = t.getInput();
      m.kTransposed = false;
    }
  }
  m.k = unrepeated(kOperand, kHeads, m.kvOps);
  if (swap)
    m.kvOps.push_back(swap);
  m.v = unrepeated(pv.getB(), vHeads, m.kvOps);
  if (kHeads != vHeads)
    return fail("K and V are repeated over different numbers of heads");
  m.kvHeads = kHeads;
  // Q, K and V transposed from the model's layout in the chain: read with
  // strides from the untransposed tensors.
  auto throughLayout = [&](Value v, SmallVector<int64_t> &strides,
                           SmallVector<int64_t> &axes) -> Value {
    auto t = v.getDefiningOp<TransposeOp>();
    if (!t || t->getBlock() != &body || !isLayoutTranspose(t))
      return v;
    SmallVector<int64_t> packed =
        packedStrides(typeOf(t.getInput()).getShape());
    for (int64_t axis : t.getPerm())
      strides.push_back(packed[axis]);
    axes.assign(t.getPerm().begin(), t.getPerm().end());
    m.layoutOps.push_back(t);
    return t.getInput();
  };
  Value qL = m.q, kL = m.k, vL = m.v;
  m.q = throughLayout(qL, m.qStrides, m.qAxes);
  m.k = throughLayout(kL, m.kStrides, m.kAxes);
  // K and V may be one tensor (its transpose read twice).
  m.v = vL == kL ? m.k : throughLayout(vL, m.vStrides, m.vAxes);
  if (vL == kL) {
    m.vStrides = m.kStrides;
    m.vAxes = m.kAxes;
  }
  if (oLayout) {
    m.oStrides = oStrides;
    m.layoutOps.push_back(oLayout);
  }
  if (!outside(m.q) || !outside(m.k) || !outside(m.v))
    return fail("Q, K or V is computed in the chain");
  // Q and K widened to f32 from V's 16-bit type (Q·Kᵀ in f32, as careful
  // models write it): products of 16-bit values are exact in f32, so the
  // 16-bit template's f32 scores are the model's. It reads the 16-bit
  // tensors; the widened copies are left unread.
  auto widenedFrom = [&](Value v) -> Value {
    auto c = v.getDefiningOp<CastOp>();
    if (!c || !isFloatCast(c) || !typeOf(v).getElementType().isF32())
      return Value();
    Type from = typeOf(c.getInput()).getElementType();
    return from.isF16() || from.isBF16() ? c.getInput() : Value();
  };
  Value q16 = widenedFrom(m.q), k16 = widenedFrom(m.k);
  Type vElem = typeOf(m.v).getElementType();
  if (q16 && k16 && typeOf(q16).getElementType() == vElem &&
      typeOf(k16).getElementType() == vElem) {
    m.q = q16;
    m.k = k16;
  }
  // Every other op of the chain belongs to the pattern or to positions.
  llvm::SmallPtrSet<Operation *, 16> known(mods.begin(), mods.end());
  known.insert(pattern.begin(), pattern.end());
  known.insert({qk, yield});
  known.insert(m.kvOps.begin(), m.kvOps.end());
  known.insert(m.layoutOps.begin(), m.layoutOps.end());
  ArrayRef<int64_t> scoreShape = typeOf(qk.getResult()).getShape();
  for (Operation &op : body)
    if (!known.contains(&op) &&
        !(op.getNumResults() == 1 &&
          scoreFree(op.getResult(0), &body, scoreShape)))
      return fail("the chain holds ops besides attention");
  // Uses: each intermediate is read only by the changes.
  for (Operation *op : mods)
    if (op->getResult(0) != m.softmaxInput &&
        llvm::any_of(op->getResult(0).getUsers(),
                     [&](Operation *u) { return !inChanges.contains(u); }))
      return fail("a changed score is read besides the changes");

  RankedTensorType qt = typeOf(qL), kt = typeOf(kL), vt = typeOf(vL),
                   ot = typeOf(result);
  if (qt.getRank() != kt.getRank() || qt.getRank() != vt.getRank() ||
      qt.getRank() < 2 || qt.getRank() > 5)
    return fail("Q, K and V are not all of rank 2 to 5");
  // K and V as the matmuls read them (repeated) match Q.
  RankedTensorType kmt = typeOf(qk.getB()), vmt = typeOf(pv.getB());
  if (qt.getShape().drop_back(2) != kmt.getShape().drop_back(2) ||
      qt.getShape().drop_back(2) != vmt.getShape().drop_back(2))
    return fail("Q, K and V differ in their leading dimensions");
  m.elemType = typeOf(m.q).getElementType();
  if (!(m.elemType.isBF16() || m.elemType.isF16() || m.elemType.isF32()) ||
      typeOf(m.k).getElementType() != m.elemType || vElem != m.elemType)
    return fail("Q, K and V are not all bf16, all f16 or all f32");
  // A result of another float type (P·V kept in f32, or cast after it) is
  // the kernel's result cast: it accumulates O in f32 and rounds it once.
  if (!isa<FloatType>(ot.getElementType()))
    return fail("the result is not a float tensor");
  m.lq = qt.getDimSize(qt.getRank() - 2);
  m.headDim = qt.getDimSize(qt.getRank() - 1);
  int64_t kKeyAxis = kt.getRank() - (m.kTransposed ? 1 : 2);
  int64_t kDimAxis = kt.getRank() - (m.kTransposed ? 2 : 1);
  m.lk = kt.getDimSize(kKeyAxis);
  m.valueDim = vt.getDimSize(vt.getRank() - 1);
  if (kt.getDimSize(kDimAxis) != m.headDim ||
      vt.getDimSize(vt.getRank() - 2) != m.lk)
    return fail("K and V do not match Q's head size and K's length");
  if (qt.getRank() == 5) {
    // Query head h is (h / G, h % G): K and V have one head per group (or
    // one in all, or one per query head), which the templates read as
    // head h / (heads / kvHeads).
    ArrayRef<int64_t> qs = qt.getShape(), ks = kt.getShape(),
                      vs = vt.getShape();
    auto byGroup = [&](ArrayRef<int64_t> s) {
      return s[0] == qs[0] && (s[2] == 1 ? s[1] == 1 || s[1] == qs[1]
                                         : s[1] == qs[1] && s[2] == qs[2]);
    };
    if (!byGroup(ks) || !byGroup(vs) || ks.take_front(3) != vs.take_front(3))
      return fail("K and V are not shared by the query heads' groups");
    m.batch = qs[0];
    m.heads = qs[1] * qs[2];
    m.groups = qs[2];
    SmallVector<Value> operands = {m.q, m.k, m.v};
    SmallVector<ArrayRef<int64_t>> axes = {m.qAxes, m.kAxes, m.vAxes},
                                   strides = {m.qStrides, m.kStrides,
                                              m.vStrides};
    for (int i = 0; i < 3; ++i)
      if (!groupedView(operands[i], axes[i], strides[i], chain))
        return fail("the query heads' two axes are not one in memory");
    SmallVector<int64_t> o =
        m.oStrides.empty() ? packedStrides(ot.getShape()) : m.oStrides;
    if (!mergeGroups(ot.getShape(), o))
      return fail("the query heads' two axes are not one in memory");
  } else if (qt.getRank() == 4) {
    m.batch = qt.getDimSize(0);
    m.heads = qt.getDimSize(1);
  } else if (qt.getRank() == 3) {
    m.heads = qt.getDimSize(0);
  }

  // Whether the changes `ops` may make a score -inf: an infinite constant
  // among their operands, a log (of 0), a division by a value that may be
  // 0, or (`captured`) a float tensor captured from outside (a bias may
  // hold -inf). A row of -inf scores is NaN in the model.
  auto mayBeInfinite = [&](ArrayRef<Operation *> ops, bool captured,
                           ArrayRef<Operation *> masks = {}) {
    llvm::SmallPtrSet<Operation *, 8> changes(ops.begin(), ops.end());
    auto makesInfinity = [&](Operation *op) {
      if (isa<LogOp>(op))
        return true;
      if (!isa<DivOp, ReciprocalOp, RsqrtOp>(op))
        return false;
      std::optional<double> d = uniformValue(op->getOperands().back());
      return !d || *d == 0;
    };
    std::function<bool(Value)> infinite = [&](Value v) {
      if (isOutside(v, &body))
        return captured && isa<FloatType>(typeOf(v).getElementType());
      // A taken mask's select is moved to the end: a change after it (a
      // cast) reads the score, not its -inf.
      if (v == m.scores || changes.contains(v.getDefiningOp()) ||
          llvm::is_contained(m.maskSelects, v.getDefiningOp()) ||
          llvm::is_contained(masks, v.getDefiningOp()))
        return false;
      if (std::optional<double> c = constantValue(v))
        return std::isinf(*c);
      Operation *op = v.getDefiningOp();
      return makesInfinity(op) || llvm::any_of(op->getOperands(), infinite);
    };
    return llvm::any_of(ops, [&](Operation *op) {
      return op &&
             (makesInfinity(op) || llvm::any_of(op->getOperands(), infinite));
    });
  };
  // A select of a position condition against a huge negative value is the
  // mask: as linear constraints it lets whole tiles be skipped. Huge: -1e20
  // or below, or f16's lowest, -65504 (torch.finfo(f16).min, which Hugging
  // Face masks with), beside which any score's exp is 0. Several such
  // selects (a causal mask, then a window; or a mask split from one it
  // shared with a padding mask) are one conjunction, taken select by
  // select while no row loses every key (such a row would average V in the
  // model, with a finite value, and be computed by the select instead).
  auto hugeNegative = [&](Value v) {
    std::optional<double> c = constantValue(v);
    return c && (*c <= -1e20 ||
                 (getElementTypeOrSelf(v.getType()).isF16() && *c <= -65504.0));
  };
  auto isMaskSelect = [&](Operation *op) {
    auto select = dyn_cast_or_null<SelectOp>(op);
    return select && positional(select.getCond(), &body) &&
           hugeNegative(select.getB()) && positional(select.getB(), &body);
  };
  auto isFinite = [&](Operation *op) {
    return !std::isinf(*constantValue(cast<SelectOp>(op).getB()));
  };
  // P zeroed after softmax (unzeroed): the model's P where its keep
  // condition is that of the masks, every select of the changes against
  // -inf (a mask's scores have P = 0 exactly, and a row that keeps no key
  // is NaN: a select of 0 makes it zeros, the templates' zero policy, where
  // nothing else may make a row -inf, a captured float tensor included; a
  // product leaves it NaN). A finite
  // mask value would weigh every key of an empty row before the zeroing.
  // The changes after a mask must keep its -inf (adds, casts, positive
  // factors, other masks): a softcap after it (tanh) would make the masked
  // scores finite, and P there not 0.
  // Whether a change keeps a score of -inf at -inf: adds of finite values,
  // casts, the score less something, positive finite factors.
  auto keepsInfinity = [&](Operation *o) {
    if (isa<AddOp>(o) || isFloatCast(o))
      return true;
    if (isa<SubOp>(o))
      return !scoreFree(o->getOperand(0), &body, typeOf(m.scores).getShape());
    if (isa<MulOp, DivOp>(o)) {
      std::optional<double> c = uniformValue(o->getOperand(1));
      if (!c && isa<MulOp>(o))
        c = uniformValue(o->getOperand(0));
      return c && *c > 0 && std::isfinite(*c);
    }
    return false;
  };
  if (!zeroKeep.empty()) {
    SmallVector<Literal> maskKeep;
    SmallVector<Operation *> maskOps, rest;
    bool finiteMask = false, keepsMasks = true;
    for (Operation *op : mods) {
      auto select = dyn_cast<SelectOp>(op);
      bool dropsIfFalse = select && hugeNegative(select.getB()),
           dropsIfTrue = select && hugeNegative(select.getA());
      if (!dropsIfFalse && !dropsIfTrue) {
        keepsMasks &= maskOps.empty() || keepsInfinity(op);
        rest.push_back(op);
        continue;
      }
      finiteMask |= !std::isinf(
          *constantValue(dropsIfFalse ? select.getB() : select.getA()));
      conjuncts(select.getCond(), /*negated=*/dropsIfTrue, maskKeep);
      maskOps.push_back(op);
    }
    bool same = literalsWithin(zeroKeep, maskKeep) &&
                (!zeroSelect || literalsWithin(maskKeep, zeroKeep));
    if (maskOps.empty() || finiteMask || !same || !keepsMasks ||
        (zeroSelect && mayBeInfinite(rest, /*captured=*/true, maskOps)))
      return fail("P is zeroed after softmax where the masks keep keys, or "
                  "the masks are finite or changed after");
  }
  SmallVector<bool> taken(mods.size(), false);
  auto takeMasks = [&](bool finiteToo) {
    m.mask.clear();
    m.maskSelects.clear();
    for (auto [i, op] : llvm::enumerate(mods)) {
      taken[i] = false;
      if (i < tailStart || !isMaskSelect(op) || (!finiteToo && isFinite(op)))
        continue;
      SmallVector<LinearConstraint> mask(m.mask);
      if (!constraintsOf(cast<SelectOp>(op).getCond(),
                         typeOf(m.scores).getRank(), mask) ||
          someRowEmpty(mask, m.lq, m.lk))
        continue;
      m.mask = mask;
      m.maskSelects.push_back(op);
      taken[i] = true;
    }
  };
  takeMasks(/*finiteToo=*/true);
  // A finite masked value is what the model computes only where no change
  // left as score code makes a kept score -inf or as low (a select against
  // -1e30 of a padding mask, a rejected mask select, a log): a row whose
  // kept keys all became so weighs the masked ones too in the model. Then
  // the finite selects stay score code. Captured tensors are not counted:
  // a float bias holding -inf where a finite mask keeps keys is rare, and
  // counting it would cost causal tile skipping to every bias and slope
  // tensor.
  if (llvm::any_of(m.maskSelects, isFinite)) {
    SmallVector<Operation *> rest;
    for (auto [i, op] : llvm::enumerate(mods))
      if (!taken[i])
        rest.push_back(op);
    bool low = mayBeInfinite(rest, /*captured=*/false) ||
               llvm::any_of(rest, [&](Operation *op) {
                 return llvm::any_of(op->getOperands(), hugeNegative);
               });
    if (low)
      takeMasks(/*finiteToo=*/false);
  }
  for (size_t i = 0; i < mods.size(); ++i)
    if (taken[i])
      mods[i] = nullptr;
  for (Operation *op : mods)
    if (op)
      m.mods.push_back(op);
  m.maskedToInfinity = mayBeInfinite(m.mods, /*captured=*/true) && !zeroSelect;
  // The captured tensors the changes read (the mask's select reads
  // positions only), in order of first use.
  std::function<void(Value)> capture = [&](Value v) {
    if (isOutside(v, &body)) {
      // A view is read through its input (tcc.attention's captured_views:
      // no template takes it for a [Lq, Lk] plane by its shape).
      if (Value src = unitReshapeSource(v)) {
        m.capturedViews[v] = src;
        v = src;
      }
      if (!llvm::is_contained(m.captured, v))
        m.captured.push_back(v);
      return;
    }
    if (v == m.scores || llvm::is_contained(m.mods, v.getDefiningOp()))
      return;
    for (Value o : v.getDefiningOp()->getOperands())
      capture(o);
  };
  for (Operation *op : m.mods)
    for (Value o : op->getOperands())
      capture(o);
  // A key mask: a select of a condition read from captured tensors that
  // has size 1 on the query axis (a padding mask [B, 1, 1, Lk]) against
  // -inf. Where it is false, the score is -inf for every query row, and the
  // later changes keep it -inf (adds of finite values, positive factors),
  // so a key tile where it is false throughout contributes nothing: the
  // templates skip such tiles at run time. A finite value (a row of them
  // averages V in the model) does not qualify.
  // (The changes before the tail are all in m.mods, first.)
  for (auto [idx, op] : llvm::enumerate(m.mods)) {
    auto select = dyn_cast<SelectOp>(op);
    if (!select || idx < tailStart)
      continue;
    std::optional<double> masked = constantValue(select.getB());
    Value cond = select.getCond();
    ArrayRef<int64_t> cs = typeOf(cond).getShape();
    int64_t qAxis = int64_t(cs.size()) - 2;
    if (!masked || !std::isinf(*masked) || *masked > 0 ||
        positional(cond, &body) ||
        !scoreFree(cond, &body, typeOf(m.scores).getShape()) ||
        (qAxis >= 0 && cs[qAxis] != 1))
      continue;
    if (!llvm::all_of(ArrayRef<Operation *>(m.mods).drop_front(idx + 1),
                      keepsInfinity))
      break;
    m.keyMask = cond;
    int64_t hAxis = int64_t(cs.size()) - 3;
    m.keyMaskPerHead = (hAxis >= 0 && cs[hAxis] != 1) ||
                       (m.groups && hAxis >= 1 && cs[hAxis - 1] != 1);
    break;
  }
  // A positive scale alone (the common case) needs no score code; nor does
  // a scale beside a key mask, which the templates apply as a mask (a
  // positive factor keeps -inf, so the order does not matter).
  // Casts between float types are no code either: the templates compute
  // every score in f32 (softmax written in f32 between casts, as the
  // format's softmax over 16-bit values is, is the same softmax).
  SmallVector<Operation *> others;
  for (Operation *op : m.mods)
    if ((!m.keyMask || !isa<SelectOp>(op) ||
         cast<SelectOp>(op).getCond() != m.keyMask) &&
        !isFloatCast(op))
      others.push_back(op);
  if (m.keyMask && others.empty()) {
    m.scale = m.expFactor;
    m.keyMaskAlone = true;
  }
  // No change at all (attention written without a scale, perhaps with a
  // linear mask; casts are none): the scale 1 (or the exponent's factor),
  // so the templates' fast softmax takes it.
  if (others.empty())
    m.scale = m.expFactor;
  // Products and quotients by positive constants only (a scale, or Q's and
  // K's prescales moved onto the scores): one scale, their product. Each
  // takes the one before it (the changes depend on S, the constant does
  // not), so the composition is S times the product.
  std::optional<double> product = 1.0;
  for (Operation *op : others) {
    std::optional<double> c;
    if (isa<MulOp, DivOp>(op)) {
      c = uniformValue(op->getOperand(1));
      if (!c && isa<MulOp>(op))
        c = uniformValue(op->getOperand(0));
    }
    if (!c || !(*c > 0) || !std::isfinite(*c)) {
      product = std::nullopt;
      break;
    }
    *product *= isa<MulOp>(op) ? *c : 1.0 / *c;
  }
  if (product)
    *product *= m.expFactor;
  if (!others.empty() && product && std::isnormal(*product)) {
    m.scale = *product;
    m.keyMaskAlone = m.keyMask != nullptr;
  }
  return m;
}

/// The strides of a reshape's result over the layout its input has
/// (`strides`, one per input axis), if the reshape is a view of it: each
/// run of input axes it merges or splits must be contiguous in memory.
static std::optional<SmallVector<int64_t>>
reshapedStrides(ArrayRef<int64_t> from, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> to) {
  SmallVector<int64_t> out(to.size(), 0);
  int64_t i = int64_t(from.size()) - 1, j = int64_t(to.size()) - 1;
  // Innermost first: take the smallest runs of input and output axes of
  // equal element counts; within an input run each axis must step over the
  // ones inside it exactly (axes of size 1 are skipped: any stride).
  while (i >= 0 || j >= 0) {
    while (i >= 0 && from[i] == 1)
      --i;
    while (j >= 0 && to[j] == 1)
      out[j--] = 1;
    if (i < 0 || j < 0)
      break;
    int64_t unit = strides[i], inCount = from[i--], outCount = 1;
    int64_t next = unit * inCount;
    auto takeOut = [&] {
      out[j] = unit * outCount;
      outCount *= to[j--];
    };
    takeOut();
    while (inCount != outCount) {
      if (inCount < outCount) {
        while (i >= 0 && from[i] == 1)
          --i;
        if (i < 0 || strides[i] != next)
          return std::nullopt;
        inCount *= from[i];
        next = strides[i] * from[i];
        --i;
      } else {
        if (j < 0)
          return std::nullopt;
        takeOut();
      }
    }
  }
  if (i >= 0 || j >= 0)
    return std::nullopt;
  return out;
}

AttentionOperandView readThroughViews(Value v, ArrayRef<int64_t> axes,
                                      ArrayRef<int64_t> strides,
                                      ChainOp chain) {
  AttentionOperandView same{v, SmallVector<int64_t>(strides), 0};
  auto vt = cast<RankedTensorType>(v.getType());
  int64_t rank = vt.getRank();
  unsigned bits = vt.getElementType().getIntOrFloatBitWidth();
  if (bits % 8 || !vt.hasStaticShape())
    return same;
  int64_t bytes = bits / 8;
  // The views, from v up.
  SmallVector<Operation *> views;
  for (Value cur = v; Operation *def = cur.getDefiningOp();
       cur = def->getOperand(0)) {
    if (chain->isAncestor(def) || !isa<ReshapeOp, SliceOp, TransposeOp>(def) ||
        !typeOf(def->getOperand(0)).hasStaticShape())
      break;
    if (auto s = dyn_cast<SliceOp>(def);
        s && llvm::any_of(s.getSteps(), [](int64_t n) { return n < 1; }))
      break;
    views.push_back(def);
  }
  // The longest run of views whose composition the templates can read.
  for (size_t n = views.size(); n > 0; --n) {
    Value base = views[n - 1]->getOperand(0);
    SmallVector<int64_t> st = packedStrides(typeOf(base).getShape());
    int64_t offset = 0;
    bool ok = true;
    for (size_t i = n; ok && i-- > 0;) {
      Operation *op = views[i];
      ArrayRef<int64_t> from = typeOf(op->getOperand(0)).getShape();
      if (auto s = dyn_cast<SliceOp>(op)) {
        for (auto [a, start] : llvm::enumerate(s.getStarts())) {
          offset += start * st[a];
          st[a] *= s.getSteps()[a];
        }
      } else if (auto t = dyn_cast<TransposeOp>(op)) {
        SmallVector<int64_t> moved;
        for (int64_t a : t.getPerm())
          moved.push_back(st[a]);
        st = moved;
      } else {
        std::optional<SmallVector<int64_t>> r =
            reshapedStrides(from, st, typeOf(op->getResult(0)).getShape());
        ok = r.has_value();
        if (ok)
          st = *r;
      }
    }
    if (!ok)
      continue;
    SmallVector<int64_t> out;
    for (int64_t a = 0; a < rank; ++a)
      out.push_back(st[axes.empty() ? a : axes[a]]);
    // The innermost attention axis contiguous, rows and the start 16-byte
    // aligned (axes of size 1 take any stride).
    ArrayRef<int64_t> shape = vt.getShape();
    bool aligned = (offset * bytes) % 16 == 0;
    for (int64_t a = 0; a < rank; ++a) {
      int64_t extent = shape[axes.empty() ? a : axes[a]];
      if (extent == 1)
        continue;
      aligned &= a + 1 == rank ? out[a] == 1
                               : out[a] > 0 && (out[a] * bytes) % 16 == 0;
    }
    if (aligned)
      return {base, out, offset};
  }
  return same;
}

AttentionOp AttentionMatch::buildOp(OpBuilder &b) const {
  Location loc = chain->getLoc();
  AttentionOperandView qv, kv, vv;
  SmallVector<int64_t> oLayout(oStrides);
  if (groups) {
    // Heads as two axes: read and written through strides of rank 4 (the
    // match checked that the views merge them).
    qv = *groupedView(q, qAxes, qStrides, chain);
    kv = *groupedView(k, kAxes, kStrides, chain);
    vv = *groupedView(v, vAxes, vStrides, chain);
    SmallVector<int64_t> shape = {batch, heads / groups, groups, lq, valueDim};
    oLayout =
        *mergeGroups(shape, oStrides.empty() ? packedStrides(shape) : oStrides);
  } else {
    qv = readThroughViews(q, qAxes, qStrides, chain);
    kv = readThroughViews(k, kAxes, kStrides, chain);
    vv = readThroughViews(v, vAxes, vStrides, chain);
  }
  auto strides = [&](ArrayRef<int64_t> s) { return b.getDenseI64ArrayAttr(s); };
  auto flag = [&](bool on) { return on ? b.getUnitAttr() : UnitAttr(); };
  SmallVector<int64_t> flat;
  for (const LinearConstraint &c : mask)
    flat.append({c.a, c.b, c.c});
  // The captured tensors read only through a view (reshaped by the model).
  SmallVector<int64_t> views;
  for (auto [i, tensor] : llvm::enumerate(captured)) {
    Value c = tensor;
    bool viaView = llvm::any_of(capturedViews,
                                [&](const auto &kv) { return kv.second == c; });
    bool direct = llvm::any_of(c.getUses(), [&](OpOperand &use) {
      return chain->isProperAncestor(use.getOwner());
    });
    // With the heads as two axes, a tensor varying by head or batch is no
    // plane the templates stage by (batch, head): the regions read it.
    ArrayRef<int64_t> shape = typeOf(c).getShape();
    bool grouped = groups && llvm::any_of(shape.drop_back(2),
                                          [](int64_t n) { return n != 1; });
    if ((viaView && !direct) || grouped)
      views.push_back(int64_t(i));
  }
  // The result in Q's type; FormAttention casts it to the chain's.
  auto op = AttentionOp::create(
      b, loc,
      cast<RankedTensorType>(chain->getResult(0).getType()).clone(elemType),
      qv.base, kv.base, vv.base, captured, b.getI64IntegerAttr(batch),
      b.getI64IntegerAttr(heads), b.getI64IntegerAttr(kvHeads),
      b.getI64IntegerAttr(lq), b.getI64IntegerAttr(lk),
      b.getI64IntegerAttr(headDim),
      valueDim != headDim ? b.getI64IntegerAttr(valueDim) : IntegerAttr(),
      flag(kTransposed), strides(qv.strides), strides(kv.strides),
      strides(vv.strides), strides(oLayout), b.getI64IntegerAttr(qv.offset),
      b.getI64IntegerAttr(kv.offset), b.getI64IntegerAttr(vv.offset),
      scale ? b.getF64FloatAttr(*scale) : FloatAttr(),
      b.getDenseI64ArrayAttr(flat), flag(keyMaskPerHead), flag(keyMaskAlone),
      flag(maskedToInfinity), b.getDenseI64ArrayAttr(views));
  OpBuilder::InsertionGuard guard(b);
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  // A block taking `lead`, then the captured tensors.
  auto blockOf = [&](Region &r, ArrayRef<Type> lead) {
    SmallVector<Type> types(lead);
    for (Value c : captured)
      types.push_back(c.getType());
    SmallVector<Location> locs(types.size(), loc);
    return b.createBlock(&r, {}, types, locs);
  };
  // The score code: the whole change, unless a scale alone is it. Beside a
  // key mask applied alone, the SIMT template takes the change as code.
  if (!scale || keyMaskAlone) {
    Block *block = blockOf(op.getScore(), {f32, i32, i32, i32, i32});
    ValueRange a = block->getArguments();
    Value r =
        buildScoreMod(b, loc, a[0], a[1], a[2], a[3], a[4], a.drop_front(5));
    YieldOp::create(b, loc, ValueRange{r});
  }
  if (keyMask) {
    Block *block = blockOf(op.getKeyKeep(), {i32, i32, i32});
    ValueRange a = block->getArguments();
    Value r = buildKeyKeep(b, loc, a[0], a[1], a[2], a.drop_front(3));
    YieldOp::create(b, loc, ValueRange{r});
  }
  return op;
}

Value AttentionMatch::buildScoreMod(OpBuilder &b, Location loc, Value score,
                                    Value batchIdx, Value head, Value qIdx,
                                    Value kIdx, ValueRange capturedArgs) const {
  Value r = buildValue(b, loc, softmaxInput, score, batchIdx, head, qIdx, kIdx,
                       capturedArgs);
  if (expFactor == 1.0)
    return r;
  return arith::MulFOp::create(
      b, loc, r,
      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(expFactor)));
}

Value AttentionMatch::buildKeyKeep(OpBuilder &b, Location loc, Value batchIdx,
                                   Value head, Value kIdx,
                                   ValueRange capturedArgs) const {
  // The condition has size 1 on the query axis: any query index reads it.
  Value q0 = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  return buildValue(b, loc, keyMask, Value(), batchIdx, head, q0, kIdx,
                    capturedArgs);
}

Value AttentionMatch::buildValue(OpBuilder &b, Location loc, Value target,
                                 Value score, Value batchIdx, Value head,
                                 Value qIdx, Value kIdx,
                                 ValueRange capturedArgs) const {
  int64_t rank = cast<RankedTensorType>(scores.getType()).getRank();
  Type f32 = b.getF32Type();
  llvm::DenseMap<Value, Value> values;
  if (score)
    values[scores] = score;
  // The index of the scores' axis `axis`: the key, the query, the head (as
  // two axes, h / G and h % G, where `groups` splits it) and the batch.
  Value group, groupHead;
  auto indexOn = [&](int64_t axis) -> Value {
    if (axis == rank - 1)
      return kIdx;
    if (axis == rank - 2)
      return qIdx;
    if (!groups)
      return axis == rank - 3 ? head : batchIdx;
    if (axis == rank - 3 || axis == rank - 4) {
      Value &v = axis == rank - 3 ? group : groupHead;
      if (!v) {
        Value g = arith::ConstantIntOp::create(b, loc, b.getI32Type(), groups);
        v = axis == rank - 3
                ? arith::RemSIOp::create(b, loc, head, g).getResult()
                : arith::DivSIOp::create(b, loc, head, g).getResult();
      }
      return v;
    }
    return batchIdx;
  };
  // Scalars of the compute types: f32 for floats, i32 or i64, i1.
  auto scalarType = [&](Type t) -> Type {
    return isa<FloatType>(t) ? f32 : t;
  };
  std::function<Value(Value)> get = [&](Value v) -> Value {
    auto it = values.find(v);
    if (it != values.end())
      return it->second;
    Operation *op = v.getDefiningOp();
    Type elem = cast<RankedTensorType>(v.getType()).getElementType();
    Type st = scalarType(elem);
    Value r;
    Value view = capturedViews.lookup(v);
    if (auto *it = llvm::find(captured, view ? view : v);
        it != captured.end()) {
      // One element of a captured tensor: axes of size 1 read index 0 (the
      // broadcast), the others the score's index on the same axis. A view
      // (capturedViews) reads its input at the view's indices: the view's
      // axes of other sizes are the input's, in order.
      Value arg = capturedArgs[it - captured.begin()];
      // A template may pass the element itself (a tile it staged); a
      // region of tcc.attention reads the tensor (tensor.extract), which
      // the templates turn into these loads.
      auto mt = dyn_cast<ShapedType>(arg.getType());
      // The score axis of each axis of size other than 1 of the tensor as
      // the changes read it (`v`: the view where there is one).
      ArrayRef<int64_t> shown = typeOf(v).getShape();
      SmallVector<int64_t> axes;
      for (auto [d, size] : llvm::enumerate(shown))
        if (size != 1)
          axes.push_back(int64_t(d) + (rank - int64_t(shown.size())));
      SmallVector<Value> idx;
      size_t next = 0;
      for (int64_t d = 0, n = mt ? mt.getRank() : 0; d < n; ++d) {
        int64_t size = mt.getDimSize(d);
        if (size == 1) {
          idx.push_back(arith::ConstantIndexOp::create(b, loc, 0));
          continue;
        }
        Value i = indexOn(axes[next++]);
        // Tail tiles run q and k past the ends, and decode's padding rows
        // the head (their scores are dropped): clamped, every read stays in
        // the tensor.
        i = arith::MinSIOp::create(
            b, loc, i,
            arith::ConstantIntOp::create(b, loc, b.getI32Type(), size - 1));
        idx.push_back(arith::IndexCastOp::create(b, loc, b.getIndexType(), i));
      }
      r = !mt ? arg
          : isa<MemRefType>(mt)
              ? memref::LoadOp::create(b, loc, arg, idx).getResult()
              : tensor::ExtractOp::create(b, loc, arg, idx).getResult();
      if (auto ft = dyn_cast<FloatType>(r.getType()); ft && ft != st)
        r = ft.getWidth() < 32
                ? arith::ExtFOp::create(b, loc, st, r).getResult()
                : arith::TruncFOp::create(b, loc, st, r).getResult();
    } else if (auto c = constantValue(v)) {
      r = isa<FloatType>(st)
              ? arith::ConstantOp::create(b, loc, b.getFloatAttr(st, *c))
                    .getResult()
              : arith::ConstantOp::create(b, loc,
                                          b.getIntegerAttr(st, int64_t(*c)))
                    .getResult();
    } else if (auto iota = dyn_cast<IotaOp>(op)) {
      RankedTensorType t = typeOf(v);
      int64_t axis = iota.getAxis() + (rank - t.getRank());
      Value idx = t.getDimSize(iota.getAxis()) == 1
                      ? arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0)
                            .getResult()
                      : indexOn(axis);
      if (isa<FloatType>(st))
        r = arith::SIToFPOp::create(b, loc, st, idx);
      else if (st.getIntOrFloatBitWidth() > 32)
        r = arith::ExtSIOp::create(b, loc, st, idx);
      else if (st.getIntOrFloatBitWidth() < 32)
        r = arith::TruncIOp::create(b, loc, st, idx);
      else
        r = idx;
    } else {
      SmallVector<Value> in;
      for (Value o : op->getOperands())
        in.push_back(get(o));
      r = buildScalarOp(b, loc, op, in);
    }
    assert(r && "an op matchAttention accepted has a scalar form");
    values[v] = r;
    return r;
  };
  // The template applies the mask: the selects pass the score through
  // (the innermost first, so that an outer one reads it passed).
  if (score)
    for (Operation *select : maskSelects)
      values[select->getResult(0)] = get(select->getOperand(1));
  return get(target);
}

/// `v`'s value when every element of it is one number computed from
/// constants alone (a scale such as sqrt(1 / sqrt(D)), as exporters write
/// it), each op's result rounded to its element type as the model computes
/// it; nullopt otherwise. `depth` bounds the walk.
std::optional<double> uniformValue(Value v, int depth) {
  Operation *op = v.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!op || !type || depth > 16)
    return std::nullopt;
  auto rounded = [&](double x) -> std::optional<double> {
    auto ft = dyn_cast<FloatType>(type.getElementType());
    if (!ft || !std::isfinite(x))
      return std::nullopt;
    APFloat f(x);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return f.convertToDouble();
  };
  if (auto c = dyn_cast<ConstantOp>(op)) {
    if (auto f = dyn_cast<FloatAttr>(c.getValue()))
      return f.getValueAsDouble();
    if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
      // A boolean true is 1 (casts read i1 unsigned), other integers signed.
      return double(i.getType().isInteger(1) ? i.getValue().getZExtValue()
                                             : i.getValue().getSExtValue());
    return std::nullopt;
  }
  if (isa<ReshapeOp, BroadcastToOp>(op))
    return uniformValue(op->getOperand(0), depth + 1);
  if (isa<CastOp, SqrtOp, RsqrtOp, ReciprocalOp, NegOp>(op)) {
    std::optional<double> x = uniformValue(op->getOperand(0), depth + 1);
    if (!x)
      return std::nullopt;
    if (isa<CastOp>(op))
      return rounded(*x);
    if (isa<NegOp>(op))
      return rounded(-*x);
    if (isa<ReciprocalOp>(op))
      return rounded(1.0 / *x);
    if (*x < 0)
      return std::nullopt;
    return rounded(isa<SqrtOp>(op) ? std::sqrt(*x) : 1.0 / std::sqrt(*x));
  }
  if (isa<MulOp, DivOp, AddOp, SubOp, PowOp>(op)) {
    std::optional<double> x = uniformValue(op->getOperand(0), depth + 1);
    std::optional<double> y = uniformValue(op->getOperand(1), depth + 1);
    if (!x || !y)
      return std::nullopt;
    if (isa<PowOp>(op))
      return rounded(std::pow(*x, *y));
    if (isa<MulOp>(op))
      return rounded(*x * *y);
    if (isa<DivOp>(op))
      return rounded(*x / *y);
    return rounded(isa<AddOp>(op) ? *x + *y : *x - *y);
  }
  return std::nullopt;
}

/// Whether `f`, a factor of Q or K (Q [.., Lq, D], K as the scores read
/// it), is one number per matrix of the scores: of size 1 on its last two
/// axes and broadcasting to the scores' leading axes, so that scaling the
/// operand by it scales the scores by it (a scalar, or one per head).
static bool scalesScores(Value f, RankedTensorType scores) {
  auto t = dyn_cast<RankedTensorType>(f.getType());
  if (!t || !t.hasStaticShape() || t.getRank() > scores.getRank())
    return false;
  int64_t off = scores.getRank() - t.getRank();
  for (int64_t i = 0; i < t.getRank(); ++i) {
    int64_t d = t.getDimSize(i), s = scores.getDimSize(i + off);
    if (i + off >= scores.getRank() - 2 ? d != 1 : d != 1 && d != s)
      return false;
  }
  return true;
}

/// The repeat over heads `ops` (from `unrepeated`, innermost first) made
/// again on `base`, each result's last two axes swapped when `swapLast`
/// (the repeat never moves them), just before the outermost of `ops`, to
/// replace `use`; the old ops are erased when nothing else reads them.
static void repeatOn(OpOperand &use, ArrayRef<Operation *> ops, Value base,
                     bool swapLast) {
  OpBuilder b(ops.back());
  Value v = base;
  for (Operation *op : ops) {
    auto t = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<int64_t> shape(t.getShape());
    if (swapLast)
      std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
    OperationState state(op->getLoc(), op->getName());
    state.addOperands(v);
    state.addTypes(t.clone(shape));
    state.addAttributes(op->getAttrs());
    v = b.create(state)->getResult(0);
  }
  use.set(v);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty())
      op->erase();
}

/// Q or K scaled before Q·Kᵀ (`q * f`, `q / f`; PyTorch's SDPA
/// decomposition and its ONNX export scale both by sqrt(1/sqrt(D))) by a
/// factor that is one number per head (scalesScores): the matmul reads the
/// unscaled tensor and the scores are scaled instead, in the chain, where
/// the template folds a constant factor into its softmax and reads any
/// other as a captured tensor (a scaled copy of Q or K would cost a launch
/// and a round trip through memory). A factor computed from constants
/// becomes a constant of its value as the model rounds it. The product is
/// the model's up to the rounding of the scaled operand, which the kernel's
/// f32 scores no longer see. Returns whether it rewrote the matmul; the
/// scaling ops it no longer reads go to `detached` (erased by the caller
/// when nothing else uses them), views it made again to `created`.
bool foldPrescales(ChainOp chain, const AttentionMatch &m,
                   SmallVectorImpl<Operation *> *detached,
                   SmallVectorImpl<Operation *> *created) {
  Block &body = chain.getBody().front();
  auto qk = m.scores.getDefiningOp<MatmulOp>();
  if (!qk || qk->getBlock() != &body)
    return false;
  auto st = cast<RankedTensorType>(m.scores.getType());
  struct Factor {
    bool divide;
    Value value;                 ///< a tensor read by the chain, or
    std::optional<double> known; ///< its value when known
  };
  SmallVector<Factor> factors;
  for (OpOperand *use : {&qk.getAMutable(), &qk.getBMutable()}) {
    // K scaled before its repeat over query heads (GQA written with
    // reshapes): the repeat is made again on the unscaled K.
    int64_t heads;
    SmallVector<Operation *> repeat;
    Value scaled = use->getOperandNumber() == 1
                       ? unrepeated(use->get(), heads, repeat)
                       : use->get();
    // Q or K scaled and then viewed (reshaped or transposed: BART scales
    // its projection, then splits and merges the heads, and layout
    // transposes are in the chain by now): the views are made again on the
    // unscaled tensor, when the factor is one number (the chain may be a
    // copy: the views it shares stay as they are).
    SmallVector<Operation *> views; // outermost first
    while (repeat.empty() &&
           isa_and_nonnull<ReshapeOp, TransposeOp>(scaled.getDefiningOp())) {
      views.push_back(scaled.getDefiningOp());
      scaled = views.back()->getOperand(0);
    }
    Operation *op = scaled.getDefiningOp();
    if (!op || op->getBlock() == &body || !isa<MulOp, DivOp>(op))
      continue;
    bool divide = isa<DivOp>(op);
    Value x = op->getOperand(0), f = op->getOperand(1);
    auto st1 = st;
    if (!repeat.empty()) // one number per key/value head is one per query head
      st1 = st.clone(llvm::to_vector(typeOf(scaled).getShape()));
    auto scales = [&](Value f) {
      return scalesScores(f, st) && scalesScores(f, st1);
    };
    if (!scales(f) && !divide)
      std::swap(x, f);
    // Through a view, the factor must be one number.
    if (!views.empty() &&
        (!isa<RankedTensorType>(f.getType()) ||
         cast<RankedTensorType>(f.getType()).getNumElements() != 1))
      continue;
    // The factor must not widen the tensor (a broadcast) or change its type.
    if (!scales(f) || x.getType() != scaled.getType() ||
        getElementTypeOrSelf(f.getType()) != st.getElementType())
      continue;
    std::optional<double> c = uniformValue(f);
    if (c && !std::isfinite(*c))
      c.reset();
    factors.push_back({divide, f, c});
    for (Operation *view : llvm::reverse(views)) {
      OpBuilder vb(view);
      vb.setInsertionPointAfter(view);
      Operation *again = vb.clone(*view);
      again->setOperand(0, x);
      x = again->getResult(0);
      // Those outside the chain: the caller erases them if the fold is
      // dropped (the chain's own go with it).
      if (created && !chain->isAncestor(again))
        created->insert(created->begin(), again); // outermost first
    }
    if (repeat.empty())
      use->set(x);
    else
      repeatOn(*use, repeat, x, false);
    // The old views: the chain's own erased, the first outside it detached
    // (the caller erases it, and what it reads, when nothing else does).
    for (Operation *view : views) {
      if (!chain->isAncestor(view)) {
        if (detached)
          detached->push_back(view);
        break;
      }
      if (!view->use_empty())
        break;
      view->erase();
    }
    if (detached)
      detached->push_back(op);
  }
  if (factors.empty())
    return false;
  OpBuilder b(qk->getContext());
  b.setInsertionPointAfter(qk);
  Value s = m.scores;
  SmallVector<Operation *> scaled;
  for (const Factor &f : factors) {
    // A known factor in the scores' dtype: Q's (and K's), in which the
    // model computed it, so that it is exact.
    Value c =
        f.known
            ? ConstantOp::create(b, qk.getLoc(),
                                 RankedTensorType::get({}, st.getElementType()),
                                 b.getFloatAttr(st.getElementType(), *f.known))
            : f.value;
    Operation *op =
        f.divide ? DivOp::create(b, qk.getLoc(), st, s, c).getOperation()
                 : MulOp::create(b, qk.getLoc(), st, s, c).getOperation();
    scaled.push_back(op);
    s = op->getResult(0);
  }
  Value scores = m.scores;
  scores.replaceAllUsesExcept(s, scaled.front());
  return true;
}

bool foldKTranspose(const AttentionMatch &m,
                    SmallVectorImpl<Operation *> *created) {
  auto t = m.k.getDefiningOp<TransposeOp>();
  auto qk = m.scores.getDefiningOp<MatmulOp>();
  if (!m.kTransposed || !t)
    return false;
  // K transposed before its repeat over query heads: the repeat is made
  // again on the untransposed K.
  int64_t heads;
  SmallVector<Operation *> repeat;
  if (unrepeated(qk.getB(), heads, repeat) != m.k)
    return false;
  SmallVector<int64_t> perm(t.getPerm());
  int64_t r = perm.size();
  if (r < 2 || perm[r - 2] != r - 1)
    return false;
  std::swap(perm[r - 2], perm[r - 1]);
  Value k = t.getInput();
  if (!llvm::equal(perm, llvm::seq<int64_t>(0, r))) {
    OpBuilder b(t);
    auto shape = llvm::to_vector(t.getType().getShape());
    std::swap(shape[r - 2], shape[r - 1]);
    k = TransposeOp::create(
        b, t.getLoc(),
        RankedTensorType::get(shape, t.getType().getElementType()), k, perm);
    if (created)
      created->push_back(k.getDefiningOp());
  }
  if (repeat.empty())
    qk.getBMutable().assign(k);
  else
    repeatOn(qk.getBMutable(), repeat, k, true);
  qk.setTransposeB(true);
  if (t->use_empty())
    t->erase();
  return true;
}

void pullLayouts(ChainOp chain, const AttentionMatch &m) {
  Block &body = chain.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  // Each transpose once: K and V (or Q and K) may be one tensor.
  llvm::SetVector<Operation *> layouts;
  for (Value v : {m.q, m.k, m.v})
    if (auto t = v.getDefiningOp<TransposeOp>();
        t && t->getBlock() != &body && isLayoutTranspose(t))
      layouts.insert(t);
  for (Operation *t : layouts) {
    Operation *copy = b.clone(*t);
    t->getResult(0).replaceUsesWithIf(copy->getResult(0), [&](OpOperand &use) {
      return chain->isProperAncestor(use.getOwner());
    });
    if (t->use_empty())
      t->erase();
  }
  // The result, when a transpose is its only use.
  Value result = chain->getResult(0);
  if (!result.hasOneUse())
    return;
  auto t = dyn_cast<TransposeOp>(*result.getUsers().begin());
  if (!t || !isLayoutTranspose(t))
    return;
  Operation *yield = body.getTerminator();
  b.setInsertionPoint(yield);
  IRMapping map;
  map.map(result, yield->getOperand(0));
  Operation *copy = b.clone(*t, map);
  yield->setOperand(0, copy->getResult(0));
  result.setType(t.getType());
  t.replaceAllUsesWith(result);
  t->erase();
}

} // namespace mlir::tcc
