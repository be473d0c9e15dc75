// RUN: tcc-opt %s --split-input-file "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:0" | FileCheck %s --check-prefix=ALT0
// RUN: tcc-opt %s --split-input-file "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:1" | FileCheck %s --check-prefix=ALT1
// RUN: tcc-opt %s --split-input-file "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:2" | FileCheck %s --check-prefix=ALT2
// RUN: tcc-opt %s --split-input-file "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:9" | FileCheck %s --check-prefix=ALT9
// RUN: tcc-opt %s --split-input-file "--tcc-region-fusion=force=%S/Inputs/region-fusion-force-one.json" | FileCheck %s --check-prefix=ONE
// RUN: tcc-opt %s --split-input-file "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:0 target=host remarks=true" 2>&1 | FileCheck %s --check-prefix=HOST

// Forcing an alternatives file's grouping (tcc-region-fusion force=FILE:ID):
// the groups are marked as the search marks its own, with the plan the cost
// model gives them. Members are named by their locations; the fourth conv
// has none and is `tcc.conv2d@3` (its index among the region ops).
// c2 and c3 (or c3 and the fourth) are @pair of region-fusion.mlir (two
// 3x3 pad-1 convs on 1x64x64x32 f16): tile 2x16, 7435 ns against 5317 (the
// search leaves them unfused; forced, they are fused all the same). Three
// unfused: 3 * 2.658568 us.

// ALT0-LABEL: func.func @main
// ALT0: tcc.conv2d %arg0
// ALT0-NOT: tcc.region_group
// ALT0: tcc.conv2d {{.*}}tcc.region_group = 0 : i64}
// ALT0: tcc.conv2d {{.*}}tcc.region_group = 0 : i64, tcc.region_plan = #tcc.region_plan<tile = [2, 16], members = 2, predicted_ns = 7435, unfused_ns = 5317, shared = 45056>
// ALT0: tcc.conv2d
// ALT0-NOT: tcc.region_group
// ALT0: return

// ALT1-LABEL: func.func @main
// ALT1-NOT: tcc.region
// ALT1: return

// ALT2-LABEL: func.func @main
// ALT2: tcc.conv2d {{.*}}tcc.region_group = 0 : i64}
// ALT2: tcc.conv2d {{.*}}tcc.region_group = 0 : i64}
// ALT2: tcc.conv2d {{.*}}tcc.region_group = 0 : i64, tcc.region_plan = #tcc.region_plan<tile = [{{[0-9]+}}, {{[0-9]+}}], members = 3, predicted_ns = {{[0-9]+}}, unfused_ns = 7976,
// ALT2-NOT: tcc.region_group
// ALT2: return

// ALT9-LABEL: func.func @main
// ALT9: tcc.conv2d %arg0
// ALT9-NOT: tcc.region_group
// ALT9: tcc.conv2d %0
// ALT9-NOT: tcc.region_group
// ALT9: tcc.conv2d {{.*}}tcc.region_group = 0 : i64}
// ALT9: tcc.conv2d {{.*}}tcc.region_group = 0 : i64, tcc.region_plan = #tcc.region_plan<tile = [2, 16], members = 2, predicted_ns = 7435, unfused_ns = 5317, shared = 45056>

// A file of one alternative needs no ID.
// ONE-LABEL: func.func @main
// ONE: tcc.conv2d {{.*}}tcc.region_group = 0 : i64}
// ONE: tcc.conv2d {{.*}}tcc.region_group = 0 : i64, tcc.region_plan = #tcc.region_plan<tile = [2, 16], members = 2, predicted_ns = 7435, unfused_ns = 5317, shared = 45056>
// ONE-NOT: tcc.region_group

// The host has a cost model of its own: the GPU's grouping is checked and
// costed on it (its tile and times are the host model's).
// HOST: remark: {{.*}}region group 0: 2 members, tile {{[0-9]+}}x{{[0-9]+}}, predicted
// HOST: remark: region fusion on host: 1 region groups (2 of 4 region ops); predicted {{.*}}; forced from {{.*}}region-fusion-force.json:0
func.func @main(%x: tensor<1x64x64x32xf16>, %w1: tensor<32x3x3x32xf16>, %w2: tensor<32x3x3x32xf16>, %w3: tensor<32x3x3x32xf16>, %w4: tensor<32x3x3x32xf16>) -> tensor<1x64x64x32xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16> loc("c1")
  %1 = tcc.conv2d %0, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16> loc("c2")
  %2 = tcc.conv2d %1, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16> loc("c3")
  %3 = tcc.conv2d %2, %w4 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16>
  return %3 : tensor<1x64x64x32xf16>
}

// -----

// A function the file does not name gets no groups (marks from before are
// removed).
// ALT0-LABEL: func.func @other
// ALT0-NOT: tcc.region
// ALT0: return
// ALT1-LABEL: func.func @other
func.func @other(%x: tensor<1x64x64x32xf16>, %w1: tensor<32x3x3x32xf16>, %w2: tensor<32x3x3x32xf16>) -> tensor<1x64x64x32xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 0 : i64} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16> loc("c1")
  %1 = tcc.conv2d %0, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 0 : i64} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16> loc("c2")
  return %1 : tensor<1x64x64x32xf16>
}
