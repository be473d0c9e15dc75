// RUN: tcc-opt %s --split-input-file --tcc-conv-layout=layout=nhwc --cse | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-conv-layout="layout=auto tensor-cores=1" --cse | FileCheck %s --check-prefix=AUTO
// RUN: tcc-opt %s --split-input-file --tcc-conv-layout="layout=auto tensor-cores=1 allow-tf32=1" --cse | FileCheck %s --check-prefix=TF32
// RUN: tcc-opt %s --split-input-file --tcc-conv-layout="layout=auto" --cse | FileCheck %s --check-prefix=NCHW
// RUN: tcc-opt %s --split-input-file --tcc-conv-layout="layout=nchw" --cse | FileCheck %s --check-prefix=NCHW
// RUN: not tcc-opt %s --split-input-file --tcc-conv-layout="layout=nwhc" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: unknown conv layout 'nwhc' (known: auto, nchw, nhwc)
// NCHW-NOT: nhwc
// NCHW-NOT: tcc.transpose

// conv, relu, a broadcast [1, C, 1, 1] param, max pool, conv: the input is
// transposed to NHWC, the weight OIHW -> OHWI (a 1x1 kernel's is a
// reshape), the param reshaped to [1, 1, 1, C], and the result transposed
// back; nothing between.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[X:.*]] = tcc.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : tensor<2x3x9x9xf16> -> tensor<2x9x9x3xf16>
// CHECK-NEXT: %[[W:.*]] = tcc.transpose %arg1 {perm = array<i64: 0, 2, 3, 1>} : tensor<8x3x5x3xf16> -> tensor<8x5x3x3xf16>
// CHECK-NEXT: %[[C:.*]] = tcc.conv2d %[[X]], %[[W]] {{{.*}}nhwc{{.*}}} : tensor<2x9x9x3xf16>, tensor<8x5x3x3xf16> -> tensor<2x7x9x8xf16>
// CHECK-NEXT: %[[R:.*]] = tcc.relu %[[C]] : tensor<2x7x9x8xf16>
// CHECK-NEXT: %[[P:.*]] = tcc.reshape %arg2 : tensor<1x8x1x1xf16> -> tensor<1x1x1x8xf16>
// CHECK-NEXT: %[[A:.*]] = tcc.add %[[R]], %[[P]] : tensor<2x7x9x8xf16>, tensor<1x1x1x8xf16> -> tensor<2x7x9x8xf16>
// CHECK-NEXT: %[[M:.*]] = tcc.max_pool2d %[[A]] {ceil_mode = true, kernel = array<i64: 3, 3>, nhwc, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x7x9x8xf16> -> tensor<2x4x5x8xf16>
// CHECK-NEXT: %[[W2:.*]] = tcc.reshape %arg3 : tensor<4x8x1x1xf16> -> tensor<4x1x1x8xf16>
// CHECK-NEXT: %[[C2:.*]] = tcc.conv2d %[[M]], %[[W2]] {{{.*}}nhwc{{.*}}} : tensor<2x4x5x8xf16>, tensor<4x1x1x8xf16> -> tensor<2x4x5x4xf16>
// CHECK-NEXT: %[[Y:.*]] = tcc.transpose %[[C2]] {perm = array<i64: 0, 3, 1, 2>} : tensor<2x4x5x4xf16> -> tensor<2x4x4x5xf16>
// CHECK-NEXT: return %[[Y]]
// f16 convolutions take tensor cores: auto is nhwc on such a target.
// AUTO-LABEL: func.func @chain
// AUTO: tcc.conv2d {{.*}}nhwc
// AUTO: max_pool2d {{.*}}nhwc
// AUTO: tcc.conv2d {{.*}}nhwc
func.func @chain(%x: tensor<2x3x9x9xf16>, %w1: tensor<8x3x5x3xf16>, %p: tensor<1x8x1x1xf16>, %w2: tensor<4x8x1x1xf16>) -> tensor<2x4x4x5xf16> {
  %c = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<2x3x9x9xf16>, tensor<8x3x5x3xf16> -> tensor<2x8x7x9xf16>
  %r = tcc.relu %c : tensor<2x8x7x9xf16>
  %a = tcc.add %r, %p : tensor<2x8x7x9xf16>, tensor<1x8x1x1xf16> -> tensor<2x8x7x9xf16>
  %m = tcc.max_pool2d %a {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true} : tensor<2x8x7x9xf16> -> tensor<2x8x4x5xf16>
  %c2 = tcc.conv2d %m, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<2x8x4x5xf16>, tensor<4x8x1x1xf16> -> tensor<2x4x4x5xf16>
  return %c2 : tensor<2x4x4x5xf16>
}

// -----

