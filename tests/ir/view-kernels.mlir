// RUN: tcc-opt %s --split-input-file --tcc-view-kernels | FileCheck %s

// A flatten between a pool and a matmul, alone in its kernel: a view, it
// launches nothing. Two reshapes in a row are one view too.
// CHECK-LABEL: func.func @main
// CHECK: func.func private @pool
// CHECK-SAME: tcc.kind = "global_avg_pool2d"} {
// CHECK: func.func private @flatten
// CHECK-SAME: tcc.view
// CHECK: func.func private @twice
// CHECK-SAME: tcc.view
func.func @main(%x: tensor<1x32x4x4xf32>, %w: tensor<10x32xf32>) -> tensor<1x10xf32> attributes {tcc.entry} {
  %p = call @pool(%x) : (tensor<1x32x4x4xf32>) -> tensor<1x32x1x1xf32>
  %f = call @flatten(%p) : (tensor<1x32x1x1xf32>) -> tensor<1x32xf32>
  %g = call @twice(%p) : (tensor<1x32x1x1xf32>) -> tensor<1x32xf32>
  %m = call @mm(%f, %g, %w) : (tensor<1x32xf32>, tensor<1x32xf32>, tensor<10x32xf32>) -> tensor<1x10xf32>
  return %m : tensor<1x10xf32>
}
func.func private @pool(%x: tensor<1x32x4x4xf32>) -> tensor<1x32x1x1xf32> attributes {tcc.kernel, tcc.kind = "global_avg_pool2d"} {
  %0 = tcc.global_avg_pool2d %x : tensor<1x32x4x4xf32> -> tensor<1x32x1x1xf32>
  return %0 : tensor<1x32x1x1xf32>
}
func.func private @flatten(%x: tensor<1x32x1x1xf32>) -> tensor<1x32xf32> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.reshape %x : tensor<1x32x1x1xf32> -> tensor<1x32xf32>
  return %0 : tensor<1x32xf32>
}
func.func private @twice(%x: tensor<1x32x1x1xf32>) -> tensor<1x32xf32> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.reshape %x : tensor<1x32x1x1xf32> -> tensor<32xf32>
  %1 = tcc.reshape %0 : tensor<32xf32> -> tensor<1x32xf32>
  return %1 : tensor<1x32xf32>
}
func.func private @mm(%a: tensor<1x32xf32>, %b: tensor<1x32xf32>, %w: tensor<10x32xf32>) -> tensor<1x10xf32> attributes {tcc.kernel, tcc.kind = "matmul"} {
  %s = tcc.add %a, %b : tensor<1x32xf32>, tensor<1x32xf32> -> tensor<1x32xf32>
  %0 = tcc.matmul %s, %w {transpose_b = true} : tensor<1x32xf32>, tensor<10x32xf32> -> tensor<1x10xf32>
  return %0 : tensor<1x10xf32>
}

// -----

// A reshape whose result is the model's output keeps its kernel (the output
// has a buffer of its own); so does one called twice where one call's
// result is returned.
// CHECK-LABEL: func.func @out
// CHECK: func.func private @flat(
// CHECK-SAME: tcc.kind = "elementwise"} {
func.func @out(%x: tensor<2x3x4xf16>) -> (tensor<2x12xf16>, tensor<2x12xf16>) attributes {tcc.entry} {
  %e = call @neg(%x) : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  %f = call @flat(%e) : (tensor<2x3x4xf16>) -> tensor<2x12xf16>
  %g = call @flat(%x) : (tensor<2x3x4xf16>) -> tensor<2x12xf16>
  %h = call @neg2(%g) : (tensor<2x12xf16>) -> tensor<2x12xf16>
  return %f, %h : tensor<2x12xf16>, tensor<2x12xf16>
}
func.func private @neg(%x: tensor<2x3x4xf16>) -> tensor<2x3x4xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.neg %x : tensor<2x3x4xf16>
  return %0 : tensor<2x3x4xf16>
}
func.func private @flat(%x: tensor<2x3x4xf16>) -> tensor<2x12xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.reshape %x : tensor<2x3x4xf16> -> tensor<2x12xf16>
  return %0 : tensor<2x12xf16>
}
func.func private @neg2(%x: tensor<2x12xf16>) -> tensor<2x12xf16> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.neg %x : tensor<2x12xf16>
  return %0 : tensor<2x12xf16>
}

