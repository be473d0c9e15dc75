//===- RegionCostModel.h - predicted time of region groups ------*- C++ -*-===//
//
// Region fusion (AFusion) decides which convolutions, pools and element-wise
// ops run as one kernel. This model predicts the time of such a kernel (a
// group of members and an output tile, passes/RegionAnalysis.h) and of each
// op run the way tcc runs it unfused, so that tcc-region-fusion can compare
// groupings of a function's region ops by their summed time:
//
//   kernel us = launch + max(DRAM bytes / DRAM bandwidth,
//                            L2 bytes / L2 bandwidth,
//                            tensor-core FLOPs / tensor rate
//                              + CUDA-core FLOPs / CUDA rate) / utilization
//             + waves * phase latency
//
// where utilization is the busy fraction of the multiprocessors over the
// kernel's waves of blocks (waves = ceil(blocks / (SMs * resident blocks
// per SM))). The first terms are throughput: the blocks of a wave share the
// machine. The last is latency: a block runs its members one after another
// (the region template: per GEMM member, rounds of a cp.async weight
// pipeline with a wait and a barrier per k-step, then an epilogue through
// shared memory; per depthwise or pool member, a weight copy and a
// barrier), and those phases are serial in every block, so a wave pays
// them once whatever the utilization:
//
//   phase latency = GEMM members * gemmMemberUs + GEMM rounds * gemmRoundUs
//                 + k-steps * kStepUs + CUDA-core members * cudaMemberUs
//                 + tap steps * cudaTapStepUs
//
// A CUDA-core member's tap steps are the taps one thread walks in turn:
// ceil(tile pixels * ceil(channels / 8) / blockThreads) * taps, as the
// template gives a thread a pixel and 8 channels at a time. They make a
// large depthwise window on a wide halo cost what it measures (NASNet's
// 5x5 on a 1x14 tile: 75 tap steps, 2.3 us more than a 3x3's 27).
//
// Unfused kernels have no phase term: tcc's convolution kernels stream one
// GEMM tile a block through a deeper pipeline, and their fill is in the
// launch gap (a fit with a per-kernel and a per-k-step latency for them gave
// both 0 on the session-20 groupings). The constants are per target
// (CostTarget), fitted to measured groupings by bench/region_rank.py --fit
// (docs/architecture.md, "Region fusion: the cost model and the search").
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_REGIONCOSTMODEL_H
#define TCC_PASSES_REGIONCOSTMODEL_H

#include "passes/RegionAnalysis.h"

#include <array>
#include <optional>
#include <string>

