// RUN: tcc-opt %s --split-input-file --verify-diagnostics | tcc-opt | FileCheck %s

// Every op prints and parses back.
// CHECK-LABEL: func.func @round_trip
// CHECK: tcc.gelu
// CHECK: tcc.clamp
// CHECK: tcc.select
// CHECK: tcc.cast
// CHECK: tcc.iota
// CHECK: tcc.topk
// CHECK: tcc.conv2d
// CHECK: tcc.batch_norm
func.func @round_trip(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<3xf32>) -> (tensor<2x3x8x8xf32>, tensor<2x3x8x8xbf16>, tensor<2x4x6x6xf32>) {
  %0 = tcc.gelu %x {tanh_approx = true} : tensor<2x3x8x8xf32>
  %1 = tcc.clamp %0 {min = -1.0 : f64} : tensor<2x3x8x8xf32>
  %2 = tcc.greater %1, %x : tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32> -> tensor<2x3x8x8xi1>
  %3 = tcc.select %2, %1, %x : tensor<2x3x8x8xi1>, tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32> -> tensor<2x3x8x8xf32>
  %4 = tcc.cast %3 : tensor<2x3x8x8xf32> -> tensor<2x3x8x8xbf16>
  %5 = tcc.iota {axis = 1 : i64} : tensor<2x3xi64>
  %v, %i = tcc.topk %x {k = 2 : i64, axis = 3 : i64, largest = true} : tensor<2x3x8x8xf32> -> tensor<2x3x8x2xf32>, tensor<2x3x8x2xi64>
  %6 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x6x6xf32>
  %7 = tcc.batch_norm %x, %c, %c, %c, %c {eps = 1.0e-5 : f64} : (tensor<2x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x8x8xf32>
  return %7, %4, %6 : tensor<2x3x8x8xf32>, tensor<2x3x8x8xbf16>, tensor<2x4x6x6xf32>
}

// -----

func.func @bad_broadcast(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{do not broadcast}}
  %0 = tcc.add %a, %b : tensor<4x8xf32>, tensor<3xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @bad_reduce(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result shape [4] should be [8]}}
  %0 = tcc.reduce_sum %a {axes = array<i64: 0>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @bad_matmul(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{contraction sizes differ}}
  %0 = tcc.matmul %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @bad_mixed_dtype(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{element types differ}}
  %0 = tcc.add %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
