//===- RegionCostModel.cpp - predicted time of region groups --------------===//
#include "passes/RegionCostModel.h"
#include "passes/ConvLayout.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::region;

namespace {

/// H200 SXM (GH100, sm_90). Sources: the data sheet (132 multiprocessors,
/// 4.8 TB/s HBM3e peak, 989 TFLOP/s dense f16 tensor, 67 TFLOP/s f32),
/// the CUDA programming guide's sm_90 limits (227 KiB of shared memory per
/// block with the opt-in, 228 KiB per multiprocessor) and what
/// ../perf/ANCHORS.md measured on this H200: a 2 GiB device copy at
/// 4.25 TB/s, cuBLAS f16 GEMM at 634-696 TFLOP/s and f32 at 51. A
/// convolution at batch 1 reaches well under the GEMM rate: 400 TFLOP/s is
/// assumed until kernels are measured. L2 at about 7 TB/s to the
/// multiprocessors (published microbenchmarks of the H100). The launch gap
/// and the phase latencies are fitted (bench/region_rank.py --fit --fix
/// rates: the rates above held) to 60 groupings of ResNet-50, MobileNetV2
/// and GoogLeNet measured in CUDA graphs (docs/performance.md, session 20):
/// 1.88 us a kernel (ResNet-50's reduce-overhead time over its kernel count
/// gave about 2), 0.27 us a k-step of a region group's GEMM and 0.65 us a
/// CUDA-core member; a GEMM member and a round fitted to 0 (the k-steps
/// carry them). A tap step, 0.048 us: the template's depthwise member alone
/// on NASNet's 42x42x168 at a 1x14 tile measured 7.8 us with a 5x5 window
/// (75 tap steps) and 5.5 us with a 3x3 (27), CUDA graphs on the H200
/// (docs/performance.md, session 30).
constexpr CostTarget kH200 = {
    /*name=*/"h200",
    /*multiprocessors=*/132,
    /*dramBytesPerUs=*/4.25e6,
    /*l2BytesPerUs=*/7.0e6,
    /*tensorFlopsPerUs=*/400e6,
    /*cudaFlopsPerUs=*/25e6,
    /*launchUs=*/1.88,
    /*sharedPerBlock=*/227 * 1024,
    /*sharedPerSM=*/228 * 1024,
    /*weightStagingBytes=*/2 * 64 * 128 * 2,
    /*gemmTileM=*/128,
    /*gemmTileN=*/64,
    /*elementsPerBlock=*/2048,
    /*templateChains=*/true,
    /*gemmMemberUs=*/0,
    /*gemmRoundUs=*/0,
    /*kStepUs=*/0.27,
    /*cudaMemberUs=*/0.65,
    /*cudaTapStepUs=*/0.048};

/// A100 SXM 80 GB (GA100, sm_80): 108 multiprocessors, 2.04 TB/s peak
/// (about 1.8 reached by copies), 312 TFLOP/s dense f16 tensor, 19.5
/// TFLOP/s f32; 163 KiB of shared memory per block, 164 KiB per
/// multiprocessor (CUDA programming guide). Unmeasured here: the rates are
/// the same fractions of the peaks as the H200's, the phase latencies the
/// H200's scaled by the clocks (1.98 against 1.41 GHz boost).
constexpr CostTarget kA100 = {
    /*name=*/"a100",
    /*multiprocessors=*/108,
    /*dramBytesPerUs=*/1.8e6,
    /*l2BytesPerUs=*/4.0e6,
    /*tensorFlopsPerUs=*/125e6,
    /*cudaFlopsPerUs=*/7.5e6,
    /*launchUs=*/2.0,
    /*sharedPerBlock=*/163 * 1024,
    /*sharedPerSM=*/164 * 1024,
    /*weightStagingBytes=*/2 * 64 * 128 * 2,
    /*gemmTileM=*/128,
    /*gemmTileN=*/64,
    /*elementsPerBlock=*/2048,
    /*templateChains=*/true,
    /*gemmMemberUs=*/0,
    /*gemmRoundUs=*/0,
    /*kStepUs=*/0.38,
    /*cudaMemberUs=*/0.91,
    /*cudaTapStepUs=*/0.068};

/// The host target (compiler/HostCodegen.cpp): a region group is a loop over
/// the last member's output tiles that the runtime's thread pool splits over
/// its threads (tcc-host-region-tiles), so a "multiprocessor" is a core and a
/// "block" a tile. Sized for CI's and the build machine's 2-core AMD EPYC
/// slices (nproc = 2; the pool runs one thread per hardware thread). DRAM:
/// about 20 GB/s for two cores of a shared server socket (a DDR4 channel is
/// 25.6 GB/s peak; two cores rarely draw more than one channel's worth).
/// Cache: L2 at about 64 B per cycle per core at ~2.5 GHz, read back with
/// loads, ~100 GB/s for two. FLOPs: tcc's host convolutions are scalar loop
/// nests that LLVM vectorises at x86-64-v2 (4 f32 lanes) only where the
/// innermost loop is contiguous; about 2 GFLOP/s per core, the same for
/// every "unit" (no tensor cores; f16 is computed in f32). A kernel launch
/// is one dispatch of the thread pool: waking the workers and joining them,
/// about 10 us. A tile's working set is to stay in a core's L2 (512 KiB on
/// Zen 2-4 EPYC): the "shared memory" bound, no weight staging. Unfused
/// convolutions and pools are split by output rows: one "block" per 64
/// output pixels, and channels whole. No phase latency: a host tile's
/// members are loop nests whose cost the FLOPs and bytes carry.
constexpr CostTarget kHost = {
    /*name=*/"host",
    /*multiprocessors=*/2,
    /*dramBytesPerUs=*/2.0e4,
    /*l2BytesPerUs=*/1.0e5,
    /*tensorFlopsPerUs=*/4.0e3,
    /*cudaFlopsPerUs=*/4.0e3,
    /*launchUs=*/10.0,
    /*sharedPerBlock=*/512 * 1024,
    /*sharedPerSM=*/512 * 1024,
    /*weightStagingBytes=*/0,
    /*gemmTileM=*/64,
    /*gemmTileN=*/int64_t(1) << 40,
    /*elementsPerBlock=*/4096,
    /*templateChains=*/false};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

int64_t elementBytes(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

int64_t elementsOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

bool isHeavy(const RegionOpInfo &info) {
  return info.kind == RegionOpInfo::Kind::Conv ||
         info.kind == RegionOpInfo::Kind::MaxPool ||
         info.kind == RegionOpInfo::Kind::AvgPool;
}

/// An element-wise op that tcc-form-groups makes the epilogue of a
/// convolution's, pool's or element-wise op's kernel: the first operand
/// such an op produces (the kernel's anchor), or null.
Value epilogueAnchor(Operation *op, const RegionOpInfo &info) {
  if (info.kind != RegionOpInfo::Kind::Pointwise)
    return nullptr;
  for (Value v : op->getOperands()) {
    Operation *def = v.getDefiningOp();
    if (!def)
      continue;
    std::optional<RegionOpInfo> d = regionInfo(def);
    if (d && d->kind != RegionOpInfo::Kind::Concat)
      return v;
  }
  return nullptr;
}

/// Input channels per group of `conv` (its weight's [O, KH, KW, C/g] in
/// NHWC, [O, C/g, KH, KW] in NCHW).
int64_t inChannelsPerGroup(Conv2dOp conv) {
  ArrayRef<int64_t> w = shapeOf(conv.getWeight());
  return conv.getNhwc() ? w[3] : w[1];
}

/// Whether `v`, read by a member of `layout`, is the same for every tile
/// (weights, a bias, a per-channel scale): not rank 4, or extent 1 on both
/// spatial axes.
bool broadcastOverTiles(Value v, Layout layout) {
  ArrayRef<int64_t> shape = shapeOf(v);
  if (shape.size() != 4)
    return true;
  std::array<unsigned, 2> axes = spatialAxes(layout);
  return shape[axes[0]] == 1 && shape[axes[1]] == 1;
}

} // namespace

int64_t region::bytesOf(Value v) { return elementsOf(v) * elementBytes(v); }

std::optional<CostTarget> region::costTargetNamed(StringRef name) {
  if (name == "h200" || name == "sm_90" || name == "sm_90a")
    return kH200;
  if (name == "a100" || name == "sm_80")
    return kA100;
  if (name == "host")
    return kHost;
  return std::nullopt;
}

std::string region::knownCostTargets() {
  return "h200 (sm_90, sm_90a), a100 (sm_80), host";
}

Unit region::computeUnit(Operation *op, bool allowTf32) {
  auto conv = dyn_cast<Conv2dOp>(op);
  if (!conv)
    return Unit::CudaCore;
  int64_t cinPerGroup = inChannelsPerGroup(conv);
  Type elt = cast<RankedTensorType>(conv.getType()).getElementType();
  return convUsesTensorCores(elt, allowTf32) && cinPerGroup >= 16
             ? Unit::TensorCore
             : Unit::CudaCore;
}

int64_t CostModel::waves(int64_t blocks, int64_t perSM) const {
  if (blocks <= 0)
    return 0;
  return ceilDiv(blocks, target.multiprocessors * std::max<int64_t>(1, perSM));
}

double CostModel::utilization(int64_t blocks, int64_t perSM) const {
  if (blocks <= 0)
    return 1;
  return std::min(1.0, double(blocks) / double(waves(blocks, perSM) *
                                               target.multiprocessors));
}

void CostModel::countMember(KernelCost &cost, Operation *op, int64_t pixels,
                            int64_t channels) const {
  std::optional<RegionOpInfo> info = regionInfo(op);
  if (!info || !isHeavy(*info))
    return;
  if (computeUnit(op, allowTf32) != Unit::TensorCore) {
    ++cost.cudaMembers;
    int64_t taps = info->kernel[0] * info->kernel[1];
    if (auto conv = dyn_cast<Conv2dOp>(op))
      taps *= inChannelsPerGroup(conv);
    cost.tapSteps += ceilDiv(pixels * ceilDiv(channels, 8),
                             std::max<int64_t>(1, target.blockThreads)) *
                     taps;
    return;
  }
  int64_t cinPerGroup = inChannelsPerGroup(cast<Conv2dOp>(op));
  int64_t k = info->kernel[0] * info->kernel[1] * ceilDiv(cinPerGroup, 16) * 16;
  int64_t rounds = ceilDiv(ceilDiv(pixels, 16) * 16 * channels,
                           std::max<int64_t>(1, target.gemmRoundOutputs));
  ++cost.gemmMembers;
  cost.gemmRounds += rounds;
  cost.kSteps += rounds * ceilDiv(k, std::max<int64_t>(1, target.kStepK));
}

void CostModel::finish(KernelCost &cost, int64_t perSM) const {
  cost.launchUs = target.launchUs;
  cost.memoryUs = std::max(double(cost.dramBytes) / target.dramBytesPerUs,
                           double(cost.l2Bytes) / target.l2BytesPerUs);
  cost.computeUs = double(cost.tensorFlops) / target.tensorFlopsPerUs +
                   double(cost.cudaFlops) / target.cudaFlopsPerUs;
  cost.utilization = utilization(cost.blocks, perSM);
  cost.waves = waves(cost.blocks, perSM);
  // Serial in every block, so once per wave (not divided by utilization).
  cost.phaseUs =
      double(cost.waves) * (double(cost.gemmMembers) * target.gemmMemberUs +
                            double(cost.gemmRounds) * target.gemmRoundUs +
                            double(cost.kSteps) * target.kStepUs +
                            double(cost.cudaMembers) * target.cudaMemberUs +
                            double(cost.tapSteps) * target.cudaTapStepUs);
  cost.us = cost.launchUs +
            std::max(cost.memoryUs, cost.computeUs) / cost.utilization +
            cost.phaseUs;
}

bool CostModel::launchesUnfused(Operation *op) const {
  std::optional<RegionOpInfo> info = regionInfo(op);
  return !info || !epilogueAnchor(op, *info);
}

KernelCost CostModel::unfused(Operation *op) const {
  KernelCost cost;
  std::optional<RegionOpInfo> info = regionInfo(op);
  if (!info)
    return cost;
  Value result = op->getResult(0);
  int64_t flops = elementsOf(result) * info->flopsPerElement;
  (computeUnit(op, allowTf32) == Unit::TensorCore ? cost.tensorFlops
                                                  : cost.cudaFlops) = flops;
  llvm::SmallPtrSet<Value, 4> seen;
  if (Value anchor = epilogueAnchor(op, *info)) {
    // Rides its anchor's kernel: reads its other operands, writes nothing
    // the anchor would not have written.
    for (Value v : op->getOperands())
      if (v != anchor && seen.insert(v).second)
        cost.dramBytes += bytesOf(v);
    cost.memoryUs = double(cost.dramBytes) / target.dramBytesPerUs;
    cost.computeUs = double(cost.cudaFlops) / target.cudaFlopsPerUs;
    cost.us = cost.memoryUs + cost.computeUs;
    return cost;
  }
  for (Value v : op->getOperands())
    if (seen.insert(v).second)
      cost.dramBytes += bytesOf(v);
  cost.dramBytes += bytesOf(result);
  if (info->kind == RegionOpInfo::Kind::Conv) {
    ArrayRef<int64_t> shape = shapeOf(result);
    std::array<unsigned, 2> axes = spatialAxes(*info->layout);
    int64_t rows = shape[0] * shape[axes[0]] * shape[axes[1]];
    int64_t channels = shape[channelAxis(*info->layout)];
    cost.blocks =
        ceilDiv(rows, target.gemmTileM) * ceilDiv(channels, target.gemmTileN);
  } else {
    cost.blocks = ceilDiv(elementsOf(result), target.elementsPerBlock);
  }
  finish(cost, /*perSM=*/2);
  return cost;
}

FailureOr<KernelCost> CostModel::group(ArrayRef<Operation *> members,
                                       std::array<int64_t, 2> tile,
                                       std::string &why) const {
  auto fail = [&](const Twine &message) {
    why = message.str();
    return failure();
  };
  if ((int64_t)members.size() > maxMembers)
    return fail("region group of " + Twine(members.size()) +
                " members is over the limit of " + Twine(maxMembers));
  // Only chains the region template runs are groups (the kernels that run
  // branches and concats are yet to come).
  if (target.templateChains ? !isKernelChain(members, why)
                            : !isHostChain(members, why))
    return failure();
  RegionError error;
  FailureOr<GroupFootprint> footprint = groupFootprint(members, tile, error);
  if (failed(footprint))
    return fail(error.message);
  int heavy = 0;
  for (const MemberTile &m : footprint->members)
    heavy += isHeavy(*regionInfo(m.op));
  if (heavy < 2)
    return fail("region group has " + Twine(heavy) +
                " convolutions and pools; it needs two or more (element-wise "
                "ops are the unfused kernels' epilogues already)");

  KernelCost cost;
  cost.tile = tile;
  int64_t tiles = footprint->tiles;
  cost.blocks = tiles;
  llvm::DenseMap<Operation *, unsigned> index;
  for (auto [i, m] : llvm::enumerate(footprint->members))
    index[m.op] = i;

  // Inputs from outside: the largest window any member reads of each.
  llvm::MapVector<Value, int64_t> perTile; // bytes one tile reads
  llvm::SmallPtrSet<Value, 8> whole;
  // Shared memory: a member's own tile, and an input it stages with halo.
  SmallVector<int64_t> tileBytes, stagedBytes;
  bool tensorConv = false;
  for (const MemberTile &m : footprint->members) {
    std::optional<RegionOpInfo> info = regionInfo(m.op);
    int64_t executed = std::max(m.flops, m.executed);
    bool tensor = computeUnit(m.op, allowTf32) == Unit::TensorCore;
    tensorConv |= tensor;
    (tensor ? cost.tensorFlops : cost.cudaFlops) += executed;

    Value result = m.op->getResult(0);
    ArrayRef<int64_t> outShape = shapeOf(result);
    countMember(cost, m.op, m.out[0] * m.out[1],
                outShape[channelAxis(m.layout)]);
    tileBytes.push_back(m.out[0] * m.out[1] * outShape[channelAxis(m.layout)] *
                        elementBytes(result));
    int64_t staged = 0;
    std::array<unsigned, 2> axes = spatialAxes(m.layout);
    for (Value v : m.op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && index.count(def))
        continue;
      bool windowed = v == info->windowed;
      if ((info->windowed && !windowed) || broadcastOverTiles(v, m.layout)) {
        whole.insert(v);
        continue;
      }
      ArrayRef<int64_t> shape = shapeOf(v);
      std::array<int64_t, 2> window = windowed ? m.in : m.out;
      int64_t bytes = std::min(window[0], shape[axes[0]]) *
                      std::min(window[1], shape[axes[1]]) *
                      shape[channelAxis(m.layout)] * elementBytes(v);
      int64_t &slot = perTile[v];
      slot = std::max(slot, bytes);
      if (windowed)
        staged += bytes;
    }
    stagedBytes.push_back(staged);
    bool output = result.use_empty() ||
                  llvm::any_of(result.getUsers(), [&](Operation *user) {
                    return !index.count(user);
                  });
    if (output)
      cost.dramBytes += bytesOf(result);
  }
  for (auto &[v, bytes] : perTile)
    cost.dramBytes += tiles * bytes;
  for (Value v : whole) {
    cost.dramBytes += bytesOf(v);
    cost.l2Bytes += tiles * bytesOf(v);
  }

