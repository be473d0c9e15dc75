//===- ChainFusion.cpp - rolling and split-K forms of reduction chains ----===//
//
// Rewrites the reductions of each tcc.chain (softmax's max → sum, layer
// norm's mean → variance, attention's max → sum → P·V) so that the axis is
// read in chunks, with the corrections ChainAlgebra derives:
//
//   rolling  one pass: an scf.for over chunks carries each reduction's
//            accumulator (and the element count); a chunk is reduced with
//            running values of its own, then merged into the carried state,
//            both corrected to the merged running values. The last chunk
//            may be shorter (a peeled step).
//   split-K  the axis becomes [K, C] with K in front: every chunk is reduced
//            at once, with running values of its own (ordinary tcc ops),
//            a shorter remainder chunk is one more partial, and a combine
//            step corrects each partial to the final running values and
//            reduces over the chunks.
//
// Only the reductions are rewritten: the ops after them (softmax's division,
// layer norm's scaling) read the final values as before. A chain whose
// corrections cannot be derived stays as it is, with a warning.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionMatch.h"
#include "passes/ChainAlgebra.h"
#include "passes/Passes.h"

#include "ir/ShapeInference.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <limits>

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCCHAINFUSION
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

using Shape = SmallVector<int64_t>;

Shape shapeOf(Value v) {
  ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
  return Shape(s.begin(), s.end());
}

bool isNarrow(Type t) {
  return isa<Float16Type, BFloat16Type>(t) || t.getIntOrFloatBitWidth() < 16;
}

/// Where a chunk's values come from: a slice of the axis (at a static or a
/// dynamic offset), all chunks at once with the chunk index in front
/// (split), or the unchanged space (row values).
struct ChunkSpace {
  enum Kind { Identity, Slice, Split } kind = Identity;
  int64_t offset = 0; ///< Slice, when `dynOffset` is null
  Value dynOffset;    ///< Slice: an index
  int64_t size = 0;   ///< elements of a chunk along the axis
  int64_t parts = 1;  ///< Split: chunks
};

/// A reduction state: each reduction's accumulator (sums for means), the
/// sums of a ShiftedProduct's factors, and the element count.
struct State {
  SmallVector<Value> acc, su, sw;
  Value n;
};

class Fuser {
public:
  /// The chain computes zeros for a row whose elements are all -inf (a
  /// "safe softmax": attention whose P is zeroed where its masks drop keys,
  /// matchAttention's zero policy), where its accumulators' corrections
  /// would give NaN.
  bool emptyRowsZero = false;

  Fuser(ChainOp chain, const ChainAlgebra &alg)
      : chain(chain), alg(alg), b(chain.getContext()), loc(chain.getLoc()) {
    axis = alg.getAxis();
    space.assign(alg.getSpace().begin(), alg.getSpace().end());
    rank = space.size();
    len = space[axis];
    for (const ChainReduction &r : alg.getReductions())
      dividesBySum |= r.rule == CorrectionRule::Scale && r.plainFactor &&
                      r.plainFactor->kind != Expr::One;
  }

  /// Op kinds the chunk cloner knows; the reason otherwise.
  LogicalResult check(std::string &reason) {
    for (Operation &op : chain.getBody().front().without_terminator()) {
      if (isa<ConstantOp, IotaOp, BroadcastToOp>(op) ||
          op.hasTrait<OpTrait::tcc::ElementwiseMap>() || alg.indexOf(&op) >= 0)
        continue;
      if (auto mm = dyn_cast<MatmulOp>(op)) {
        // P·V (its V is checked below), or a producer such as q·kᵀ whose
        // operands come from outside.
        if (alg.indexOf(&op) >= 0 ||
            (!isInside(mm.getA()) && !isInside(mm.getB())))
          continue;
      }
      reason = "'" + op.getName().getStringRef().str() +
               "' in the chain has no chunked form (elementwise ops, "
               "constants, iotas, broadcasts and matmuls of values from "
               "outside do)";
      return failure();
    }
    for (const ChainReduction &r : alg.getReductions()) {
      Type t = getElementTypeOrSelf(r.op->getResult(0));
      if (!isa<FloatType>(t)) {
        reason = "'" + r.op->getName().getStringRef().str() +
                 "' reduces integers (only float chains are fused)";
        return failure();
      }
      if (r.reducer == Reducer::Dot && isInside(r.other)) {
        reason = "the right operand of P·V is computed inside the chain";
        return failure();
      }
    }
    return success();
  }

