// RUN: tcc-opt %s --split-input-file --tcc-private-inits | FileCheck %s

// Two matmuls from one zero fill: each gets its own fill of its own empty
// tensor, so bufferization cannot place them in one buffer.
// CHECK-LABEL: func.func @shared_fill
// CHECK: %[[E1:.*]] = tensor.empty()
// CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}}) outs(%[[E1]]
// CHECK: %[[E2:.*]] = tensor.empty()
// CHECK: %[[F2:.*]] = linalg.fill ins(%{{.*}}) outs(%[[E2]]
// CHECK: linalg.matmul {{.*}} outs(%[[F2]]
// CHECK: linalg.matmul {{.*}} outs(%[[F1]]
func.func @shared_fill(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m2 = linalg.matmul ins(%b, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m1, %m2 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A fill used once is left alone.
// CHECK-LABEL: func.func @own_fill
// CHECK-COUNT-1: linalg.fill
// CHECK-NOT: linalg.fill
func.func @own_fill(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m1 : tensor<4x4xf32>
}
