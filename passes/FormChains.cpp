//===- FormChains.cpp - wrap reduction chains in tcc.chain ----------------===//
//
// A reduction chain is a set of reductions over one axis of one tensor shape
// (the chain's *space*) where later reductions read earlier results through
// elementwise ops: softmax (max → sum), layer norm (mean → variance),
// attention (max → sum → P·V). Chains are found by dataflow on primitives,
// never by composite names, because the frontend expands composites and a
// model may write the same graph by hand.
//
// For a seed reduction, its *descendants* are the elementwise ops reached
// from its result through values of the space (the full shape, or the shape
// with the axis kept as 1 or dropped). A descendant's user that reduces the
// same axis of the same shape, or a matmul that contracts the axis, is
// linked to the seed; a seed whose result is broadcast back over the axis
// (RMS norm: x · rsqrt(mean(x²))) is a chain alone. Linked ops (anchors)
// form the chain with every descendant of its reductions (the ops between
// them and the epilogue), and a prologue: ops whose users are all in the
// chain (elementwise, or a matmul producing the space along the axis, such
// as attention's q·kᵀ). Matmuls
// join only when batched like the space (attention's per-head operands); a
// weight shared by every row (layer norm, then a linear layer) stays a GEMM.
// With `unbatched-attention` (GPU targets that fuse attention), matmuls of
// 2-D operands join a 2-D space too, but only as a pair: a chain holding
// one that produces the space (q·kᵀ), one that contracts its axis (P·V) and
// softmax's exp is single-head attention, [L, D], which the attention
// templates may take (tcc-gpu-attention-chains dissolves it where they do
// not); a chain with only one of them (a linear layer before or after a
// softmax), or with no exp (a norm between two linear layers), is formed
// again without its matmuls, which stay GEMMs.
//
// A consumer matmul's rows may be scaled after it by the chain's row values
// (attention normalised after P·V: (e·v) / sum(e), (e·v) · reciprocal(sum(e)),
// with casts around): such ops, elementwise on the matmul's result and row
// values alone, form its *epilogue* and join the chain, which then yields the
// normalised result instead of both P·V and the sum.
//
// A matmul pair with exp between them (attention) whose K or V is broadcast
// by the matmul's own batch rules (MQA as K [B, 1, L, D] against Q
// [B, H, L, D]) first gets the broadcast as an explicit broadcast_to, the
// form the attention match reads.
//
// A reduction without keepdims that a user reshapes back to the kept shape
// (a hand-written `reshape(reduce_max(x, axes=[-1]), [.., 1])`) is first
// made the reduction with keepdims: the same values, and the form the
// chain's reductions and their users are recognised in; its other users
// (log-sum-exp's `+ max`) read it reshaped back to the reduced shape.
//
// A chain must not read, through ops left outside, a value it produces:
// members that would are left out and the chain is formed again without them.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionMatch.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCFORMCHAINS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

using OpSet = llvm::SmallPtrSet<Operation *, 16>;

/// The axis of a reduction a chain may take: one axis of sum, max, min or
/// mean (arg reductions produce indices, which no later reduction rescales).
std::optional<int64_t> chainAxisOf(Operation *op) {
  if (!isa<ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceMeanOp>(op))
    return std::nullopt;
  ArrayRef<int64_t> axes =
      op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
  if (axes.size() != 1)
    return std::nullopt;
  return axes.front();
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Values used by `op`, with those its regions capture from above.
SmallVector<Value> inputsOf(Operation *op) {
  SmallVector<Value> out(op->getOperands());
  if (op->getNumRegions()) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op->getRegions(), captured);
    out.append(captured.begin(), captured.end());
  }
  return out;
}

bool isSource(Operation *op) { return isa<ConstantOp, IotaOp>(op); }

/// Elementwise ops a chain may hold between and after its reductions.
bool isChainElementwise(Operation *op) {
  return (isElementwise(op) || isa<BroadcastToOp>(op)) &&
         op->getNumResults() == 1;
}

/// A tensor shape and one of its axes: the iteration space of a chain.
struct Space {
  SmallVector<int64_t> shape;
  int64_t axis = 0;

  bool isFull(Value v) const { return shapeOf(v) == ArrayRef(shape); }