  void rolling(int64_t chunk) {
    b.setInsertionPointToStart(&chain.getBody().front());
    int64_t full = len / chunk, rem = len % chunk;
    // The carried state starts empty (neutral accumulators, count 0); the
    // combine leaves an empty part uncorrected.
    State s = empty();
    {
      SmallVector<Value> init = flatten(s);
      Value lb = arith::ConstantIndexOp::create(b, loc, 0);
      Value ub = arith::ConstantIndexOp::create(b, loc, full);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      auto loop = scf::ForOp::create(b, loc, lb, ub, one, init);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value c = arith::ConstantIndexOp::create(b, loc, chunk);
      Value off = arith::MulIOp::create(b, loc, loop.getInductionVar(), c);
      State carried = unflatten(loop.getRegionIterArgs());
      State p = partial({ChunkSpace::Slice, 0, off, chunk, 1});
      State merged = combine({carried, p}, /*split=*/false, /*exact=*/false,
                             /*firstMaybeEmpty=*/true);
      // Written into the carried tensors, so that bufferization keeps one
      // buffer per running value across iterations.
      SmallVector<Value> next;
      for (auto [v, into] :
           llvm::zip(flatten(merged), loop.getRegionIterArgs()))
        next.push_back(linalg::CopyOp::create(b, loc, v, into).getResult(0));
      scf::YieldOp::create(b, loc, next);
      b.setInsertionPointAfter(loop);
      s = unflatten(loop.getResults());
    }
    // The last merge corrects to the exact final values (docs/fusion.md).
    if (rem) {
      State p = partial({ChunkSpace::Slice, full * chunk, {}, rem, 1});
      finish(combine({s, p}, false, /*exact=*/true));
    } else {
      finish(combine({s}, false, /*exact=*/true));
    }
  }

  void splitK(int64_t parts) {
    b.setInsertionPointToStart(&chain.getBody().front());
    int64_t chunk = (len + parts - 1) / parts;
    int64_t full = len / chunk, rem = len % chunk;
    State s = partial({ChunkSpace::Split, 0, {}, chunk, full});
    // Counts per chunk, [K, 1, ..., 1], so the combine can add them.
    Shape countShape(rank + 1, 1);
    countShape[0] = full;
    s.n = constant(countShape, b.getF32Type(), double(chunk));
    if (rem) {
      State p = partial({ChunkSpace::Slice, full * chunk, {}, rem, 1});
      auto lift = [&](Value v) {
        Shape sh = shapeOf(v);
        sh.insert(sh.begin(), 1);
        return reshape(v, sh);
      };
      auto join = [&](Value a, Value c) {
        Shape sh = shapeOf(a);
        sh[0] += 1;
        return ConcatOp::create(b, loc, typeLike(a, sh), ValueRange{a, lift(c)},
                                0)
            .getResult();
      };
      for (size_t j = 0; j < s.acc.size(); ++j) {
        s.acc[j] = join(s.acc[j], p.acc[j]);
        if (s.su[j]) {
          s.su[j] = join(s.su[j], p.su[j]);
          s.sw[j] = join(s.sw[j], p.sw[j]);
        }
      }
      Shape one(rank + 1, 1);
      Value remCount = constant(one, b.getF32Type(), double(rem));
      Shape both = countShape;
      both[0] += 1;
      s.n = ConcatOp::create(b, loc, typeLike(s.n, both),
                             ValueRange{s.n, remCount}, 0);
    }
    finish(combine({s}, /*split=*/true, /*exact=*/true));
  }

private:
  bool isInside(Value v) const {
    Operation *def = v.getDefiningOp();
    return def && chain->isProperAncestor(def);
  }

  //===--------------------------------------------------------------------===//
  // Tensor helpers (tcc ops)
  //===--------------------------------------------------------------------===//

