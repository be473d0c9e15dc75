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

// -----

// A mask built from iotas starts its own group; the select that reads it and
// the chain's values merges the two into one kernel.
// CHECK-LABEL: func.func @mask_merge
// CHECK: %[[G:.*]] = tcc.group "elementwise"
// CHECK-DAG: tcc.tanh
// CHECK-DAG: tcc.iota
// CHECK-DAG: tcc.greater_equal
// CHECK: tcc.select
// CHECK-NOT: tcc.group
// CHECK: return %[[G]]
func.func @mask_merge(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %t = tcc.tanh %x : tensor<4x8xf32>
  %r = tcc.iota {axis = 0 : i64} : tensor<4x8xi32>
  %c = tcc.iota {axis = 1 : i64} : tensor<4x8xi32>
  %k = tcc.greater_equal %r, %c : tensor<4x8xi32>, tensor<4x8xi32> -> tensor<4x8xi1>
  %y = tcc.select %k, %t, %x : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Two elementwise groups connected through a matmul cannot merge: the
// matmul's group would come both before and after the merged one.
// CHECK-LABEL: func.func @no_cyclic_merge
// CHECK: %[[A:.*]]:2 = tcc.group "elementwise"
// CHECK:   tcc.exp
// CHECK:   tcc.slice
// CHECK: %[[M:.*]] = tcc.group "matmul"
// CHECK: tcc.group "elementwise"
// CHECK:   tcc.slice %[[M]]
// CHECK:   tcc.add %[[A]]#1
func.func @no_cyclic_merge(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %a = tcc.exp %x : tensor<4x4xf32>
  %m = tcc.matmul %a, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %s = tcc.slice %m {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x4xf32> -> tensor<2x4xf32>
  %c = tcc.slice %a {starts = array<i64: 2, 0>, steps = array<i64: 1, 1>} : tensor<4x4xf32> -> tensor<2x4xf32>
  %y = tcc.add %c, %s : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// A reduction chain is one group: it takes in the elementwise group of a
// value it reads (the tanh) and an epilogue of its shape (the relu); a
// constant its body captures is recomputed inside the group.
// CHECK-LABEL: func.func @chain_group
// CHECK: %[[G:.*]] = tcc.group "chain" -> tensor<4x8xf32> {
// CHECK:   %[[T:.*]] = tcc.tanh
// CHECK:   %[[C:.*]] = tcc.constant
// CHECK:   %[[R:.*]] = tcc.chain attributes {axis = 1 : i64}
// CHECK:     tcc.reduce_max %[[T]]
// CHECK:     tcc.mul %{{.*}}, %[[C]]
// CHECK:   tcc.relu %[[R]]
// CHECK: }
// CHECK-NOT: tcc.group
// CHECK: return %[[G]]
func.func @chain_group(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = tcc.constant {value = 2.0 : f32} : tensor<f32>
  %t = tcc.tanh %x : tensor<4x8xf32>
  %r = tcc.chain attributes {axis = 1 : i64} -> tensor<4x8xf32> {
    %m = tcc.reduce_max %t {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
    %d = tcc.sub %t, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    %y = tcc.mul %d, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    tcc.yield %y : tensor<4x8xf32>
  }
  %z = tcc.relu %r : tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

// A matmul reading a chain's result starts its own group, which takes in
// the add of both: the add may follow the chain's group and the matmul's.
// CHECK-LABEL: func.func @chain_then_matmul
// CHECK: %[[G:.*]] = tcc.group "chain"
// CHECK:   tcc.chain
// CHECK-NOT: tcc.add
// CHECK: tcc.group "matmul"
// CHECK:   tcc.matmul %[[G]], %[[G]]
// CHECK:   tcc.add %[[G]]
func.func @chain_then_matmul(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = tcc.chain attributes {axis = 1 : i64} -> tensor<4x4xf32> {
    %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x4xf32> -> tensor<4x1xf32>
    %d = tcc.sub %x, %m : tensor<4x4xf32>, tensor<4x1xf32> -> tensor<4x4xf32>
    tcc.yield %d : tensor<4x4xf32>
  }
  %p = tcc.matmul %r, %r : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %y = tcc.add %r, %p : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// A chain marked tcc.attention (the GPU attention template computes it)
// is a group alone: the transpose that makes Q and the scaling after it
// stay in groups of their own. The same chain unmarked takes both in.
// CHECK-LABEL: func.func @attention_alone
// CHECK: %[[Q:.*]] = tcc.group "elementwise"
// CHECK:   tcc.transpose
// CHECK: %[[A:.*]] = tcc.group "chain"
// CHECK-NEXT: tcc.chain
// CHECK-NOT: tcc.transpose
// CHECK: tcc.yield
// CHECK: tcc.group "elementwise"
// CHECK:   tcc.mul
// CHECK-LABEL: func.func @chain_unmarked
// CHECK: tcc.group "chain"
// CHECK:   tcc.transpose
// CHECK:   tcc.chain
// CHECK:   tcc.mul
// CHECK-NOT: tcc.group
func.func @attention_alone(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %qt = tcc.transpose %q {perm = array<i64: 0, 1, 2>} : tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  %0 = tcc.chain attributes {axis = 2 : i64, tcc.attention} -> tensor<2x8x4xf32> {
    %5 = tcc.matmul %qt, %k {transpose_b = true} : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x8xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 2>, keepdims = true} : tensor<2x8x8xf32> -> tensor<2x8x1xf32>
    %10 = tcc.sub %5, %9 : tensor<2x8x8xf32>, tensor<2x8x1xf32> -> tensor<2x8x8xf32>
    %11 = tcc.exp %10 : tensor<2x8x8xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 2>, keepdims = true} : tensor<2x8x8xf32> -> tensor<2x8x1xf32>
    %13 = tcc.div %11, %12 : tensor<2x8x8xf32>, tensor<2x8x1xf32> -> tensor<2x8x8xf32>
    %14 = tcc.matmul %13, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
    tcc.yield %14 : tensor<2x8x4xf32>
  }
  %c = tcc.constant {value = 2.0 : f32} : tensor<f32>
  %1 = tcc.mul %0, %c : tensor<2x8x4xf32>, tensor<f32> -> tensor<2x8x4xf32>
  return %1 : tensor<2x8x4xf32>
}
func.func @chain_unmarked(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %qt = tcc.transpose %q {perm = array<i64: 0, 1, 2>} : tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  %0 = tcc.chain attributes {axis = 2 : i64} -> tensor<2x8x4xf32> {
    %5 = tcc.matmul %qt, %k {transpose_b = true} : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x8xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 2>, keepdims = true} : tensor<2x8x8xf32> -> tensor<2x8x1xf32>
    %10 = tcc.sub %5, %9 : tensor<2x8x8xf32>, tensor<2x8x1xf32> -> tensor<2x8x8xf32>
    %11 = tcc.exp %10 : tensor<2x8x8xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 2>, keepdims = true} : tensor<2x8x8xf32> -> tensor<2x8x1xf32>
    %13 = tcc.div %11, %12 : tensor<2x8x8xf32>, tensor<2x8x1xf32> -> tensor<2x8x8xf32>
    %14 = tcc.matmul %13, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
    tcc.yield %14 : tensor<2x8x4xf32>
  }
  %c = tcc.constant {value = 2.0 : f32} : tensor<f32>
  %1 = tcc.mul %0, %c : tensor<2x8x4xf32>, tensor<f32> -> tensor<2x8x4xf32>
  return %1 : tensor<2x8x4xf32>
}