// -----

// A reshape with more after it is no view. A kernel of two arguments whose
// result is a reshape of one of them is gone: a view of that one instead.
// CHECK-LABEL: func.func @not_views
// CHECK-NEXT: call @flat_neg(%arg0)
// CHECK-NEXT: call @two_view0(%arg0) : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK: func.func private @flat_neg
// CHECK-SAME: tcc.kind = "elementwise"} {
// CHECK-NOT: func.func private @two(
// CHECK: func.func private @two_view0
// CHECK-SAME: tcc.view
func.func @not_views(%x: tensor<2x3x4xf32>, %y: tensor<2x12xf32>) -> tensor<2x12xf32> attributes {tcc.entry} {
  %a = call @flat_neg(%x) : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %b = call @two(%x, %y) : (tensor<2x3x4xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %c = call @add(%a, %b) : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  return %c : tensor<2x12xf32>
}
func.func private @flat_neg(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.reshape %x : tensor<2x3x4xf32> -> tensor<2x12xf32>
  %1 = tcc.neg %0 : tensor<2x12xf32>
  return %1 : tensor<2x12xf32>
}
func.func private @two(%x: tensor<2x3x4xf32>, %y: tensor<2x12xf32>) -> tensor<2x12xf32> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.reshape %x : tensor<2x3x4xf32> -> tensor<2x12xf32>
  return %0 : tensor<2x12xf32>
}
func.func private @add(%a: tensor<2x12xf32>, %b: tensor<2x12xf32>) -> tensor<2x12xf32> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.add %a, %b : tensor<2x12xf32>, tensor<2x12xf32> -> tensor<2x12xf32>
  return %0 : tensor<2x12xf32>
}

// -----

