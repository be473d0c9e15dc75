// RUN: tcc-opt %s --split-input-file --tcc-region-fusion | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-region-fusion --tcc-annotate-regions | FileCheck %s --check-prefix=TILE

// The H200 constants (passes/RegionCostModel.cpp): 132 multiprocessors,
// DRAM 4.25e6 B/us, L2 7e6 B/us, tensor cores 400e6 FLOP/us, CUDA cores
// 25e6 FLOP/us, launch 1.88 us, 232448 B of shared memory per block and
// 233472 per multiprocessor, 32768 B of weight staging, unfused convolutions
// in blocks of 128 output pixels x 64 channels (2 resident per
// multiprocessor); phase latency 0.27 us a k-step of a group's GEMM member
// and 0.65 us a CUDA-core member (depthwise, pool).
// A kernel: 1.88 + max(DRAM / 4.25e6, L2 / 7e6, tensor FLOPs / 400e6 + CUDA
// FLOPs / 25e6) / utilization + waves * phase latency (groups only),
// utilization = blocks / (waves * 132), at most 1, waves = ceil(blocks /
// (132 * resident)). A GEMM member: ceil(tile pixels padded to 16 * Cout /
// 8192) rounds of ceil(taps * Cin padded to 16 / 32) k-steps. All f16 (2
// bytes).

// Two 3x3 pad-1 convs, 1x64x64x32 NHWC, 32 -> 32 channels.
// Unfused, each: 32 * 1 = 32 blocks, utilization 32 / 132; FLOPs 4096 * 32
// * (2 * 32 * 9) = 75497472 -> 0.18874368 us; bytes 262144 + 18432 +
// 262144 -> 0.1277 us; 1.88 + 0.18874368 * 132 / 32 = 2.658568 us. Both:
// 5.317 us.
// Fused, tile 8x8: 64 tiles. FLOPs: the first conv computes 10x10 per
// tile, 64 * 100 * 32 * 576 = 117964800, the second 75497472: 193462272 ->
// 0.48365568 us. DRAM: 64 tiles of a 12x12x32 input (589824) + weights
// 36864 + output 262144 -> 0.2091 us; L2: 64 * 36864 -> 0.3370 us. Shared:
// 10*10*32*2 + 12*12*32*2 = 15616 (+ 32768 staging), 4 resident, 1 wave,
// utilization 64 / 132: 1.88 + 0.48365568 * 132 / 64 = 2.877540 us, plus
// the phases: each conv one round (112 * 32 and 64 * 32 outputs) of 9
// k-steps (K = 9 * 32 = 288), 18 * 0.27 = 4.86 us: 7.738 us. Tile 4x4: 256
// tiles, utilization 1, L2 256 * 36864 / 7e6 = 1.348 us, the same 18
// k-steps: 8.088 us. Tile 16x16: the first conv's 18x18 tile (336 * 32
// outputs) takes two rounds, 27 k-steps, and 16 tiles use 16 / 132: 12.7
// us. Tile 32x32: more. The best tile is a rectangle, 2x16 (7.435 us:
// 128 tiles, the same 18 k-steps). Not fused: the serial k-steps of two
// small GEMMs cost more than the launch and the traffic they save (forced,
// the group is region-fusion-force.mlir's, 7435 ns against 5317).
// CHECK-LABEL: func.func @pair
// CHECK-NOT: tcc.region_group
// CHECK: return
func.func @pair(%x: tensor<1x64x64x32xf16>, %w1: tensor<32x3x3x32xf16>, %w2: tensor<32x3x3x32xf16>) -> tensor<1x64x64x32xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16>
  %1 = tcc.conv2d %0, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16>
  return %1 : tensor<1x64x64x32xf16>
}

// -----

