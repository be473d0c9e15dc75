//===- FormAttention.cpp - planned attention chains as tcc.attention ------===//
//
// A chain marked `tcc.attention` with a plan becomes the tcc.attention op
// the templates build from: the match (passes/AttentionMatch.h) says what
// the chain computes, and the op keeps only that (operands, sizes, strides,
// the mask's constraints, the score change as regions), so a new score
// change needs no template code. The compiler's pipeline forms the ops
// right after planning (compiler/Pipeline.cpp), so that every later pass
// and GpuCodegen see attention as the op and nothing matches it again. The
// unfused fallback is decided before: tcc-gpu-attention-plan leaves a
// chain no template takes without a plan (with a remark), and it stays a
// chain here.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionMatch.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SetVector.h"

#include <string>

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCFORMATTENTION
#include "passes/Passes.h.inc"

namespace {

/// A reshape that is the result's one use (heads merged back, [B, L, H, D]
/// to [B, L, H·D], as every transformer does before its output projection)
/// is a view of the result's buffer: the op yields the reshaped tensor,
/// written through its o_strides (the attention result's own layout, which
/// the reshape keeps), instead of a copy kernel after it.
void writeThroughReshape(AttentionOp op) {
  Value result = op.getResult();
  if (!result.hasOneUse())
    return;
  auto reshape = dyn_cast<ReshapeOp>(*result.getUsers().begin());
  if (!reshape)
    return;
  if (op.getOStrides().empty())
    op.setOStrides(
        packedStrides(cast<RankedTensorType>(result.getType()).getShape()));
  result.setType(reshape.getType());
  reshape.replaceAllUsesWith(result);
  reshape->erase();
}

/// A layout transpose that is the result's one use (the heads moved back
/// to [B, L, H, D] after a cast the chain ended before: P·V kept in f32,
/// cast back) is written through o_strides, as the match takes one inside
/// the chain.
void writeThroughTranspose(AttentionOp op) {
  Value result = op.getResult();
  if (!result.hasOneUse() || !op.getOStrides().empty())
    return;
  auto t = dyn_cast<TransposeOp>(*result.getUsers().begin());
  if (!t || !isLayoutTranspose(t))
    return;
  op.setOStrides(stridesThroughTranspose(t));
  result.setType(t.getType());
  t.replaceAllUsesWith(result);
  t->erase();
}

struct TccFormAttention : impl::TccFormAttentionBase<TccFormAttention> {
  void runOnOperation() override {
    SmallVector<ChainOp> chains;
    getOperation().walk([&](ChainOp chain) {
      if (chain->hasAttr(kAttentionAttrName) &&
          chain->hasAttr(kAttentionPlanAttrName))
        chains.push_back(chain);
    });
    for (ChainOp chain : chains) {
      std::string why;
      std::optional<AttentionMatch> m = matchAttention(chain, why);
      // The plan was chosen for this match: a chain that no longer matches
      // was changed in between, and would run something else than planned.
      if (!m) {
        chain.emitError() << "planned attention chain is not attention: "
                          << why;
        return signalPassFailure();
      }
      OpBuilder b(chain);
      AttentionOp op = m->buildOp(b);
      op->setAttr(kAttentionPlanAttrName,
                  chain->getAttr(kAttentionPlanAttrName));
      Value result = op.getResult();
      CastOp widened;
      if (result.getType() != chain.getResult(0).getType())
        widened = CastOp::create(b, chain.getLoc(),
                                 chain.getResult(0).getType(), result);
      chain.getResult(0).replaceAllUsesWith(widened ? widened : result);
      if (widened) {
        // Casts back to the op's type (P·V kept in f32, then cast to f16
        // by the model) read the op's result: no kernel for either.
        for (Operation *user : llvm::make_early_inc_range(widened->getUsers()))
          if (auto back = dyn_cast<CastOp>(user);
              back &&
              back.fold(CastOp::FoldAdaptor(SmallVector<Attribute>(1), back)) ==
                  OpFoldResult(result)) {
            back.replaceAllUsesWith(result);
            back.erase();
          }
        if (widened->use_empty())
          widened.erase();
      }
      chain.erase();
      // Q and K widened to f32 for Q·Kᵀ, which the op reads narrow (the
      // match): the widened copies are dead unless something else reads
      // them.
      for (Value v : {m->q, m->k})
        for (Operation *user : llvm::make_early_inc_range(v.getUsers()))
          if (isa<CastOp>(user) && user->use_empty())
            user->erase();
      writeThroughTranspose(op);
      writeThroughReshape(op);
      // Views of Q, K and V the op reads through (buildOp) are dead now
      // unless something else reads them: no copy kernel of their own.
      // (K and V may be one tensor, or views of one: each op once.)
      llvm::SetVector<Operation *> views;
      for (Value v : {m->q, m->k, m->v})
        for (Operation *def = v.getDefiningOp();
             def && isa<ReshapeOp, SliceOp, TransposeOp>(def);
             def = def->getOperand(0).getDefiningOp())
          views.insert(def);
      // Users before producers: a view's input is inserted after it.
      bool erased = true;
      while (erased) {
        erased = false;
        for (Operation *op : views)
          if (op && op->use_empty()) {
            op->erase();
            views.remove(op);
            erased = true;
            break;
          }
      }
    }
  }
};

} // namespace
} // namespace mlir::tcc