  /// The full shape, or a reduction's result with or without keepdims.
  bool contains(Value v) const {
    ArrayRef<int64_t> s = shapeOf(v);
    if (s == ArrayRef(shape))
      return true;
    SmallVector<int64_t> kept(shape);
    kept[axis] = 1;
    if (s == ArrayRef(kept))
      return true;
    kept.erase(kept.begin() + axis);
    return s == ArrayRef(kept);
  }

  /// Whether `v` broadcasts to the full shape without growing it.
  bool broadcastsInto(Value v) const {
    ArrayRef<int64_t> s = shapeOf(v);
    if (s.size() > shape.size())
      return false;
    for (auto [d, n] : llvm::zip(llvm::reverse(s), llvm::reverse(shape)))
      if (d != 1 && d != n)
        return false;
    return true;
  }
};

/// Replaces each reduction without keepdims over one axis that a user
/// reshapes to the shape with the axis kept (as 1) by that reduction with
/// keepdims: a reshape that only reinserts the reduced axis leaves the
/// values in place. Other users read the new reduction reshaped back.
void keepReshapedAxes(Block &block) {
  SmallVector<Operation *> reductions;
  auto keptShape = [](Operation *op) {
    SmallVector<int64_t> kept(shapeOf(op->getOperand(0)));
    kept[*chainAxisOf(op)] = 1;
    return kept;
  };
  auto reshapesToKept = [&](Operation *op, Operation *u) {
    return isa<ReshapeOp>(u) &&
           shapeOf(u->getResult(0)) == ArrayRef(keptShape(op));
  };
  for (Operation &op : block) {
    auto keep = op.getAttrOfType<BoolAttr>("keepdims");
    if (!chainAxisOf(&op) || !keep || keep.getValue() || op.use_empty())
      continue;
    if (llvm::any_of(op.getUsers(),
                     [&](Operation *u) { return reshapesToKept(&op, u); }))
      reductions.push_back(&op);
  }
  for (Operation *op : reductions) {
    OpBuilder b(op);
    Operation *withKept = b.clone(*op);
    withKept->setAttr("keepdims", b.getBoolAttr(true));
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    withKept->getResult(0).setType(type.clone(keptShape(op)));
    for (Operation *user : llvm::make_early_inc_range(op->getUsers())) {
      if (!reshapesToKept(op, user))
        continue;
      user->getResult(0).replaceAllUsesWith(withKept->getResult(0));
      user->erase();
    }
    // Other readers of the reduced shape (log-sum-exp's + max) read the
    // kept result reshaped back: a view, and the chain's own value.
    if (!op->use_empty()) {
      b.setInsertionPointAfter(withKept);
      Value back =
          ReshapeOp::create(b, op->getLoc(), type, withKept->getResult(0));
      op->getResult(0).replaceAllUsesWith(back);
    }
    op->erase();
  }
}