  static RankedTensorType typeLike(Value v, ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, getElementTypeOrSelf(v));
  }

  Value constant(ArrayRef<int64_t> shape, Type elt, double v) {
    TypedAttr attr;
    if (isa<FloatType>(elt))
      attr = FloatAttr::get(elt, v);
    else
      attr = IntegerAttr::get(elt, int64_t(v));
    return ConstantOp::create(b, loc, RankedTensorType::get(shape, elt), attr);
  }
  Value scalar(Value like, double v) {
    return constant({}, getElementTypeOrSelf(like), v);
  }

  template <typename OpTy> Value binary(Value l, Value r) {
    return OpTy::create(b, loc, typeLike(l, broadcast({l, r})), l, r);
  }
  Value convert(Value v, Type elt) {
    if (getElementTypeOrSelf(v) == elt)
      return v;
    return CastOp::create(b, loc, RankedTensorType::get(shapeOf(v), elt), v);
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    if (shapeOf(v) == ArrayRef(shape))
      return v;
    return ReshapeOp::create(b, loc, typeLike(v, shape), v);
  }
  /// The NumPy broadcast of the operands' shapes.
  static Shape broadcast(ValueRange vs) {
    ::tcc::Shape acc;
    for (Value v : vs) {
      Shape s = shapeOf(v);
      ::tcc::ShapeOrError m =
          ::tcc::broadcastShapes(acc, ::tcc::Shape(s.begin(), s.end()));
      assert(m.ok() && "chunk operands broadcast");
      acc = m.shape;
    }
    return Shape(acc.begin(), acc.end());
  }
  Value select(Value cond, Value a, Value c) {
    return SelectOp::create(b, loc, typeLike(a, broadcast({cond, a, c})), cond,
                            a, c);
  }
  Value equal(Value v, double x) {
    return EqualOp::create(b, loc,
                           RankedTensorType::get(shapeOf(v), b.getI1Type()), v,
                           scalar(v, x));
  }
  Value reduce(Reducer r, Value v, int64_t ax, bool keepdims) {
    Shape s = shapeOf(v);
    if (keepdims)
      s[ax] = 1;
    else
      s.erase(s.begin() + ax);
    RankedTensorType t = typeLike(v, s);
    switch (r) {
    case Reducer::Max:
      return ReduceMaxOp::create(b, loc, t, v, ArrayRef<int64_t>{ax}, keepdims);
    case Reducer::Min:
      return ReduceMinOp::create(b, loc, t, v, ArrayRef<int64_t>{ax}, keepdims);
    default:
      return ReduceSumOp::create(b, loc, t, v, ArrayRef<int64_t>{ax}, keepdims);
    }
  }
  Value join2(Reducer r, Value x, Value y) {
    switch (r) {
    case Reducer::Max:
      return binary<MaximumOp>(x, y);
    case Reducer::Min:
      return binary<MinimumOp>(x, y);
    default:
      return binary<AddOp>(x, y);
    }
  }

  //===--------------------------------------------------------------------===//
  // Chunks of the chain's values
  //===--------------------------------------------------------------------===//

  /// The dimension of a value of shape `s` (aligned at the end) that is the
  /// axis, or -1 when it does not vary along it.
  int64_t axisDim(ArrayRef<int64_t> s) const {
    int64_t p = axis - int64_t(rank - s.size());
    return p >= 0 && s[p] == len ? p : -1;
  }

  /// The shape of a chunk of a value whose dimension `p` is the axis.
  Shape chunkShape(ArrayRef<int64_t> s, int64_t p, const ChunkSpace &sp,
                   bool padRank) const {
    Shape out(s.begin(), s.end());
    if (p < 0 || sp.kind == ChunkSpace::Identity)
      return out;
    out[p] = sp.size;
    if (sp.kind == ChunkSpace::Split) {
      if (padRank)
        out.insert(out.begin(), rank - s.size(), 1);
      out.insert(out.begin(), sp.parts);
    }
    return out;
  }

  /// The chunk of `v` (from outside the chain) along its dimension `p`.
  Value sliceAlong(Value v, int64_t p, const ChunkSpace &sp, bool padRank) {
    if (p < 0 || sp.kind == ChunkSpace::Identity)
      return v;
    Shape s = shapeOf(v);
    int64_t r = s.size();
    if (sp.kind == ChunkSpace::Slice && sp.dynOffset) {
      SmallVector<OpFoldResult> offs(r, b.getIndexAttr(0)), sizes,
          strides(r, b.getIndexAttr(1));
      for (int64_t d : s)
        sizes.push_back(b.getIndexAttr(d));
      offs[p] = sp.dynOffset;
      sizes[p] = b.getIndexAttr(sp.size);
      return tensor::ExtractSliceOp::create(b, loc, v, offs, sizes, strides);
    }
    int64_t start = sp.kind == ChunkSpace::Slice ? sp.offset : 0;
    int64_t count = sp.kind == ChunkSpace::Slice ? sp.size : sp.size * sp.parts;
    if (start != 0 || count != s[p]) {
      SmallVector<int64_t> starts(r, 0), steps(r, 1);
      starts[p] = start;
      Shape cut = s;
      cut[p] = count;
      v = SliceOp::create(b, loc, typeLike(v, cut), v, starts, steps);
    }
    if (sp.kind == ChunkSpace::Slice)
      return v;
    // [.., K·C, ..] → [.., K, C, ..] → [K, .., C, ..] (→ unit dims).
    Shape split = shapeOf(v);
    split[p] = sp.size;
    split.insert(split.begin() + p, sp.parts);
    v = reshape(v, split);
    if (p > 0) {
      SmallVector<int64_t> perm{p};
      for (int64_t d = 0; d <= r; ++d)
        if (d != p)
          perm.push_back(d);
      Shape t;
      for (int64_t d : perm)
        t.push_back(split[d]);
      v = TransposeOp::create(b, loc, typeLike(v, t), v, perm);
    }
    return reshape(v, chunkShape(s, p, sp, padRank));
  }

  /// The chunk of chain value `v`, its ops rebuilt on chunks; reductions'
  /// results are looked up in `map` (running values).
  Value remap(Value v, const ChunkSpace &sp,
              llvm::DenseMap<Value, Value> &map) {
    if (Value known = map.lookup(v))
      return known;
    Value out;
    Operation *def = v.getDefiningOp();
    if (!isInside(v)) {
      out = sliceAlong(v, axisDim(shapeOf(v)), sp, /*padRank=*/true);
    } else if (auto iota = dyn_cast<IotaOp>(def)) {
      out = iotaChunk(iota, sp);
    } else if (auto c = dyn_cast<ConstantOp>(def)) {
      Shape s = shapeOf(v);
      out = ConstantOp::create(b, loc,
                               typeLike(v, chunkShape(s, axisDim(s), sp, true)),
                               c.getValue());
    } else if (auto mm = dyn_cast<MatmulOp>(def)) {
      // A producer (q·kᵀ): slice the operand that carries the axis.
      Value a = mm.getA(), c = mm.getB();
      int64_t ra = shapeOf(a).size(), rc = shapeOf(c).size();
      if (axis == rank - 1)
        c = sliceAlong(c, mm.getTransposeB() ? rc - 2 : rc - 1, sp, false);
      else
        a = sliceAlong(a, mm.getTransposeA() ? ra - 1 : ra - 2, sp, false);
      out = matmul(a, c, mm.getTransposeA(), mm.getTransposeB(),
                   getElementTypeOrSelf(v));
    } else {
      SmallVector<Value> ops;
      for (Value o : def->getOperands())
        ops.push_back(remap(o, sp, map));
      Shape s;
      if (isa<BroadcastToOp>(def)) {
        Shape r = shapeOf(v);
        s = chunkShape(r, axisDim(r), sp, true);
      } else {
        s = broadcast(ops);
      }
      OperationState st(loc, def->getName());
      st.addOperands(ops);
      st.addAttributes(def->getAttrs());
      st.addTypes(typeLike(v, s));
      out = b.create(st)->getResult(0);
    }
    map[v] = out;
    return out;
  }

  Value matmul(Value a, Value c, bool ta, bool tb, Type elt) {
    Shape sa = shapeOf(a), sc = shapeOf(c);
    ::tcc::ShapeOrError s =
        ::tcc::matmulShape(::tcc::Shape(sa.begin(), sa.end()),
                           ::tcc::Shape(sc.begin(), sc.end()), ta, tb);
    assert(s.ok() && "chunk matmul shapes");
    return MatmulOp::create(
        b, loc,
        RankedTensorType::get(Shape(s.shape.begin(), s.shape.end()), elt), a, c,
        ta, tb);
  }

  /// An iota on a chunk: positions along the axis count from the chunk's
  /// start (k · C + c when split). A float iota's positions are counted in
  /// i64 and converted once: the model's iota rounds each position to its
  /// dtype once, and a sum of rounded parts rounds twice (f16 positions
  /// past 2048, bf16 past 256, came out off by up to the spacing).
  Value iotaChunk(IotaOp iota, const ChunkSpace &sp) {
    Shape s = shapeOf(iota);
    int64_t p = axisDim(s);
    Type elt = getElementTypeOrSelf(iota.getType());
    Shape cs = chunkShape(s, p, sp, true);
    int64_t a = iota.getAxis() + int64_t(cs.size() - s.size());
    if (p < 0 || int64_t(iota.getAxis()) != p ||
        sp.kind == ChunkSpace::Identity ||
        (sp.kind == ChunkSpace::Slice && !sp.dynOffset && sp.offset == 0))
      return IotaOp::create(b, loc, RankedTensorType::get(cs, elt), a)
          .getResult();
    Type outElt = elt;
    if (isa<FloatType>(elt))
      elt = b.getI64Type();
    Value out =
        IotaOp::create(b, loc, RankedTensorType::get(cs, elt), a).getResult();
    Value start;
    if (sp.kind == ChunkSpace::Split) {
      Value k = IotaOp::create(b, loc, RankedTensorType::get(cs, elt), 0);
      start = binary<MulOp>(k, constant({}, elt, double(sp.size)));
    } else if (sp.dynOffset) {
      Value x = arith::IndexCastOp::create(b, loc, elt, sp.dynOffset);
      start = tensor::FromElementsOp::create(
          b, loc, RankedTensorType::get({}, elt), ValueRange{x});
    } else {
      start = constant({}, elt, double(sp.offset));
    }
    return convert(binary<AddOp>(out, start), outElt);
  }

  //===--------------------------------------------------------------------===//
  // States
  //===--------------------------------------------------------------------===//

  Type resultElt(unsigned j) const {
    return getElementTypeOrSelf(alg.getReductions()[j].op->getResult(0));
  }
  /// Accumulators of 16-bit chains are f32, as the unfused reductions'.
  Type accElt(unsigned j) const {
    Type t = resultElt(j);
    return isNarrow(t) ? Type(Float32Type::get(t.getContext())) : t;
  }

  /// The reduction's value from its accumulator (means divide by the count).
  Value finalize(unsigned j, Value acc, Value n) {
    if (alg.getReductions()[j].reducer != Reducer::Mean)
      return acc;
    return binary<DivOp>(acc, convert(n, accElt(j)));
  }
  /// Rounded to the result dtype, as the unfused chain reads it.
  Value rounded(unsigned j, Value v) {
    if (resultElt(j) == accElt(j))
      return v;
    return convert(convert(v, resultElt(j)), accElt(j));
  }
  /// The running value contributions are computed with: a max still at -inf
  /// (every element so far -inf) reads as 0 and a sum of 0 as 1, which
  /// keeps the factors A(r) finite and non-zero; the corrections are exact
  /// for any such choice (docs/fusion.md).
  Value safe(unsigned j, Value v) {
    switch (alg.getReductions()[j].reducer) {
    case Reducer::Max:
      return select(equal(v, -std::numeric_limits<double>::infinity()),
                    scalar(v, 0.0), v);
    case Reducer::Min:
      return select(equal(v, std::numeric_limits<double>::infinity()),
                    scalar(v, 0.0), v);
    case Reducer::Dot:
      return v;
    default:
      // A sum of 0 meets log and division (cross-entropy's log s,
      // attention's e / s); a mean is used additively (layer norm), where
      // any value does, unless a factor divides by it.
      if (alg.getReductions()[j].reducer == Reducer::Mean && !dividesBySum)
        return v;
      return select(equal(v, 0.0), scalar(v, 1.0), v);
    }
  }
  Value used(unsigned j, const State &s) {
    return safe(j, rounded(j, finalize(j, s.acc[j], s.n)));
  }

  /// A state of no element: each accumulator at its reducer's neutral.
  State empty() {
    State s;
    ArrayRef<ChainReduction> reds = alg.getReductions();
    Shape kept(space);
    kept[axis] = 1;
    for (auto [j, r] : llvm::enumerate(reds)) {
      double neutral = 0.0;
      if (r.reducer == Reducer::Max)
        neutral = -std::numeric_limits<double>::infinity();
      if (r.reducer == Reducer::Min)
        neutral = std::numeric_limits<double>::infinity();
      Shape shape =
          r.reducer == Reducer::Dot ? shapeOf(r.op->getResult(0)) : kept;
      s.acc.push_back(constant(shape, accElt(j), neutral));
      bool prod = r.rule == CorrectionRule::ShiftedProduct;
      s.su.push_back(prod ? constant(kept, accElt(j), 0.0) : Value());
      s.sw.push_back(prod ? constant(kept, accElt(j), 0.0) : Value());
    }
    s.n = constant({}, b.getF32Type(), 0.0);
    return s;
  }

  /// The accumulators of one chunk, each reduction computed with the
  /// chunk's own running values.
  State partial(const ChunkSpace &sp) {
    State s;
    ArrayRef<ChainReduction> reds = alg.getReductions();
    s.acc.resize(reds.size());
    s.su.resize(reds.size());
    s.sw.resize(reds.size());
    s.n = constant({}, b.getF32Type(), double(sp.size));
    int64_t redAxis = sp.kind == ChunkSpace::Split ? axis + 1 : axis;
    llvm::DenseMap<Value, Value> map;
    for (auto [j, r] : llvm::enumerate(reds)) {
      Type acc = accElt(j);
      Value in = remap(r.input, sp, map);
      if (r.reducer == Reducer::Dot) {
        auto mm = cast<MatmulOp>(r.op);
        int64_t rv = shapeOf(r.other).size();
        Value v = sliceAlong(r.other, mm.getTransposeB() ? rv - 1 : rv - 2, sp,
                             false);
        s.acc[j] = matmul(convert(in, acc), convert(v, acc), false,
                          mm.getTransposeB(), acc);
        continue;
      }
      s.acc[j] = reduce(r.reducer, convert(in, acc), redAxis, true);
      if (r.rule == CorrectionRule::ShiftedProduct) {
        s.su[j] = reduce(Reducer::Sum, convert(remap(r.u, sp, map), acc),
                         redAxis, true);
        s.sw[j] = reduce(Reducer::Sum, convert(remap(r.w, sp, map), acc),
                         redAxis, true);
      }
      // Later reductions read this one at the chunk's own running value.
      unsigned self = j; // a structured binding is not captured (C++17)
      if (llvm::any_of(reds.drop_front(j + 1), [&](const ChainReduction &l) {
            return llvm::is_contained(l.deps, self);
          }))
        map[r.op->getResult(0)] = convert(used(j, s), resultElt(j));
    }
    return s;
  }

  /// Evaluates factors on tensors of running values.
  class TensorEmitter : public ExprEmitter {
  public:
    TensorEmitter(Fuser &f, ArrayRef<Value> runs, Type elt) : f(f), elt(elt) {
      for (auto [j, r] : llvm::enumerate(f.alg.getReductions()))
        if (j < runs.size() && runs[j])
          map[r.op->getResult(0)] = f.convert(runs[j], f.resultElt(j));
    }
    Value row(Value v) override {
      return f.convert(f.remap(v, ChunkSpace(), map), elt);
    }
    Value constant(double v) override { return f.constant({}, elt, v); }
    Value apply(Expr::Kind k, Value l, Value r) override {
      switch (k) {
      case Expr::Add:
        return f.binary<AddOp>(l, r);
      case Expr::Sub:
        return f.binary<SubOp>(l, r);
      case Expr::Mul:
        return f.binary<MulOp>(l, r);
      case Expr::Div:
        return f.binary<DivOp>(l, r);
      case Expr::Neg:
        return NegOp::create(f.b, f.loc, l.getType(), l);
      case Expr::Exp:
        return ExpOp::create(f.b, f.loc, l.getType(), l);
      default:
        return {};
      }
    }

  private:
    Fuser &f;
    Type elt;
    llvm::DenseMap<Value, Value> map;
  };

  bool isTrivial(const ExprPtr &e, Expr::Kind k) { return !e || e->kind == k; }

  /// Corrects the accumulators of reduction `j` of a part from its running
  /// values `olds` to `news`.
  void correct(unsigned j, Value &acc, Value &su, Value &sw, Value n,
               ArrayRef<Value> olds, ArrayRef<Value> news) {
    const ChainReduction &r = alg.getReductions()[j];
    Type elt = accElt(j);
    TensorEmitter eo(*this, olds, elt), en(*this, news, elt);
    auto delta = [&](const ExprPtr &e) {
      return binary<SubOp>(evaluate(e, en), evaluate(e, eo));
    };
    Value count = convert(n, elt);
    switch (r.rule) {
    case CorrectionRule::Independent:
      return;
    case CorrectionRule::Scale: {
      if (!isTrivial(r.logFactor, Expr::Zero)) {
        // A part whose elements were all -inf reads its max as 0 (safe)
        // and holds 0; against a finite max of -1e30 (a mask's stand-in
        // for -inf) its factor exp(0 - -1e30) overflows, and 0 * inf
        // would be NaN: a zero accumulator stays zero. Where the new max
        // is -inf too (d = +inf: a row of nothing but -inf) the NaN stays,
        // as the unfused chain computes it, unless the chain zeroes such
        // rows (emptyRowsZero).
        Value d = delta(r.logFactor);
        Value scaled =
            binary<MulOp>(acc, ExpOp::create(b, loc, d.getType(), d));
        Value keep = equal(acc, 0.0);
        if (!emptyRowsZero) {
          Value dFinite = NotEqualOp::create(
              b, loc, RankedTensorType::get(shapeOf(d), b.getI1Type()), d,
              scalar(d, std::numeric_limits<double>::infinity()));
          keep =
              AndOp::create(b, loc, typeLike(keep, broadcast({keep, dFinite})),
                            keep, dFinite);
        }
        acc = select(keep, acc, scaled);
      }
      if (!isTrivial(r.plainFactor, Expr::One)) {
        // 1/sum over a row of nothing but -inf is inf, and 0 * inf NaN, as
        // unfused, unless the chain zeroes such rows (emptyRowsZero).
        Value scaled =
            binary<MulOp>(acc, binary<DivOp>(evaluate(r.plainFactor, en),
                                             evaluate(r.plainFactor, eo)));
        acc = emptyRowsZero ? select(equal(acc, 0.0), acc, scaled) : scaled;
      }
      return;
    }
    case CorrectionRule::Shift: {
      Value d = delta(r.shift);
      bool counted = r.reducer == Reducer::Sum || r.reducer == Reducer::Mean;
      acc = binary<AddOp>(acc, counted ? binary<MulOp>(d, count) : d);
      return;
    }
    case CorrectionRule::ShiftedProduct: {
      // Σ(u + du)(w + dw) = Σuw + dw·Σu + du·Σw + n·du·dw.
      // A factor reading no running value (cross-entropy's target) has
      // d = 0: its terms are left out, as 0 · (-inf) would be NaN.
      bool fixedU = isTrivial(r.shiftU, Expr::Zero);
      bool fixedW = isTrivial(r.shiftW, Expr::Zero);
      Value du = fixedU ? Value() : delta(r.shiftU);
      Value dw = fixedW ? Value() : delta(r.shiftW);
      if (dw)
        acc = binary<AddOp>(acc, binary<MulOp>(dw, su));
      if (du)
        acc = binary<AddOp>(acc, binary<MulOp>(du, sw));
      if (du && dw)
        acc = binary<AddOp>(acc, binary<MulOp>(binary<MulOp>(du, dw), count));
      if (du)
        su = binary<AddOp>(su, binary<MulOp>(du, count));
      if (dw)
        sw = binary<AddOp>(sw, binary<MulOp>(dw, count));
      return;
    }
    }
  }

  /// Merges parts (two states, or one split state whose dimension 0 are
  /// the chunks, or one state to correct to exact final values): every
  /// part is corrected to the merged running values, then reduced.
  State combine(ArrayRef<State> parts, bool split, bool exact,
                bool firstMaybeEmpty = false) {
    ArrayRef<ChainReduction> reds = alg.getReductions();
    size_t n = reds.size();
    auto joinAll = [&](Reducer r, ArrayRef<Value> vs) -> Value {
      if (split)
        return reduce(r, vs[0], 0, false);
      return vs.size() == 2 ? join2(r, vs[0], vs[1]) : vs[0];
    };
    State out;
    out.acc.resize(n);
    out.su.resize(n);
    out.sw.resize(n);
    SmallVector<Value> counts;
    for (const State &p : parts)
      counts.push_back(p.n);
    out.n = joinAll(Reducer::Sum, counts);
    SmallVector<SmallVector<Value>> olds(parts.size(), SmallVector<Value>(n));
    SmallVector<Value> news(n);
    for (size_t j = 0; j < n; ++j) {
      const ChainReduction &r = reds[j];
      SmallVector<Value> accs, sus, sws;
      for (auto [p, part] : llvm::enumerate(parts)) {
        for (unsigned d : r.deps)
          if (!olds[p][d])
            olds[p][d] = used(d, part);
        Value acc = part.acc[j], su = part.su[j], sw = part.sw[j];
        correct(j, acc, su, sw, part.n, olds[p], news);
        if (p == 0 && firstMaybeEmpty &&
            r.rule != CorrectionRule::Independent) {
          // An empty part's running values are meaningless (a mean of 0/0).
          Value none = equal(part.n, 0.0);
          acc = select(none, part.acc[j], acc);
          if (su) {
            su = select(none, part.su[j], su);
            sw = select(none, part.sw[j], sw);
          }
        }
        accs.push_back(acc);
        sus.push_back(su);
        sws.push_back(sw);
      }
      Reducer jr = r.reducer == Reducer::Max || r.reducer == Reducer::Min
                       ? r.reducer
                       : Reducer::Sum;
      out.acc[j] = joinAll(jr, accs);
      if (sus[0]) {
        out.su[j] = joinAll(Reducer::Sum, sus);
        out.sw[j] = joinAll(Reducer::Sum, sws);
      }
      if (r.reducer != Reducer::Dot)
        news[j] =
            exact ? rounded(j, finalize(j, out.acc[j], out.n)) : used(j, out);
    }
    return out;
  }

  SmallVector<Value> flatten(const State &s) {
    SmallVector<Value> v;
    for (size_t j = 0; j < s.acc.size(); ++j) {
      v.push_back(s.acc[j]);
      if (s.su[j]) {
        v.push_back(s.su[j]);
        v.push_back(s.sw[j]);
      }
    }
    v.push_back(s.n);
    return v;
  }
  State unflatten(ValueRange v) {
    State s;
    size_t i = 0, n = alg.getReductions().size();
    s.acc.resize(n);
    s.su.resize(n);
    s.sw.resize(n);
    for (size_t j = 0; j < n; ++j) {
      s.acc[j] = v[i++];
      if (alg.getReductions()[j].rule == CorrectionRule::ShiftedProduct) {
        s.su[j] = v[i++];
        s.sw[j] = v[i++];
      }
    }
    s.n = v[i];
    return s;
  }

  /// Replaces each reduction by its final value and drops what only fed
  /// the reductions.
  void finish(const State &s) {
    for (auto [j, r] : llvm::enumerate(alg.getReductions())) {
      Value v = convert(finalize(j, s.acc[j], s.n), resultElt(j));
      v = reshape(v, shapeOf(r.op->getResult(0)));
      r.op->getResult(0).replaceAllUsesWith(v);
    }
    Block &body = chain.getBody().front();
    for (bool erased = true; erased;) {
      erased = false;
      SmallVector<Operation *> ops;
      for (Operation &op : body.without_terminator())
        ops.push_back(&op);
      for (Operation *op : llvm::reverse(ops))
        if (op->use_empty() && isPure(op)) {
          op->erase();
          erased = true;
        }
    }
  }

  ChainOp chain;
  const ChainAlgebra &alg;
  OpBuilder b;
  Location loc;
  Shape space;
  int64_t axis = 0, rank = 0, len = 0;
  bool dividesBySum = false;
};