  // Live tiles in block order.
  unsigned n = footprint->members.size();
  SmallVector<unsigned> lastUse(n);
  for (unsigned i = 0; i < n; ++i) {
    lastUse[i] = i;
    for (Operation *user : footprint->members[i].op->getUsers())
      if (auto it = index.find(user); it != index.end())
        lastUse[i] = std::max(lastUse[i], it->second);
  }
  int64_t peak = 0;
  for (unsigned k = 0; k < n; ++k) {
    Operation *op = footprint->members[k].op;
    // A concat's tile is its inputs' tiles side by side: they end there.
    bool concat = isa<ConcatOp>(op);
    int64_t live = tileBytes[k] + stagedBytes[k];
    for (unsigned j = 0; j < k; ++j) {
      if (lastUse[j] < k)
        continue;
      if (concat && lastUse[j] == k &&
          llvm::is_contained(op->getOperands(),
                             footprint->members[j].op->getResult(0)))
        continue;
      live += tileBytes[j];
    }
    peak = std::max(peak, live);
  }
  cost.sharedBytes = peak + (tensorConv ? target.weightStagingBytes : 0);
  if (cost.sharedBytes > target.sharedPerBlock)
    return fail("region group needs " + Twine(cost.sharedBytes) +
                " bytes of shared memory for tile " + Twine(tile[0]) + "x" +
                Twine(tile[1]) + ", over the " + Twine(target.sharedPerBlock) +
                " a block has on " + target.name);
  int64_t perSM = std::clamp<int64_t>(
      target.sharedPerSM / std::max<int64_t>(1, cost.sharedBytes), 1, 4);
  finish(cost, perSM);
  return cost;
}

