//===- GpuAttentionChains.cpp - keep the chains the attention kernel takes ===//
//
// On GPU targets a chain that reaches into matmuls (attention's Q·Kᵀ and
// P·V) is worth one kernel only if the fused attention template computes
// it; anything else would run its matmuls as plain loops. Such a chain is
// dissolved: its ops go back into the function, where tcc-form-chains can
// form the chain again without the matmuls, which then get the GEMM
// template. A chain the template takes is marked `tcc.attention`, so that
// tcc-form-groups gives it a kernel of its own: the template reads Q, K and
// V from memory, wherever they come from (model inputs, or the projections
// of a transformer layer), and computes nothing else. The transposes that
// bring Q, K and V from a projection's [B, L, H, D] to [B, H, L, D] (and the
// result back) move into the chain: the template reads and writes the
// untransposed tensors with strides, as long as the head dim stays
// innermost (16-byte rows). A
// dissolved chain gets a remark, "attention not fused: <why>", which
// `tcc compile --explain` prints.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionMatch.h"
#include "passes/Passes.h"
#include "passes/ScalarForm.h"

#include "ir/ShapeInference.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <functional>
#include <optional>
#include <string>

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUATTENTIONCHAINS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// Moves the reshapes and broadcasts that repeat K and V over query heads
/// (GQA) into the chain, so that its kernel reads K and V as they are.
void takeRepeats(mlir::tcc::ChainOp chain, ArrayRef<Operation *> ops) {
  Block &body = chain.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  IRMapping copies;
  for (Operation *op : ops) {
    // K and V may share their repeat (the same ops listed twice).
    if (op->getBlock() == &body || copies.contains(op->getResult(0)))
      continue;
    Operation *copy = b.clone(*op, copies);
    op->getResult(0).replaceUsesWithIf(copy->getResult(0), [&](OpOperand &use) {
      return chain->isProperAncestor(use.getOwner());
    });
  }
  for (Operation *op : llvm::reverse(ops))
    if (op->getBlock() != &body && op->use_empty())
      op->erase();
}

/// Clones into the chain the positional values (masks of iotas and
/// constants) it reads from outside: CSE shares one causal mask between the
/// layers of a model, and the attention match wants its positions inside.
void pullPositions(mlir::tcc::ChainOp chain) {
  Block &body = chain.getBody().front();
  Block *outer = chain->getBlock();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  IRMapping copies;
  std::function<Value(Value)> copy = [&](Value v) -> Value {
    if (Value c = copies.lookupOrNull(v))
      return c;
    Operation *op = v.getDefiningOp();
    for (Value o : op->getOperands())
      copy(o);
    b.clone(*op, copies);
    return copies.lookup(v);
  };
  body.walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      Operation *def = v.getDefiningOp();
      if (def && def->getBlock() == outer && mlir::tcc::isPositional(v, outer))
        use.set(copy(v));
    }
  });
}

/// NumPy broadcasting of two shapes (ir/ShapeInference.h); empty when
/// they do not broadcast.
::tcc::Shape broadcast(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  ::tcc::ShapeOrError r = ::tcc::broadcastShapes(
      ::tcc::Shape(a.begin(), a.end()), ::tcc::Shape(b.begin(), b.end()));
  return r.ok() ? r.shape : ::tcc::Shape();
}

/// Masks added to the scores, s + select(c, 0, -inf) (or select(c, -inf,
/// 0)), as exporters write a boolean attention mask (PyTorch's SDPA turns
/// `attn_mask` into such a float tensor), become select(c, s, -inf): the
/// same scores (s + 0 = s, s + -inf = -inf for finite s), in the form the
/// attention match reads as a mask, so that the templates skip the tiles
/// it removes (a mask of positions or a key mask) rather than add a tensor
/// to every score. Returns whether it rewrote any.
bool foldAdditiveMasks(mlir::tcc::ChainOp chain) {
  Block &body = chain.getBody().front();
  SmallVector<mlir::tcc::AddOp> adds;
  for (Operation &op : body)
    if (auto add = dyn_cast<mlir::tcc::AddOp>(op))
      adds.push_back(add);
  bool folded = false;
  for (mlir::tcc::AddOp add : adds) {
    for (int side = 0; side < 2; ++side) {
      Value s = add->getOperand(side), m = add->getOperand(1 - side);
      // The mask may be made outside the chain (layers share it): the
      // select is rebuilt here from its condition, and left to its users.
      auto select = m.getDefiningOp<mlir::tcc::SelectOp>();
      if (!select)
        continue;
      std::optional<double> t = mlir::tcc::uniformValue(select.getA());
      std::optional<double> f = mlir::tcc::uniformValue(select.getB());
      bool keepIfTrue = t && *t == 0 && f && std::isinf(*f) && *f < 0;
      bool keepIfFalse = f && *f == 0 && t && std::isinf(*t) && *t < 0;
      Value cond = select.getCond();
      Value ninf = keepIfTrue ? select.getB() : select.getA();
      auto shapeOf = [](Value v) {
        return cast<RankedTensorType>(v.getType()).getShape();
      };
      // select(c, s, -inf) must have the add's shape: the 0 dropped may
      // have been what widened it.
      if ((!keepIfTrue && !keepIfFalse) ||
          ArrayRef<int64_t>(
              broadcast(broadcast(shapeOf(cond), shapeOf(s)), shapeOf(ninf))) !=
              add.getType().getShape())
        continue;
      OpBuilder b(add);
      if (keepIfFalse)
        cond = mlir::tcc::NotOp::create(b, add.getLoc(), cond.getType(), cond);
      auto masked = mlir::tcc::SelectOp::create(b, add.getLoc(), add.getType(),
                                                cond, s, ninf);
      add.replaceAllUsesWith(masked.getResult());
      add->erase();
      if (select->getBlock() == &body && select->use_empty())
        select->erase();
      folded = true;
      break;
    }
  }
  return folded;
}

