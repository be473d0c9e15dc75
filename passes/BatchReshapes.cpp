//===- BatchReshapes.cpp - batch reshapes out of matmul chains ------------===//
//
// tcc-batch-reshapes: attention written over flattened heads (`torch.bmm`
// on [B·H, L, D], as BART, Whisper and fairseq write it) views its scores as
// [B, H, L, S] to add a mask and back to [B·H, L, S] for the softmax. A
// reshape that regroups only the axes before the last two (a batch reshape)
// commutes with the element-wise ops, the reductions over the last two axes
// and the matmuls between: splits move towards the inputs and merges towards
// the outputs, so the work between them runs over the finest batch axes and
// the reshapes meet their inverses and fold. The attention match then sees
// one chain of rank 4, its Q, K and V reshapes of the inputs (views).
//
// A flat view of rows ([B, H, L, S] as [B*H*L, S], for a softmax written
// over 2-D rows) sinks the same way past row-wise ops, where all of them
// lead to the reshape back.
//
//===----------------------------------------------------------------------===//
#include "passes/ConvLayout.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCBATCHRESHAPES
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

namespace {

RankedTensorType rankedOf(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// The reductions with `axes` and `keepdims` the rules here move.
bool isAxisReduction(Operation *op) {
  return isa<ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceMeanOp>(op);
}

/// The batch shapes a reshape maps between: it keeps the last two axes and
/// both sides have at least one batch axis (static shapes).
struct BatchReshape {
  ArrayRef<int64_t> from, to;
  bool merges() const { return from.size() > to.size(); }
  bool splits() const { return from.size() < to.size(); }
};

std::optional<BatchReshape> batchReshape(ReshapeOp r) {
  if (!r)
    return std::nullopt;
  RankedTensorType in = rankedOf(r.getInput()), out = r.getType();
  if (!in || !in.hasStaticShape() || !out.hasStaticShape() ||
      in.getRank() < 3 || out.getRank() < 3 ||
      in.getShape().take_back(2) != out.getShape().take_back(2))
    return std::nullopt;
  return BatchReshape{in.getShape().drop_back(2), out.getShape().drop_back(2)};
}

SmallVector<int64_t> withBatch(ArrayRef<int64_t> batch,
                               ArrayRef<int64_t> shape) {
  SmallVector<int64_t> out(batch);
  llvm::append_range(out, shape.take_back(2));
  return out;
}

/// Whether `op` can be rebuilt over other batch axes: checked before
/// anything is created, so that a refused op leaves nothing behind.
bool movable(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  RankedTensorType type = rankedOf(op->getResult(0));
  if (!type || !type.hasStaticShape() || type.getRank() < 3)
    return false;
  int64_t rank = type.getRank();
  ArrayRef<int64_t> batch = type.getShape().drop_back(2);
  if (isAxisReduction(op)) {
    if (!op->getAttrOfType<BoolAttr>("keepdims").getValue() ||
        llvm::any_of(op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef(),
                     [&](int64_t a) { return a < rank - 2; }))
      return false;
  } else if (auto t = dyn_cast<TransposeOp>(op)) {
    for (int64_t i = 0; i < rank - 2; ++i)
      if (t.getPerm()[i] != i)
        return false;
  } else if (!isElementwise(op) && !isa<MatmulOp>(op)) {
    return false;
  }
  return llvm::all_of(op->getOperands(), [&](Value v) {
    RankedTensorType t = rankedOf(v);
    if (!t || !t.hasStaticShape())
      return false;
    if (t.getRank() <= 2)
      return true;
    ArrayRef<int64_t> b = t.getShape().drop_back(2);
    return b == batch || llvm::all_of(b, [](int64_t d) { return d == 1; });
  });
}

/// `v`, an operand of an op whose result has batch axes `oldBatch`, as an
/// operand of the op over `newBatch` instead: reshaped where it has the
/// result's batch axes, as it is where it has none (rank 2 or less:
/// broadcast), with its leading ones dropped or added where it broadcasts
/// along every batch axis (`movable` admits no other operand).
Value operandOver(PatternRewriter &rewriter, Location loc, Value v,
                  ArrayRef<int64_t> oldBatch, ArrayRef<int64_t> newBatch) {
  RankedTensorType t = rankedOf(v);
  if (t.getRank() <= 2)
    return v;
  if (t.getShape().drop_back(2) == oldBatch)
    return reshapeTo(rewriter, loc, v, withBatch(newBatch, t.getShape()));
  SmallVector<int64_t> ones(newBatch.size(), 1);
  return reshapeTo(rewriter, loc, v, withBatch(ones, t.getShape()));
}

/// `op`, a `movable` op, rebuilt over the batch axes `newBatch` in place of
/// its result's.
Value rebuiltOver(PatternRewriter &rewriter, Operation *op,
                  ArrayRef<int64_t> newBatch) {
  assert(movable(op) && "rebuilt only where movable");
  RankedTensorType type = rankedOf(op->getResult(0));
  int64_t oldRank = type.getRank();
  int64_t newRank = static_cast<int64_t>(newBatch.size()) + 2;
  SmallVector<NamedAttribute> attrs(op->getAttrs());
  if (isAxisReduction(op)) {
    SmallVector<int64_t> axes;
    for (int64_t a : op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef())
      axes.push_back(a - oldRank + newRank);
    for (NamedAttribute &a : attrs)
      if (a.getName() == "axes")
        a.setValue(rewriter.getDenseI64ArrayAttr(axes));
  } else if (auto t = dyn_cast<TransposeOp>(op)) {
    SmallVector<int64_t> newPerm =
        llvm::to_vector(llvm::seq<int64_t>(0, newRank));
    if (t.getPerm()[oldRank - 2] != oldRank - 2)
      std::swap(newPerm[newRank - 2], newPerm[newRank - 1]);
    for (NamedAttribute &a : attrs)
      if (a.getName() == "perm")
        a.setValue(rewriter.getDenseI64ArrayAttr(newPerm));
  }
  ArrayRef<int64_t> oldBatch = type.getShape().drop_back(2);
  SmallVector<Value> operands;
  for (Value v : op->getOperands())
    operands.push_back(
        operandOver(rewriter, op->getLoc(), v, oldBatch, newBatch));
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(type.clone(withBatch(newBatch, type.getShape())));
  return rewriter.create(state)->getResult(0);
}

/// Whether a split of `v` moves up cleanly: past producers that read their
/// batch axes once each, up to arguments, merges (which it cancels) or ops
/// it stays after. A producer whose result has other readers would keep
/// the split there, in the middle of a chain (after P·V, the softmax's
/// values are each read twice): it stays where it is. `gains` is set where
/// the way passes a matmul (the scores of flattened heads, viewed) or ends
/// at a merge; elsewhere a split gains nothing and stays (K unsqueezed for
/// its repeat over grouped heads keeps the form the attention match reads).
bool hoistsCleanly(Value v, bool &gains, int depth = 0) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return true;
  if (auto r = dyn_cast<ReshapeOp>(def)) {
    std::optional<BatchReshape> b = batchReshape(r);
    gains |= b && b->merges();
    return true;
  }
  if (!movable(def))
    return true;
  if (!v.hasOneUse() || depth > 64)
    return false;
  gains |= isa<MatmulOp>(def);
  ArrayRef<int64_t> batch = rankedOf(v).getShape().drop_back(2);
  for (Value o : def->getOperands()) {
    RankedTensorType t = rankedOf(o);
    if (t && t.getRank() > 2 && t.getShape().drop_back(2) == batch &&
        !hoistsCleanly(o, gains, depth + 1))
      return false;
  }
  return true;
}

/// Whether `split` should move up: cleanly, and gaining something. A
/// split read only by matmuls (an operand's view, made by the rules here)
/// gains by moving too: K transposed for torch.bmm and then split becomes
/// the transpose of a view, which the attention match folds into Q·Kᵀ.
bool worthHoisting(ReshapeOp split) {
  bool gains = llvm::all_of(split->getUsers(),
                            [](Operation *u) { return isa<MatmulOp>(u); });
  return hoistsCleanly(split.getInput(), gains) && gains;
}

/// f(merge(x), ...) -> merge(f(x, ...)): an op over merged batch axes runs
/// over the axes the merge came from. A matmul moves only for a merge of its
/// left operand (the scores or probabilities of attention written over
/// flattened heads): K and V repeated for grouped heads and merged
/// (Hugging Face's repeat_kv) stay the form the attention match reads, and
/// so does any merge of a broadcast (a repeat) wherever it goes.
struct SinkMerges : RewritePattern {
  SinkMerges(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    // Transposes stay before a merge: K repeated for grouped heads, merged
    // and then transposed is a form the attention match reads as it is.
    if (isa<ReshapeOp, TransposeOp>(op) || !movable(op))
      return failure();
    RankedTensorType type = rankedOf(op->getResult(0));
    ArrayRef<int64_t> batch = type.getShape().drop_back(2);
    ValueRange candidates = op->getOperands();
    if (isa<MatmulOp>(op))
      candidates = op->getOperands().take_front(1);
    std::optional<BatchReshape> merge;
    for (Value v : candidates) {
      auto reshape = v.getDefiningOp<ReshapeOp>();
      std::optional<BatchReshape> r = batchReshape(reshape);
      if (r && r->merges() && r->to == batch &&
          !reshape.getInput().getDefiningOp<BroadcastToOp>()) {
        merge = r;
        break;
      }
    }
    if (!merge)
      return failure();
    Value rebuilt = rebuiltOver(rewriter, op, merge->from);
    rewriter.replaceOp(
        op, reshapeTo(rewriter, op->getLoc(), rebuilt, type.getShape()));
    return success();
  }
};

/// split(f(x, ...)) -> f(split(x), ...) where the split is f's one use: the
/// op runs over the finer batch axes the split gives.
struct HoistSplits : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<BatchReshape> split = batchReshape(op);
    Operation *def = op.getInput().getDefiningOp();
    if (!split || !split->splits() || !def || isa<ReshapeOp>(def) ||
        !op.getInput().hasOneUse() || !movable(def) || !worthHoisting(op))
      return failure();
    rewriter.setInsertionPoint(def);
    Value rebuilt = rebuiltOver(rewriter, def, split->to);
    rewriter.replaceOp(op, rebuilt);
    return success();
  }
};