// Two 1x1 convs, 1x64x64x32 NHWC, 32 -> 32 channels: one k-step each.
// Unfused, each: 32 blocks, utilization 32 / 132; bytes 262144 + 2048 +
// 262144 = 526336 -> 0.123844 us, FLOPs 4096 * 32 * 64 = 8388608 ->
// 0.020972 us: memory-bound, 1.88 + 0.123844 * 132 / 32 = 2.390856 us.
// Both: 4.782 us.
// Fused, tile 4x4: 256 tiles, no halo. DRAM 256 * 4 * 4 * 32 * 2 + 2 * 2048
// + 262144 = 528384 -> 0.124326 us; L2 256 * 4096 -> 0.149797 us. Shared:
// two 4x4x32 tiles (the input staged, the first conv's) 2048 + 32768
// staging = 34816, 4 resident, one wave, utilization 1. Phases: two
// members of one round (16 * 32 outputs) and one k-step (K = 32): 0.54 us.
// 1.88 + 0.149797 + 0.54 = 2.569797 us. Tile 1x32: 128 tiles (a wave,
// utilization 128 / 132), the same DRAM bytes, L2 128 * 4096 -> 0.074898
// us, shared 2 * 2048 + 32768 = 36864, the same phases (32 pixels a
// round): 1.88 + 0.124326 * 132 / 128 + 0.54 = 2.548211 us. Tile 8x8: 64
// tiles, 1.88 + 0.124326 * 132 / 64 + 0.54 = 2.676 us; larger tiles fill
// fewer multiprocessors. One group, tile 1x32, 2548 ns against 4782.
// CHECK-LABEL: func.func @pair_1x1
// CHECK: tcc.conv2d {{.*}}tcc.region_group = 0 : i64
// CHECK-NOT: tcc.region_plan
// CHECK: tcc.conv2d {{.*}}tcc.region_group = 0 : i64, tcc.region_plan = #tcc.region_plan<tile = [1, 32], members = 2, predicted_ns = 2548, unfused_ns = 4782, shared = 36864>
// TILE-LABEL: func.func @pair_1x1
// TILE: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [1, 32], in = [1, 32], halo = [0, 0], flops = 8388608, executed = 8388608>
// TILE: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [1, 32], in = [1, 32], halo = [0, 0], flops = 8388608, executed = 8388608>
func.func @pair_1x1(%x: tensor<1x64x64x32xf16>, %w1: tensor<32x1x1x32xf16>, %w2: tensor<32x1x1x32xf16>) -> tensor<1x64x64x32xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x1x1x32xf16> -> tensor<1x64x64x32xf16>
  %1 = tcc.conv2d %0, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x1x1x32xf16> -> tensor<1x64x64x32xf16>
  return %1 : tensor<1x64x64x32xf16>
}

// -----

// Halos that blow up the recomputation: two 7x7 pad-3 convs, 1x128x128x64.
// Unfused, each: 128 blocks (utilization 128 / 132), FLOPs 16384 * 64 *
// 6272 = 6576668672 -> 16.4417 us; 1.88 + 16.4417 * 132 / 128 = 18.835
// us; both 37.67 us. Fused, the first conv computes a 14x14 tile per 8x8
// (3.06x) at tile 8: 256 * 196 * 64 * 6272 + 6576668672 = 26717716480
// FLOPs -> 66.79 us at utilization 1, 68.67 us before any phase; 22x22 per
// 16x16 at tile 16 on 64 tiles: 1.88 + 47.52 * 132 / 64 = 99.9 us; tile 4
// recomputes 6.25x and tile 32 fills 16 of 132 multiprocessors. Not fused
// (the phase latency only adds to a group).
// CHECK-LABEL: func.func @halo_blowup
// CHECK-NOT: tcc.region_group
// CHECK: return
func.func @halo_blowup(%x: tensor<1x128x128x64xf16>, %w1: tensor<64x7x7x64xf16>, %w2: tensor<64x7x7x64xf16>) -> tensor<1x128x128x64xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x128x128x64xf16>, tensor<64x7x7x64xf16> -> tensor<1x128x128x64xf16>
  %1 = tcc.conv2d %0, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x128x128x64xf16>, tensor<64x7x7x64xf16> -> tensor<1x128x128x64xf16>
  return %1 : tensor<1x128x128x64xf16>
}

// -----