/// Whether the chain sums values zeroed after a row max (P zeroed after
/// softmax, select(c, P, 0), then P·V) while its scores may be -inf (a -inf
/// constant, or a float tensor read from outside other than a matmul's operand
/// or result: scores of finite data are finite). The model then gives zeros for
/// a row of nothing but -inf where the zeroing drops every key, which the fused
/// corrections cannot tell from NaN; only matchAttention's check that the
/// zeroing covers the masks lets them keep zeros (emptyRowsZero).
bool zeroesRowsAfterMax(ChainOp c) {
  Block &body = c.getBody().front();
  llvm::DenseSet<Value> afterMax, zeroed;
  bool mayBeNegInf = false, sums = false;
  auto isZero = [](Value v) {
    std::optional<double> x = uniformValue(v);
    return x && *x == 0;
  };
  for (Operation &op : body.without_terminator()) {
    bool reads = isa<ReduceMaxOp>(op);
    for (Value v : op.getOperands()) {
      reads |= afterMax.contains(v);
      auto type = dyn_cast<RankedTensorType>(v.getType());
      mayBeNegInf |= v.getParentBlock() != &body && !isa<MatmulOp>(op) &&
                     !v.getDefiningOp<MatmulOp>() && type &&
                     isa<FloatType>(type.getElementType());
    }
    if (reads)
      afterMax.insert(op.result_begin(), op.result_end());
    if (op.getNumResults() == 1 && !reads) {
      std::optional<double> x = uniformValue(op.getResult(0));
      mayBeNegInf |= x && std::isinf(*x) && *x < 0;
    }
    // Only a sum over zeroed values (P·V, a reduction) is corrected; a
    // zeroed P written out is computed from the final max and sum.
    bool readsZeroed = llvm::any_of(
        op.getOperands(), [&](Value v) { return zeroed.contains(v); });
    if (readsZeroed &&
        (isa<MatmulOp>(op) || op.hasTrait<OpTrait::tcc::Reduction>()))
      sums = true;
    auto sel = dyn_cast<SelectOp>(op);
    if (readsZeroed ||
        (sel && ((isZero(sel.getB()) && afterMax.contains(sel.getA())) ||
                 (isZero(sel.getA()) && afterMax.contains(sel.getB())))))
      zeroed.insert(op.result_begin(), op.result_end());
  }
  return sums && mayBeNegInf;
}

