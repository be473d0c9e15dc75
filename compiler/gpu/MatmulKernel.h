//===- MatmulKernel.h - the tensor-core GEMM kernel template ---*- C++ -*-===//
//
// Builds one `gpu.func` computing a (batched) matmul C = A x B with MLIR's
// gpu/nvgpu/vector/scf/arith/memref builders, for sm_80 and sm_90:
//   - bf16/f16 operands: nvgpu.mma.sync m16n8k16 with f32 accumulation;
//   - f32 operands with allowTf32: nvgpu.mma.sync m16n8k8 (tf32);
//   - f32 operands otherwise: a SIMT tiled kernel of f32 FMAs.
// Operands travel global -> shared memory through a multi-stage cp.async
// pipeline (nvgpu.device_async_copy, 16-byte, zero-filled at the edges) into
// an XOR-swizzled layout, then shared -> registers through nvgpu.ldmatrix.
// Every size is static (baked into the kernel), so edge predicates are only
// emitted where a dimension is not a multiple of its tile.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_MATMULKERNEL_H
#define TCC_COMPILER_GPU_MATMULKERNEL_H

#include "compiler/Target.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tcc::gpu {

/// One (batched) matmul: C[b] = A[aBatched ? b : 0] x B[bBatched ? b : 0].
struct MatmulProblem {
  int64_t batch = 1;    ///< C holds `batch` matrices.
  bool aBatched = true; ///< false: one A shared by every batch (likewise B).
  bool bBatched = true;
  int64_t m = 0, n = 0, k = 0;
  bool transA = false; ///< A stored [.., K, M] instead of [.., M, K].
  bool transB = false; ///< B stored [.., N, K] instead of [.., K, N].
  /// bf16, f16 or f32 (the same for A and B). f32 uses tf32 tensor cores
  /// only if allowTf32, else SIMT f32 FMAs.
  mlir::Type aType, bType;
  mlir::Type cType; ///< f32, bf16 or f16; accumulation is always f32.
  bool allowTf32 = false;
};

/// The tiling of one kernel: a block computes tileM x tileN of C with
/// warpsM x warpsN warps, stepping over K by tileK with `stages` shared-memory
/// buffers in flight. With splitK > 1 the k-tiles are cut into splitK equal
/// ranges, one per block of grid.y: each block writes its f32 partial tile
/// to a workspace and a second kernel (buildSplitKReduceKernel) sums them
/// and applies the epilogue. It fills the GPU when the output has few tiles
/// and K is long (a ResNet's last 3x3 convolutions: 49 output pixels, K 4608).
/// With clusterSplitK (sm_90 and later, splitK <= kMaxClusterSplits) the
/// splits of a tile run as one thread-block cluster instead: each block
/// leaves its partial tile in its shared memory and, after a cluster
/// barrier, sums a share of the tile's rows across the cluster's blocks
/// (in split order) and applies the epilogue: no workspace, one launch.
struct MatmulSchedule {
  int64_t tileM = 128, tileN = 128, tileK = 32, warpsM = 2, warpsN = 2,
          stages = 3, splitK = 1;
  bool clusterSplitK = false;
};

/// The most splits a cluster split-K sums: CUDA's portable cluster size.
constexpr int64_t kMaxClusterSplits = 8;

/// A TMA descriptor (CUtensorMap) a kernel takes by value after its buffer
/// arguments, which the runtime encodes at launch (manifest `tensor_maps`,
/// docs/bundle-format.md): a tiled view of the buffer of the kernel's
/// argument `operand`. `dims` and `box` in elements and `strides` in bytes
/// (of dims 1..rank-1), innermost first, as cuTensorMapEncodeTiled takes
/// them; elements outside `dims` load as zeros.
struct TensorMapSpec {
  int64_t operand = 0;
  std::string dtype; ///< The manifest's dtype name ("bf16", "f16").
  std::vector<int64_t> dims, strides, box;
  std::string swizzle; ///< "none", "32B", "64B" or "128B".
  /// Bytes into the buffer where the mapped tensor starts (a multiple of
  /// 16): a view of part of it (manifest version 6).
  int64_t offset = 0;
  /// An im2col map (cuTensorMapEncodeIm2col; `box` empty): a copy moves
  /// `pixels` pixels of `channels` channels, walking the box between the
  /// corner offsets `lower` and `upper` (spatial dims, innermost first) by
  /// `elementStrides` (every dim).
  bool im2col = false;
  int64_t channels = 0, pixels = 0;
  std::vector<int64_t> lower, upper, elementStrides;
};

/// How to launch what buildMatmulKernel built: blocks, threads per block and
/// dynamic shared memory bytes per block; and the tensor maps it takes.
struct KernelLaunch {
  std::array<int64_t, 3> grid, block;
  int64_t sharedBytes;
  std::vector<TensorMapSpec> tensorMaps;
  /// Blocks of a thread-block cluster in x, y and z (1, 1, 1: none).
  std::array<int64_t, 3> cluster{1, 1, 1};
};

