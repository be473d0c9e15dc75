// RUN: tcc-opt %s --split-input-file --tcc-conv-layout="layout=auto tensor-cores=1" --cse | FileCheck %s

// A 2x2 stride-2 up-convolution (U-Net's) in the sub-pixel form: each of
// the 2x2 output phases reads one input pixel through one tap, so the four
// phases are one 1x1 convolution with 4 * O output channels ordered
// (r_h, r_w, o), the bias repeated per phase; its result interleaves by a
// reshape, a transpose of the phase axes and a reshape.
// CHECK-LABEL: func.func @up2x2
// CHECK: %[[X:.*]] = tcc.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[R:.*]] = tcc.reshape %arg1 : tensor<8x4x2x2xf16> -> tensor<8x4x1x2x1x2xf16>
// CHECK-NOT: tcc.slice
// CHECK: %[[T:.*]] = tcc.transpose %[[R]] {perm = array<i64: 3, 5, 1, 2, 4, 0>} : tensor<8x4x1x2x1x2xf16> -> tensor<2x2x4x1x1x8xf16>
// CHECK: %[[W:.*]] = tcc.reshape %[[T]] : tensor<2x2x4x1x1x8xf16> -> tensor<16x1x1x8xf16>
// CHECK: %[[B1:.*]] = tcc.reshape %arg2 : tensor<4xf16> -> tensor<1x4xf16>
// CHECK: %[[B2:.*]] = tcc.broadcast_to %[[B1]] : tensor<1x4xf16> -> tensor<4x4xf16>
// CHECK: %[[B:.*]] = tcc.reshape %[[B2]] : tensor<4x4xf16> -> tensor<16xf16>
// CHECK: %[[C:.*]] = tcc.conv2d %[[X]], %[[W]], %[[B]] {dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} {{.*}} -> tensor<1x5x6x16xf16>
// CHECK: %[[P:.*]] = tcc.reshape %[[C]] : tensor<1x5x6x16xf16> -> tensor<1x5x6x2x2x4xf16>
// CHECK: %[[I:.*]] = tcc.transpose %[[P]] {perm = array<i64: 0, 1, 3, 2, 4, 5>} : tensor<1x5x6x2x2x4xf16> -> tensor<1x5x2x6x2x4xf16>
// CHECK: %[[Y:.*]] = tcc.reshape %[[I]] : tensor<1x5x2x6x2x4xf16> -> tensor<1x10x12x4xf16>
// CHECK: tcc.transpose %[[Y]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NOT: conv_transpose2d
func.func @up2x2(%x: tensor<1x8x5x6xf16>, %w: tensor<8x4x2x2xf16>, %b: tensor<4xf16>) -> tensor<1x4x10x12xf16> {
  %0 = tcc.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64} : tensor<1x8x5x6xf16>, tensor<8x4x2x2xf16>, tensor<4xf16> -> tensor<1x4x10x12xf16>
  return %0 : tensor<1x4x10x12xf16>
}

// -----

// A 3x3 stride-2 kernel with pad 1 and output_padding 1 (the usual 2x
// upsampler): phases of 2 and 1 taps, so the weight is padded to 4x4 taps
// with zeros, split [M, s] and reversed in M; the input gets one row and
// column of zeros on top and left (M - 1) and one below and right (the
// 6x7 phase grid reads one row past the 5x6 input); rows and columns
// 1..10 and 1..12 of the 12x14 interleaved map are the output.
// CHECK-LABEL: func.func @up3x3
// CHECK: tcc.pad %arg1 {pads = array<i64: 0, 0, 0, 0, 0, 0, 1, 1>{{.*}} -> tensor<3x2x4x4xf16>
// CHECK: tcc.reshape {{.*}} -> tensor<3x2x2x2x2x2xf16>
// CHECK: tcc.slice {{.*}} {starts = array<i64: 0, 0, 1, 0, 1, 0>, steps = array<i64: 1, 1, -1, 1, -1, 1>}
// CHECK: tcc.conv2d {{.*}}nhwc, pads = array<i64: 1, 1, 1, 1>{{.*}} -> tensor<1x6x7x8xf16>
// CHECK: tcc.transpose {{.*}} -> tensor<1x6x2x7x2x2xf16>
// CHECK: tcc.slice {{.*}} {starts = array<i64: 0, 1, 1, 0>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x12x14x2xf16> -> tensor<1x10x12x2xf16>
func.func @up3x3(%x: tensor<1x3x5x6xf16>, %w: tensor<3x2x3x3xf16>) -> tensor<1x2x10x12xf16> {
  %0 = tcc.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x3x5x6xf16>, tensor<3x2x3x3xf16> -> tensor<1x2x10x12xf16>
  return %0 : tensor<1x2x10x12xf16>
}

