//===- GpuAttentionPlan.cpp - the template and schedule of attention ------===//
//
// Sets `tcc.attention_plan` on each chain marked `tcc.attention`, or checks
// the one it has (compiler/gpu/Passes.td).
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/AttentionPlan.h"
#include "compiler/gpu/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ScopeExit.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUATTENTIONPLAN
#include "compiler/gpu/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

struct TccGpuAttentionPlan
    : mlir::tcc::impl::TccGpuAttentionPlanBase<TccGpuAttentionPlan> {
  using Base::Base;

  void runOnOperation() override {
    std::string error;
    std::optional<::tcc::TargetDesc> desc = ::tcc::parseTarget(target, error);
    if (!desc) {
      getOperation().emitError() << error;
      return signalPassFailure();
    }
    // The templates are NVIDIA's (mma.sync and up) and the SIMT one on AMD;
    // any other target would take a plan only to fail later, or get a plan
    // nothing builds.
    if (!desc->hasAttentionTemplates()) {
      getOperation().emitError()
          << "target '" << desc->name
          << "' has no attention templates (NVIDIA, sm_80 and later; AMD "
             "gfx90a, gfx942)";
      return signalPassFailure();
    }
    // The problem is built from the tcc.attention op the chain becomes (as
    // tcc-form-attention forms it next), formed beside the chain for the
    // while: a chain no template takes must stay a chain (generic loops).
    SmallVector<mlir::tcc::ChainOp> chains;
    getOperation().walk([&](mlir::tcc::ChainOp c) { chains.push_back(c); });
    auto plan1 = [&](mlir::tcc::ChainOp chain) -> WalkResult {
      // A plan here was given by hand (this pass alone sets them): one that
      // cannot be built is an error, never dropped or kept silently.
      Attribute plan = chain->getAttr(::tcc::gpu::kAttentionPlanAttrName);
      if (!chain->hasAttr(mlir::tcc::kAttentionAttrName)) {
        if (!plan)
          return WalkResult::advance();
        chain.emitError() << "attention plan " << plan
                          << " on a chain not marked tcc.attention";
        return WalkResult::interrupt();
      }
      std::string why;
      std::optional<mlir::tcc::AttentionMatch> m =
          mlir::tcc::matchAttention(chain, why);
      if (!m && plan) {
        chain.emitError() << "attention plan " << plan
                          << " cannot be built: " << why;
        return WalkResult::interrupt();
      }
      if (m) {
        OpBuilder b(chain);
        mlir::tcc::AttentionOp op = m->buildOp(b);
        llvm::scope_exit erase([&] { op.erase(); });
        ::tcc::gpu::AttentionProblem p =
            ::tcc::gpu::attentionProblemOf(op, *desc);
        if (plan) {
          // A plan given by hand is the user's: refusing it silently would
          // time or run something else than asked.
          if (!::tcc::gpu::attentionPlanValid(p, plan, *desc, why)) {
            chain.emitError()
                << "attention plan " << plan << " cannot be built: " << why;
            return WalkResult::interrupt();
          }
          return WalkResult::advance();
        }
        plan =
            ::tcc::gpu::chooseAttentionPlan(chain.getContext(), p, *desc, why);
        if (!schedule.empty()) {
          // The user's schedule: what it asks for, or an error (never a
          // silent fallback to the heuristic's choice).
          plan = ::tcc::gpu::applyAttentionSchedule(chain.getContext(), p,
                                                    *desc, plan, schedule, why);
          if (!plan) {
            chain.emitError() << why;
            return WalkResult::interrupt();
          }
        }
      }
      if (plan) {
        chain->setAttr(::tcc::gpu::kAttentionPlanAttrName, plan);
        return WalkResult::advance();
      }
      // Generic loops, one kernel (the chain keeps its group); why, for
      // `tcc compile --explain`, at the node of the chain's result.
      chain->removeAttr(::tcc::gpu::kAttentionPlanAttrName);
      emitRemark(mlir::tcc::attentionResultLoc(chain))
          << "attention not fused: " << why;
      return WalkResult::advance();
    };
    for (mlir::tcc::ChainOp chain : chains)
      if (plan1(chain).wasInterrupted())
        return signalPassFailure();
  }
};

} // namespace