/// The A operand of an implicit GEMM (a convolution, ConvKernel.h): A[m][k]
/// is gathered from an NHWC input [batch, h, w, c], row m being output pixel
/// (image, oy, ox) of an oh x ow output and column k the tap (ky, kx) and
/// channel of a kh x kw window; zero where the window lies in the padding.
struct GemmGather {
  int64_t batch = 1, h = 1, w = 1, c = 1, oh = 1, ow = 1, kh = 1, kw = 1;
  int64_t strideH = 1, strideW = 1, padTop = 0, padLeft = 0, dilationH = 1,
          dilationW = 1;
};

/// What the epilogue applies to each f32 result before the store: a bias
/// per column of C (of type biasType; none when null), a residual of C's
/// shape added element by element (of type residualType; none when null: a
/// ResNet block's skip connection), then ReLU. C may be a column slice of a
/// wider buffer (a concat's, written in place): rows `outStride` elements
/// apart, starting at column `outOffset` (outStride 0: C is its own buffer).
/// With `rawOut` (and relu) the value before the ReLU is stored too, to a
/// buffer of C's type and shape passed after C (NASNet's cells read both a
/// convolution's result and its ReLU); with `copyOut` that buffer gets the
/// stored values themselves (a convolution writing a concat's channels in
/// place whose result other kernels read too).
///
/// With a shuffle (shuffleH x shuffleW above 1 x 1: depth to space, the
/// sub-pixel up-convolution's interleave) C's rows are the pixels (image, y,
/// x) of a rowsH x rowsW grid and its columns (r_h, r_w, channel): element
/// (row, col) is stored at pixel (image, y * shuffleH + r_h, x * shuffleW +
/// r_w) of an output of n / (shuffleH * shuffleW) channels (or of that slice
/// of outStride ones).
///
/// Or (instead of all of those) `elementFn`: the model's elementwise code
/// after the GEMM (scales per row, column or tensor, a bias of any
/// broadcast, an activation, a cast), applied to each accumulator element
/// (an f32 scalar; i32 for i8 operands) at its (batch, row, col) (index
/// values, possibly past C's edges: clamp before reading), reading the
/// buffers of types `captured` (passed after B, and after a tile mask's
/// buffers). It returns the value to store, of `outType` (f32, bf16, f16
/// or i32), the type of C.
using GemmElementFn = std::function<mlir::Value(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value acc, mlir::Value batch,
    mlir::Value row, mlir::Value col, mlir::ValueRange captured)>;

struct GemmEpilogue {
  mlir::Type biasType;
  mlir::Type residualType;
  bool relu = false;
  int64_t outStride = 0, outOffset = 0;
  bool rawOut = false;
  bool copyOut = false;
  int64_t shuffleH = 1, shuffleW = 1, rowsH = 1, rowsW = 1;
  GemmElementFn elementFn;
  llvm::SmallVector<mlir::Type, 2> captured;
  mlir::Type outType; ///< C's stored type with elementFn

  /// Whether a second buffer follows C (rawOut or copyOut).
  bool secondOut() const { return rawOut || copyOut; }
  bool shuffled() const { return shuffleH * shuffleW > 1; }
  /// The type C is stored in, for a GEMM whose result type is `cType`.
  mlir::Type storedType(mlir::Type cType) const {
    return elementFn ? outType : cType;
  }
};

/// The buffer C is stored in: [batch, m, outStride (or n)] of `t`; shuffled,
/// [batch, output pixels, outStride (or its channels)].
mlir::MemRefType gemmOutBufferType(const GemmEpilogue &epi, int64_t batch,
                                   int64_t m, int64_t n, mlir::Type t);
/// C inside `buffer` (gemmOutBufferType's): `buffer` itself, or its columns
/// [outOffset, outOffset + n (or the shuffled output's channels)).
mlir::Value gemmOutView(mlir::OpBuilder &b, mlir::Location loc,
                        const GemmEpilogue &epi, mlir::Value buffer, int64_t n);
/// The indices in gemmOutView's view of C's element (`batch`, `row`, `col`):
/// those themselves, or shuffled its output pixel and channel.
llvm::SmallVector<mlir::Value, 3>
gemmOutIndices(mlir::OpBuilder &b, mlir::Location loc, const GemmEpilogue &epi,
               int64_t n, mlir::Value batch, mlir::Value row, mlir::Value col);
/// Whether the slice fits and keeps every vector store of up to 16 bytes
/// aligned (offset and stride multiples of 8 elements), a raw output comes
/// with a ReLU and no slice, and a shuffle keeps each vector of up to 8
/// columns in one pixel (multiples of 8 channels); `why` says not.
bool gemmOutputsValid(const GemmEpilogue &epi, int64_t m, int64_t n,
                      std::string &why);

