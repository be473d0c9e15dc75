//===- GpuAttentionPlan.cpp - the template and schedule of attention ------===//
//
// Sets `tcc.attention_plan` on each chain marked `tcc.attention`, or checks
// the one it has (compiler/gpu/Passes.td).
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/AttentionPlan.h"
#include "compiler/gpu/Passes.h"
#include "passes/AttentionMatch.h"

#include "ir/TccDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
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
    // The plan of `chain` (matched as `m`): `given`'s check, or the
    // heuristic's choice under the --schedule entry. Null with `why` when no
    // template takes it; `bad` when a given plan or schedule is refused
    // (`why` says how), which is the user's error.
    auto planFor = [&](mlir::tcc::ChainOp chain,
                       const mlir::tcc::AttentionMatch &m, Attribute given,
                       std::string &why, bool &bad) -> Attribute {
      bad = false;
      OpBuilder b(chain);
      mlir::tcc::AttentionOp op = m.buildOp(b);
      llvm::scope_exit erase([&] { op.erase(); });
      ::tcc::gpu::AttentionProblem p =
          ::tcc::gpu::attentionProblemOf(op, *desc);
      if (given) {
        // A plan given by hand is the user's: refusing it silently would
        // time or run something else than asked.
        bad = !::tcc::gpu::attentionPlanValid(p, given, *desc, why);
        return bad ? Attribute() : given;
      }
      Attribute plan =
          ::tcc::gpu::chooseAttentionPlan(chain.getContext(), p, *desc, why);
      if (!schedule.empty()) {
        // The user's schedule: what it asks for, or an error (never a
        // silent fallback to the heuristic's choice).
        plan = ::tcc::gpu::applyAttentionSchedule(chain.getContext(), p, *desc,
                                                  plan, schedule, why);
        bad = !plan;
      }
      return plan;
    };
    auto plan1 = [&](mlir::tcc::ChainOp chain) -> WalkResult {
      // A plan here was given by hand (this pass alone sets them): one that
      // cannot be built is an error, never dropped or kept silently.
      Attribute given = chain->getAttr(::tcc::gpu::kAttentionPlanAttrName);
      if (!chain->hasAttr(mlir::tcc::kAttentionAttrName)) {
        if (!given)
          return WalkResult::advance();
        chain.emitError() << "attention plan " << given
                          << " on a chain not marked tcc.attention";
        return WalkResult::interrupt();
      }
      std::string why;
      std::optional<mlir::tcc::AttentionMatch> m =
          mlir::tcc::matchAttention(chain, why);
      if (!m && given) {
        chain.emitError() << "attention plan " << given
                          << " cannot be built: " << why;
        return WalkResult::interrupt();
      }
      if (!m) {
        emitRemark(mlir::tcc::attentionResultLoc(chain))
            << "attention not fused: " << why;
        return WalkResult::advance();
      }
      // Q's or K's scaling moved onto the scores (foldPrescales), tried on
      // a copy of the chain and kept where a template takes the copy: the
      // scaled copy of Q or K costs a launch, and in generic loops the
      // unscaled f16 scores could overflow where the model's do not.
      {
        OpBuilder b(chain);
        auto copy = cast<mlir::tcc::ChainOp>(b.clone(*chain.getOperation()));
        SmallVector<Operation *> detached;
        std::string whyCopy;
        bool bad = false;
        std::optional<mlir::tcc::AttentionMatch> mc =
            mlir::tcc::matchAttention(copy, whyCopy);
        Attribute plan;
        SmallVector<Operation *> created;
        if (mc && mlir::tcc::foldPrescales(copy, *mc, &detached, &created) &&
            (mc = mlir::tcc::matchAttention(copy, whyCopy))) {
          // What tcc-gpu-attention-chains did for the chain, now that Q and
          // K are the unscaled tensors: K's transpose into transpose_b, and
          // layout transposes read with strides.
          if (mlir::tcc::foldKTranspose(*mc, &created))
            mc = mlir::tcc::matchAttention(copy, whyCopy);
          if (mc) {
            mlir::tcc::pullLayouts(copy, *mc);
            mc = mlir::tcc::matchAttention(copy, whyCopy);
          }
          if (mc)
            plan = planFor(copy, *mc, given, whyCopy, bad);
        }
        if (plan) {
          copy->setAttr(::tcc::gpu::kAttentionPlanAttrName, plan);
          chain.replaceAllUsesWith(copy);
          SmallVector<Operation *> dead(detached.begin(), detached.end());
          for (Value v : chain->getOperands())
            if (Operation *def = v.getDefiningOp())
              dead.push_back(def);
          chain->walk([&](Operation *op) {
            for (Value v : op->getOperands())
              if (Operation *def = v.getDefiningOp();
                  def && !chain->isAncestor(def))
                dead.push_back(def);
          });
          chain.erase();
          // The scalings and transposes only the old chain read, and what
          // only they read (pure tcc ops outside every chain).
          llvm::SmallPtrSet<Operation *, 8> erased;
          while (!dead.empty()) {
            Operation *op = dead.pop_back_val();
            if (erased.contains(op) || !op->use_empty() || !isPure(op) ||
                !isa<mlir::tcc::TccDialect>(op->getDialect()) ||
                isa<mlir::tcc::ChainOp>(op))
              continue;
            for (Value v : op->getOperands())
              if (Operation *def = v.getDefiningOp())
                dead.push_back(def);
            erased.insert(op);
            op->erase();
          }
          return WalkResult::advance();
        }
        copy.erase();
        for (Operation *op : created)
          if (op->use_empty())
            op->erase();
      }
      bool bad = false;
      Attribute plan = planFor(chain, *m, given, why, bad);
      if (bad) {
        if (given)
          chain.emitError()
              << "attention plan " << given << " cannot be built: " << why;
        else
          chain.emitError() << why;
        return WalkResult::interrupt();
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
