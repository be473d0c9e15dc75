// RUN: tcc-opt %s --tcc-region-fusion=mode=off | FileCheck %s
// RUN: tcc-opt %s --tcc-region-fusion | FileCheck %s --check-prefix=AUTO

// mode=off marks nothing and removes earlier marks; auto replaces them with
// its own (the two convs of tests/ir/region-fusion.mlir's @pair_1x1, fused
// at tile 1x32).
// CHECK-LABEL: func.func @pair
// CHECK-NOT: tcc.region_group
// CHECK-NOT: tcc.region_plan
// CHECK: return
// AUTO-LABEL: func.func @pair
// AUTO: tcc.conv2d {{.*}}tcc.region_group = 0 : i64}
// AUTO: tcc.conv2d {{.*}}tcc.region_group = 0 : i64, tcc.region_plan = #tcc.region_plan<tile = [1, 32], members = 2,
func.func @pair(%x: tensor<1x64x64x32xf16>, %w1: tensor<32x1x1x32xf16>, %w2: tensor<32x1x1x32xf16>) -> tensor<1x64x64x32xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 7 : i64} : tensor<1x64x64x32xf16>, tensor<32x1x1x32xf16> -> tensor<1x64x64x32xf16>
  %1 = tcc.conv2d %0, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 7 : i64, tcc.region_plan = #tcc.region_plan<tile = [2, 2], members = 2, predicted_ns = 1, unfused_ns = 2, shared = 3>} : tensor<1x64x64x32xf16>, tensor<32x1x1x32xf16> -> tensor<1x64x64x32xf16>
  return %1 : tensor<1x64x64x32xf16>
}
