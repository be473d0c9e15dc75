//===- PrivateInits.cpp - one fill per destination-passing op
//--------------===//
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCPRIVATEINITS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

struct TccPrivateInits : mlir::tcc::impl::TccPrivateInitsBase<TccPrivateInits> {
  void runOnOperation() override {
    getOperation().walk([](DestinationStyleOpInterface op) {
      for (OpOperand &init : op.getDpsInitsMutable()) {
        Operation *def = init.get().getDefiningOp();
        if (!def || def->hasOneUse() ||
            !isa<linalg::FillOp, tensor::EmptyOp>(def))
          continue;
        OpBuilder b(op);
        IRMapping map;
        // A fill gets its own empty tensor too, if that one is shared.
        if (auto fill = dyn_cast<linalg::FillOp>(def))
          if (auto empty =
                  fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
            b.clone(*empty, map);
        Operation *clone = b.clone(*def, map);
        init.set(
            clone->getResult(cast<OpResult>(init.get()).getResultNumber()));
      }
    });
  }
};

} // namespace