/// Makes the batch broadcast of attention's matmuls explicit: a matmul
/// broadcasts its operands' batch dimensions (NumPy rules), so MQA is
/// often written q·kᵀ with K [B, 1, L, D] against Q [B, H, L, D], and V
/// the same in P·V. Chains take matmuls batched like their space only, so
/// such attention stayed unfused (a GEMM, softmax and another GEMM); an
/// explicit broadcast_to is the MQA form the attention match reads (a head
/// broadcast folds into the kernel's K and V indexing); so is GQA written
/// with the query heads as two axes, Q [B, Hkv, G, L, D] against K
/// [B, Hkv, 1, L, D]. Only for a matmul pair of rank 3 to 5 with softmax
/// between them (P·V reading, through
/// other ops, exponentials of a matmul's result that are summed over the
/// last axis), and operands with batch dimensions of their own: a 2-D
/// weight shared by a linear layer's batch stays broadcast by the GEMM,
/// never copied, and so do a mixture's [1, K, N] weights around an exp.
void broadcastAttentionOperands(Block &block) {
  auto batchOf = [](Value v) { return shapeOf(v).drop_back(2); };
  // One broadcast a value and shape, shared by its readers.
  llvm::DenseMap<std::pair<Value, Type>, Value> made;
  auto explicitBroadcast = [&](MatmulOp mm) {
    ArrayRef<int64_t> batch = batchOf(mm.getResult());
    for (OpOperand &operand : mm->getOpOperands()) {
      Value x = operand.get();
      // A 2-D operand is a weight shared by every batch (a linear layer),
      // not a head's K or V: left to the GEMM.
      if (batchOf(x) == batch || shapeOf(x).size() < 3)
        continue;
      SmallVector<int64_t> shape(batch);
      llvm::append_range(shape, shapeOf(x).take_back(2));
      Type type = cast<RankedTensorType>(x.getType()).clone(shape);
      Value &b = made[{x, type}];
      if (!b) {
        OpBuilder builder(block.getParentOp()->getContext());
        builder.setInsertionPointAfterValue(x);
        b = BroadcastToOp::create(builder, mm.getLoc(), type, x);
      }
      operand.set(b);
    }
  };
  // Softmax's exponentials: summed over the last axis (through casts).
  auto summedOverKeys = [](Operation *exp) {
    int64_t last = int64_t(shapeOf(exp->getResult(0)).size()) - 1;
    SmallVector<Operation *> users(exp->getUsers());
    for (size_t i = 0; i < users.size(); ++i) {
      if (isa<CastOp>(users[i]))
        llvm::append_range(users, users[i]->getUsers());
      if (auto sum = dyn_cast<ReduceSumOp>(users[i]);
          sum && sum.getAxes() == ArrayRef<int64_t>{last})
        return true;
    }
    return false;
  };
  SmallVector<std::pair<MatmulOp, MatmulOp>> pairs;
  for (auto pv : block.getOps<MatmulOp>()) {
    // Ranks the attention templates take: a batch and heads (as one axis, or
    // two of GQA's groups) at most.
    size_t rank = shapeOf(pv.getResult()).size();
    if (rank < 3 || rank > 5)
      continue;
    // Back from P through anything but matmuls (a bounded walk): softmax's
    // exp, then the scores' matmul.
    SmallVector<std::pair<Value, int>> work = {{pv.getA(), 0}};
    llvm::SmallPtrSet<Operation *, 32> seen;
    llvm::SmallSetVector<Operation *, 2> matmuls;
    bool softmax = false;
    while (!work.empty()) {
      auto [v, depth] = work.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || depth > 24 || !seen.insert(def).second)
        continue;
      if (isa<MatmulOp>(def)) {
        matmuls.insert(def);
        continue;
      }
      softmax |= isa<ExpOp>(def) && summedOverKeys(def);
      for (Value o : def->getOperands())
        work.push_back({o, depth + 1});
    }
    if (!softmax || matmuls.size() != 1)
      continue;
    auto qk = cast<MatmulOp>(matmuls.front());
    if (shapeOf(qk.getResult()).size() == rank &&
        batchOf(qk.getResult()) == batchOf(pv.getResult()))
      pairs.push_back({qk, pv});
  }
  for (auto [qk, pv] : pairs) {
    explicitBroadcast(qk);
    explicitBroadcast(pv);
  }
}

class ChainFormer {
public:
  ChainFormer(Block &block, int64_t maxMatmulExtent, bool unbatchedAttention,
              bool remarkUnfusedAttention)
      : block(block), maxMatmulExtent(maxMatmulExtent),
        unbatchedAttention(unbatchedAttention),
        remarkUnfusedAttention(remarkUnfusedAttention) {}

  void run() {
    SmallVector<Operation *> seeds;
    for (Operation &op : block)
      if (chainAxisOf(&op))
        seeds.push_back(&op);
    for (Operation *seed : seeds) {
      // Earlier chains may have taken the seed.
      if (seed->getBlock() != &block)
        continue;
      OpSet banned;
      while (true) {
        numberOps();
        Space space{SmallVector<int64_t>(shapeOf(seed->getOperand(0))),
                    *chainAxisOf(seed)};
        SmallVector<Operation *> members;
        if (!collect(seed, space, banned, members))
          break;
        // Unbatched matmuls without their attention partner leave; the
        // chain may still link without them (a softmax).
        OpSet unpaired = unpairedMatmuls(members, space);
        if (!unpaired.empty()) {
          banned.insert(unpaired.begin(), unpaired.end());
          continue;
        }
        OpSet offenders = cycleOffenders(members);
        if (offenders.empty()) {
          bool explained = remarkHeadSize(members, space);
          ChainOp chain = materialize(members, space);
          // Its remark is the reason: the chain is no attention without
          // the matmuls left out, and tcc-gpu-attention-chains says no more.
          if (chain && explained)
            chain->setAttr(kAttentionExplainedAttrName,
                           UnitAttr::get(chain.getContext()));
          break;
        }
        // Without them the chain may still link; the seed itself leaves to
        // a later seed's attempt.
        if (offenders.contains(seed))
          break;
        banned.insert(offenders.begin(), offenders.end());
      }
    }
  }

private:
  void numberOps() {
    position.clear();
    unsigned i = 0;
    for (Operation &op : block)
      position[&op] = i++;
  }