/// Masks written as the keys to drop, select(drop, -inf, s) (masked_fill's
/// export, where(mask, -inf, s)), become select(not(drop), s, -inf): the
/// same scores, in the form the match reads as a mask, so that a causal
/// mask written so becomes linear constraints (tiles skipped) rather than
/// score code. Masked values: -1e20 or below, -inf, or f16's lowest.
/// Returns whether it rewrote any.
bool keepFormMasks(mlir::tcc::ChainOp chain) {
  bool rewrote = false;
  for (Operation &op : llvm::make_early_inc_range(chain.getBody().front())) {
    auto select = dyn_cast<mlir::tcc::SelectOp>(op);
    if (!select || select.getType() != select.getB().getType())
      continue;
    std::optional<double> a = mlir::tcc::constantValue(select.getA());
    std::optional<double> b = mlir::tcc::constantValue(select.getB());
    bool f16 = getElementTypeOrSelf(select.getA().getType()).isF16();
    if (!a || b || !(*a <= -1e20 || (f16 && *a <= -65504.0)))
      continue;
    OpBuilder builder(select);
    Value cond = select.getCond();
    // where(not(keep), -inf, s), masked_fill's export of a keep mask,
    // keeps `keep` itself.
    auto negation = cond.getDefiningOp<mlir::tcc::NotOp>();
    Value keep = negation ? negation->getOperand(0)
                          : mlir::tcc::NotOp::create(builder, select.getLoc(),
                                                     cond.getType(), cond);
    auto masked =
        mlir::tcc::SelectOp::create(builder, select.getLoc(), select.getType(),
                                    keep, select.getB(), select.getA());
    select.replaceAllUsesWith(masked.getResult());
    select->erase();
    rewrote = true;
  }
  return rewrote;
}

/// A mask whose condition and-s positions with tensors, select(p & c, s,
/// v) (a causal mask and a padding mask made one, as Hugging Face builds
/// its 4-D mask), becomes select(p, select(c, s, v), v): the same scores,
/// in the forms the match reads apart, p as linear constraints (tiles
/// skipped at compile time) and c as a key mask (tiles skipped at run
/// time) rather than the whole as score code. Returns whether it split
/// any; the positions are pulled in afterwards.
bool splitMixedMasks(mlir::tcc::ChainOp chain) {
  Block &body = chain.getBody().front();
  Block *outer = chain->getBlock();
  auto isPositions = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && (def->getBlock() == &body || def->getBlock() == outer) &&
           mlir::tcc::isPositional(v, def->getBlock());
  };
  bool split = false;
  for (Operation &op : llvm::make_early_inc_range(body)) {
    auto select = dyn_cast<mlir::tcc::SelectOp>(op);
    Value s = select ? select.getA() : Value();
    if (!select || select.getType() != s.getType() ||
        !mlir::tcc::uniformValue(select.getB()) ||
        !select.getCond().getDefiningOp<mlir::tcc::AndOp>())
      continue;
    SmallVector<Value> positions, tensors;
    std::function<void(Value)> leaves = [&](Value v) {
      if (auto a = v.getDefiningOp<mlir::tcc::AndOp>();
          a && !isPositions(v)) {
        leaves(a.getLhs());
        leaves(a.getRhs());
        return;
      }
      (isPositions(v) ? positions : tensors).push_back(v);
    };
    leaves(select.getCond());
    if (positions.empty() || tensors.empty())
      continue;
    OpBuilder b(select);
    Location loc = select.getLoc();
    auto conjunction = [&](ArrayRef<Value> vs) {
      Value r = vs.front();
      for (Value v : vs.drop_front()) {
        auto t = cast<RankedTensorType>(r.getType());
        auto shape = broadcast(t.getShape(),
                               cast<RankedTensorType>(v.getType()).getShape());
        r = mlir::tcc::AndOp::create(b, loc, t.clone(shape), r, v);
      }
      return r;
    };
    Value inner = mlir::tcc::SelectOp::create(
        b, loc, s.getType(), conjunction(tensors), s, select.getB());
    Value masked = mlir::tcc::SelectOp::create(
        b, loc, s.getType(), conjunction(positions), inner, select.getB());
    Value cond = select.getCond();
    select.replaceAllUsesWith(masked);
    select->erase();
    // The old conjunction, where only the select read it in the chain.
    std::function<void(Value)> erase = [&](Value v) {
      auto a = v.getDefiningOp<mlir::tcc::AndOp>();
      if (!a || a->getBlock() != &body || !a->use_empty())
        return;
      Value l = a.getLhs(), r = a.getRhs();
      a->erase();
      erase(l);
      erase(r);
    };
    erase(cond);
    split = true;
  }
  return split;
}

