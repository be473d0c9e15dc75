//===- AttentionTemplate.h - attention templates' interface -*- C++ -*-===//
//
// Every attention template (mma.sync prefill, its split-K decode pair,
// wgmma, the f32 SIMT template with its own split-K form) sits behind one
// interface over one problem description (AttentionProblem): which problems
// it takes, its heuristic plan, whether a plan builds, the fields a user
// schedule sets, and its kernels. tcc-gpu-attention-plan chooses and checks
// plans through it (AttentionPlan.h), GpuCodegen builds them through it, so
// neither names a template's functions.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_ATTENTIONTEMPLATE_H
#define TCC_COMPILER_GPU_ATTENTIONTEMPLATE_H

#include "compiler/Target.h"
#include "compiler/gpu/AttentionKernel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <nlohmann/json.hpp>

#include <string>

namespace tcc::gpu {

/// The kernels a template built for one attention: one kernel reading Q, K,
/// V and the captured tensors and writing O (`combine` empty); or a partial
/// kernel writing scratch (partial O and its (m, l) statistics, of those
/// byte counts) and a combine reading it and writing O.
struct AttentionKernels {
  std::string kernel, combine;
  KernelLaunch launch, combineLaunch;
  uint64_t partialOBytes = 0, statsBytes = 0;
};

class AttentionTemplate {
public:
  virtual ~AttentionTemplate() = default;
  /// Its name in a user schedule's "template": mma, mma_decode, wgmma, simt.
  virtual llvm::StringRef name() const = 0;
  /// Whether `plan` is one of its plans (its typed attribute).
  virtual bool owns(mlir::Attribute plan) const = 0;
  /// Whether it takes `p` on `target` with some schedule; else `why`.
  virtual bool supports(const AttentionProblem &p,
                        const ::tcc::TargetDesc &target,
                        std::string &why) const = 0;
  /// Its heuristic plan for `p` on `target`.
  virtual mlir::Attribute choose(mlir::MLIRContext *ctx,
                                 const AttentionProblem &p,
                                 const ::tcc::TargetDesc &target) const = 0;
  /// Whether its plan `plan` builds `p` on `target`; else `why`.
  virtual bool validate(const AttentionProblem &p, mlir::Attribute plan,
                        const ::tcc::TargetDesc &target,
                        std::string &why) const = 0;
  /// `plan` (one of its plans) with the fields a user schedule gives in
  /// `fields` (a JSON object; "template" is skipped), or null with `why`.
  virtual mlir::Attribute withFields(mlir::MLIRContext *ctx,
                                     mlir::Attribute plan,
                                     const nlohmann::json &fields,
                                     std::string &why) const = 0;
  /// Appends its kernels for `p` as `plan` says to `module`, named after
  /// `name`; failure (with a diagnostic at the module) with `why`.
  virtual mlir::FailureOr<AttentionKernels>
  build(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module, llvm::StringRef name,
        const AttentionProblem &p, mlir::Attribute plan,
        const ::tcc::TargetDesc &target, std::string &why) const = 0;
};

/// The templates by name (mma, mma_decode, wgmma, simt); null for another.
const AttentionTemplate *attentionTemplateNamed(llvm::StringRef name);

/// The template whose plan `plan` is; null when none's.
const AttentionTemplate *attentionTemplateOf(mlir::Attribute plan);

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_ATTENTIONTEMPLATE_H