  bool isSameKeyReduction(Operation *op, const Space &space) {
    std::optional<int64_t> axis = chainAxisOf(op);
    return axis && *axis == space.axis && space.isFull(op->getOperand(0));
  }

  /// Whether `v` holds one matrix per batch entry of the space (attention's
  /// per-head K and V), not one matrix broadcast to every row: a weight
  /// shared by all rows is a GEMM's job (tensor-core templates on GPUs),
  /// not a row chain's. With `unbatchedAttention`, a 2-D operand of a 2-D
  /// space too (single-head attention; unpairedMatmuls then keeps only
  /// attention's pair).
  bool batchedLikeSpace(Value v, const Space &space) {
    ArrayRef<int64_t> s = shapeOf(v);
    if (isUnbatched(space))
      return s.size() == 2;
    return s.size() >= 3 && s.size() == space.shape.size() &&
           s.drop_back(2) == ArrayRef(space.shape).drop_back(2);
  }

  bool isUnbatched(const Space &space) const {
    return unbatchedAttention && space.shape.size() == 2;
  }

  /// The matmuls of chain `members` over an unbatched space unless it holds
  /// attention's: one producing the space from outside operands (the
  /// scores), one reading a member (P·V), and softmax's exponentials between
  /// them (a norm between two linear layers is no attention). Empty
  /// otherwise.
  OpSet unpairedMatmuls(ArrayRef<Operation *> members, const Space &space) {
    OpSet matmuls;
    if (!isUnbatched(space))
      return matmuls;
    OpSet in(members.begin(), members.end());
    bool producer = false, consumer = false, softmax = false;
    for (Operation *op : members) {
      softmax |= isa<ExpOp>(op);
      if (!isa<MatmulOp>(op))
        continue;
      matmuls.insert(op);
      bool readsMember = llvm::any_of(op->getOperands(), [&](Value v) {
        Operation *def = v.getDefiningOp();
        return def && in.contains(def);
      });
      consumer |= readsMember;
      producer |= !readsMember && isProducerMatmul(op, space);
    }
    if (producer && consumer && softmax)
      matmuls.clear();
    return matmuls;
  }

  /// A batched matmul reading `v` (of the full shape) that contracts the
  /// chain's axis and whose other result dimension is small enough to keep
  /// a row's output in one chain row (attention's P·V over the head
  /// dimension): at most `limit`, by default maxMatmulExtent.
  bool isConsumerMatmul(Operation *op, Value v, const Space &space,
                        std::optional<int64_t> limit = std::nullopt) {
    int64_t extent = limit.value_or(maxMatmulExtent);
    auto mm = dyn_cast<MatmulOp>(op);
    if (!mm || !space.isFull(v) || mm.getA() == mm.getB() ||
        !batchedLikeSpace(mm.getA() == v ? mm.getB() : mm.getA(), space))
      return false;
    int64_t rank = space.shape.size();
    ArrayRef<int64_t> out = shapeOf(mm.getResult());
    if (mm.getA() == v &&
        space.axis == (mm.getTransposeA() ? rank - 2 : rank - 1))
      return out.back() <= extent;
    if (mm.getB() == v &&
        space.axis == (mm.getTransposeB() ? rank - 1 : rank - 2))
      return out[out.size() - 2] <= extent;
    return false;
  }

