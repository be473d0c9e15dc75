//===- RegionKernel.h - a chain of convolutions as one kernel --*- C++ -*-===//
//
// Region fusion (AFusion, passes/RegionAnalysis.h) runs a chain of
// channels-last convolutions, depthwise convolutions and pools as one
// kernel. Each block computes one th x tw output tile of the chain's last
// member for one image: walking the chain backwards gives every member's
// tile with its halo ((out - 1) * stride + (k - 1) * dilation + 1), the
// block loads the chain input's tile once into shared memory (cp.async,
// zeros outside the image), then computes member by member into shared
// tiles, and only the last member writes global memory:
//   - a convolution (groups 1) is a GEMM on tensor cores (mma.sync m16n8k16,
//     f32 accumulation) whose A rows ldmatrix gathers from the previous
//     shared tile (a row address per lane) and whose weights stream from
//     global memory through a cp.async pipeline of shared k-slabs;
//   - a depthwise convolution and the pools run on CUDA cores, a thread per
//     pixel and 8 channels;
// each with an epilogue (bias, a residual add, ReLU or ReLU6). Positions of
// an intermediate tile outside its member's output image are stored as
// zeros: they are the next member's padding (a max pool skips them).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_REGIONKERNEL_H
#define TCC_COMPILER_GPU_REGIONKERNEL_H

#include "compiler/gpu/MatmulKernel.h"

#include <vector>

namespace tcc::gpu {

/// One member of a region chain. Its input is the previous member's output
/// (the chain input for the first), all NHWC.
struct RegionMember {
  enum class Kind { Conv, Depthwise, MaxPool, AvgPool };
  enum class Activation { None, Relu, Relu6 };
  Kind kind = Kind::Conv;
  /// Output channels of a convolution; depthwise convolutions and pools
  /// keep their input's channels (this field is then ignored).
  int64_t outChannels = 0;
  int64_t kh = 1, kw = 1, strideH = 1, strideW = 1, dilationH = 1,
          dilationW = 1;
  /// Top, left, bottom, right.
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  /// Average pool: whether padded positions count in the divisor (PyTorch's
  /// default) or only the image's (ONNX's).
  bool countIncludePad = true;
  /// A bias per output channel, added first.
  bool bias = false;
  /// What the residual add reads, after the bias and before the
  /// activation: -1 none, 0 the chain input, i + 1 the output of member i
  /// (an earlier one); its shape must be this member's output shape.
  int64_t residualFrom = -1;
  Activation activation = Activation::None;
};

/// A chain of members on one NHWC input [n, h, w, c]. Input, weights,
/// biases, intermediates and output are all of `type` (f16 or bf16);
/// accumulation is f32.
struct RegionProblem {
  int64_t n = 1, h = 1, w = 1, c = 1;
  mlir::Type type;
  std::vector<RegionMember> members;

  /// The shape [h, w, c] of member i's input (i = 0: the chain input) and
  /// output; `i` may be members.size() for the chain's output as input.
  std::array<int64_t, 3> inShape(size_t i) const;
  std::array<int64_t, 3> outShape(size_t i) const;
};

/// The tiling: each block computes a tileH x tileW tile of the last
/// member's output for one image, with `warps` warps. Biases and depthwise
/// weights are always copied to shared memory with the input tile.
/// `resident`: every convolution's weights are too, so the members run
/// without a global round trip between them; otherwise each GEMM round
/// streams its weight slabs through a cp.async pipeline (less shared
/// memory, a wait per k-step). `prefetch` (streamed only): each
/// convolution member has a pipeline of its own, whose first round's first
/// slabs are copied with the input tile, so that no member but the first
/// waits for a pipeline fill (more shared memory: the members' pipelines
/// add up instead of sharing one).
/// `stages`: a streamed convolution's pipeline depth (at most its k-slabs,
/// at least 2); 0 lets the plan choose.
struct RegionSchedule {
  int64_t tileH = 8, tileW = 8, warps = 4;
  bool resident = false;
  bool prefetch = false;
  int64_t stages = 0;
};

/// Member i's share of one block: its output tile (with the halo its
/// consumers read) and where the tile starts in its output image,
/// origin = scale * (block's tile start in the last member's output) +
/// offset, per axis (H, W). Member -1 is the chain input.
struct RegionTile {
  std::array<int64_t, 2> size, scale, offset;
};

/// The tiles of every member, the chain input's first: tiles[0] is the
/// chain input's, tiles[i + 1] member i's output tile.
std::vector<RegionTile> regionTiles(const RegionProblem &p,
                                    const RegionSchedule &s);

/// Bytes of dynamic shared memory buildRegionKernel's block uses.
int64_t regionSharedBytes(const RegionProblem &p, const RegionSchedule &s);

/// Whether buildRegionKernel handles `p` with `s` on `target` (shapes,
/// dtypes, channel counts of multiples of 8, residual shapes, the shared
/// memory limit); when not, `why` says why in one line.
bool regionKernelSupports(const RegionProblem &p, const RegionSchedule &s,
                          const ::tcc::TargetDesc &target, std::string &why);

/// A heuristic schedule for `p` on `target`: the tile that keeps the
/// multiprocessors busy with the least recomputed halo that fits, or, given
/// `tile` (the one tcc-region-fusion's cost model planned), the best way
/// to run that tile (weights resident, streamed or prefetched); std::nullopt
/// when no schedule (of `tile`, given one) fits.
std::optional<RegionSchedule>
chooseRegionSchedule(const RegionProblem &p, const ::tcc::TargetDesc &target,
                     std::optional<std::array<int64_t, 2>> tile = {});

/// The kernel's arguments in order: the chain input, then per member its
/// weight (a convolution's [O, KH, KW, C], a depthwise one's [C, KH, KW, 1])
/// and its bias [O] where it has them, then the output. Each is a 1-D
/// identity memref of the tensor's elements, 16-byte aligned.
struct RegionArg {
  enum class Role { Input, Weight, Bias, Output };
  Role role;
  int64_t member; ///< -1 for the input and the output
  std::vector<int64_t> shape;
};
std::vector<RegionArg> regionKernelArgs(const RegionProblem &p);

/// Appends `gpu.func @name(args...) kernel` (regionKernelArgs) to `module`.
/// Launch: grid (tiles of the output, 1, n), 32 * warps threads,
/// regionSharedBytes of dynamic shared memory. Fails with a diagnostic at
/// the module when `p` or `s` is not valid; whether the shared memory fits
/// a target is regionKernelSupports' to say.
mlir::FailureOr<KernelLaunch> buildRegionKernel(mlir::OpBuilder &b,
                                                mlir::gpu::GPUModuleOp module,
                                                llvm::StringRef name,
                                                const RegionProblem &p,
                                                const RegionSchedule &s);

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_REGIONKERNEL_H