namespace mlir::tcc::region {

/// What the cost model knows of one GPU. Rates are what kernels reach, not
/// data-sheet peaks, so that refitting them to measured kernels changes
/// numbers here and nothing else.
struct CostTarget {
  /// The name the pass option and remarks use ("h200").
  const char *name = "";
  /// Multiprocessors: one region-group block per tile is resident on one.
  int64_t multiprocessors = 0;
  /// Global memory bytes per microsecond (1 TB/s = 1e6 B/us).
  double dramBytesPerUs = 0;
  /// L2 to multiprocessor bytes per microsecond: every block of a group
  /// reads the group's weights, which stay in L2 after the first block.
  double l2BytesPerUs = 0;
  /// f16/bf16 tensor-core FLOPs per microsecond a convolution reaches.
  double tensorFlopsPerUs = 0;
  /// CUDA-core FLOPs per microsecond (depthwise convolutions, pools,
  /// element-wise ops; f32 arithmetic).
  double cudaFlopsPerUs = 0;
  /// The gap one kernel adds inside a CUDA graph, microseconds.
  double launchUs = 0;
  /// Shared memory one block may use (with the dynamic opt-in), bytes.
  int64_t sharedPerBlock = 0;
  /// Shared memory of one multiprocessor, bytes: blocks resident per
  /// multiprocessor = sharedPerSM / a group's shared bytes.
  int64_t sharedPerSM = 0;
  /// Shared memory a group with a tensor-core convolution keeps for its
  /// weight tiles in flight (two stages of 64 output channels x 128 input
  /// taps in f16).
  int64_t weightStagingBytes = 0;
  /// Unfused convolutions are implicit GEMMs of (N*H*W) x Cout: a block
  /// computes gemmTileM x gemmTileN of it.
  int64_t gemmTileM = 0, gemmTileN = 0;
  /// Unfused pools, concats and element-wise kernels: output elements per
  /// block.
  int64_t elementsPerBlock = 0;
  /// Whether a group must be a chain the GPU region template runs
  /// (isKernelChain); false on the host, whose region kernels take any
  /// float type and layout (isHostChain).
  bool templateChains = true;
  /// Serial latency of a block's phases, microseconds, paid once per wave
  /// (CostModel's header comment): per tensor-core convolution member (its
  /// barrier and dependent first loads), per GEMM round of one (the weight
  /// pipeline's fill and the epilogue through shared memory), per k-step of
  /// a round (a cp.async wait and a barrier) and per CUDA-core member
  /// (depthwise convolution or pool: its weight copy and barrier).
  double gemmMemberUs = 0, gemmRoundUs = 0, kStepUs = 0, cudaMemberUs = 0;
  /// Serial latency of one tap step of a CUDA-core member (a thread's
  /// shared-memory load and 8 multiply-adds of one tap, latency-bound at
  /// the template's few warps), microseconds, paid once per wave.
  double cudaTapStepUs = 0;
  /// Threads of a region group's block (the template's 4 warps), which
  /// share a CUDA-core member's pixels and channel groups.
  int64_t blockThreads = 128;
  /// Outputs one GEMM round of a fused convolution computes at most: the
  /// template's 4 warps x 32 lanes x 64 f32 accumulators.
  int64_t gemmRoundOutputs = 8192;
  /// K (taps x input channels padded to 16) per k-step.
  int64_t kStepK = 32;
};

/// The constants for `name`: "h200" (also "sm_90", "sm_90a"), "a100"
/// ("sm_80") or "host"; std::nullopt for others.
std::optional<CostTarget> costTargetNamed(StringRef name);
/// The names costTargetNamed knows, for messages: "h200 (sm_90, sm_90a), ...".
std::string knownCostTargets();

/// Where a group's or op's FLOPs run.
enum class Unit { TensorCore, CudaCore };

/// The unit `op` (a region op) computes on: tensor cores for a convolution
/// in f16 or bf16 (f32 with `allowTf32`) with 16 or more input channels per
/// group (an mma's k); CUDA cores for depthwise and narrow grouped
/// convolutions, pools and element-wise ops.
Unit computeUnit(Operation *op, bool allowTf32);

/// A kernel's predicted time and what it is made of.
struct KernelCost {
  /// The total: launch + body / utilization + waves * phase latency.
  double us = 0;
  double launchUs = 0;
  double memoryUs = 0;  ///< max of the DRAM and the L2 term
  double computeUs = 0; ///< tensor-core plus CUDA-core time
  double utilization = 1;
  /// waves * phase latency (CostTarget::gemmMemberUs and the others).
  double phaseUs = 0;
  int64_t waves = 0;
  /// Per block: tensor-core convolution members, their GEMM rounds and
  /// k-steps summed, CUDA-core members (depthwise convolutions, pools).
  int64_t gemmMembers = 0, gemmRounds = 0, kSteps = 0, cudaMembers = 0;
  /// Per block: the taps a thread of the CUDA-core members walks in turn.
  int64_t tapSteps = 0;
  int64_t dramBytes = 0, l2Bytes = 0;
  int64_t tensorFlops = 0, cudaFlops = 0;
  int64_t blocks = 0;
  int64_t sharedBytes = 0;
  /// The group's output tile; {0, 0} for an unfused op.
  std::array<int64_t, 2> tile = {0, 0};
};

/// Scores region groups and unfused region ops on one target.
class CostModel {
public:
  CostModel(const CostTarget &target, int64_t maxMembers, bool allowTf32)
      : target(target), maxMembers(maxMembers), allowTf32(allowTf32) {}

  const CostTarget &getTarget() const { return target; }
  int64_t getMaxMembers() const { return maxMembers; }