// Two 3x3 stride-1 pad-1 max pools, 1x128x128xC NHWC (no weights: no
// staging; CUDA cores). Per pool unfused: 1.88 + max(2 * 16384 * C * 2 /
// 4.25e6, 16384 * C * 9 / 25e6) us (1024 blocks and more: utilization 1).
// Fused at tile T: (128 / T)^2 tiles; the first pool computes (T + 2)^2 per
// tile from a staged (T + 4)^2 input; shared (T + 2)^2 * C * 2 + (T + 4)^2
// * C * 2; two CUDA-core members, 1.3 us of phases a wave, and their tap
// steps: a block's 128 threads walk (pixels * C / 8) / 128 of them, 9 taps
// each, 0.048 us a step. C = 128: unfused 2 * (1.88 + 1.97379) = 7.70758
// us. Tile 8x16 (one wave, as before tap steps were counted: 6.106 us):
// ceil(180 * 16 / 128) * 9 + 16 * 9 = 207 + 144 = 351 tap steps, 16.85 us
// more: 22.95 us. Tile 4x8 (512 tiles of 39936 B, 4 resident, one wave):
// (ceil(60 * 16 / 128) + 32 * 16 / 128) * 9 = (8 + 4) * 9 = 108 steps, 5.18
// us, with 1.3 + 1.88 and a body of about 4 us, about 12.3 us. Every tile
// loses: a block of 4 warps walks the wide halo's pixels in turn where the
// unfused pools spread them over 1024 blocks. Not fused.
// CHECK-LABEL: func.func @two_pools_unfused
// CHECK-NOT: tcc.region_group
// CHECK: return
func.func @two_pools_unfused(%x: tensor<1x128x128x128xf16>) -> tensor<1x128x128x128xf16> {
  %0 = tcc.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : tensor<1x128x128x128xf16> -> tensor<1x128x128x128xf16>
  %1 = tcc.max_pool2d %0 {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : tensor<1x128x128x128xf16> -> tensor<1x128x128x128xf16>
  return %1 : tensor<1x128x128x128xf16>
}

// -----

// C = 2048: unfused 2 * (1.88 + 31.5806) = 66.9213 us; tile 8 would take
// 1.88 + 51.3185 + 1.3 = 54.4985 us, but needs 999424 B of shared memory,
// and tile 4 409600 B, both over the block's 232448. Not fused.
// CHECK-LABEL: func.func @shared_overflow
// CHECK-NOT: tcc.region_group
// CHECK: return
func.func @shared_overflow(%x: tensor<1x128x128x2048xf16>) -> tensor<1x128x128x2048xf16> {
  %0 = tcc.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : tensor<1x128x128x2048xf16> -> tensor<1x128x128x2048xf16>
  %1 = tcc.max_pool2d %0 {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : tensor<1x128x128x2048xf16> -> tensor<1x128x128x2048xf16>
  return %1 : tensor<1x128x128x2048xf16>
}

// -----

// A residual block, 1x56x56x64 NHWC: 1x1 conv, relu, 3x3 conv, relu, 1x1
// conv, add of the block's input (the first relu), relu.
// Unfused: each 1x1 conv 25 blocks, memory-bound, 1.88 + (401408 + 8192 +
// 401408) / 4.25e6 * 132 / 25 = 2.88754 us; the 3x3 conv 1.88 + 231211008
// / 400e6 * 132 / 25 = 4.93195 us; the relus are epilogues, 200704 / 25e6
// = 0.00803 us each; the add an epilogue reading the first relu, 401408 /
// 4.25e6 + 0.00803 = 0.10248 us. The first six: 10.826 us; with the last relu (0.00803) all seven 10.834 us.
// Fused at tile 8x8 (49 tiles, utilization 49 / 132, one wave): the first
// relu and conv compute 10x10 for the 3x3 conv's window; tensor FLOPs 49 *
// 100 * 64 * 128 + 49 * 64 * 64 * 1152 + 49 * 64 * 64 * 128 = 297041920 ->
// 0.74260 us, CUDA FLOPs 49 * (100 + 64 + 64) * 64 = 715008 -> 0.02860 us;
// memory below (L2: 49 * 90112 B of weights -> 0.631 us): 1.88 + 0.77120 *
// 132 / 49 = 3.95752 us; phases: one round each (112, 64 and 64 pixels
// times 64 channels), 2 + 18 + 2 k-steps (K = 64, 576, 64): 22 * 0.27 =
// 5.94 us, 9.89752 us. Tile 4x4: the same 22 k-steps and L2 196 * 90112 /
// 7e6 = 2.523 us: 10.34 us; tile 16x16: two or three rounds a conv, 46
// k-steps. Tile 1x28 (112 tiles, utilization 112 / 132): the first conv
// and relu compute 3x30 (tensor FLOPs 82575360 + 231211008 + 25690112 ->
// 0.84869 us), L2 112 * 90112 B -> 1.44179 us, the bound: 1.88 + 1.44179 *
// 132 / 112 + the same 22 k-steps, 5.94 = 9.51925 us. The last relu joins
// (0.008 us unfused; inside, its FLOPs stay under the L2 term).
// CHECK-LABEL: func.func @residual
// CHECK: tcc.conv2d {{.*}}tcc.region_group = 0 : i64
// CHECK: tcc.relu {{.*}}tcc.region_group = 0 : i64
// CHECK: tcc.conv2d {{.*}}tcc.region_group = 0 : i64
// CHECK: tcc.relu {{.*}}tcc.region_group = 0 : i64
// CHECK: tcc.conv2d {{.*}}tcc.region_group = 0 : i64
// CHECK: tcc.add {{.*}}tcc.region_group = 0 : i64
// CHECK: tcc.relu {{.*}}tcc.region_group = 0 : i64, tcc.region_plan = #tcc.region_plan<tile = [1, 28], members = 7, predicted_ns = 9519, unfused_ns = 10834, shared = 55808>
// CHECK: return
// TILE-LABEL: func.func @residual
// TILE: tcc.relu {{.*}}tcc.region = #tcc.region_tile<out = [3, 30]
func.func @residual(%x: tensor<1x56x56x64xf16>, %w1: tensor<64x1x1x64xf16>, %w2: tensor<64x3x3x64xf16>, %w3: tensor<64x1x1x64xf16>) -> tensor<1x56x56x64xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x56x56x64xf16>, tensor<64x1x1x64xf16> -> tensor<1x56x56x64xf16>
  %1 = tcc.relu %0 : tensor<1x56x56x64xf16>
  %2 = tcc.conv2d %1, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x56x56x64xf16>, tensor<64x3x3x64xf16> -> tensor<1x56x56x64xf16>
  %3 = tcc.relu %2 : tensor<1x56x56x64xf16>
  %4 = tcc.conv2d %3, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x56x56x64xf16>, tensor<64x1x1x64xf16> -> tensor<1x56x56x64xf16>
  %5 = tcc.add %4, %1 : tensor<1x56x56x64xf16>, tensor<1x56x56x64xf16> -> tensor<1x56x56x64xf16>
  %6 = tcc.relu %5 : tensor<1x56x56x64xf16>
  return %6 : tensor<1x56x56x64xf16>
}

// -----

// Inception-style: two branches read the input, a 1x1 and a 3x3 conv, and
// a channel concat joins them before a 3x3 conv; 1x32x32x32 NHWC. The cost
// model would fuse all four (one launch, 0.541 us of body and 1 + 9 + 9
// k-steps: 7.551 us at tile 4x4, against four launches, 9.356 us,
// unfused), but the region template runs chains only (isKernelChain):
// a group with two branches and a concat is no legal group yet, so nothing
// fuses. The tiles such a group would take are region-analysis.mlir's.
// CHECK-LABEL: func.func @inception
// CHECK-NOT: tcc.region_group
// CHECK: return
func.func @inception(%x: tensor<1x32x32x32xf16>, %w1: tensor<16x1x1x32xf16>, %w3: tensor<16x3x3x32xf16>, %w: tensor<32x3x3x32xf16>) -> tensor<1x32x32x32xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x32x32x32xf16>, tensor<16x1x1x32xf16> -> tensor<1x32x32x16xf16>
  %1 = tcc.conv2d %x, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x32x32x32xf16>, tensor<16x3x3x32xf16> -> tensor<1x32x32x16xf16>
  %2 = tcc.concat %0, %1 {axis = 3 : i64} : tensor<1x32x32x16xf16>, tensor<1x32x32x16xf16> -> tensor<1x32x32x32xf16>
  %3 = tcc.conv2d %2, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x32x32x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x32x32x32xf16>
  return %3 : tensor<1x32x32x32xf16>
}

