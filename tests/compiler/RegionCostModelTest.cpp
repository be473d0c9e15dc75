//===- RegionCostModelTest.cpp - the region cost model's arithmetic -------===//
//
// passes/RegionCostModel.h on the H200 constants, against values worked out
// by hand from the documented formula (docs/architecture.md, "Region
// fusion: the cost model and the search").
//
//===----------------------------------------------------------------------===//
#include "passes/RegionCostModel.h"
#include "compiler/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace mlir;
using namespace mlir::tcc::region;

namespace {

// Two 3x3 pad-1 convs, a relu between them reading the first (an
// epilogue), a depthwise conv, an f32 conv, two wide max pools, and a
// conv -> relu -> depthwise chain.
const char *kSource = R"mlir(
func.func @f(%x: tensor<1x64x64x32xf16>, %w1: tensor<32x3x3x32xf16>, %w2: tensor<32x3x3x32xf16>, %dw: tensor<32x3x3x1xf16>, %y: tensor<1x16x16x32xf32>, %w3: tensor<32x3x3x32xf32>, %p: tensor<1x128x128x2048xf16>) -> (tensor<1x64x64x32xf16>, tensor<1x64x64x32xf16>, tensor<1x16x16x32xf32>, tensor<1x128x128x2048xf16>, tensor<1x64x64x32xf16>) {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16>
  %1 = tcc.conv2d %0, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16>
  %2 = tcc.relu %1 : tensor<1x64x64x32xf16>
  %3 = tcc.conv2d %2, %dw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 32 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x1xf16> -> tensor<1x64x64x32xf16>
  %4 = tcc.conv2d %y, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x16x16x32xf32>, tensor<32x3x3x32xf32> -> tensor<1x16x16x32xf32>
  %5 = tcc.max_pool2d %p {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : tensor<1x128x128x2048xf16> -> tensor<1x128x128x2048xf16>
  %6 = tcc.max_pool2d %5 {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : tensor<1x128x128x2048xf16> -> tensor<1x128x128x2048xf16>
  %7 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16>
  %8 = tcc.relu %7 : tensor<1x64x64x32xf16>
  %9 = tcc.conv2d %8, %dw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 32 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x1xf16> -> tensor<1x64x64x32xf16>
  return %2, %3, %4, %6, %9 : tensor<1x64x64x32xf16>, tensor<1x64x64x32xf16>, tensor<1x16x16x32xf32>, tensor<1x128x128x2048xf16>, tensor<1x64x64x32xf16>
}
)mlir";

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    ::tcc::registerAllDialects(registry);
    auto *c = new MLIRContext(registry);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

struct Parsed {
  OwningOpRef<ModuleOp> module;
  SmallVector<Operation *> ops; ///< the function's ops but its return
};

Parsed parse() {
  Parsed p;
  p.module = parseSourceString<ModuleOp>(kSource, &context());
  REQUIRE(p.module);
  auto f = cast<func::FuncOp>(p.module->getBody()->front());
  for (Operation &op : f.getBody().front().without_terminator())
    p.ops.push_back(&op);
  return p;
}

} // namespace

TEST_CASE("region cost model: targets", "[region]") {
  REQUIRE(costTargetNamed("sm_90a"));
  CHECK(std::string(costTargetNamed("sm_90a")->name) == "h200");
  CHECK(std::string(costTargetNamed("sm_90")->name) == "h200");
  CHECK(std::string(costTargetNamed("sm_80")->name) == "a100");
  CHECK_FALSE(costTargetNamed("sm_86"));
  REQUIRE(costTargetNamed("host"));
  CHECK(std::string(costTargetNamed("host")->name) == "host");
  // The host's groups follow isHostChain, not the GPU template's rules.
  CHECK_FALSE(costTargetNamed("host")->templateChains);
  CHECK(costTargetNamed("h200")->templateChains);
}

TEST_CASE("region cost model: utilization over waves", "[region]") {
  CostModel model(*costTargetNamed("h200"), 8, false);
  // 132 multiprocessors. 33 blocks: a quarter busy.
  CHECK(model.utilization(33, 1) == Approx(0.25));
  // 200 blocks, one resident per multiprocessor: 2 waves of 132.
  CHECK(model.utilization(200, 1) == Approx(200.0 / 264));
  // Two resident: one wave, every multiprocessor busy.
  CHECK(model.utilization(200, 2) == Approx(1.0));
  CHECK(model.utilization(0, 1) == Approx(1.0));
}

TEST_CASE("region cost model: compute units", "[region]") {
  Parsed p = parse();
  CHECK(computeUnit(p.ops[0], false) == Unit::TensorCore); // f16, Cin 32
  CHECK(computeUnit(p.ops[2], false) == Unit::CudaCore);   // relu
  CHECK(computeUnit(p.ops[3], false) == Unit::CudaCore);   // depthwise
  CHECK(computeUnit(p.ops[4], false) == Unit::CudaCore);   // f32
  CHECK(computeUnit(p.ops[4], true) == Unit::TensorCore);  // f32 on tf32
  CHECK(computeUnit(p.ops[5], false) == Unit::CudaCore);   // pool
}

TEST_CASE("region cost model: unfused kernels", "[region]") {
  Parsed p = parse();
  CostModel model(*costTargetNamed("h200"), 8, false);
  // The first conv: input 64*64*32*2 = 262144 B, weights 32*9*32*2 =
  // 18432, result 262144; 4096 * 32 results of 2 * 32 * 9 FLOPs; blocks
  // ceil(4096 / 128) * ceil(32 / 64) = 32. Compute-bound: 75497472 / 400e6
  // = 0.18874368 us over 32 / 132 busy, after the 1.88 us launch; no
  // phase latency (unfused kernels have none).
  KernelCost conv = model.unfused(p.ops[0]);
  CHECK(conv.dramBytes == 542720);
  CHECK(conv.l2Bytes == 0);
  CHECK(conv.tensorFlops == 75497472);
  CHECK(conv.cudaFlops == 0);
  CHECK(conv.blocks == 32);
  CHECK(conv.utilization == Approx(32.0 / 132));
  CHECK(conv.memoryUs == Approx(542720 / 4.25e6));
  CHECK(conv.us == Approx(1.88 + 0.18874368 * 132 / 32));
  CHECK(conv.phaseUs == 0);
  CHECK(conv.gemmMembers == 0);
  CHECK(conv.kSteps == 0);
  CHECK(model.launchesUnfused(p.ops[0]));

  // The relu reads a conv: its epilogue, no launch, no bytes of its own;
  // 131072 FLOPs on CUDA cores.
  KernelCost relu = model.unfused(p.ops[2]);
  CHECK_FALSE(model.launchesUnfused(p.ops[2]));
  CHECK(relu.dramBytes == 0);
  CHECK(relu.us == Approx(131072 / 25e6));

  // The depthwise conv on CUDA cores: 131072 * 18 FLOPs = 2359296 ->
  // 0.09437 us; bytes 262144 + 576 + 262144 = 524864 -> 0.12350 us:
  // memory-bound, over 32 blocks.
  KernelCost dw = model.unfused(p.ops[3]);
  CHECK(dw.cudaFlops == 2359296);
  CHECK(dw.us == Approx(1.88 + 524864 / 4.25e6 * 132 / 32));
  CHECK(dw.cudaMembers == 0);
}

TEST_CASE("region cost model: a fused pair of convs", "[region]") {
  Parsed p = parse();
  CostModel model(*costTargetNamed("h200"), 8, false);
  std::string why;
  // Tile 8x8: 64 tiles; the first conv computes 10x10 of each from a staged
  // 12x12 input. Executed FLOPs 64 * 100 * 32 * 576 + 75497472; DRAM: 64 *
  // 12 * 12 * 32 * 2 + both weights + the result (read outside); L2: the
  // weights once per tile. Shared: 10x10x32 + 12x12x32 halves and the
  // weight staging, 4 blocks per multiprocessor; 64 / 132 busy, one wave.
  // Phases: two GEMM members of one round each (112 and 64 pixels padded to
  // 16, times 32 channels, under 8192 outputs), each of 9 k-steps (K = 9
  // taps * 32 channels = 288 = 9 * 32): 18 * 0.27 us.
  FailureOr<KernelCost> g = model.group({p.ops[0], p.ops[1]}, {8, 8}, why);
  REQUIRE(succeeded(g));
  CHECK(g->blocks == 64);
  CHECK(g->tensorFlops == 193462272);
  CHECK(g->dramBytes == 589824 + 36864 + 262144);
  CHECK(g->l2Bytes == 64 * 36864);
  CHECK(g->sharedBytes == 6400 + 9216 + 32768);
  CHECK(g->computeUs == Approx(193462272 / 400e6));
  CHECK(g->memoryUs == Approx(64 * 36864 / 7e6));
  CHECK(g->waves == 1);
  CHECK(g->gemmMembers == 2);
  CHECK(g->gemmRounds == 2);
  CHECK(g->kSteps == 18);
  CHECK(g->cudaMembers == 0);
  CHECK(g->phaseUs == Approx(18 * 0.27));
  CHECK(g->us == Approx(1.88 + 193462272 / 400e6 * 132 / 64 + 18 * 0.27));

  // The best of 4, 8, 16 and 32 is 8 (tests/ir/region-fusion.mlir, @pair):
  // at 4 the L2 term (256 tiles of the weights) grows, at 16 the phases (a
  // second round of the first conv below).
  FailureOr<KernelCost> best = model.bestGroup(
      {p.ops[0], p.ops[1]}, {{4, 4}, {8, 8}, {16, 16}, {32, 32}}, why);
  REQUIRE(succeeded(best));
  CHECK(best->tile == std::array<int64_t, 2>{8, 8});

  // A group with one conv is the unfused kernel with an epilogue.
  CHECK(failed(model.group({p.ops[1], p.ops[2]}, {8, 8}, why)));
  CHECK(why.find("needs two or more") != std::string::npos);
  // Over max-members.
  CostModel small(*costTargetNamed("h200"), 2, false);
  CHECK(failed(small.group({p.ops[0], p.ops[1], p.ops[2]}, {8, 8}, why)));
  CHECK(why.find("over the limit of 2") != std::string::npos);
}

TEST_CASE("region cost model: phase latency", "[region]") {
  Parsed p = parse();
  CostModel model(*costTargetNamed("h200"), 8, false);
  std::string why;
  // The conv pair at 16x16: 16 tiles, one wave. The first conv's 18x18
  // tile is 324 pixels, padded to 336: 336 * 32 = 10752 outputs, two
  // rounds of at most 8192; the second's 256 * 32 = 8192, one. 9 k-steps a
  // round: 27, serial in the block.
  FailureOr<KernelCost> g = model.group({p.ops[0], p.ops[1]}, {16, 16}, why);
  REQUIRE(succeeded(g));
  CHECK(g->blocks == 16);
  CHECK(g->waves == 1);
  CHECK(g->gemmMembers == 2);
  CHECK(g->gemmRounds == 3);
  CHECK(g->kSteps == 27);
  CHECK(g->phaseUs == Approx(27 * 0.27));

  // Conv, relu (an epilogue: no phase) and the depthwise conv (a CUDA-core
  // member) at 8x8: the conv's 10x10 tile is one round of 9 k-steps; the
  // depthwise conv's 64 pixels x 4 groups of 8 channels are 2 per thread
  // of 128, 9 taps each: 18 tap steps.
  g = model.group({p.ops[7], p.ops[8], p.ops[9]}, {8, 8}, why);
  INFO(why);
  REQUIRE(succeeded(g));
  CHECK(g->gemmMembers == 1);
  CHECK(g->gemmRounds == 1);
  CHECK(g->kSteps == 9);
  CHECK(g->cudaMembers == 1);
  CHECK(g->tapSteps == 18);
  CHECK(g->phaseUs == Approx(9 * 0.27 + 0.65 + 18 * 0.048));

  // The two pools at 2x2: 64 * 64 = 4096 tiles. Shared: the first pool's
  // 4x4x2048 tile (65536 B) and its staged 6x6x2048 input (147456 B),
  // 212992 B: one block per multiprocessor, 32 waves of 132. Two CUDA-core
  // members a block, paid once a wave with their tap steps (the first
  // pool's 16 pixels x 256 channel groups, 32 a thread, and the second's 4 x
  // 256, 8 a thread; 9 taps each: 360): 32 * (2 * 0.65 + 360 * 0.048) us,
  // beside the memory-bound body: DRAM 4096 * 147456 + the 128x128x2048
  // result, over 4096 / (32 * 132) busy.
  g = model.group({p.ops[5], p.ops[6]}, {2, 2}, why);
  REQUIRE(succeeded(g));
  CHECK(g->sharedBytes == 212992);
  CHECK(g->blocks == 4096);
  CHECK(g->waves == 32);
  CHECK(g->utilization == Approx(4096.0 / (32 * 132)));
  CHECK(g->cudaMembers == 2);
  CHECK(g->gemmMembers == 0);
  CHECK(g->tapSteps == 360);
  CHECK(g->phaseUs == Approx(32 * (2 * 0.65 + 360 * 0.048)));
  CHECK(g->dramBytes == int64_t(4096) * 147456 + 67108864);
  CHECK(g->us ==
        Approx(1.88 +
               (4096.0 * 147456 + 67108864) / 4.25e6 / (4096.0 / (32 * 132)) +
               32 * (2 * 0.65 + 360 * 0.048)));

  // The host has no phase latency.
  CostModel host(*costTargetNamed("host"), 8, false);
  g = host.group({p.ops[0], p.ops[1]}, {8, 8}, why);
  REQUIRE(succeeded(g));
  CHECK(g->kSteps == 18);
  CHECK(g->phaseUs == 0);
}

TEST_CASE("region cost model: shared memory limit", "[region]") {
  Parsed p = parse();
  CostModel model(*costTargetNamed("h200"), 8, false);
  std::string why;
  // 6*6*2048*2 + 8*8*2048*2 = 409600 B at tile 4, over 227 KiB.
  CHECK(failed(model.group({p.ops[5], p.ops[6]}, {4, 4}, why)));
  CHECK(why == "region group needs 409600 bytes of shared memory for tile "
               "4x4, over the 232448 a block has on h200");
}

TEST_CASE("region cost model: lower bounds", "[region]") {
  Parsed p = parse();
  CostModel model(*costTargetNamed("h200"), 8, false);
  // The first conv's weights, read at least once; its input is windowed.
  CHECK(model.memoryLowerBoundBytes(p.ops[0], [](Value) { return true; }) ==
        18432);
  CHECK(model.memoryLowerBoundBytes(p.ops[0], [](Value) { return false; }) ==
        0);
  // The relu's operand comes from a region op: nothing.
  CHECK(model.memoryLowerBoundBytes(p.ops[2], [](Value) { return true; }) == 0);
  CHECK(model.computeLowerBoundUs(p.ops[0]) == Approx(75497472 / 400e6));
  // Never above a grouping's cost: the unfused kernel and the fused pair.
  std::string why;
  FailureOr<KernelCost> g = model.group({p.ops[0], p.ops[1]}, {8, 8}, why);
  REQUIRE(succeeded(g));
  CHECK(model.computeLowerBoundUs(p.ops[0]) +
            model.computeLowerBoundUs(p.ops[1]) <=
        g->us);
  CHECK(model.computeLowerBoundUs(p.ops[0]) <= model.unfused(p.ops[0]).us);
}
