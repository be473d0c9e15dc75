// RUN: tcc-opt %s --canonicalize | FileCheck %s

// A transpose of a transpose is one transpose by the composed permutation,
// or nothing when they cancel (a layout changed and changed back); the
// identity permutation is its input.
// CHECK-LABEL: func.func @twice
// CHECK-NEXT: %[[C:.*]] = tcc.transpose %arg0 {perm = array<i64: 2, 0, 1, 3>} : tensor<2x3x4x5xf32> -> tensor<4x2x3x5xf32>
// CHECK-NEXT: return %arg0, %[[C]], %arg0
func.func @twice(%x: tensor<2x3x4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<4x2x3x5xf32>, tensor<2x3x4x5xf32>) {
  %a = tcc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<2x3x4x5xf32> -> tensor<2x4x3x5xf32>
  %b = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x3x5xf32> -> tensor<2x3x4x5xf32>
  %c = tcc.transpose %a {perm = array<i64: 1, 0, 2, 3>} : tensor<2x4x3x5xf32> -> tensor<4x2x3x5xf32>
  %d = tcc.transpose %x {perm = array<i64: 0, 1, 2, 3>} : tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32>
  return %b, %c, %d : tensor<2x3x4x5xf32>, tensor<4x2x3x5xf32>, tensor<2x3x4x5xf32>
}

// Three in a row fold to one.
// CHECK-LABEL: func.func @thrice
// CHECK-NEXT: %[[T:.*]] = tcc.transpose %arg0 {perm = array<i64: 1, 2, 0>} : tensor<2x3x4xbf16> -> tensor<3x4x2xbf16>
// CHECK-NEXT: return %[[T]]
func.func @thrice(%x: tensor<2x3x4xbf16>) -> tensor<3x4x2xbf16> {
  %a = tcc.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x3x4xbf16> -> tensor<3x2x4xbf16>
  %b = tcc.transpose %a {perm = array<i64: 0, 2, 1>} : tensor<3x2x4xbf16> -> tensor<3x4x2xbf16>
  %c = tcc.transpose %b {perm = array<i64: 0, 1, 2>} : tensor<3x4x2xbf16> -> tensor<3x4x2xbf16>
  return %c : tensor<3x4x2xbf16>
}
