//===- LowerToLinalg.cpp - tcc ops -> linalg/tensor/arith/math/scf --------===//
//
// Target-independent lowering of every tcc op on tensors. The patterns live
// in lowering/, one file per op family; docs/numerics.md states the numeric
// rules they implement. Each op is rewritten exactly once (a walk, no
// fixpoint), so patterns never see their own output; any tcc op left over
// has no lowering and fails the pass.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/lowering/Patterns.h"

#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCLOWERTOLINALG
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;
using namespace mlir::tcc;

void mlir::tcc::populateTccToLinalgPatterns(RewritePatternSet &patterns) {
  populateElementwiseLoweringPatterns(patterns);
  populateReductionLoweringPatterns(patterns);
  populateTopKLoweringPatterns(patterns);
  populateContractionLoweringPatterns(patterns);
  populateShapeLoweringPatterns(patterns);
  populateGatherLoweringPatterns(patterns);
  populateConvPoolLoweringPatterns(patterns);
}

namespace {

/// Moves the body of `chain` before it and replaces its results with the
/// values its body yields.
void inlineChain(ChainOp chain) {
  Block &body = chain.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
    op.moveBefore(chain);
  chain.replaceAllUsesWith(yield.getValues());
  chain.erase();
}

struct TccLowerToLinalgPass
    : mlir::tcc::impl::TccLowerToLinalgBase<TccLowerToLinalgPass> {
  void runOnOperation() override {
    // A chain's body is plain ops: code generators see them one by one.
    SmallVector<ChainOp> chains;
    getOperation().walk([&](ChainOp chain) { chains.push_back(chain); });
    for (ChainOp chain : chains)
      inlineChain(chain);

    RewritePatternSet patterns(&getContext());
    populateTccToLinalgPatterns(patterns);
    walkAndApplyPatterns(getOperation(), std::move(patterns));

    // One error per outermost leftover (a tcc.group's body is not repeated).
    bool leftOver = false;
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (!isa_and_nonnull<TccDialect>(op->getDialect()))
        return WalkResult::advance();
      op->emitError() << "tcc-lower-to-linalg: no lowering for '"
                      << op->getName() << "'";
      leftOver = true;
      return WalkResult::skip();
    });
    if (leftOver)
      signalPassFailure();
  }
};

} // namespace