FailureOr<KernelCost>
CostModel::bestGroup(ArrayRef<Operation *> members,
                     ArrayRef<std::array<int64_t, 2>> tiles,
                     std::string &why) const {
  std::optional<KernelCost> best;
  std::string first;
  for (std::array<int64_t, 2> tile : tiles) {
    std::string reason;
    FailureOr<KernelCost> cost = group(members, tile, reason);
    if (failed(cost)) {
      if (first.empty())
        first = reason;
      continue;
    }
    if (!best || cost->us < best->us)
      best = *cost;
  }
  if (!best) {
    why = first;
    return failure();
  }
  return *best;
}

double CostModel::computeLowerBoundUs(Operation *op) const {
  std::optional<RegionOpInfo> info = regionInfo(op);
  if (!info)
    return 0;
  double flops =
      double(elementsOf(op->getResult(0))) * double(info->flopsPerElement);
  return computeUnit(op, allowTf32) == Unit::TensorCore
             ? flops / target.tensorFlopsPerUs
             : flops / target.cudaFlopsPerUs;
}

int64_t
CostModel::memoryLowerBoundBytes(Operation *op,
                                 function_ref<bool(Value)> firstReader) const {
  std::optional<RegionOpInfo> info = regionInfo(op);
  if (!info)
    return 0;
  int64_t bytes = 0;
  llvm::SmallPtrSet<Value, 4> seen;
  for (Value v : op->getOperands()) {
    if (v == info->windowed || !seen.insert(v).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (def && regionInfo(def))
      continue;
    if (firstReader(v))
      bytes += bytesOf(v);
  }
  return bytes;
}
