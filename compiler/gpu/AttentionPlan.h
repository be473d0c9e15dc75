//===- AttentionPlan.h - which attention template, which schedule -*- C++
//-*-===//
//
// A chain that tcc-gpu-attention-chains kept as attention (`tcc.attention`)
// gets its kernel plan from tcc-gpu-attention-plan: one of the typed
// attributes of ir/TccAttrs.td, naming the template (mma.sync prefill or
// its split-K decode pair, wgmma, the f32 SIMT template) and carrying its
// schedule. GpuCodegen builds what the plan says. Both build the problem
// from the tcc.attention op formed from the chain (AttentionMatch::buildOp,
// attentionProblemOf), so that a plan checked here is the plan built there.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_ATTENTIONPLAN_H
#define TCC_COMPILER_GPU_ATTENTIONPLAN_H

#include "compiler/Target.h"
#include "compiler/gpu/AttentionKernel.h"
#include "compiler/gpu/SimtAttention.h"
#include "compiler/gpu/WgmmaAttention.h"
#include "ir/TccAttrs.h"
#include "passes/AttentionMatch.h"

#include <string>

namespace tcc::gpu {

/// The chain attribute holding the plan.
constexpr llvm::StringLiteral kAttentionPlanAttrName =
    mlir::tcc::kAttentionPlanAttrName;

/// The attention problem of a tcc.attention op: sizes, layouts (strides),
/// the mask, and the hooks that build its regions per score (score change,
/// key mask). `captured` holds memref types of the op's captured tensors,
/// in its order. `target` decides how a key mask beside a scale is handed
/// over: per key to the tensor-core templates, as score code to the SIMT
/// one. The hooks refer to `op`, which must outlive the problem's use.
AttentionProblem attentionProblemOf(mlir::tcc::AttentionOp op,
                                    const ::tcc::TargetDesc &target);

/// The template and schedule for `p` on `target`, or null with the reason
/// in `why`: f32 takes the SIMT template (on AMD targets every dtype does,
/// its split-K pair for decode shapes; the mma.sync template's 3xTF32 form
/// is a plan's choice); bf16 and f16 the split-K decode pair for few query
/// rows against many keys, else wgmma where the target has it and the
/// template takes the problem, else mma.sync.
mlir::Attribute chooseAttentionPlan(mlir::MLIRContext *ctx,
                                    const AttentionProblem &p,
                                    const ::tcc::TargetDesc &target,
                                    std::string &why);

/// Whether `plan` (an attribute chooseAttentionPlan may return) builds `p`
/// on `target`; when not, `why` says why.
bool attentionPlanValid(const AttentionProblem &p, mlir::Attribute plan,
                        const ::tcc::TargetDesc &target, std::string &why);

/// `plan` (chosen for `p`, or null where no template took it) changed by a
/// user schedule, the JSON object `schedule` of --schedule's "attention"
/// entry: "template" ("mma", "mma_decode", "wgmma", "simt"; default: the
/// plan's) and any of that template's fields (block_q, block_kv, warps,
/// stages, chunk_tiles, warpgroups, overlap, producer, pingpong, tile_rows,
/// tile_keys, split_kv, min_blocks), the others the heuristic's. Null with
/// the reason in `why` when the schedule is malformed or the templates
/// cannot build the result.
mlir::Attribute
applyAttentionSchedule(mlir::MLIRContext *ctx, const AttentionProblem &p,
                       const ::tcc::TargetDesc &target, mlir::Attribute plan,
                       llvm::StringRef schedule, std::string &why);

/// The schedules the plan attributes carry, and back.
AttentionSchedule scheduleOf(mlir::tcc::MmaAttentionAttr a);
DecodeSchedule scheduleOf(mlir::tcc::MmaDecodeAttr a);
WgmmaAttentionSchedule scheduleOf(mlir::tcc::WgmmaAttentionAttr a);
SimtAttentionSchedule scheduleOf(mlir::tcc::SimtAttentionAttr a);
mlir::Attribute planOf(mlir::MLIRContext *ctx, const AttentionSchedule &s);
mlir::Attribute planOf(mlir::MLIRContext *ctx, const DecodeSchedule &s);
mlir::Attribute planOf(mlir::MLIRContext *ctx, const WgmmaAttentionSchedule &s);
mlir::Attribute planOf(mlir::MLIRContext *ctx, const SimtAttentionSchedule &s);

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_ATTENTIONPLAN_H
