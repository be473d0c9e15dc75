//===- RegionAnalysis.h - tiles and halos of region groups ------*- C++ -*-===//
//
// Region fusion (AFusion) runs a chain of convolutions, pools and the
// element-wise ops between them as one kernel, tile by tile: each tile of the
// group's outputs computes, layer by layer backwards, the input tile it needs.
// Neighbouring tiles' input windows overlap (the halo), and that overlap is
// computed again by each tile. This library derives the tiles, halos and FLOPs
// of a group; tcc-annotate-regions records them, and the cost model and the
// grouping search are to read them.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_REGIONANALYSIS_H
#define TCC_PASSES_REGIONANALYSIS_H

#include "ir/TccOps.h"

#include <array>
#include <optional>
#include <string>

namespace mlir::tcc::region {

/// The two layouts of convolution and pooling tensors (rank 4).
enum class Layout { NCHW, NHWC };

/// The H and W axes of a rank-4 tensor in `layout`.
std::array<unsigned, 2> spatialAxes(Layout layout);
/// The channel axis of a rank-4 tensor in `layout`.
unsigned channelAxis(Layout layout);
StringRef layoutName(Layout layout);

/// How one op maps output positions to the input window it reads.
struct RegionOpInfo {
  enum class Kind { Conv, MaxPool, AvgPool, Pointwise, Concat };
  Kind kind;
  /// The layout of the op's spatial operands and result. None for
  /// element-wise ops, which have no layout of their own: the group's
  /// convolutions, pools and concats decide it.
  std::optional<Layout> layout;
  /// Per spatial axis (H, W). Pointwise ops and concats: 1, 1, 1.
  std::array<int64_t, 2> kernel = {1, 1};
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> dilation = {1, 1};
  /// Top, left, bottom, right.
  std::array<int64_t, 4> pads = {0, 0, 0, 0};
  int64_t groups = 1;
  /// FLOPs per result element: 2 * (Cin / groups) * kh * kw for a
  /// convolution (a multiply and an add per tap; a bias is not counted),
  /// kh * kw for a pool, 1 for an element-wise op, 0 for a concat (it only
  /// moves elements).
  int64_t flopsPerElement = 0;
  /// The operand read through the window (a convolution's or pool's input);
  /// null for pointwise ops and concats, whose every operand is read at the
  /// result's position (or broadcast).
  Value windowed;
};

/// `op` as a member of a region group: tcc.conv2d (any groups, strides,
/// dilations, pads; NCHW or NHWC), tcc.max_pool2d, tcc.avg_pool2d, element-wise
/// ops with a rank-4 result (operands broadcast to it, such as a per-channel
/// bias) and tcc.concat of rank-4 tensors along axis 1 (NCHW channels) or 3
/// (NHWC channels). Anything else: std::nullopt.
std::optional<RegionOpInfo> regionInfo(Operation *op);

/// What one member of a group does for one tile of the group's outputs.
struct MemberTile {
  Operation *op = nullptr;
  Layout layout = Layout::NCHW;
  /// The member's output tile: per axis, the largest that its in-group
  /// consumers read (a group output also its own share of the tile), clamped
  /// to the result's extent.
  std::array<int64_t, 2> out = {0, 0};
  /// The input tile read through the window: (out - 1) * stride +
  /// (k - 1) * dilation + 1, clamped to the input's extent; equal to `out`
  /// for pointwise ops and concats.
  std::array<int64_t, 2> in = {0, 0};
  /// max(0, in - out * stride): how far a tile's input window reaches into
  /// the next tile's (the next one starts out * stride further on), so the
  /// rows and columns both read. 0 for pointwise ops and concats.
  std::array<int64_t, 2> halo = {0, 0};
  /// FLOPs over the member's whole result, computed once.
  int64_t flops = 0;
  /// FLOPs when each of the group's tiles computes the member's whole tile:
  /// tiles * out[0] * out[1] * channels * FLOPs per element. Tiles at the
  /// image edge count as whole ones, so this is an upper bound.
  int64_t executed = 0;
  /// The work the overlapping halos add: executed - flops, at least 0 (a
  /// strided layer whose kernel is smaller than its stride skips inputs, so
  /// its producers may execute less than their whole result).
  int64_t recomputed() const { return std::max<int64_t>(0, executed - flops); }
};

/// A group's members in block order, and the tiles of its outputs.
struct GroupFootprint {
  SmallVector<MemberTile> members;
  /// ceil(H / th) * ceil(W / tw) * N over the group's outputs.
  int64_t tiles = 0;
};

/// Why a group has no footprint; `op` is null where no member is to blame
/// (the tile).
struct RegionError {
  Operation *op = nullptr;
  std::string message;
};

/// The footprint of the group `members` (ops of one block, connected through
/// their operands) for output tiles of `tile` = (th, tw). The group's outputs
/// are the members with a result used outside the group (or not used at
/// all); they must agree in batch and spatial extent, which define the tiles.
/// Walking the members backwards, each takes the per-axis maximum of what
/// its in-group consumers read, so branches that rejoin (a residual add, a
/// concat of two paths) read the larger window.
FailureOr<GroupFootprint> groupFootprint(ArrayRef<Operation *> members,
                                         std::array<int64_t, 2> tile,
                                         RegionError &error);

/// The tile sizes (per axis) the GPU region template runs a group at
/// (compiler/gpu/RegionKernel.cpp's chooseRegionSchedule), and so the ones
/// tcc-region-fusion tries on GPU targets, every pair of them.
inline constexpr std::array<int64_t, 9> kKernelTileSizes = {1,  2,  4,  7, 8,
                                                            14, 16, 28, 32};

/// Whether `members` (ops of one block, in block order) form a chain that
/// the GPU region template (compiler/gpu/RegionKernel.h) runs as one
/// kernel: channels-last convolutions (groups 1, or depthwise), max and
/// average pools (no ceil mode), each reading the previous one's result (the
/// first reads a value from outside, the chain's input), each followed by at
/// most a residual add (of the chain's input or an earlier member's final
/// value) and then a ReLU or a clamp to [0, 6]; one 16-bit float type
/// throughout, channel counts multiples of 8, and only the last value read
/// outside the group. When not, `why` says why in a line.
bool isKernelChain(ArrayRef<Operation *> members, std::string &why);

/// Whether `members` form a chain the host runs as one kernel
/// (tcc-host-region-tiles: the last member tiled, producers fused into the
/// tile loop): isKernelChain's structure (each convolution or pool reading
/// the previous one's result, a residual add and a ReLU or ReLU6 after each,
/// only the last value read outside) with convolutions (groups 1 or
/// depthwise) and max pools in any one float type, NCHW or NHWC, any channel
/// count.
bool isHostChain(ArrayRef<Operation *> members, std::string &why);

} // namespace mlir::tcc::region

#endif // TCC_PASSES_REGIONANALYSIS_H