/// A reshape that keeps the last axis and regroups the others, not only the
/// batch axes (those are batchReshape's): a flat view of rows, [B, H, L, S]
/// as [B*H*L, S]. `from` and `to` are the leading axes.
std::optional<BatchReshape> rowReshape(ReshapeOp r) {
  if (!r || batchReshape(r))
    return std::nullopt;
  RankedTensorType in = rankedOf(r.getInput()), out = r.getType();
  if (!in || !in.hasStaticShape() || !out.hasStaticShape() ||
      in.getRank() < 1 || out.getRank() < 1 ||
      in.getShape().back() != out.getShape().back())
    return std::nullopt;
  return BatchReshape{in.getShape().drop_back(), out.getShape().drop_back()};
}

/// Whether `op` works row by row over rows `rows` (the leading axes of its
/// result): element-wise, or a keepdims reduction over the last axis alone;
/// each operand has those rows or broadcasts along all of them (leading
/// axes of 1, or fewer axes).
bool rowMovable(Operation *op, ArrayRef<int64_t> rows) {
  if (op->getNumResults() != 1)
    return false;
  RankedTensorType type = rankedOf(op->getResult(0));
  if (!type || !type.hasStaticShape() || type.getRank() < 1 ||
      type.getShape().drop_back() != rows)
    return false;
  int64_t rank = type.getRank();
  if (isAxisReduction(op)) {
    if (!op->getAttrOfType<BoolAttr>("keepdims").getValue() ||
        op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef() !=
            ArrayRef<int64_t>{rank - 1})
      return false;
  } else if (!isElementwise(op)) {
    return false;
  }
  return llvm::all_of(op->getOperands(), [&](Value v) {
    RankedTensorType t = rankedOf(v);
    if (!t || !t.hasStaticShape() || t.getRank() > rank)
      return false;
    ArrayRef<int64_t> lead = t.getShape().drop_back(t.getRank() ? 1 : 0);
    return (t.getRank() == rank && lead == rows) ||
           llvm::all_of(lead, [](int64_t d) { return d == 1; });
  });
}

