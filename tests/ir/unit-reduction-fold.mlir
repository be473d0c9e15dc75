// RUN: tcc-opt %s --canonicalize | FileCheck %s

// A reduction over axes of extent 1 reduces one element to itself: the
// input where the axes are kept (a loss's mean over the single row of a
// [1, C] batch), its reshape where they are dropped.
// CHECK-LABEL: func.func @kept
// CHECK-NEXT: return %arg0, %arg0, %arg0, %arg1
func.func @kept(%x: tensor<1x1xf32>, %y: tensor<3x1xi32>) -> (tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<3x1xi32>) {
  %a = tcc.reduce_mean %x {axes = array<i64: 0>, keepdims = true} : tensor<1x1xf32> -> tensor<1x1xf32>
  %b = tcc.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = true} : tensor<1x1xf32> -> tensor<1x1xf32>
  %c = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<1x1xf32> -> tensor<1x1xf32>
  %d = tcc.reduce_min %y {axes = array<i64: 1>, keepdims = true} : tensor<3x1xi32> -> tensor<3x1xi32>
  return %a, %b, %c, %d : tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<3x1xi32>
}

// CHECK-LABEL: func.func @dropped
// CHECK-NEXT: %[[S:.*]] = tcc.reshape %arg0 : tensor<1xf32> -> tensor<f32>
// CHECK-NEXT: %[[M:.*]] = tcc.reshape %arg1 : tensor<4x1xf16> -> tensor<4xf16>
// CHECK-NEXT: return %[[S]], %[[M]]
func.func @dropped(%x: tensor<1xf32>, %y: tensor<4x1xf16>) -> (tensor<f32>, tensor<4xf16>) {
  %a = tcc.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : tensor<1xf32> -> tensor<f32>
  %b = tcc.reduce_mean %y {axes = array<i64: 1>, keepdims = false} : tensor<4x1xf16> -> tensor<4xf16>
  return %a, %b : tensor<f32>, tensor<4xf16>
}

// An axis longer than 1 is a real reduction.
// CHECK-LABEL: func.func @real
// CHECK-NEXT: tcc.reduce_sum
func.func @real(%x: tensor<2x1xf32>) -> tensor<1x1xf32> {
  %a = tcc.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = true} : tensor<2x1xf32> -> tensor<1x1xf32>
  return %a : tensor<1x1xf32>
}
