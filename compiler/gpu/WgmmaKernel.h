//===- WgmmaKernel.h - the Hopper warpgroup-MMA GEMM template ---*- C++ -*-===//
//
// Builds one `gpu.func` computing C = A x B (bf16 or f16 operands, f32
// ones read as tf32, or f8 with B stored [N][K], f32 accumulation; i8 with
// B stored [N][K], i32 accumulation) with Hopper's
// warpgroup MMA (wgmma.mma_async, sm_90a only), from MLIR's
// gpu/nvgpu/nvvm/scf/arith/memref builders:
//   - global -> shared through a multi-stage cp.async pipeline
//     (nvgpu.device_async_copy, 16-byte) into the 128-byte-swizzled layout
//     that wgmma's shared-memory descriptors describe; no TMA, so the launch
//     needs nothing beyond pointers;
//   - each warpgroup (128 threads) issues m64nNk16 wgmmas on descriptors of
//     the shared tiles, asynchronously, one commit group per k-tile;
//   - f32 accumulators stay in registers and are stored straight to C,
//     through an optional epilogue (bias, residual, ReLU: GemmEpilogue);
//   - optionally A gathered from a convolution's NHWC input (GemmGather:
//     the implicit GEMM, ConvKernel.h), and K split across blocks.
// Lowering needs convert-nvvm-to-llvm (the wgmma ops become inline PTX) and
// the chip "sm_90a".
//
// Any M, N and K whose rows are 16-byte aligned (edge tiles are zero-filled
// on load and checked on store); a batch of matrices on grid.z, A or B
// possibly one matrix shared by all.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_WGMMAKERNEL_H
#define TCC_COMPILER_GPU_WGMMAKERNEL_H

#include "compiler/gpu/MatmulKernel.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tcc::gpu {

/// `batch` matmuls C[M,N] = A[M,K] x B, B stored [K,N] or, if transB,
/// [N,K]; an operand not batched is one matrix used by all.
struct WgmmaProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool aBatched = false, bBatched = false;
  bool transB = false;
  /// bf16 or f16 (A and B alike), f32 computed as tf32, f8E4M3FN or
  /// f8E5M2, or i8 (32- and 8-bit operands need transB: wgmma reads them
  /// K-major only).
  mlir::Type abType;
  /// f32, bf16 or f16, accumulated in f32; i32 for i8, accumulated exactly
  /// in i32 (f32 with a tile mask: the i32 sum converted).
  mlir::Type cType;
  /// One precision of a planned matmul (tcc.tile_matmul): only the output
  /// tiles of `planTileM` x `planTileN` whose code (an i8 buffer [grid rows
  /// x `planGridN`], after B) is `code` are computed (other blocks exit),
  /// multiplied by the row and column scales (f32 buffers [M] and [N] after
  /// the codes) where given. One matrix, no split-K; C is f32; the kernel
  /// tile must divide the plan's.
  struct TileMask {
    int64_t code = 0, planTileM = 0, planTileN = 0, planGridN = 0;
    bool rowScale = false, colScale = false;
  };
  std::optional<TileMask> mask;
};