  /// `op` as tcc runs it without region fusion: a convolution or pool is a
  /// kernel of its own (reading its input and weights, writing its result);
  /// an element-wise op that reads a convolution, pool or element-wise op
  /// is that kernel's epilogue (tcc-form-groups), costing only its other
  /// operands' bytes and its FLOPs, no launch; a concat, or an element-wise
  /// op reading none of those, is a kernel of its own.
  KernelCost unfused(Operation *op) const;

  /// Whether unfused(op) launches a kernel (false for an epilogue).
  bool launchesUnfused(Operation *op) const;

  /// The group `members` (2 or more) computed one output tile of `tile` per
  /// block. Bytes: each input from outside the group once per tile over its
  /// input window (halo re-reads included; a value broadcast over H and W,
  /// such as weights or a bias, once from DRAM and once per block from L2),
  /// each result read outside the group once; intermediates stay on chip.
  /// FLOPs: each member's executed FLOPs (halo recomputation included).
  /// Shared memory: the most member tiles live at once in block order (a
  /// member's tile lives from its computation to its last in-group reader;
  /// all channels, the elements' own width), plus weight staging.
  /// Failure, with `why`, when the analysis refuses the group, it has fewer
  /// than two convolutions and pools (element-wise ops alone are the
  /// unfused kernels' epilogues already), more than maxMembers members, or
  /// more shared memory than a block has.
  FailureOr<KernelCost> group(ArrayRef<Operation *> members,
                              std::array<int64_t, 2> tile,
                              std::string &why) const;

  /// The cheapest of `tiles` for `members` (the first on a tie); failure
  /// when no tile is legal, `why` the first tile's reason.
  FailureOr<KernelCost> bestGroup(ArrayRef<Operation *> members,
                                  ArrayRef<std::array<int64_t, 2>> tiles,
                                  std::string &why) const;

  /// Lower bounds on what `op` adds to any grouping's time, for the search's
  /// pruning: its FLOPs on its unit at full rate, and the bytes of the
  /// values it reads that no region op produces and whose first region
  /// reader it is (`firstReader`), which every grouping reads at least once
  /// (non-windowed operands only: a strided window may skip rows).
  double computeLowerBoundUs(Operation *op) const;
  int64_t memoryLowerBoundBytes(Operation *op,
                                function_ref<bool(Value)> firstReader) const;

  /// The utilization of `blocks` blocks with `perSM` resident on each
  /// multiprocessor: blocks / (waves * multiprocessors), at most 1, with
  /// waves = ceil(blocks / (multiprocessors * perSM)).
  double utilization(int64_t blocks, int64_t perSM) const;
  /// waves = ceil(blocks / (multiprocessors * perSM)) (0 for no blocks).
  int64_t waves(int64_t blocks, int64_t perSM) const;

private:
  /// launch + max(memory, compute) / utilization + waves * phase latency,
  /// filled into `cost` (its member counts set).
  void finish(KernelCost &cost, int64_t perSM) const;
  /// Adds group member `op` computing a `pixels` x `channels` tile per
  /// block to `cost`'s member counts: a tensor-core convolution is a GEMM
  /// member of ceil(pixels padded to 16 * channels / gemmRoundOutputs)
  /// rounds of ceil(K / kStepK) k-steps each (K: taps x input channels per
  /// group padded to 16); a pool or a CUDA-core convolution is a CUDA-core
  /// member of ceil(pixels * ceil(channels / 8) / blockThreads) * taps tap
  /// steps (taps: the window's, times the input channels per group of a
  /// convolution that is not depthwise); element-wise ops and concats ride
  /// the epilogues (none).
  void countMember(KernelCost &cost, Operation *op, int64_t pixels,
                   int64_t channels) const;

  CostTarget target;
  int64_t maxMembers;
  bool allowTf32;
};

/// The bytes of a ranked tensor value (elements times their width in
/// bytes, at least one byte each).
int64_t bytesOf(Value v);

} // namespace mlir::tcc::region

#endif // TCC_PASSES_REGIONCOSTMODEL_H
