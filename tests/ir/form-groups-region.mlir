// RUN: tcc-opt %s --split-input-file --tcc-form-groups | FileCheck %s

// Ops marked with one tcc.region_group form one "region" group, whatever
// their kinds; the ReLU after the group, unmarked, joins it as its last
// member's epilogue (the chain stays one the region template runs); the
// exp after it does not.
// CHECK-LABEL: func.func @two_convs
// CHECK: %[[G:.*]] = tcc.group "region" -> tensor<1x8x8x16xf16> {
// CHECK:   tcc.conv2d
// CHECK:   tcc.relu
// CHECK:   tcc.conv2d
// CHECK:   tcc.relu
// CHECK:   tcc.yield
// CHECK: tcc.group "elementwise"
// CHECK:   tcc.exp %[[G]]
func.func @two_convs(%x: tensor<1x8x8x16xf16>, %w: tensor<16x3x3x16xf16>) -> tensor<1x8x8x16xf16> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 0 : i64} : tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16> -> tensor<1x8x8x16xf16>
  %1 = tcc.relu %0 {tcc.region_group = 0 : i64} : tensor<1x8x8x16xf16>
  %2 = tcc.conv2d %1, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 0 : i64} : tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16> -> tensor<1x8x8x16xf16>
  %3 = tcc.relu %2 : tensor<1x8x8x16xf16>
  %4 = tcc.exp %3 : tensor<1x8x8x16xf16>
  return %4 : tensor<1x8x8x16xf16>
}

// -----

// Two branches reading the same input join their region group though
// neither reads the other (an Inception block's), with the add that joins
// them; a member whose value is read outside becomes a group result. (The
// search marks no such group while the template runs chains only; the
// grouping itself takes any.)
// CHECK-LABEL: func.func @branches
// CHECK: %[[G:.*]]:2 = tcc.group "region" -> tensor<1x8x8x16xf16>, tensor<1x8x8x16xf16> {
// CHECK:   tcc.conv2d
// CHECK:   tcc.conv2d
// CHECK:   tcc.add
// CHECK:   tcc.yield
// CHECK-NOT: tcc.group
// CHECK: return
func.func @branches(%x: tensor<1x8x8x16xf16>, %w: tensor<16x3x3x16xf16>) -> (tensor<1x8x8x16xf16>, tensor<1x8x8x16xf16>) {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 4 : i64} : tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16> -> tensor<1x8x8x16xf16>
  %1 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 4 : i64} : tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16> -> tensor<1x8x8x16xf16>
  %2 = tcc.add %0, %1 {tcc.region_group = 4 : i64} : tensor<1x8x8x16xf16>, tensor<1x8x8x16xf16> -> tensor<1x8x8x16xf16>
  return %2, %0 : tensor<1x8x8x16xf16>, tensor<1x8x8x16xf16>
}

// -----

// Two region groups in a row stay two groups; unmarked convs keep groups of
// their own.
// CHECK-LABEL: func.func @two_regions
// CHECK: tcc.group "region"
// CHECK: tcc.group "region"
// CHECK: tcc.group "conv2d"
func.func @two_regions(%x: tensor<1x8x8x16xf16>, %w: tensor<16x3x3x16xf16>) -> tensor<1x8x8x16xf16> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 0 : i64} : tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16> -> tensor<1x8x8x16xf16>
  %1 = tcc.conv2d %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 0 : i64} : tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16> -> tensor<1x8x8x16xf16>
  %2 = tcc.conv2d %1, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 1 : i64} : tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16> -> tensor<1x8x8x16xf16>
  %3 = tcc.conv2d %2, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, tcc.region_group = 1 : i64} : tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16> -> tensor<1x8x8x16xf16>
  %4 = tcc.conv2d %3, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16> -> tensor<1x8x8x16xf16>
  return %4 : tensor<1x8x8x16xf16>
}
