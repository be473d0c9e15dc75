//===- WgmmaAttention.h - attention on Hopper warpgroup MMA -----*- C++ -*-===//
//
// Builds one `gpu.func` computing O = softmax(mod(Q x K^T)) x V, the problem
// of AttentionKernel.h (same hooks, masks, GQA and MaskedRowPolicy), with
// Hopper's warpgroup MMA (wgmma.mma_async, chip "sm_90a" only):
//   - a block of `warpgroups` warpgroups, each owning 64 query rows; the Q
//     tile is copied once (cp.async) into the 128-byte-swizzled K-major
//     layout that wgmma's shared-memory descriptors describe;
//   - K and V tiles of blockKV keys through a multi-stage cp.async pipeline
//     into the same swizzled layout (K read K-major, V as transposed B);
//   - S = Q K^T by wgmma m64n<blockKV>k16 from shared memory, the online
//     softmax on the accumulators in registers, and O += P V by wgmma with
//     P as the register A operand (inline PTX: MLIR 22's
//     nvvm.wgmma.mma_async has no register-A form).
// Lowering needs convert-nvvm-to-llvm and the chip "sm_90a".
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_WGMMAATTENTION_H
#define TCC_COMPILER_GPU_WGMMAATTENTION_H

#include "compiler/gpu/AttentionKernel.h"

#include <string>

namespace tcc::gpu {

/// The tiling: `warpgroups` warpgroups of 64 query rows each (blockQ =
/// 64 * warpgroups) step over the keys by blockKV, with `stages` shared
/// buffers of K and V. `overlap`: each warpgroup runs the softmax of key
/// tile j+1 while its P V wgmmas of tile j are in flight (needs stages >= 3;
/// fully masked tiles inside the loop bounds are then computed, not
/// skipped). `producer`: one more warpgroup only copies Q, K and V and
/// hands each stage to the others through mbarriers, so that the computing
/// warpgroups never wait at a block-wide barrier and drift apart;
/// `pingpong` (2 warpgroups, with a producer) then orders them with named
/// barriers so that one's Q K^T wgmmas run while the other's softmax does.
/// `tma` (with a producer): one producer thread copies K and V with the
/// tensor memory accelerator (cp.async.bulk.tensor, the stage's "full"
/// mbarrier counting its bytes) instead of the warpgroup's cp.async; the
/// kernel then takes two tensor maps after its buffers (KernelLaunch::
/// tensorMaps).
struct WgmmaAttentionSchedule {
  int64_t warpgroups = 2, blockKV = 128, stages = 2;
  bool overlap = false;
  bool producer = false, pingpong = false;
  bool tma = false;
};

/// Picks a schedule for `p` (a simple heuristic; sm_90a).
WgmmaAttentionSchedule chooseWgmmaAttentionSchedule(const AttentionProblem &p);

/// Whether buildWgmmaAttentionKernel handles `p` with `s`; when not, `why`
/// says why in one line.
/// `target` must have wgmma and room for the stages.
bool wgmmaAttentionSupports(const AttentionProblem &p,
                            const WgmmaAttentionSchedule &s,
                            const ::tcc::TargetDesc &target, std::string &why);

/// Appends `gpu.func @name(%q, %k, %v, %o, captured...) kernel` to `module`,
/// with the arguments and launch conventions of buildAttentionKernel (grid:
/// query tiles x query heads x batch; the kernel reads
/// KernelLaunch::sharedBytes of dynamic shared memory). Fails (with a
/// diagnostic at the module) when wgmmaAttentionSupports says no.
mlir::FailureOr<KernelLaunch>
buildWgmmaAttentionKernel(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                          llvm::StringRef name, const AttentionProblem &p,
                          const WgmmaAttentionSchedule &s);

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_WGMMAATTENTION_H
