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

#include <string>

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCFORMATTENTION
#include "passes/Passes.h.inc"

namespace {

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
      chain.getResult(0).replaceAllUsesWith(op.getResult());
      chain.erase();
    }
  }
};

} // namespace
} // namespace mlir::tcc