// -----

// A join that would make a cycle: %2 reads the 1x1 conv %0 and its
// transpose (not a region op), so a group of %0 and %2 would feed the
// transpose and wait for it. The same shapes without the transpose
// (@no_cycle, %2 a ReLU of %0: an add of a value from outside the group is
// no chain the region template runs) fuse %0, %2 and %3 (@pair_1x1's
// convs).
// CHECK-LABEL: func.func @cycle
// CHECK-NOT: tcc.region_group
// CHECK: return
func.func @cycle(%x: tensor<1x64x64x32xf16>, %w1: tensor<32x1x1x32xf16>, %w2: tensor<32x1x1x32xf16>) -> tensor<1x64x64x32xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x1x1x32xf16> -> tensor<1x64x64x32xf16>
  %1 = tcc.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x64x64x32xf16> -> tensor<1x64x64x32xf16>
  %2 = tcc.add %0, %1 : tensor<1x64x64x32xf16>, tensor<1x64x64x32xf16> -> tensor<1x64x64x32xf16>
  %3 = tcc.conv2d %2, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x1x1x32xf16> -> tensor<1x64x64x32xf16>
  return %3 : tensor<1x64x64x32xf16>
}

// -----

// CHECK-LABEL: func.func @no_cycle
// CHECK: tcc.conv2d {{.*}}tcc.region_group = 0 : i64
// CHECK: tcc.relu {{.*}}tcc.region_group = 0 : i64
// CHECK: tcc.conv2d {{.*}}tcc.region_group = 0 : i64, tcc.region_plan
func.func @no_cycle(%x: tensor<1x64x64x32xf16>, %w1: tensor<32x1x1x32xf16>, %w2: tensor<32x1x1x32xf16>) -> tensor<1x64x64x32xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x1x1x32xf16> -> tensor<1x64x64x32xf16>
  %2 = tcc.relu %0 : tensor<1x64x64x32xf16>
  %3 = tcc.conv2d %2, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x1x1x32xf16> -> tensor<1x64x64x32xf16>
  return %3 : tensor<1x64x64x32xf16>
}