  /// A batched matmul producing the full shape with the axis among its
  /// result's matrix dimensions and a short contraction (attention's q·kᵀ):
  /// at most `limit`, by default maxMatmulExtent.
  bool isProducerMatmul(Operation *op, const Space &space,
                        std::optional<int64_t> limit = std::nullopt) {
    auto mm = dyn_cast<MatmulOp>(op);
    if (!mm || !space.isFull(mm.getResult()) ||
        !batchedLikeSpace(mm.getA(), space) ||
        !batchedLikeSpace(mm.getB(), space))
      return false;
    int64_t rank = space.shape.size();
    ArrayRef<int64_t> a = shapeOf(mm.getA());
    int64_t k = a[a.size() - (mm.getTransposeA() ? 2 : 1)];
    return space.axis >= rank - 2 && k <= limit.value_or(maxMatmulExtent);
  }

  /// With `remarkUnfusedAttention`: when chain `members` is attention's
  /// softmax (it holds an exp) and its Q·Kᵀ or P·V stays out only because
  /// the head size is over maxMatmulExtent, a remark says so (`tcc compile
  /// --explain`), at P·V's node as the other "attention not fused" remarks
  /// are; the chain is formed without them and they stay GEMMs.
  bool remarkHeadSize(ArrayRef<Operation *> members, const Space &space) {
    if (!remarkUnfusedAttention || maxMatmulExtent <= 0 ||
        llvm::none_of(members, [](Operation *op) { return isa<ExpOp>(op); }))
      return false;
    constexpr int64_t unlimited = std::numeric_limits<int64_t>::max();
    OpSet in(members.begin(), members.end());
    Operation *producer = nullptr, *consumer = nullptr;
    int64_t headSize = 0;
    for (Operation *op : members) {
      for (Value o : op->getOperands()) {
        Operation *def = o.getDefiningOp();
        if (!producer && def && !in.contains(def) &&
            isProducerMatmul(def, space, unlimited) &&
            !isProducerMatmul(def, space)) {
          producer = def;
          auto mm = cast<MatmulOp>(def);
          ArrayRef<int64_t> a = shapeOf(mm.getA());
          headSize = a[a.size() - (mm.getTransposeA() ? 2 : 1)];
        }
      }
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (!consumer && !in.contains(user) &&
              isConsumerMatmul(user, r, space, unlimited) &&
              !isConsumerMatmul(user, r, space)) {
            consumer = user;
            auto mm = cast<MatmulOp>(user);
            ArrayRef<int64_t> out = shapeOf(mm.getResult());
            headSize = mm.getA() == r ? out.back() : out[out.size() - 2];
          }
    }
    if (!producer && !consumer)
      return false;
    emitRemark((consumer ? consumer : producer)->getLoc())
        << "attention not fused: head size " << headSize << " is over "
        << maxMatmulExtent << ", the largest the attention templates take";
    return true;
  }

  /// The consumer matmul whose result (through float casts) elementwise op
  /// `op` scales, when the matmul contracts what reduction `seed` reduces
  /// (through float casts: sum(e) and cast(e)·v): the start of the matmul's
  /// epilogue, with `op` reading a row value of `seed`.
  MatmulOp scaledMatmul(Operation *op, Operation *seed, const Space &space) {
    auto uncast = [](Value v) {
      while (auto c = v.getDefiningOp<CastOp>())
        v = c.getInput();
      return v;
    };
    if (!isChainElementwise(op) || op->getBlock() != &block)
      return MatmulOp();
    Value reduced = uncast(seed->getOperand(0));
    for (Value o : op->getOperands()) {
      auto mm = uncast(o).getDefiningOp<MatmulOp>();
      if (!mm || shapeOf(mm.getResult()) != shapeOf(op->getResult(0)))
        continue;
      for (Value in : {mm.getA(), mm.getB()})
        if (uncast(in) == reduced && isConsumerMatmul(mm, in, space))
          return mm;
    }
    return MatmulOp();
  }