/// Whether `v` reaches a matmul as its left operand (P of P V) through
/// element-wise ops and keepdims reductions (those already past the
/// reshape back, as the merge sinks op by op).
bool leadsToMatmul(Value v, llvm::SmallPtrSetImpl<Operation *> &seen) {
  for (Operation *u : v.getUsers()) {
    if (auto mm = dyn_cast<MatmulOp>(u); mm && mm->getOperand(0) == v)
      return true;
    if (!seen.insert(u).second || seen.size() > 256 || u->getNumResults() != 1)
      continue;
    bool keepdims =
        isAxisReduction(u) && u->getAttrOfType<BoolAttr>("keepdims").getValue();
    if ((isElementwise(u) || keepdims) && leadsToMatmul(u->getResult(0), seen))
      return true;
  }
  return false;
}

/// Whether every way down from `v` (over rows `rows`) passes row-wise ops
/// only and ends at a reshape back to rows `from`: a flat view's rows
/// reshaped back, the sandwich a merge sinks through to cancel. `gains` is
/// set where a reshape back leads to a matmul's left operand (P of P V).
bool reachesSplit(Value v, ArrayRef<int64_t> rows, ArrayRef<int64_t> from,
                  llvm::SmallPtrSetImpl<Operation *> &seen, bool &gains) {
  if (v.use_empty())
    return false;
  for (Operation *user : v.getUsers()) {
    if (!seen.insert(user).second)
      continue;
    if (seen.size() > 256)
      return false;
    if (auto r = dyn_cast<ReshapeOp>(user)) {
      if (r.getType().getShape().drop_back() != from ||
          r.getType().getShape().back() != rankedOf(v).getShape().back())
        return false;
      llvm::SmallPtrSet<Operation *, 32> down;
      gains = gains || leadsToMatmul(r.getResult(), down);
      continue;
    }
    if (!rowMovable(user, rows) ||
        !reachesSplit(user->getResult(0), rows, from, seen, gains))
      return false;
  }
  return true;
}

