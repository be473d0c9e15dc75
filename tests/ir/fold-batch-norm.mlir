// RUN: tcc-opt %s --split-input-file --tcc-fold-batch-norm | FileCheck %s

// f16: s = scale * rsqrt(var + eps) and the shift beta - mean * s in f32;
// the weight scaled per output channel (axis 0) in f32 and rounded once to
// f16, the bias (b * s + shift) likewise; the batch norm is gone.
// CHECK-LABEL: func.func @nchw
// CHECK-NOT: tcc.batch_norm
// CHECK: %[[EPS:.*]] = tcc.constant {value = 9.99999974E-6 : f32} : tensor<4xf32>
// CHECK: %[[V:.*]] = tcc.cast %arg6 : tensor<4xf16> -> tensor<4xf32>
// CHECK: %[[VE:.*]] = tcc.add %[[V]], %[[EPS]]
// CHECK: %[[INV:.*]] = tcc.rsqrt %[[VE]] : tensor<4xf32>
// CHECK: %[[SC:.*]] = tcc.cast %arg3 : tensor<4xf16> -> tensor<4xf32>
// CHECK: %[[S:.*]] = tcc.mul %[[SC]], %[[INV]]
// CHECK: %[[M:.*]] = tcc.cast %arg5 : tensor<4xf16> -> tensor<4xf32>
// CHECK: %[[MS:.*]] = tcc.mul %[[M]], %[[S]]
// CHECK: %[[BETA:.*]] = tcc.cast %arg4 : tensor<4xf16> -> tensor<4xf32>
// CHECK: %[[SHIFT:.*]] = tcc.sub %[[BETA]], %[[MS]]
// CHECK: %[[SR:.*]] = tcc.reshape %[[S]] : tensor<4xf32> -> tensor<4x1x1x1xf32>
// CHECK: %[[WF:.*]] = tcc.cast %arg1 : tensor<4x3x3x3xf16> -> tensor<4x3x3x3xf32>
// CHECK: %[[WS:.*]] = tcc.mul %[[WF]], %[[SR]] : tensor<4x3x3x3xf32>, tensor<4x1x1x1xf32> -> tensor<4x3x3x3xf32>
// CHECK: %[[W:.*]] = tcc.cast %[[WS]] : tensor<4x3x3x3xf32> -> tensor<4x3x3x3xf16>
// CHECK: %[[BF:.*]] = tcc.cast %arg2 : tensor<4xf16> -> tensor<4xf32>
// CHECK: %[[BS:.*]] = tcc.mul %[[BF]], %[[S]]
// CHECK: %[[BB:.*]] = tcc.add %[[BS]], %[[SHIFT]]
// CHECK: %[[B:.*]] = tcc.cast %[[BB]] : tensor<4xf32> -> tensor<4xf16>
// CHECK: %[[C:.*]] = tcc.conv2d %arg0, %[[W]], %[[B]] {{.*}} -> tensor<1x4x3x3xf16>
// CHECK: return %[[C]]
func.func @nchw(%x: tensor<1x3x5x5xf16>, %w: tensor<4x3x3x3xf16>, %b: tensor<4xf16>, %s: tensor<4xf16>, %beta: tensor<4xf16>, %m: tensor<4xf16>, %v: tensor<4xf16>) -> tensor<1x4x3x3xf16> {
  %c = tcc.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x3x5x5xf16>, tensor<4x3x3x3xf16>, tensor<4xf16> -> tensor<1x4x3x3xf16>
  %n = tcc.batch_norm %c, %s, %beta, %m, %v {eps = 1.0e-5 : f64} : (tensor<1x4x3x3xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<1x4x3x3xf16>
  return %n : tensor<1x4x3x3xf16>
}

// -----

// A depthwise nhwc conv (OHWI weight: output channels still axis 0) seen
// through the transpose back to NCHW; f32 needs no casts; no conv bias, so
// the new bias is the shift.
// CHECK-LABEL: func.func @nhwc
// CHECK-NOT: tcc.cast
// CHECK: %[[S:.*]] = tcc.mul %arg2, %{{.*}} : tensor<4xf32>
// CHECK: %[[SHIFT:.*]] = tcc.sub %arg3, %{{.*}} : tensor<4xf32>
// CHECK: %[[SR:.*]] = tcc.reshape %[[S]] : tensor<4xf32> -> tensor<4x1x1x1xf32>
// CHECK: %[[W:.*]] = tcc.mul %arg1, %[[SR]] : tensor<4x3x3x1xf32>, tensor<4x1x1x1xf32> -> tensor<4x3x3x1xf32>
// CHECK: %[[C:.*]] = tcc.conv2d %arg0, %[[W]], %[[SHIFT]] {{{.*}}groups = 4 : i64, nhwc{{.*}}} : tensor<1x5x5x4xf32>, tensor<4x3x3x1xf32>, tensor<4xf32> -> tensor<1x3x3x4xf32>
// CHECK: %[[T:.*]] = tcc.transpose %[[C]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[T]]
func.func @nhwc(%x: tensor<1x5x5x4xf32>, %w: tensor<4x3x3x1xf32>, %s: tensor<4xf32>, %beta: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> tensor<1x4x3x3xf32> {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 4 : i64, nhwc} : tensor<1x5x5x4xf32>, tensor<4x3x3x1xf32> -> tensor<1x3x3x4xf32>
  %t = tcc.transpose %c {perm = array<i64: 0, 3, 1, 2>} : tensor<1x3x3x4xf32> -> tensor<1x4x3x3xf32>
  %n = tcc.batch_norm %t, %s, %beta, %m, %v {eps = 1.0e-3 : f64} : (tensor<1x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  return %n : tensor<1x4x3x3xf32>
}

// -----

// The conv's result is used elsewhere too: nothing folds.
// CHECK-LABEL: func.func @shared
// CHECK: tcc.conv2d %arg0, %arg1 {
// CHECK: tcc.batch_norm
func.func @shared(%x: tensor<1x3x5x5xf32>, %w: tensor<4x3x3x3xf32>, %s: tensor<4xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x3x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x3x3xf32>
  %n = tcc.batch_norm %c, %s, %s, %s, %s {eps = 1.0e-5 : f64} : (tensor<1x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  return %n, %c : tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>
}