// Two convs of one input (one transpose after CSE), concat on channels
// becomes axis 3, avg pool goes nhwc, a rank-0 operand stays as it is.
// CHECK-LABEL: func.func @concat
// CHECK-COUNT-1: tcc.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[CAT:.*]] = tcc.concat %{{.*}}, %{{.*}} {axis = 3 : i64} : tensor<1x6x6x2xf32>, tensor<1x6x6x3xf32> -> tensor<1x6x6x5xf32>
// CHECK-NEXT: %[[P:.*]] = tcc.avg_pool2d %[[CAT]] {{{.*}}nhwc{{.*}}} : tensor<1x6x6x5xf32> -> tensor<1x3x3x5xf32>
// CHECK-NEXT: %[[M:.*]] = tcc.mul %[[P]], %arg3 : tensor<1x3x3x5xf32>, tensor<f32> -> tensor<1x3x3x5xf32>
// CHECK-NEXT: %[[Y:.*]] = tcc.transpose %[[M]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: return %[[Y]]
// f32 convolutions take tensor cores only with tf32.
// AUTO-LABEL: func.func @concat
// AUTO-NOT: nhwc
// TF32-LABEL: func.func @concat
// TF32: tcc.conv2d {{.*}}nhwc
func.func @concat(%x: tensor<1x4x6x6xf32>, %w1: tensor<2x4x1x1xf32>, %w2: tensor<3x4x1x1xf32>, %s: tensor<f32>) -> tensor<1x5x3x3xf32> {
  %a = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x4x6x6xf32>, tensor<2x4x1x1xf32> -> tensor<1x2x6x6xf32>
  %b = tcc.conv2d %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x4x6x6xf32>, tensor<3x4x1x1xf32> -> tensor<1x3x6x6xf32>
  %c = tcc.concat %a, %b {axis = 1 : i64} : tensor<1x2x6x6xf32>, tensor<1x3x6x6xf32> -> tensor<1x5x6x6xf32>
  %p = tcc.avg_pool2d %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false, count_include_pad = true} : tensor<1x5x6x6xf32> -> tensor<1x5x3x3xf32>
  %m = tcc.mul %p, %s : tensor<1x5x3x3xf32>, tensor<f32> -> tensor<1x5x3x3xf32>
  return %m : tensor<1x5x3x3xf32>
}

// -----

// Global pool then flatten: no transpose ([N, 1, 1, C] -> [N, C, 1, 1] is a
// reshape, folded into the flatten's). A reshape that mixes axes keeps
// the transpose before it.
// CHECK-LABEL: func.func @heads
// CHECK: %[[C:.*]] = tcc.conv2d
// CHECK-NEXT: %[[T:.*]] = tcc.transpose %[[C]] {perm = array<i64: 0, 3, 1, 2>} : tensor<2x4x4x6xf32> -> tensor<2x6x4x4xf32>
// CHECK-NEXT: %[[G:.*]] = tcc.global_avg_pool2d %[[C]] {nhwc} : tensor<2x4x4x6xf32> -> tensor<2x1x1x6xf32>
// CHECK-NEXT: %[[F:.*]] = tcc.reshape %[[G]] : tensor<2x1x1x6xf32> -> tensor<2x6xf32>
// CHECK-NEXT: %[[H:.*]] = tcc.reshape %[[T]] : tensor<2x6x4x4xf32> -> tensor<2x96xf32>
// CHECK-NEXT: return %[[F]], %[[H]]
func.func @heads(%x: tensor<2x3x4x4xf32>, %w: tensor<6x3x3x3xf32>) -> (tensor<2x6xf32>, tensor<2x96xf32>) {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<2x3x4x4xf32>, tensor<6x3x3x3xf32> -> tensor<2x6x4x4xf32>
  %g = tcc.global_avg_pool2d %c : tensor<2x6x4x4xf32> -> tensor<2x6x1x1xf32>
  %f = tcc.reshape %g : tensor<2x6x1x1xf32> -> tensor<2x6xf32>
  %h = tcc.reshape %c : tensor<2x6x4x4xf32> -> tensor<2x96xf32>
  return %f, %h : tensor<2x6xf32>, tensor<2x96xf32>
}

// -----

