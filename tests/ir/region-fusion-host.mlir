// RUN: tcc-opt %s --tcc-region-fusion=target=host | FileCheck %s
// RUN: tcc-opt %s --tcc-region-fusion=target=h200 | FileCheck %s --check-prefix=GPU

// The host's cost target and rules (isHostChain): an f32 NCHW chain, which
// the GPU template does not take (no group on h200), is grouped on the host.
// MobileNetV2-like: 1x1 8 -> 24 (bias), ReLU, depthwise 3x3 stride 2 pad 1
// (13x17 -> 7x9), ReLU, 1x1 24 -> 8. Host constants: 2 cores, 4000 FLOP/us,
// 2e4 B/us, 10 us a launch.
// Unfused depthwise: 1512 results x 18 = 27216 FLOPs -> 6.804 us; one block
// (63 pixels / 64) on 2 cores, utilization 0.5: 10 + 13.608 = 23.608 us.
// Its ReLU is an epilogue: 1512 FLOPs, 0.378 us. The 1x1 24 -> 8: 504 x 48
// = 24192 FLOPs -> 6.048 us, 10 + 12.096 = 22.096 us. Sum 46.082 us.
// Fused at 4x4: 2 x 3 = 6 tiles, each 4x4 of the 1x1 and the ReLU, the
// depthwise 4x4 out of a 9x9 window: executed 6 x 16 x (8 x 48 + 24 + 24 x
// 18) = 80640 FLOPs -> 20.16 us, utilization 1 (6 tiles, 2 cores):
// 10 + 20.16 = 30.16 us. The first 1x1 stays out: recomputing it over the
// stride-2 halo costs more than its launch.
// CHECK-LABEL: func.func @chain
// CHECK: tcc.conv2d {{.*}}groups = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} :
// CHECK: tcc.relu %{{.*}} : tensor<1x24x13x17xf32>
// CHECK: tcc.conv2d {{.*}}groups = 24 : i64{{.*}}tcc.region_group = 0 : i64}
// CHECK: tcc.relu %{{.*}} {tcc.region_group = 0 : i64}
// CHECK: tcc.conv2d {{.*}}tcc.region_group = 0 : i64, tcc.region_plan = #tcc.region_plan<tile = [4, 4], members = 3, predicted_ns = 30160, unfused_ns = 46082, shared = 9312>}
// GPU-LABEL: func.func @chain
// GPU-NOT: tcc.region_group
func.func @chain(%x: tensor<1x8x13x17xf32>, %w1: tensor<24x8x1x1xf32>, %b1: tensor<24xf32>, %w2: tensor<24x1x3x3xf32>, %w3: tensor<8x24x1x1xf32>) -> tensor<1x8x7x9xf32> {
  %0 = tcc.conv2d %x, %w1, %b1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x8x13x17xf32>, tensor<24x8x1x1xf32>, tensor<24xf32> -> tensor<1x24x13x17xf32>
  %1 = tcc.relu %0 : tensor<1x24x13x17xf32>
  %2 = tcc.conv2d %1, %w2 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 24 : i64} : tensor<1x24x13x17xf32>, tensor<24x1x3x3xf32> -> tensor<1x24x7x9xf32>
  %3 = tcc.relu %2 : tensor<1x24x7x9xf32>
  %4 = tcc.conv2d %3, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x24x7x9xf32>, tensor<8x24x1x1xf32> -> tensor<1x8x7x9xf32>
  return %4 : tensor<1x8x7x9xf32>
}