  /// The descendants of reduction `seed` (elementwise ops reached through
  /// values of the space) and the anchors they reach.
  void descend(Operation *seed, const Space &space, const OpSet &banned,
               llvm::SetVector<Operation *> &desc,
               llvm::SetVector<Operation *> &anchors) {
    SmallVector<Operation *> stack{seed};
    while (!stack.empty()) {
      Operation *op = stack.pop_back_val();
      Value v = op->getResult(0);
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (user->getBlock() != &block || banned.contains(user))
          continue;
        if (isSameKeyReduction(user, space) ||
            isConsumerMatmul(user, v, space)) {
          anchors.insert(user);
        } else if (MatmulOp mm = scaledMatmul(user, seed, space)) {
          // (e·v) / sum(e): the matmul's rows scaled by this row value (its
          // epilogue, added with the matmul), unless the matmul was left out.
          if (!banned.contains(mm))
            anchors.insert(mm);
        } else if (isChainElementwise(user) &&
                   space.contains(user->getResult(0)) && desc.insert(user)) {
          stack.push_back(user);
        }
      }
    }
  }

  /// The members of the chain through `seed` in program order; false when
  /// no anchor links to it and its result is not broadcast back over the
  /// axis (a lone reduction is a chain when an elementwise op combines its
  /// result with the reduced tensor's shape, as RMS norm does).
  bool collect(Operation *seed, const Space &space, const OpSet &banned,
               SmallVector<Operation *> &members) {
    // Anchors linked to the seed, forwards or backwards: every same-key
    // reduction's reach is needed to find those that feed the seed.
    llvm::DenseMap<Operation *, llvm::SetVector<Operation *>> reach, descs;
    for (Operation &op : block)
      if (!banned.contains(&op) && isSameKeyReduction(&op, space))
        descend(&op, space, banned, descs[&op], reach[&op]);
    llvm::SetVector<Operation *> anchors;
    anchors.insert(seed);
    for (bool grew = true; grew;) {
      grew = false;
      for (auto &[from, reached] : reach) {
        bool linked = anchors.contains(from) ||
                      llvm::any_of(reached, [&](Operation *r) {
                        return anchors.contains(r);
                      });
        if (!linked)
          continue;
        grew |= anchors.insert(from);
        for (Operation *r : reached)
          grew |= anchors.insert(r);
      }
    }
    OpSet set(anchors.begin(), anchors.end());
    bool broadcastBack = false;
    for (Operation *a : anchors)
      if (descs.count(a))
        for (Operation *d : descs[a]) {
          set.insert(d);
          broadcastBack |= space.isFull(d->getResult(0));
        }
    if (anchors.size() < 2 && !broadcastBack)
      return false;
    for (Operation *a : anchors)
      if (isa<MatmulOp>(a))
        addEpilogue(cast<MatmulOp>(a), space, banned, set);
    // The prologue, users before producers: ops whose every user is in.
    Operation *last = *llvm::max_element(set, [&](Operation *a, Operation *b) {
      return position[a] < position[b];
    });
    for (Operation *op = last->getPrevNode(); op; op = op->getPrevNode()) {
      if (set.contains(op) || banned.contains(op) || op->use_empty() ||
          op->getNumResults() != 1)
        continue;
      // An elementwise op only matmuls read makes their operands (Q or K
      // scaled before Q·Kᵀ, V before P·V), not values of the space, even
      // where its shape is the space's (head size equal to the key count).
      bool operandOnly = llvm::all_of(
          op->getUsers(), [](Operation *u) { return isa<MatmulOp>(u); });
      bool fits = (isChainElementwise(op) && !operandOnly &&
                   space.broadcastsInto(op->getResult(0))) ||
                  isProducerMatmul(op, space);
      if (fits && llvm::all_of(op->getUsers(), [&](Operation *u) {
            return set.contains(u);
          }))
        set.insert(op);
    }
    members.assign(set.begin(), set.end());
    llvm::sort(members, [&](Operation *a, Operation *b) {
      return position[a] < position[b];
    });
    return true;
  }

  /// Adds to `set` the epilogue of consumer matmul `mm`: elementwise ops of
  /// its result's shape that read only its result (or earlier epilogue
  /// ops), row values of the chain in `set` (the axis kept or dropped) and
  /// constants; none unless one of them reads a row value (a cast of P·V
  /// alone is no part of the chain).
  void addEpilogue(MatmulOp mm, const Space &space, const OpSet &banned,
                   OpSet &set) {
    ArrayRef<int64_t> shape = shapeOf(mm.getResult());
    llvm::SetVector<Operation *> epilogue;
    bool readsRow = false;
    auto isRow = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && set.contains(def) && !space.isFull(v) && space.contains(v);
    };
    SmallVector<Value> work{mm.getResult()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (user->getBlock() != &block || banned.contains(user) ||
            set.contains(user) || epilogue.contains(user) ||
            !isChainElementwise(user) || shapeOf(user->getResult(0)) != shape)
          continue;
        bool row = false, fits = true;
        for (Value o : user->getOperands()) {
          Operation *def = o.getDefiningOp();
          if (isRow(o))
            row = true;
          else if (!def ||
                   !(def == mm || epilogue.contains(def) || isSource(def)))
            fits = false;
        }
        if (!fits)
          continue;
        readsRow |= row;
        epilogue.insert(user);
        work.push_back(user->getResult(0));
      }
    }
    if (readsRow)
      set.insert(epilogue.begin(), epilogue.end());
  }

  /// Members that read, through ops outside the chain, a value the chain
  /// produces: wrapping them would make a cycle.
  OpSet cycleOffenders(ArrayRef<Operation *> members) {
    OpSet in(members.begin(), members.end()), tainted, offenders;
    for (Operation *op = members.front(); op; op = op->getNextNode()) {
      bool readsTainted = false, readsChain = false;
      for (Value v : inputsOf(op)) {
        Operation *def = v.getDefiningOp();
        if (!def)
          continue;
        readsTainted |= tainted.contains(def);
        readsChain |= in.contains(def);
      }
      if (in.contains(op)) {
        if (readsTainted)
          offenders.insert(op);
      } else if (readsTainted || readsChain) {
        tainted.insert(op);
      }
    }
    return offenders;
  }

  /// Forms the chain of `members`; null when nothing of it is used.
  ChainOp materialize(ArrayRef<Operation *> members, const Space &space) {
    OpSet in(members.begin(), members.end());
    SmallVector<Value> escaping;
    for (Operation *op : members)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(),
                         [&](Operation *u) { return !in.contains(u); }))
          escaping.push_back(r);
    if (escaping.empty())
      return {}; // dead code; nothing to compute

    // Outside ops between the first and last member that read the chain
    // move after it, with what reads them.
    Operation *last = members.back();
    SmallVector<Operation *> later;
    OpSet dependent;
    for (Operation *op = members.front(); op != last; op = op->getNextNode()) {
      if (in.contains(op))
        continue;
      if (llvm::any_of(inputsOf(op), [&](Value v) {
            Operation *def = v.getDefiningOp();
            return def && (in.contains(def) || dependent.contains(def));
          })) {
        dependent.insert(op);
        later.push_back(op);
      }
    }

    OpBuilder b(last);
    auto chain = ChainOp::create(b, members.front()->getLoc(),
                                 ValueRange(escaping).getTypes(), space.axis);
    Block *body = new Block();
    chain.getBody().push_back(body);
    OpBuilder inner = OpBuilder::atBlockEnd(body);
    auto yield = YieldOp::create(inner, chain.getLoc(), escaping);
    for (Operation *op : members)
      op->moveBefore(yield);
    // Constants and iotas are recomputed inside, never captured.
    inner.setInsertionPointToStart(body);
    llvm::DenseMap<Value, Value> sources;
    for (Operation *op : members)
      for (OpOperand &operand : op->getOpOperands()) {
        Operation *def = operand.get().getDefiningOp();
        if (!def || !isSource(def) || def->getBlock() != &block)
          continue;
        Value &copy = sources[operand.get()];
        if (!copy)
          copy = inner.clone(*def)->getResult(0);
        operand.set(copy);
      }
    for (auto [v, r] : llvm::zip(escaping, chain.getResults()))
      v.replaceUsesWithIf(r, [&](OpOperand &use) {
        return !chain->isAncestor(use.getOwner());
      });
    Operation *after = chain;
    for (Operation *op : later) {
      op->moveAfter(after);
      after = op;
    }
    for (auto &[v, copy] : sources)
      if (v.use_empty())
        v.getDefiningOp()->erase();
    return chain;
  }

  Block &block;
  int64_t maxMatmulExtent;
  bool unbatchedAttention;
  bool remarkUnfusedAttention;
  llvm::DenseMap<Operation *, unsigned> position;
};

struct TccFormChains : mlir::tcc::impl::TccFormChainsBase<TccFormChains> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    keepReshapedAxes(func.getBody().front());
    broadcastAttentionOperands(func.getBody().front());
    ChainFormer(func.getBody().front(), maxMatmulExtent, unbatchedAttention,
                remarkUnfusedAttention)
        .run();
  }
};

} // namespace
