// RUN: tcc-opt %s --split-input-file --tcc-concat-in-place | FileCheck %s

// Three channels-last f16 convolutions feed only a channel concat: one with
// a ReLU, one alone, one with a residual add and a ReLU (the templates'
// whole kernels). Each stores its channels into the concat's 40 (offsets 0,
// 16, 24: the concat's operand order, not the calls'), and the concat's
// kernel launches nothing.
// CHECK-LABEL: func.func @main
// CHECK: func.func private @conv_a
// CHECK-SAME: tcc.out_slice = array<i64: 24, 40>
// CHECK: func.func private @conv_b
// CHECK-SAME: tcc.out_slice = array<i64: 0, 40>
// CHECK: func.func private @conv_c
// CHECK-SAME: tcc.out_slice = array<i64: 16, 40>
// CHECK: func.func private @cat
// CHECK-SAME: tcc.concat_in_place
func.func @main(%x: tensor<1x5x7x16xf16>, %w1: tensor<16x1x1x16xf16>, %w2: tensor<8x3x3x16xf16>, %b2: tensor<8xf16>, %w3: tensor<16x1x1x16xf16>) -> tensor<1x5x7x40xf16> attributes {tcc.entry} {
  %a = call @conv_a(%x, %w3, %x) : (tensor<1x5x7x16xf16>, tensor<16x1x1x16xf16>, tensor<1x5x7x16xf16>) -> tensor<1x5x7x16xf16>
  %b = call @conv_b(%x, %w1) : (tensor<1x5x7x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x5x7x16xf16>
  %c = call @conv_c(%x, %w2, %b2) : (tensor<1x5x7x16xf16>, tensor<8x3x3x16xf16>, tensor<8xf16>) -> tensor<1x5x7x8xf16>
  %r = call @cat(%a, %b, %c) : (tensor<1x5x7x16xf16>, tensor<1x5x7x16xf16>, tensor<1x5x7x8xf16>) -> tensor<1x5x7x40xf16>
  return %r : tensor<1x5x7x40xf16>
}
func.func private @conv_a(%x: tensor<1x5x7x16xf16>, %w: tensor<16x1x1x16xf16>, %res: tensor<1x5x7x16xf16>) -> tensor<1x5x7x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x5x7x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x5x7x16xf16>
  %s = tcc.add %res, %c : tensor<1x5x7x16xf16>, tensor<1x5x7x16xf16> -> tensor<1x5x7x16xf16>
  %r = tcc.relu %s : tensor<1x5x7x16xf16>
  return %r : tensor<1x5x7x16xf16>
}
func.func private @conv_b(%x: tensor<1x5x7x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x5x7x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x5x7x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x5x7x16xf16>
  %r = tcc.relu %c : tensor<1x5x7x16xf16>
  return %r : tensor<1x5x7x16xf16>
}
func.func private @conv_c(%x: tensor<1x5x7x16xf16>, %w: tensor<8x3x3x16xf16>, %b: tensor<8xf16>) -> tensor<1x5x7x8xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x5x7x16xf16>, tensor<8x3x3x16xf16>, tensor<8xf16> -> tensor<1x5x7x8xf16>
  return %c : tensor<1x5x7x8xf16>
}
func.func private @cat(%a: tensor<1x5x7x16xf16>, %b: tensor<1x5x7x16xf16>, %c: tensor<1x5x7x8xf16>) -> tensor<1x5x7x40xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %r = tcc.concat %b, %c, %a {axis = 3 : i64} : tensor<1x5x7x16xf16>, tensor<1x5x7x8xf16>, tensor<1x5x7x16xf16> -> tensor<1x5x7x40xf16>
  return %r : tensor<1x5x7x40xf16>
}

// -----