/// f(rowmerge(x), ...) -> rowmerge(f(x, ...)) where every way down from f
/// reaches a reshape back: a softmax over a flat [B*H*L, S] view of
/// attention's scores, reshaped back for P V, runs over [B, H, L, S], and
/// the reshapes meet and fold (the attention match then reads one chain).
/// A flat view whose rows go on elsewhere (a loss's targets [B*L]) stays,
/// and so does one reshaped back for anything but a matmul (a norm over
/// flat rows: on the host its rows split over threads by the largest axis
/// of the kernel's grid, which flat rows keep large).
struct SinkRowMerges : RewritePattern {
  SinkRowMerges(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (isa<ReshapeOp>(op) || op->getNumResults() != 1)
      return failure();
    RankedTensorType type = rankedOf(op->getResult(0));
    if (!type || type.getRank() < 1)
      return failure();
    ArrayRef<int64_t> rows = type.getShape().drop_back();
    if (!rowMovable(op, rows))
      return failure();
    std::optional<BatchReshape> merge;
    for (Value v : op->getOperands()) {
      // Merges only (fewer axes): the splits of other operands this
      // creates must not move back.
      std::optional<BatchReshape> r = rowReshape(v.getDefiningOp<ReshapeOp>());
      if (r && r->merges() && r->to == rows) {
        merge = r;
        break;
      }
    }
    llvm::SmallPtrSet<Operation *, 32> seen;
    bool gains = false;
    if (!merge ||
        !reachesSplit(op->getResult(0), rows, merge->from, seen, gains) ||
        !gains)
      return failure();
    int64_t oldRank = type.getRank();
    int64_t newRank = static_cast<int64_t>(merge->from.size()) + 1;
    SmallVector<NamedAttribute> attrs(op->getAttrs());
    for (NamedAttribute &a : attrs)
      if (a.getName() == "axes" && isAxisReduction(op))
        a.setValue(rewriter.getDenseI64ArrayAttr({newRank - 1}));
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      RankedTensorType t = rankedOf(v);
      if (t.getRank() == oldRank && t.getShape().drop_back() == rows) {
        SmallVector<int64_t> shape(merge->from);
        shape.push_back(t.getShape().back());
        v = reshapeTo(rewriter, op->getLoc(), v, shape);
      }
      operands.push_back(v);
    }
    SmallVector<int64_t> shape(merge->from);
    shape.push_back(type.getShape().back());
    OperationState state(op->getLoc(), op->getName());
    state.addOperands(operands);
    state.addAttributes(attrs);
    state.addTypes(type.clone(shape));
    Value rebuilt = rewriter.create(state)->getResult(0);
    rewriter.replaceOp(
        op, reshapeTo(rewriter, op->getLoc(), rebuilt, type.getShape()));
    return success();
  }
};