struct TccGpuAttentionChains
    : mlir::tcc::impl::TccGpuAttentionChainsBase<TccGpuAttentionChains> {
  void runOnOperation() override {
    SmallVector<mlir::tcc::ChainOp> chains;
    getOperation().walk([&](mlir::tcc::ChainOp c) { chains.push_back(c); });
    for (mlir::tcc::ChainOp chain : chains) {
      Block &body = chain.getBody().front();
      bool explained =
          bool(chain->removeAttr(mlir::tcc::kAttentionExplainedAttrName));
      if (llvm::none_of(body, [](Operation &op) {
            return isa<mlir::tcc::MatmulOp>(op);
          }))
        continue;
      pullPositions(chain);
      if (foldAdditiveMasks(chain))
        pullPositions(chain); // the -inf of a mask made outside the chain
      keepFormMasks(chain);
      if (splitMixedMasks(chain))
        pullPositions(chain); // the positions of a condition made outside
      std::string why;
      std::optional<mlir::tcc::AttentionMatch> m =
          mlir::tcc::matchAttention(chain, why);
      if (m && mlir::tcc::foldKTranspose(*m))
        m = mlir::tcc::matchAttention(chain, why);
      // K given transposed, [.., D, Lk], with a key count whose rows are
      // not 16-byte aligned: the tensor-core templates refuse it (their
      // copies are 16-byte chunks of keys) and the SIMT template reads it
      // element by element (chooseAttentionPlan).
      // The head sizes the mma.sync template takes (multiples of 8 up to
      // 256, computed padded to 16; wgmma takes Q and K of 64 to 256 in
      // steps of 64 over V of 64 or 128), and the SIMT template's (any up
      // to 256, every dtype, computed padded to 4): any other would leave a
      // chain with matmuls to the generic loops.
      // V's head size (MLA's 128 under scores of 192) is held to the same.
      auto heads = [&](auto fits) {
        return m && fits(m->headDim) && fits(m->valueDim);
      };
      bool mmaHead = m && !m->elemType.isF32() && heads([](int64_t d) {
                       return d >= 8 && d <= 256 && d % 8 == 0;
                     });
      bool simtHead = heads([](int64_t d) { return d >= 1 && d <= 256; });
      if (mmaHead || simtHead) {
        takeRepeats(chain, m->kvOps);
        mlir::tcc::pullLayouts(chain, *m);
        chain->setAttr(mlir::tcc::kAttentionAttrName,
                       UnitAttr::get(chain.getContext()));
        continue;
      }
      auto yield = cast<mlir::tcc::YieldOp>(body.getTerminator());
      if (m)
        why = "head size " + std::to_string(m->headDim) +
              (m->valueDim != m->headDim
                   ? " (values " + std::to_string(m->valueDim) + ")"
                   : std::string()) +
              " has no attention template";
      // Why, for `tcc compile --explain`: at the node of the chain's result
      // (tcc-form-chains has said it of a chain it formed without P·V).
      Operation *result = yield.getOperand(0).getDefiningOp();
      if (!explained)
        mlir::emitRemark(result ? result->getLoc() : chain.getLoc())
            << "attention not fused: " << why;
      chain.replaceAllUsesWith(yield.getOperands());
      for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
        op.moveBefore(chain);
      chain.erase();
    }
  }
};

} // namespace