// Not in place: one input is a pool's (only convolutions store slices), so
// the other input's convolution keeps its own buffer too; a depth to space
// of a result read elsewhere too (the interleave cannot move into its
// kernel); an offset of 4 channels (the templates store 16
// bytes at a time); an f32 convolution; a grouped one; a concat along
// another axis; a concat kernel doing more than the concat.
// CHECK-LABEL: func.func @main
// CHECK-NOT: tcc.out_slice
// CHECK-NOT: tcc.concat_in_place
func.func @main(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>, %w4: tensor<4x1x1x16xf16>, %xf: tensor<1x4x4x16xf32>, %wf: tensor<16x1x1x16xf32>, %wg: tensor<16x1x1x8xf16>, %x8: tensor<1x8x8x16xf16>, %w32: tensor<32x1x1x16xf16>, %w8: tensor<8x1x1x16xf16>) -> (tensor<1x4x4x32xf16>, tensor<1x8x8x16xf16>, tensor<1x4x4x32xf16>, tensor<1x4x4x20xf16>, tensor<1x4x4x32xf32>, tensor<1x4x4x32xf16>, tensor<1x8x4x16xf16>, tensor<1x4x4x32xf16>) attributes {tcc.entry} {
  %a0 = call @conv0(%x, %w) : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %p0 = call @pool(%x) : (tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
  %r0 = call @cat0(%a0, %p0) : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16>
  %a1 = call @conv1(%x, %w32) : (tensor<1x4x4x16xf16>, tensor<32x1x1x16xf16>) -> tensor<1x4x4x32xf16>
  %b1 = call @conv1b(%x8, %w8) : (tensor<1x8x8x16xf16>, tensor<8x1x1x16xf16>) -> tensor<1x8x8x8xf16>
  %r1 = call @cat1(%a1, %b1) : (tensor<1x4x4x32xf16>, tensor<1x8x8x8xf16>) -> tensor<1x8x8x16xf16>
  %a2 = call @conv2(%x, %w4) : (tensor<1x4x4x16xf16>, tensor<4x1x1x16xf16>) -> tensor<1x4x4x4xf16>
  %b2 = call @conv2b(%x, %w) : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %r2 = call @cat2(%a2, %b2) : (tensor<1x4x4x4xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x20xf16>
  %a3 = call @conv3(%xf, %wf) : (tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32>) -> tensor<1x4x4x16xf32>
  %b3 = call @conv3b(%xf, %wf) : (tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32>) -> tensor<1x4x4x16xf32>
  %r3 = call @cat3(%a3, %b3) : (tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32>) -> tensor<1x4x4x32xf32>
  %a4 = call @conv4(%x, %wg) : (tensor<1x4x4x16xf16>, tensor<16x1x1x8xf16>) -> tensor<1x4x4x16xf16>
  %b4 = call @conv4b(%x, %w) : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %r4 = call @cat4(%a4, %b4) : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16>
  %a5 = call @conv5(%x, %w) : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %b5 = call @conv5b(%x, %w) : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %r5 = call @cat5(%a5, %b5) : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x8x4x16xf16>
  %a6 = call @conv6(%x, %w) : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %b6 = call @conv6b(%x, %w) : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %r6 = call @cat6(%a6, %b6) : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16>
  return %r0, %r1, %a1, %r2, %r3, %r4, %r5, %r6 : tensor<1x4x4x32xf16>, tensor<1x8x8x16xf16>, tensor<1x4x4x32xf16>, tensor<1x4x4x20xf16>, tensor<1x4x4x32xf32>, tensor<1x4x4x32xf16>, tensor<1x8x4x16xf16>, tensor<1x4x4x32xf16>
}
func.func private @conv0(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @pool(%x: tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "max_pool2d"} {
  %p = tcc.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : tensor<1x4x4x16xf16> -> tensor<1x4x4x16xf16>
  return %p : tensor<1x4x4x16xf16>
}
func.func private @cat0(%a: tensor<1x4x4x16xf16>, %b: tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %r = tcc.concat %a, %b {axis = 3 : i64} : tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16> -> tensor<1x4x4x32xf16>
  return %r : tensor<1x4x4x32xf16>
}
func.func private @conv1(%x: tensor<1x4x4x16xf16>, %w: tensor<32x1x1x16xf16>) -> tensor<1x4x4x32xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<32x1x1x16xf16> -> tensor<1x4x4x32xf16>
  return %c : tensor<1x4x4x32xf16>
}
func.func private @conv1b(%x: tensor<1x8x8x16xf16>, %w: tensor<8x1x1x16xf16>) -> tensor<1x8x8x8xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x8x8x16xf16>, tensor<8x1x1x16xf16> -> tensor<1x8x8x8xf16>
  return %c : tensor<1x8x8x8xf16>
}
func.func private @cat1(%a: tensor<1x4x4x32xf16>, %b: tensor<1x8x8x8xf16>) -> tensor<1x8x8x16xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.reshape %a : tensor<1x4x4x32xf16> -> tensor<1x4x4x2x2x8xf16>
  %1 = tcc.transpose %0 {perm = array<i64: 0, 1, 3, 2, 4, 5>} : tensor<1x4x4x2x2x8xf16> -> tensor<1x4x2x4x2x8xf16>
  %2 = tcc.reshape %1 : tensor<1x4x2x4x2x8xf16> -> tensor<1x8x8x8xf16>
  %r = tcc.concat %b, %2 {axis = 3 : i64} : tensor<1x8x8x8xf16>, tensor<1x8x8x8xf16> -> tensor<1x8x8x16xf16>
  return %r : tensor<1x8x8x16xf16>
}
func.func private @conv2(%x: tensor<1x4x4x16xf16>, %w: tensor<4x1x1x16xf16>) -> tensor<1x4x4x4xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<4x1x1x16xf16> -> tensor<1x4x4x4xf16>
  return %c : tensor<1x4x4x4xf16>
}
func.func private @conv2b(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @cat2(%a: tensor<1x4x4x4xf16>, %b: tensor<1x4x4x16xf16>) -> tensor<1x4x4x20xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %r = tcc.concat %a, %b {axis = 3 : i64} : tensor<1x4x4x4xf16>, tensor<1x4x4x16xf16> -> tensor<1x4x4x20xf16>
  return %r : tensor<1x4x4x20xf16>
}
func.func private @conv3(%x: tensor<1x4x4x16xf32>, %w: tensor<16x1x1x16xf32>) -> tensor<1x4x4x16xf32> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32> -> tensor<1x4x4x16xf32>
  return %c : tensor<1x4x4x16xf32>
}
func.func private @conv3b(%x: tensor<1x4x4x16xf32>, %w: tensor<16x1x1x16xf32>) -> tensor<1x4x4x16xf32> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32> -> tensor<1x4x4x16xf32>
  return %c : tensor<1x4x4x16xf32>
}
func.func private @cat3(%a: tensor<1x4x4x16xf32>, %b: tensor<1x4x4x16xf32>) -> tensor<1x4x4x32xf32> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %r = tcc.concat %a, %b {axis = 3 : i64} : tensor<1x4x4x16xf32>, tensor<1x4x4x16xf32> -> tensor<1x4x4x32xf32>
  return %r : tensor<1x4x4x32xf32>
}
func.func private @conv4(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x8xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x8xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @conv4b(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @cat4(%a: tensor<1x4x4x16xf16>, %b: tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %r = tcc.concat %a, %b {axis = 3 : i64} : tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16> -> tensor<1x4x4x32xf16>
  return %r : tensor<1x4x4x32xf16>
}
func.func private @conv5(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @conv5b(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @cat5(%a: tensor<1x4x4x16xf16>, %b: tensor<1x4x4x16xf16>) -> tensor<1x8x4x16xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %r = tcc.concat %a, %b {axis = 1 : i64} : tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16> -> tensor<1x8x4x16xf16>
  return %r : tensor<1x8x4x16xf16>
}
func.func private @conv6(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @conv6b(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @cat6(%a: tensor<1x4x4x16xf16>, %b: tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %r = tcc.concat %a, %b {axis = 3 : i64} : tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16> -> tensor<1x4x4x32xf16>
  %s = tcc.relu %r : tensor<1x4x4x32xf16>
  return %s : tensor<1x4x4x32xf16>
}

// -----

// U-Net's decoder: the encoder's convolution, whose result a pool reads
// too, stores it twice (its own buffer first, then the concat's channels
// 0-16); the up-convolution's interleave (a depth to space by 2 x 2) moves
// into its kernel, which stores channels 16-32. The concat launches nothing.
// CHECK-LABEL: func.func @main
// CHECK: %[[E:.*]]:2 = call @enc(
// CHECK-SAME: -> (tensor<1x8x8x16xf16>, tensor<1x8x8x16xf16>)
// CHECK: call @pool(%[[E]]#0)
// CHECK: %[[U:.*]] = call @up(
// CHECK-SAME: -> tensor<1x8x8x16xf16>
// CHECK: call @cat(%[[U]], %[[E]]#1)
// CHECK: func.func private @enc
// CHECK-SAME: -> (tensor<1x8x8x16xf16>, tensor<1x8x8x16xf16>)
// CHECK-SAME: tcc.out_slice = array<i64: 0, 32>
// CHECK: %[[R:.*]] = tcc.relu
// CHECK-NEXT: return %[[R]], %[[R]]
// CHECK: func.func private @up(
// CHECK-SAME: -> tensor<1x8x8x16xf16>
// CHECK-SAME: tcc.out_slice = array<i64: 16, 32>
// CHECK-NEXT: tcc.conv2d
// CHECK-NEXT: tcc.reshape {{.*}} -> tensor<1x4x4x2x2x16xf16>
// CHECK-NEXT: tcc.transpose {{.*}} -> tensor<1x4x2x4x2x16xf16>
// CHECK-NEXT: tcc.reshape {{.*}} -> tensor<1x8x8x16xf16>
// CHECK-NEXT: return
// CHECK: func.func private @cat(%{{.*}}: tensor<1x8x8x16xf16>, %{{.*}}: tensor<1x8x8x16xf16>)
// CHECK-SAME: tcc.concat_in_place
// CHECK-NEXT: tcc.concat
// CHECK-NEXT: return
func.func @main(%x: tensor<1x8x8x16xf16>, %w: tensor<16x3x3x16xf16>, %b: tensor<16xf16>, %lo: tensor<1x4x4x16xf16>, %wu: tensor<64x1x1x16xf16>) -> (tensor<1x8x8x32xf16>, tensor<1x4x4x16xf16>) attributes {tcc.entry} {
  %e = call @enc(%x, %w, %b) : (tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16>, tensor<16xf16>) -> tensor<1x8x8x16xf16>
  %p = call @pool(%e) : (tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16>
  %u = call @up(%lo, %wu) : (tensor<1x4x4x16xf16>, tensor<64x1x1x16xf16>) -> tensor<1x4x4x64xf16>
  %r = call @cat(%u, %e) : (tensor<1x4x4x64xf16>, tensor<1x8x8x16xf16>) -> tensor<1x8x8x32xf16>
  return %r, %p : tensor<1x8x8x32xf16>, tensor<1x4x4x16xf16>
}
func.func private @enc(%x: tensor<1x8x8x16xf16>, %w: tensor<16x3x3x16xf16>, %b: tensor<16xf16>) -> tensor<1x8x8x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x8x8x16xf16>, tensor<16x3x3x16xf16>, tensor<16xf16> -> tensor<1x8x8x16xf16>
  %r = tcc.relu %c : tensor<1x8x8x16xf16>
  return %r : tensor<1x8x8x16xf16>
}
func.func private @pool(%x: tensor<1x8x8x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "max_pool2d"} {
  %p = tcc.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false, nhwc} : tensor<1x8x8x16xf16> -> tensor<1x4x4x16xf16>
  return %p : tensor<1x4x4x16xf16>
}
func.func private @up(%x: tensor<1x4x4x16xf16>, %w: tensor<64x1x1x16xf16>) -> tensor<1x4x4x64xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<64x1x1x16xf16> -> tensor<1x4x4x64xf16>
  return %c : tensor<1x4x4x64xf16>
}
func.func private @cat(%u: tensor<1x4x4x64xf16>, %e: tensor<1x8x8x16xf16>) -> tensor<1x8x8x32xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.reshape %u : tensor<1x4x4x64xf16> -> tensor<1x4x4x2x2x16xf16>
  %1 = tcc.transpose %0 {perm = array<i64: 0, 1, 3, 2, 4, 5>} : tensor<1x4x4x2x2x16xf16> -> tensor<1x4x2x4x2x16xf16>
  %2 = tcc.reshape %1 : tensor<1x4x2x4x2x16xf16> -> tensor<1x8x8x16xf16>
  %3 = tcc.concat %e, %2 {axis = 3 : i64} : tensor<1x8x8x16xf16>, tensor<1x8x8x16xf16> -> tensor<1x8x8x32xf16>
  return %3 : tensor<1x8x8x32xf16>
}

// -----

// A convolution read by two concats stores into the first (twice: its own
// buffer, then the first concat's channels); the second keeps its copy (its
// input is then the first of two results, which no template stores into a
// third buffer).
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.*]]:2 = call @conv_a(
// CHECK: call @cat_x(%[[A]]#1,
// CHECK: call @cat_y(%[[A]]#0,
// CHECK: func.func private @cat_x
// CHECK-SAME: tcc.concat_in_place
// CHECK: func.func private @cat_y
// CHECK-NOT: tcc.concat_in_place
// CHECK-SAME: {
func.func @main(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> (tensor<1x4x4x32xf16>, tensor<1x4x4x32xf16>) attributes {tcc.entry} {
  %a = call @conv_a(%x, %w) : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %b = call @conv_b(%x, %w) : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %c = call @conv_c(%x, %w) : (tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16>
  %r = call @cat_x(%a, %b) : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16>
  %s = call @cat_y(%a, %c) : (tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16>
  return %r, %s : tensor<1x4x4x32xf16>, tensor<1x4x4x32xf16>
}
func.func private @conv_a(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @conv_b(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @conv_c(%x: tensor<1x4x4x16xf16>, %w: tensor<16x1x1x16xf16>) -> tensor<1x4x4x16xf16> attributes {tcc.kernel, tcc.kind = "conv2d"} {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x4x4x16xf16>, tensor<16x1x1x16xf16> -> tensor<1x4x4x16xf16>
  return %c : tensor<1x4x4x16xf16>
}
func.func private @cat_x(%a: tensor<1x4x4x16xf16>, %b: tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %r = tcc.concat %a, %b {axis = 3 : i64} : tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16> -> tensor<1x4x4x32xf16>
  return %r : tensor<1x4x4x32xf16>
}
func.func private @cat_y(%a: tensor<1x4x4x16xf16>, %c: tensor<1x4x4x16xf16>) -> tensor<1x4x4x32xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %r = tcc.concat %a, %c {axis = 3 : i64} : tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16> -> tensor<1x4x4x32xf16>
  return %r : tensor<1x4x4x32xf16>
}