/// Picks a schedule for `p` on `target` (a simple heuristic: its shared
/// memory and multiprocessors).
MatmulSchedule chooseMatmulSchedule(const MatmulProblem &p,
                                    const ::tcc::TargetDesc &target);

/// A grid of enough blocks that are all small (fewer than 4 warps a
/// multiprocessor in all, each walking every k-tile) waits on memory with
/// nothing to hide it: splits K, up to 8 warps a multiprocessor and within
/// a cluster (sm_90 and later), when `s` has no split yet and each split
/// keeps at least 4 k-tiles. NASNet-A Large's 11x11 1x1 convolutions
/// (121 x 672 x 4032: 84 one-warp blocks of 126 k-tiles, 42 us) were the
/// slowest of its run (session 28).
void splitThinGrid(const MatmulProblem &p, MatmulSchedule &s,
                   const ::tcc::TargetDesc &target);

/// Sets s.splitK (and fewer stages if the splits are shallow) for `p` with
/// s's tiles: more than 1 only when the output tiles leave most of the
/// multiprocessors idle and K is deep enough to cut.
void chooseSplitK(const MatmulProblem &p, MatmulSchedule &s,
                  const ::tcc::TargetDesc &target);
/// Sets s.clusterSplitK: whether s's splits (s.splitK, chosen or given)
/// sum across a thread-block cluster on `target`.
void chooseSplitKReduction(MatmulSchedule &s, const ::tcc::TargetDesc &target);

/// Whether buildMatmulKernel handles `p` (with any valid schedule); when not,
/// `why` says why in one line.
bool matmulKernelSupports(const MatmulProblem &p, std::string &why);

/// Whether `s` is a valid schedule for `p`; when not, `why` says why.
bool matmulScheduleValid(const MatmulProblem &p, const MatmulSchedule &s,
                         const ::tcc::TargetDesc &target, std::string &why);

/// The mma.sync template's schedule space for `p` on `target`: every
/// combination of its knobs (tile_m and tile_n 32-256, tile_k 16-64, warps_m
/// and warps_n 1-4, stages 2-4, split_k 1-32; the split-K reduction as
/// chooseSplitKReduction sets it) that matmulScheduleValid accepts. A tuning
/// record's schedule names a point of it; tuning searches it.
std::vector<MatmulSchedule>
matmulScheduleSpace(const MatmulProblem &p, const ::tcc::TargetDesc &target);

/// Appends `gpu.func @name(%a, %b, %c) kernel` to `module`. The arguments are
/// identity-layout memrefs of static shape: A [aBatched ? batch : 1, M, K]
/// ([.., K, M] if transA), B [bBatched ? batch : 1, K, N] ([.., N, K] if
/// transB), C [batch, M, N]; each buffer must be 16-byte aligned. The kernel
/// reads `gpu.dynamic_shared_memory` of KernelLaunch::sharedBytes bytes.
/// Fails (with a diagnostic at the module) when the problem or the schedule
/// is not supported.
mlir::FailureOr<KernelLaunch>
buildMatmulKernel(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                  llvm::StringRef name, const MatmulProblem &p,
                  const MatmulSchedule &s, const GemmEpilogue &epilogue = {});

/// buildMatmulKernel with an optional gathered A (then A is the 1-D input
/// buffer, p.m = batch * oh * ow, p.k = kh * kw * c, with p.batch 1 and
/// p.transA false) and an epilogue. With a bias the kernel takes it as the
/// argument before C: `gpu.func @name(%a, %b, %bias, %c)`.
mlir::FailureOr<KernelLaunch>
buildGemmKernel(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                llvm::StringRef name, const MatmulProblem &p,
                const MatmulSchedule &s, const GemmGather *gather,
                const GemmEpilogue &epilogue);

/// The second kernel of a split-K GEMM (schedule splitK = `splits`):
/// `gpu.func @name(%partials, [%bias,] [%residual,] %c) kernel` sums the f32
/// partials [splits, M, N] in split order, applies `epilogue` (bias per
/// column, residual [1, M, N], ReLU; or its elementFn, whose buffers follow
/// the partials) and stores C [1, M, N] in p.cType (epilogue.outType).
::tcc::gpu::KernelLaunch
buildSplitKReduceKernel(mlir::OpBuilder &b, mlir::gpu::GPUModuleOp module,
                        llvm::StringRef name, const MatmulProblem &p,
                        int64_t splits, const GemmEpilogue &epilogue);

/// Bytes of the f32 workspace a split-K schedule `s` needs for `p` (0 when
/// s.splitK is 1).
int64_t splitKWorkspaceBytes(const MatmulProblem &p, const MatmulSchedule &s);

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_MATMULKERNEL_H