struct TccChainFusion : mlir::tcc::impl::TccChainFusionBase<TccChainFusion> {
  using Base::Base;

  void runOnOperation() override {
    if (mode != "auto" && mode != "off" && mode != "rolling" &&
        mode != "splitk") {
      getOperation().emitError("tcc-chain-fusion: unknown mode '")
          << mode << "' (auto, off, rolling, splitk)";
      return signalPassFailure();
    }
    if (mode == "off")
      return;
    SmallVector<ChainOp> chains;
    getOperation().walk([&](ChainOp c) { chains.push_back(c); });
    for (ChainOp c : chains)
      fuse(c);
  }

  /// The cost model (docs/fusion.md): rows that fit one chunk gain nothing;
  /// many rows (prefill) keep every worker busy one row at a time, so they
  /// roll; few rows over a long axis (decode) split the axis so that
  /// rows × chunks fill the machine.
  void fuse(ChainOp c) {
    // The space: the first reduction's input.
    int64_t axis = c.getAxis(), len = 0, rows = 1;
    for (Operation &op : c.getBody().front())
      if (op.hasTrait<OpTrait::tcc::Reduction>()) {
        ArrayRef<int64_t> space =
            cast<RankedTensorType>(op.getOperand(0).getType()).getShape();
        if (axis >= int64_t(space.size()))
          return;
        len = space[axis];
        for (auto [d, n] : llvm::enumerate(space))
          if (int64_t(d) != axis)
            rows *= n;
        break;
      }
    std::string form = mode;
    int64_t chunk = chunkSize > 0 ? chunkSize : 256;
    bool hasMatmul = false;
    c.walk([&](MatmulOp) { hasMatmul = true; });
    if (mode == "auto") {
      if (len < 2 * chunk)
        return;
      if (matmulChainsOnly && !hasMatmul)
        return;
      form = rows >= minRows ? "rolling" : "splitk";
    }
    std::string reason;
    std::unique_ptr<ChainAlgebra> alg = ChainAlgebra::derive(c, reason);
    if (!alg) {
      c.emitWarning() << "chain fusion refused: " << reason;
      return;
    }
    if (len < 2)
      return;
    Fuser f(c, *alg);
    // Attention's policy for a row that keeps no key (matchAttention: NaN
    // as unfused, or zeros where the model zeroes P where its masks drop
    // keys); other chains: NaN.
    std::string why;
    std::optional<AttentionMatch> m;
    if (hasMatmul)
      m = matchAttention(c, why);
    f.emptyRowsZero = m && !m->maskedToInfinity;
    if (!m && zeroesRowsAfterMax(c)) {
      c.emitWarning() << "chain fusion refused: values after the row max are "
                         "zeroed (select(c, P, 0)) where scores may be -inf, "
                         "and no attention match proves the zeroing covers "
                         "every -inf: fused, a row of nothing but -inf would "
                         "be NaN where the model gives zeros";
      return;
    }
    if (failed(f.check(reason))) {
      c.emitWarning() << "chain fusion refused: " << reason;
      return;
    }
    if (form == "rolling") {
      // A forced form on a short axis still takes two chunks.
      int64_t size =
          chunkSize > 0 ? chunkSize : std::min<int64_t>(256, (len + 1) / 2);
      f.rolling(std::min(size, len));
      return;
    }
    int64_t parts;
    if (chunkSize > 0) {
      parts = (len + chunkSize - 1) / chunkSize;
    } else {
      parts = (parallelism + rows - 1) / rows;
      parts = std::clamp<int64_t>(parts, 2, std::max<int64_t>(2, len / 64));
    }
    f.splitK(std::clamp<int64_t>(parts, 1, len));
  }
};

} // namespace