/// A block computes tileM x tileN of C with `warpgroups` warpgroups, each
/// owning tileM / warpgroups rows (a multiple of 64), stepping over K by
/// the k-tile with `stages` shared-memory buffers (stages - 2 k-tiles are
/// prefetched; one more buffer is still being read by the wgmmas in flight).
/// With splitK > 1 (one matrix, no epilogue), block y sums its share of
/// the k-tiles into an f32 partial C [splitK, M, N] that a second kernel
/// (buildSplitKReduceKernel, MatmulKernel.h) sums in split order.
struct WgmmaSchedule {
  int64_t tileM = 128, tileN = 256, warpgroups = 2, stages = 4;
  int64_t splitK = 1;
  /// A gathered A (a convolution) and B copied by the tensor memory
  /// accelerator: thread 0 moves each k-tile whole (A through an im2col
  /// tensor map, one tap's 64 channels of tileM pixels; B through a tiled
  /// one) and the block waits on an mbarrier, instead of every thread's
  /// 16-byte cp.async copies (which the loop waited on: load/store path at
  /// ~60%, Nsight Compute, session 26). Needs channels a multiple of the
  /// k-tile and 16-bit operands (wgmmaKernelSupports).
  bool tma = false;
  /// f8 only, N (1 to 4; chooseWgmmaSchedule: 1): each run of N k-tiles'
  /// wgmmas sums into fresh registers that are then added to the f32
  /// accumulators (two-level accumulation). Hopper's
  /// f8 wgmma adds into its accumulator with fewer bits than f32 (about
  /// 14: DeepSeek-V3's report), so long sums drift: outputs near zero of
  /// 4096^3 GEMMs were off by 4.7x the f32-accumulation bound (H200,
  /// session 40). Twice the accumulator registers (tileN 128 at most for
  /// 128 rows) and a wait each run. 0: the hardware's accumulation
  /// (like torch._scaled_mm's use_fast_accum).
  int64_t promote = 0;
  /// 1: a plain matmul's k-tiles come by TMA from a producer warpgroup (one
  /// thread issues them; setmaxnreg gives its registers to the others),
  /// handed over by
  /// mbarriers ("full" per stage, "empty" once every computing warp is done
  /// with it): no block-wide barrier a k-tile, so the warpgroups run free,
  /// and all S stages are in flight; up to 3 warpgroups.
  int64_t producer = 0;
};

/// The k-tile: one 128-byte swizzle row (64 bf16/f16 or 32 tf32 elements).
inline int64_t wgmmaTileK(mlir::Type abType) {
  return 1024 / abType.getIntOrFloatBitWidth();
}

/// Picks a schedule for `p` (a simple heuristic).
WgmmaSchedule chooseWgmmaSchedule(const WgmmaProblem &p);

/// Whether buildWgmmaKernel handles `p` with `s`; when not, `why` says why
/// in one line.
/// `target` must have wgmma and room for the stages.
/// With `gather`, A is gathered from a convolution's input (as the mma.sync
/// template's implicit GEMM, ConvKernel.h).
bool wgmmaKernelSupports(const WgmmaProblem &p, const WgmmaSchedule &s,
                         const ::tcc::TargetDesc &target, std::string &why,
                         const GemmGather *gather = nullptr);

/// The wgmma template's schedule space for `p` on `target` (a matmul: no
/// gather, no TMA): every combination of its knobs (tile_m 64, 128;
/// tile_n 64, 128, 256; warpgroups 1, 2; stages 3-6; split_k 1-16, powers of 2)
/// that wgmmaKernelSupports accepts. A tuning record's schedule names a
/// point of it; tuning searches it.
std::vector<WgmmaSchedule> wgmmaScheduleSpace(const WgmmaProblem &p,
                                              const ::tcc::TargetDesc &target);

/// With s.tma, the kernel takes two tensor maps after its buffers (A's
/// im2col map and B's tiled one, KernelLaunch::tensorMaps).
/// Appends `gpu.func @name(%a, %b, [%bias,] [%residual,] %c) kernel` to
/// `module`: identity-layout memrefs A [batch or 1, M, K] (with `gather`, the
/// NHWC input, 1-D), B [batch or 1, K, N] ([.., N, K] if transB), the
/// epilogue's bias [N] and residual [batch, M, N], C [batch, M, N], each
/// 16-byte aligned; `epilogue` applies to the f32 results. With s.splitK > 1
/// C is the f32 partials [splitK, M, N] and there is no epilogue (the
/// reduction applies it). The kernel reads
/// `gpu.dynamic_shared_memory` of KernelLaunch::sharedBytes bytes. Fails (with
/// a diagnostic at the module) when wgmmaKernelSupports says no.
mlir::FailureOr<KernelLaunch>
buildWgmmaKernel(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                 llvm::StringRef name, const WgmmaProblem &p,
                 const WgmmaSchedule &s, const GemmGather *gather = nullptr,
                 const GemmEpilogue &epilogue = {});

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_WGMMAKERNEL_H
