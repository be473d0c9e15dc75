// RUN: tcc-opt %s --split-input-file --canonicalize | FileCheck %s

// A cross-entropy's picked log-probabilities: the gather moves ahead of the
// log-softmax's two subtractions (their second operands one value a row),
// so it reads x itself; the log-softmax is no longer a tensor anything
// reads whole (only the max and the sum of exponentials remain per row).
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[X:.*]]: tensor<8x10xf32>, %[[T:.*]]: tensor<8x1xi64>)
// CHECK-DAG: %[[M:.*]] = tcc.reduce_max %[[X]]
// CHECK-DAG: %[[G:.*]] = tcc.take_along_axis %[[X]], %[[T]] {axis = 1 : i64} : tensor<8x10xf32>, tensor<8x1xi64> -> tensor<8x1xf32>
// CHECK-DAG: %[[L:.*]] = tcc.log
// CHECK: %[[GT:.*]] = tcc.sub %[[G]], %[[M]] : tensor<8x1xf32>, tensor<8x1xf32> -> tensor<8x1xf32>
// CHECK: %[[P:.*]] = tcc.sub %[[GT]], %[[L]] : tensor<8x1xf32>, tensor<8x1xf32> -> tensor<8x1xf32>
// CHECK: tcc.neg %[[P]] : tensor<8x1xf32>
// CHECK-NOT: take_along_axis
func.func @cross_entropy(%x: tensor<8x10xf32>, %t: tensor<8x1xi64>) -> tensor<8x1xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<8x10xf32> -> tensor<8x1xf32>
  %d = tcc.sub %x, %m : tensor<8x10xf32>, tensor<8x1xf32> -> tensor<8x10xf32>
  %e = tcc.exp %d : tensor<8x10xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<8x10xf32> -> tensor<8x1xf32>
  %l = tcc.log %s : tensor<8x1xf32>
  %lsm = tcc.sub %d, %l : tensor<8x10xf32>, tensor<8x1xf32> -> tensor<8x10xf32>
  %p = tcc.take_along_axis %lsm, %t {axis = 1 : i64} : tensor<8x10xf32>, tensor<8x1xi64> -> tensor<8x1xf32>
  %n = tcc.neg %p : tensor<8x1xf32>
  return %n : tensor<8x1xf32>
}

// -----

// An operand that varies along the axis without the op's shape (a weight
// per class, [10]) has no entry per gathered index: the gather stays.
// CHECK-LABEL: func.func @per_class
// CHECK: %[[W:.*]] = tcc.mul
// CHECK: tcc.take_along_axis %[[W]]
func.func @per_class(%x: tensor<8x10xf32>, %w: tensor<10xf32>, %t: tensor<8x1xi64>) -> tensor<8x1xf32> {
  %y = tcc.mul %x, %w : tensor<8x10xf32>, tensor<10xf32> -> tensor<8x10xf32>
  %p = tcc.take_along_axis %y, %t {axis = 1 : i64} : tensor<8x10xf32>, tensor<8x1xi64> -> tensor<8x1xf32>
  return %p : tensor<8x1xf32>
}

// -----

// Where the op's result has another user and the gather is as large as it,
// computing the op twice would cost more than the gather saves: unchanged.
// CHECK-LABEL: func.func @shared_full
// CHECK: %[[E:.*]] = tcc.exp
// CHECK: tcc.take_along_axis %[[E]]
func.func @shared_full(%x: tensor<8x10xf32>, %t: tensor<8x10xi64>) -> (tensor<8x10xf32>, tensor<8x10xf32>) {
  %e = tcc.exp %x : tensor<8x10xf32>
  %p = tcc.take_along_axis %e, %t {axis = 1 : i64} : tensor<8x10xf32>, tensor<8x10xi64> -> tensor<8x10xf32>
  return %e, %p : tensor<8x10xf32>, tensor<8x10xf32>
}
