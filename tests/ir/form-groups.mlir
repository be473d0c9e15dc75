// RUN: tcc-opt %s --split-input-file --tcc-form-groups | FileCheck %s

// An elementwise chain becomes one group; the constant is recomputed inside.
// CHECK-LABEL: func.func @chain
// CHECK: %[[G:.*]] = tcc.group "elementwise" -> tensor<4x8xf32> {
// CHECK:   tcc.add
// CHECK:   tcc.exp
// CHECK:   tcc.constant
// CHECK:   tcc.mul
// CHECK:   tcc.yield
// CHECK-NOT: tcc.group
// CHECK: return %[[G]]
func.func @chain(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = tcc.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %1 = tcc.exp %0 : tensor<4x8xf32>
  %c = tcc.constant {value = 2.0 : f32} : tensor<4x8xf32>
  %2 = tcc.mul %1, %c : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// A reduction takes in the elementwise ops that only feed it, and an epilogue
// on its result; a matmul takes in its elementwise consumer.
// CHECK-LABEL: func.func @mixed
// CHECK: %[[R:.*]] = tcc.group "reduce_sum"
// CHECK:   tcc.exp
// CHECK:   tcc.reduce_sum
// CHECK:   tcc.neg
// CHECK: %[[M:.*]] = tcc.group "matmul"
// CHECK:   tcc.matmul
// CHECK:   tcc.relu
// CHECK: return %[[R]], %[[M]]
func.func @mixed(%a: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x4xf32>) {
  %0 = tcc.exp %a : tensor<4x8xf32>
  %1 = tcc.reduce_sum %0 {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
  %2 = tcc.neg %1 : tensor<4xf32>
  %3 = tcc.matmul %a, %a {transpose_b = true} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
  %4 = tcc.relu %3 : tensor<4x4xf32>
  return %2, %4 : tensor<4xf32>, tensor<4x4xf32>
}

// -----

// A reduction takes in its elementwise prologue even when others read the
// prologue's values: the kernel then writes them too. The op that reads both
// a reduction and the full tensor starts a new group (no cycle).
// CHECK-LABEL: func.func @softmax
// CHECK: %[[MAX:.*]] = tcc.group "reduce_max"
// CHECK: %[[E:.*]]:2 = tcc.group "reduce_sum" -> tensor<4x8xf32>, tensor<4x1xf32>
// CHECK:   tcc.sub
// CHECK:   tcc.exp
// CHECK:   tcc.reduce_sum
// CHECK: tcc.group "elementwise"
// CHECK:   tcc.div %[[E]]#0, %[[E]]#1
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tcc.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = tcc.exp %d : tensor<4x8xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = tcc.div %e, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