// A flatten that rides along as a second result of the kernel that scales
// the same argument: it moves into a view kernel of its own, and the
// scaling kernel keeps one result. A reshape of the other argument that is
// the kernel's only use of it takes the argument away too.
// CHECK-LABEL: func.func @beside
// CHECK: %[[P:.*]] = call @pool(%arg0)
// CHECK-NEXT: %[[S:.*]] = call @scale(%[[P]]) : (tensor<1x32x1x1xf32>) -> tensor<1x32x1x1xf32>
// CHECK-NEXT: %[[F:.*]] = call @scale_view1(%[[P]]) : (tensor<1x32x1x1xf32>) -> tensor<1x32xf32>
// CHECK-NEXT: %[[G:.*]] = call @scale_view2(%arg1) : (tensor<4x8xf32>) -> tensor<32xf32>
// CHECK-NEXT: call @use(%[[S]], %[[F]], %[[G]])
// CHECK: func.func private @scale(%{{.*}}: tensor<1x32x1x1xf32>) -> tensor<1x32x1x1xf32>
// CHECK-NOT: tcc.reshape
// CHECK: return
// CHECK: func.func private @scale_view2(%[[A:.*]]: tensor<4x8xf32>) -> tensor<32xf32>
// CHECK-SAME: tcc.view
// CHECK-NEXT: %[[R:.*]] = tcc.reshape %[[A]]
// CHECK-NEXT: return %[[R]]
// CHECK: func.func private @scale_view1(%[[A:.*]]: tensor<1x32x1x1xf32>) -> tensor<1x32xf32>
// CHECK-SAME: tcc.view
// CHECK-NEXT: %[[R:.*]] = tcc.reshape %[[A]]
// CHECK-NEXT: return %[[R]]
func.func @beside(%x: tensor<1x32x4x4xf32>, %y: tensor<4x8xf32>) -> tensor<32xf32> attributes {tcc.entry} {
  %p = call @pool(%x) : (tensor<1x32x4x4xf32>) -> tensor<1x32x1x1xf32>
  %s:3 = call @scale(%p, %y) : (tensor<1x32x1x1xf32>, tensor<4x8xf32>) -> (tensor<1x32x1x1xf32>, tensor<1x32xf32>, tensor<32xf32>)
  %u = call @use(%s#0, %s#1, %s#2) : (tensor<1x32x1x1xf32>, tensor<1x32xf32>, tensor<32xf32>) -> tensor<32xf32>
  return %u : tensor<32xf32>
}
func.func private @pool(%x: tensor<1x32x4x4xf32>) -> tensor<1x32x1x1xf32> attributes {tcc.kernel, tcc.kind = "global_avg_pool2d"} {
  %0 = tcc.global_avg_pool2d %x : tensor<1x32x4x4xf32> -> tensor<1x32x1x1xf32>
  return %0 : tensor<1x32x1x1xf32>
}
func.func private @scale(%x: tensor<1x32x1x1xf32>, %y: tensor<4x8xf32>) -> (tensor<1x32x1x1xf32>, tensor<1x32xf32>, tensor<32xf32>) attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.neg %x : tensor<1x32x1x1xf32>
  %1 = tcc.reshape %x : tensor<1x32x1x1xf32> -> tensor<1x32xf32>
  %2 = tcc.reshape %y : tensor<4x8xf32> -> tensor<32xf32>
  return %0, %1, %2 : tensor<1x32x1x1xf32>, tensor<1x32xf32>, tensor<32xf32>
}
func.func private @use(%a: tensor<1x32x1x1xf32>, %b: tensor<1x32xf32>, %c: tensor<32xf32>) -> tensor<32xf32> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.reshape %a : tensor<1x32x1x1xf32> -> tensor<32xf32>
  %1 = tcc.reshape %b : tensor<1x32xf32> -> tensor<32xf32>
  %2 = tcc.add %0, %1 : tensor<32xf32>, tensor<32xf32> -> tensor<32xf32>
  %3 = tcc.add %2, %c : tensor<32xf32>, tensor<32xf32> -> tensor<32xf32>
  return %3 : tensor<32xf32>
}

// -----

// Every result a reshape of an argument: the kernel is gone, each result a
// view. One the caller returns stays in a kernel.
// CHECK-LABEL: func.func @all_views
// CHECK-NEXT: %[[K:.*]] = call @two_flat(%arg1)
// CHECK-NEXT: %[[V:.*]] = call @two_flat_view0(%arg0)
// CHECK-NEXT: call @sum(%[[V]], %[[K]])
// CHECK: func.func private @two_flat(%{{.*}}: tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-SAME: tcc.kind = "elementwise"} {
func.func @all_views(%x: tensor<3x2xf32>, %y: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<6xf32>) attributes {tcc.entry} {
  %v:2 = call @two_flat(%x, %y) : (tensor<3x2xf32>, tensor<2x3xf32>) -> (tensor<6xf32>, tensor<6xf32>)
  %s = call @sum(%v#0, %v#1) : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %s, %v#1 : tensor<6xf32>, tensor<6xf32>
}
func.func private @two_flat(%x: tensor<3x2xf32>, %y: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<6xf32>) attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.reshape %x : tensor<3x2xf32> -> tensor<6xf32>
  %1 = tcc.reshape %y : tensor<2x3xf32> -> tensor<6xf32>
  return %0, %1 : tensor<6xf32>, tensor<6xf32>
}
func.func private @sum(%a: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<6xf32> attributes {tcc.kernel, tcc.kind = "elementwise"} {
  %0 = tcc.add %a, %b : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
  return %0 : tensor<6xf32>
}
