//===- SimtAttention.h - f32 attention on CUDA cores ------------*- C++ -*-===//
//
// Builds one `gpu.func` computing O = softmax(mod(Q x K^T)) x V, the problem
// of AttentionKernel.h (same hooks, masks, GQA and MaskedRowPolicy), for f32
// Q, K, V and O with f32 FMAs (no tf32: true f32 throughout, as PyTorch's
// SDPA computes f32) -- on AMD targets for bf16 and f16 Q, K, V and O too,
// widened to f32 on their way into shared memory (LDS) and O rounded to the
// dtype at the end -- in the manner of FlashAttention-2:
//   - a block per (query tile of blockQ rows, query head, batch), of
//     (blockQ / R) x (blockKV / K) threads for a register tile of R x K
//     (4 or 8 each); the Q tile is copied to shared memory once;
//   - a loop over key tiles of blockKV keys (K, then V, through shared
//     memory; cp.async copies overlapping S and P V where K and V have
//     buffers of their own); each thread computes an R x K register tile
//     of S (R adjacent rows, K keys strided by blockKV / K), applies the
//     score change and the mask, runs the online softmax (row max and sum
//     shuffled among the blockKV / K threads of a row, which share a warp),
//     writes P to shared memory and adds the tile's P V (summed apart) to
//     its R rows x headDim / (blockKV / K) columns of O in registers.
// Few query rows against many keys (decode) take a split-K form of the same
// kernel: a block per (query tile, key chunk, head, batch) writes its
// chunk's unnormalised O, running max m and sum l to scratch, and a second
// kernel merges the chunks of each row.
// Built from gpu/arith/vector/memref/scf ops but for a few that the target
// decides (TargetDesc): cp.async copies where it has them (else loads into
// registers and shared stores: AMD), 2^x (NVVM's ex2.approx, ROCDL's
// v_exp_f32), warp votes (vote.sync, ballot), shuffles at the warp or wave
// width (32, 64) and minctasm (NVIDIA only).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_SIMTATTENTION_H
#define TCC_COMPILER_GPU_SIMTATTENTION_H

#include "compiler/gpu/AttentionKernel.h"

#include <string>

namespace tcc::gpu {

/// The tiling: blockQ query rows and blockKV keys a step, a thread per
/// tileRows rows x tileKeys keys of S (its register tile: 4 or 8 each).
/// `splitKV`: K and V have shared buffers of their own (one copy phase a key
/// tile); otherwise V reuses K's buffer after S is done. `minBlocks`: blocks a
/// multiprocessor must hold at once (NVVM's minctasm, which bounds ptxas's
/// registers a thread; 0: no bound). `chunkTiles`: key tiles a block reads in
/// the split-K (decode) form; 0: one kernel reading every key.
struct SimtAttentionSchedule {
  int64_t blockQ = 64, blockKV = 64;
  bool splitKV = false;
  int64_t minBlocks = 0;
  int64_t chunkTiles = 0;
  int64_t tileRows = 4, tileKeys = 4;
};

/// The split-K form's two kernels and their scratch buffers.
struct SimtDecodeKernels {
  KernelLaunch partial, combine;
  int64_t chunks = 0;
  /// Scratch: partial O [batch, headsQ, chunks, lq, headDim] f32 and
  /// (m, l) [batch, headsQ, chunks, lq, 2] f32.
  uint64_t partialOBytes = 0, partialStatsBytes = 0;
};

/// Whether buildSimtAttentionKernel handles `p` (f32, f16 or bf16, head dims
/// that are multiples of 4 from 16 to 256; the dtype the target takes is
/// simtAttentionScheduleValid's); when not, `why` says why in one line.
bool simtAttentionSupports(const AttentionProblem &p, std::string &why);

/// Picks a schedule for `p` on `target`.
SimtAttentionSchedule
chooseSimtAttentionSchedule(const AttentionProblem &p,
                            const ::tcc::TargetDesc &target);

/// The d a score sums as one chain of FMAs before adding it to the score
/// (blocked summation; docs/architecture.md, "f32 attention"): 8 where
/// `s` lets ptxas give a thread 232 registers or more on NVIDIA, else 4.
int64_t simtScoreBlock(const SimtAttentionSchedule &s,
                       const ::tcc::TargetDesc &target);

/// Whether `s` is a valid schedule for `p` on `target` (whole warps or
/// waves, shared memory, bf16 and f16 only without cp.async, minBlocks only
/// on NVIDIA); when not, `why` says why.
bool simtAttentionScheduleValid(const AttentionProblem &p,
                                const SimtAttentionSchedule &s,
                                const ::tcc::TargetDesc &target,
                                std::string &why);

/// Appends `gpu.func @name(%q, %k, %v, %o, captured...) kernel` to `module`,
/// with the arguments and launch conventions of buildAttentionKernel (Q, K,
/// V and O memrefs of the problem's dtype and layout, rows 16-byte aligned;
/// grid: query tiles x query heads x batch; KernelLaunch::sharedBytes of
/// dynamic shared memory). Fails (with a diagnostic at the module) when the
/// problem or the schedule is not supported on `target`, or the schedule is
/// split-K.
mlir::FailureOr<KernelLaunch>
buildSimtAttentionKernel(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                         llvm::StringRef name, const AttentionProblem &p,
                         const SimtAttentionSchedule &s,
                         const ::tcc::TargetDesc &target);

/// The split-K form (s.chunkTiles > 0): appends `gpu.func
/// @partialName(%q, %k, %v, %partO, %partStats, captured...) kernel` (grid:
/// query tiles x chunks, query heads, batch) and `gpu.func
/// @combineName(%partO, %partStats, %o) kernel` (the buffers viewed with
/// batch and head merged) to `module`.
mlir::FailureOr<SimtDecodeKernels>
buildSimtDecodeKernels(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                       llvm::StringRef partialName, llvm::StringRef combineName,
                       const AttentionProblem &p,
                       const SimtAttentionSchedule &s,
                       const ::tcc::TargetDesc &target);

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_SIMTATTENTION_H