// -----

// With a dilation, the zero-insertion form: zeros inserted between input
// pixels (reshape, pad of the unit dims, reshape), d(k-1) - pad rows and
// columns around, the weight flipped in space and taken as [O, KH, KW, C].
// CHECK-LABEL: func.func @dilated
// CHECK: %[[X:.*]] = tcc.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[R:.*]] = tcc.reshape %[[X]] : tensor<1x5x6x8xf16> -> tensor<1x5x1x6x1x8xf16>
// CHECK: %[[Z:.*]] = tcc.pad %[[R]] {pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0>
// CHECK: %[[U:.*]] = tcc.reshape %[[Z]] : tensor<1x5x2x6x2x8xf16> -> tensor<1x10x12x8xf16>
// CHECK: %[[P:.*]] = tcc.pad %[[U]] {pads = array<i64: 0, 2, 2, 0, 0, 1, 1, 0>
// CHECK: %[[F:.*]] = tcc.slice %arg1 {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, -1, -1>}
// CHECK: %[[W:.*]] = tcc.transpose %[[F]] {perm = array<i64: 1, 2, 3, 0>} : tensor<8x4x2x2xf16> -> tensor<4x2x2x8xf16>
// CHECK: tcc.conv2d %[[P]], %[[W]] {dilations = array<i64: 2, 2>, groups = 1 : i64, nhwc, {{.*}} -> tensor<1x11x13x4xf16>
// CHECK-NOT: conv_transpose2d
func.func @dilated(%x: tensor<1x8x5x6xf16>, %w: tensor<8x4x2x2xf16>) -> tensor<1x4x11x13xf16> {
  %0 = tcc.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, output_padding = array<i64: 0, 0>, groups = 1 : i64} : tensor<1x8x5x6xf16>, tensor<8x4x2x2xf16> -> tensor<1x4x11x13xf16>
  return %0 : tensor<1x4x11x13xf16>
}

// -----

// Pads larger than d(k-1) crop instead (a slice), output_padding adds at
// the end, a dilation stays the convolution's. Stride 1 inserts nothing.
// CHECK-LABEL: func.func @crop
// CHECK-NOT: tcc.reshape
// CHECK: tcc.pad %{{.*}} {pads = array<i64: 0, 0, 1, 0, 0, 1, 2, 0>
// CHECK: tcc.slice %{{.*}} {starts = array<i64: 0, 1, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x8x9x3xbf16> -> tensor<1x7x9x3xbf16>
// CHECK: tcc.conv2d {{.*}}dilations = array<i64: 1, 2>{{.*}}nhwc{{.*}} -> tensor<1x6x7x5xbf16>
func.func @crop(%x: tensor<1x3x7x6xbf16>, %w: tensor<3x5x2x2xbf16>) -> tensor<1x5x6x7xbf16> {
  %0 = tcc.conv_transpose2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 2, 1, 0, 1>, dilations = array<i64: 1, 2>, output_padding = array<i64: 0, 1>, groups = 1 : i64} : tensor<1x3x7x6xbf16>, tensor<3x5x2x2xbf16> -> tensor<1x5x6x7xbf16>
  return %0 : tensor<1x5x6x7xbf16>
}

// -----

// f32 (no tf32) and grouped forms keep the direct lowering.
// CHECK-LABEL: func.func @kept
// CHECK: tcc.conv_transpose2d %arg0
// CHECK: tcc.conv_transpose2d %arg2
func.func @kept(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x2x2xf32>, %xh: tensor<1x4x5x5xf16>, %wh: tensor<4x1x2x2xf16>) -> (tensor<1x2x10x10xf32>, tensor<1x2x10x10xf16>) {
  %0 = tcc.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 1 : i64} : tensor<1x4x5x5xf32>, tensor<4x2x2x2xf32> -> tensor<1x2x10x10xf32>
  %1 = tcc.conv_transpose2d %xh, %wh {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, groups = 2 : i64} : tensor<1x4x5x5xf16>, tensor<4x1x2x2xf16> -> tensor<1x2x10x10xf16>
  return %0, %1 : tensor<1x2x10x10xf32>, tensor<1x2x10x10xf16>
}