// A batch norm with no conv before it becomes x * mul + add with the
// coefficients computed in f32 from the f16 params and reshaped to
// [1, 1, 1, C]; the nearest resize's gathers move to axes 1 and 2; a
// residual add with an NCHW tensor transposes that one instead of its
// result (a transpose moved, none added), and a reduction with keepdims
// follows.
// CHECK-LABEL: func.func @bn_resize
// AUTO-LABEL: func.func @bn_resize
// CHECK: %[[E:.*]] = tcc.exp %{{.*}} : tensor<1x3x3x4xf16>
// CHECK: %[[EPS:.*]] = tcc.constant {value = 1.000000e-03 : f32} : tensor<4xf32>
// CHECK: %[[V:.*]] = tcc.cast %arg5 : tensor<4xf16> -> tensor<4xf32>
// CHECK: %[[VE:.*]] = tcc.add %[[V]], %[[EPS]]
// CHECK: %[[INV:.*]] = tcc.rsqrt %[[VE]] : tensor<4xf32>
// CHECK: %[[S:.*]] = tcc.cast %arg2 : tensor<4xf16> -> tensor<4xf32>
// CHECK: %[[MUL:.*]] = tcc.mul %[[S]], %[[INV]]
// CHECK: %[[XF:.*]] = tcc.cast %[[E]] : tensor<1x3x3x4xf16> -> tensor<1x3x3x4xf32>
// CHECK: %[[MR:.*]] = tcc.reshape %[[MUL]] : tensor<4xf32> -> tensor<1x1x1x4xf32>
// CHECK: tcc.mul %[[XF]], %[[MR]] : tensor<1x3x3x4xf32>, tensor<1x1x1x4xf32> -> tensor<1x3x3x4xf32>
// CHECK: %[[Y:.*]] = tcc.cast %{{.*}} : tensor<1x3x3x4xf32> -> tensor<1x3x3x4xf16>
// CHECK: %[[G1:.*]] = tcc.gather %[[Y]], %arg6 {axis = 1 : i64} : tensor<1x3x3x4xf16>, tensor<6xi64> -> tensor<1x6x3x4xf16>
// CHECK: %[[G2:.*]] = tcc.gather %[[G1]], %arg6 {axis = 2 : i64} : tensor<1x6x3x4xf16>, tensor<6xi64> -> tensor<1x6x6x4xf16>
// CHECK: %[[S7:.*]] = tcc.transpose %arg7 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x6x6xf16> -> tensor<1x6x6x4xf16>
// CHECK: %[[A:.*]] = tcc.add %[[G2]], %[[S7]]
// CHECK: %[[R:.*]] = tcc.reduce_max %[[A]] {axes = array<i64: 1, 3>, keepdims = true} : tensor<1x6x6x4xf16> -> tensor<1x1x6x1xf16>
// CHECK: %[[RT:.*]] = tcc.reshape %[[R]] : tensor<1x1x6x1xf16> -> tensor<1x1x1x6xf16>
// CHECK: return %[[RT]]
func.func @bn_resize(%x: tensor<1x4x3x3xf16>, %w: tensor<4x4x1x1xf16>, %s: tensor<4xf16>, %b: tensor<4xf16>, %m: tensor<4xf16>, %v: tensor<4xf16>, %i: tensor<6xi64>, %y: tensor<1x4x6x6xf16>) -> tensor<1x1x1x6xf16> {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x4x3x3xf16>, tensor<4x4x1x1xf16> -> tensor<1x4x3x3xf16>
  %e = tcc.exp %c : tensor<1x4x3x3xf16>
  %n = tcc.batch_norm %e, %s, %b, %m, %v {eps = 1.0e-3 : f64} : (tensor<1x4x3x3xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<1x4x3x3xf16>
  %g1 = tcc.gather %n, %i {axis = 2 : i64} : tensor<1x4x3x3xf16>, tensor<6xi64> -> tensor<1x4x6x3xf16>
  %g2 = tcc.gather %g1, %i {axis = 3 : i64} : tensor<1x4x6x3xf16>, tensor<6xi64> -> tensor<1x4x6x6xf16>
  %a = tcc.add %g2, %y : tensor<1x4x6x6xf16>, tensor<1x4x6x6xf16> -> tensor<1x4x6x6xf16>
  %r = tcc.reduce_max %a {axes = array<i64: 1, 2>, keepdims = true} : tensor<1x4x6x6xf16> -> tensor<1x1x1x6xf16>
  return %r : tensor<1x1x1x6xf16>
}

// -----

// pad and slice permute their per-axis attributes; an add of two tensors
// that were not transposed is left alone.
// CHECK-LABEL: func.func @pad_slice
// CHECK: %[[P:.*]] = tcc.pad %{{.*}} {pads = array<i64: 0, 1, 2, 0, 0, 3, 4, 0>, value = 0.000000e+00 : f64} : tensor<1x3x3x4xf16> -> tensor<1x7x9x4xf16>
// CHECK-NEXT: %[[S:.*]] = tcc.slice %[[P]] {starts = array<i64: 0, 1, 0, 3>, steps = array<i64: 1, 2, 1, -1>} : tensor<1x7x9x4xf16> -> tensor<1x3x9x4xf16>
// CHECK-NEXT: %[[T:.*]] = tcc.transpose %[[S]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: tcc.add %arg2, %arg2
// CHECK-NEXT: return %[[T]]
func.func @pad_slice(%x: tensor<1x4x3x3xf16>, %w: tensor<4x4x1x1xf16>, %z: tensor<2x2xf16>) -> (tensor<1x4x3x9xf16>, tensor<2x2xf16>) {
  %c = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x4x3x3xf16>, tensor<4x4x1x1xf16> -> tensor<1x4x3x3xf16>
  %p = tcc.pad %c {pads = array<i64: 0, 0, 1, 2, 0, 0, 3, 4>, value = 0.0 : f64} : tensor<1x4x3x3xf16> -> tensor<1x4x7x9xf16>
  %s = tcc.slice %p {starts = array<i64: 0, 3, 1, 0>, steps = array<i64: 1, -1, 2, 1>} : tensor<1x4x7x9xf16> -> tensor<1x4x3x9xf16>
  %a = tcc.add %z, %z : tensor<2x2xf16>, tensor<2x2xf16> -> tensor<2x2xf16>
  return %s, %a : tensor<1x4x3x9xf16>, tensor<2x2xf16>
}