/// The finest axes both `in` and `out` are products of (size-1 axes left
/// out), and for each axis of `out` the fine axes it is made of; nullopt
/// where no such axes exist ([6] as [4, ...]).
std::optional<
    std::pair<SmallVector<int64_t>, SmallVector<SmallVector<int64_t>>>>
fineAxes(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  auto empty = [](int64_t d) { return d < 1; };
  if (llvm::any_of(in, empty) || llvm::any_of(out, empty))
    return std::nullopt;
  SmallVector<int64_t> fine;
  SmallVector<SmallVector<int64_t>> groups(out.size());
  size_t i = 0, j = 0;
  int64_t a = 1, b = 1; // what is left of in[i - 1], out[j - 1]
  while (true) {
    while (a == 1 && i < in.size())
      a = in[i++];
    while (b == 1 && j < out.size())
      b = out[j++];
    if (a == 1 || b == 1)
      break;
    int64_t f = std::min(a, b);
    if (a % f || b % f)
      return std::nullopt;
    groups[j - 1].push_back(static_cast<int64_t>(fine.size()));
    fine.push_back(f);
    a /= f;
    b /= f;
  }
  if (a != 1 || b != 1)
    return std::nullopt;
  return std::make_pair(fine, groups);
}

/// transpose(reshape(x)) where the reshape merges axes that the transpose
/// moves -> reshape(transpose(reshape(x))): x viewed over the finest axes
/// both shapes are made of, transposed there, and merged after (the same
/// one transpose; the reshapes are views). nn.MultiheadAttention views its
/// projection [L, B, H·D] as [L, B·H, D] and transposes it to [B·H, L, D],
/// whose B·H axis no single stride reads; over [B, H, L, D] the merge is a
/// batch merge, which SinkMerges moves down, attention reads Q, K and V as
/// views of the projection, and its result [B, H, L, D] goes back to
/// [L, B, H, D] by one transpose of layout.
struct TransposeFineAxes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp t,
                                PatternRewriter &rewriter) const override {
    auto r = t.getInput().getDefiningOp<ReshapeOp>();
    RankedTensorType type = t.getType();
    if (!r || !rankedOf(r.getInput()) ||
        !rankedOf(r.getInput()).hasStaticShape() || !type.hasStaticShape() ||
        type.getRank() < 3)
      return failure();
    auto fa =
        fineAxes(rankedOf(r.getInput()).getShape(), r.getType().getShape());
    if (!fa)
      return failure();
    auto &[fine, groups] = *fa;
    ArrayRef<int64_t> perm = t.getPerm();
    int64_t rank = type.getRank();
    // Only a merged axis that moves (K repeated over grouped heads, merged
    // and transposed over its last two axes, stays the form the attention
    // match reads).
    bool movesMerge = false;
    for (int64_t i = 0; i < rank; ++i)
      movesMerge |= perm[i] != i && groups[perm[i]].size() > 1;
    if (!movesMerge)
      return failure();
    SmallVector<int64_t> finePerm, moved;
    for (int64_t a : perm)
      for (int64_t f : groups[a]) {
        finePerm.push_back(f);
        moved.push_back(fine[f]);
      }
    Location loc = t.getLoc();
    Value v = reshapeTo(rewriter, loc, r.getInput(), fine);
    v = TransposeOp::create(rewriter, loc, type.clone(moved), v, finePerm);
    rewriter.replaceOp(t, reshapeTo(rewriter, loc, v, type.getShape()));
    return success();
  }
};

/// reshape(reshape(x)) -> reshape(x), or x where the shapes match.
struct FoldReshapes : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    Value in = op.getInput();
    if (auto inner = in.getDefiningOp<ReshapeOp>())
      in = inner.getInput();
    if (in.getType() == op.getType()) {
      rewriter.replaceOp(op, in);
      return success();
    }
    if (in == op.getInput())
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), in);
    return success();
  }
};

struct TccBatchReshapes
    : mlir::tcc::impl::TccBatchReshapesBase<TccBatchReshapes> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<SinkMerges, HoistSplits, SinkRowMerges, TransposeFineAxes>(
        ctx);
    addReshapeFolds(patterns);
    // Merges only move down and splits only up, each step past one op, so
    // the rewriting ends; where it would take more sweeps than the limit,
    // what it reached is as correct.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);
  }
};

} // namespace

void mlir::tcc::addReshapeFolds(RewritePatternSet &patterns) {
  patterns.add<FoldReshapes>(patterns.getContext());
}
