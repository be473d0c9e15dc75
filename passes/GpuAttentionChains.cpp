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
// and transposes of a transformer layer), and computes nothing else.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionMatch.h"
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"

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
    if (op->getBlock() == &body)
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

struct TccGpuAttentionChains
    : mlir::tcc::impl::TccGpuAttentionChainsBase<TccGpuAttentionChains> {
  void runOnOperation() override {
    SmallVector<mlir::tcc::ChainOp> chains;
    getOperation().walk([&](mlir::tcc::ChainOp c) { chains.push_back(c); });
    for (mlir::tcc::ChainOp chain : chains) {
      Block &body = chain.getBody().front();
      if (llvm::none_of(body, [](Operation &op) {
            return isa<mlir::tcc::MatmulOp>(op);
          }))
        continue;
      std::string why;
      std::optional<mlir::tcc::AttentionMatch> m =
          mlir::tcc::matchAttention(chain, why);
      // The head sizes the template's swizzled tiles take.
      if (m && llvm::is_contained({64, 128, 192, 256}, m->headDim)) {
        takeRepeats(chain, m->kvOps);
        chain->setAttr(mlir::tcc::kAttentionAttrName,
                       UnitAttr::get(chain.getContext()));
        continue;
      }
      auto yield = cast<mlir::tcc::YieldOp>(body.getTerminator());
      chain.replaceAllUsesWith(yield.getOperands());
      for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
        op.moveBefore(chain);
      chain.erase();
    }
  }
};

} // namespace
