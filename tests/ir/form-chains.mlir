// RUN: tcc-opt %s --split-input-file --tcc-form-chains | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-form-chains --tcc-lower-to-linalg | FileCheck %s --check-prefix=LOWER

// Softmax: max → sum along axis 1 and the division after them are one chain;
// its result is the only value used outside.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<4x8xf32> {
// CHECK:   tcc.reduce_max
// CHECK:   tcc.sub
// CHECK:   tcc.exp
// CHECK:   tcc.reduce_sum
// CHECK:   %[[Y:.*]] = tcc.div
// CHECK:   tcc.yield %[[Y]]
// CHECK: return %[[C]]
// tcc-lower-to-linalg inlines the chain: plain linalg ops, no tcc op left.
// LOWER-LABEL: func.func @softmax
// LOWER-NOT: tcc.
// LOWER: linalg.generic
// LOWER-NOT: tcc.
// LOWER: return
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tcc.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = tcc.exp %d : tensor<4x8xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = tcc.div %e, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A member used outside the chain becomes one more result.
// CHECK-LABEL: func.func @softmax_shared
// CHECK: %[[C:.*]]:2 = tcc.chain attributes {axis = 0 : i64} -> tensor<8x4xf32>, tensor<8x4xf32> {
// CHECK:   %[[E:.*]] = tcc.exp
// CHECK:   %[[Y:.*]] = tcc.div
// CHECK:   tcc.yield %[[E]], %[[Y]]
// CHECK: return %[[C]]#1, %[[C]]#0
func.func @softmax_shared(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %m = tcc.reduce_max %x {axes = array<i64: 0>, keepdims = true} : tensor<8x4xf32> -> tensor<1x4xf32>
  %d = tcc.sub %x, %m : tensor<8x4xf32>, tensor<1x4xf32> -> tensor<8x4xf32>
  %e = tcc.exp %d : tensor<8x4xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 0>, keepdims = true} : tensor<8x4xf32> -> tensor<1x4xf32>
  %y = tcc.div %e, %s : tensor<8x4xf32>, tensor<1x4xf32> -> tensor<8x4xf32>
  return %y, %e : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Log-softmax: the log of the sum and the final subtraction are in the chain.
// CHECK-LABEL: func.func @log_softmax
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 2 : i64} -> tensor<2x3x16xf32> {
// CHECK:   tcc.reduce_max
// CHECK:   tcc.sub
// CHECK:   tcc.exp
// CHECK:   tcc.reduce_sum
// CHECK:   tcc.log
// CHECK:   %[[Y:.*]] = tcc.sub
// CHECK:   tcc.yield %[[Y]]
// CHECK: return %[[C]]
func.func @log_softmax(%x: tensor<2x3x16xf32>) -> tensor<2x3x16xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 2>, keepdims = true} : tensor<2x3x16xf32> -> tensor<2x3x1xf32>
  %t = tcc.sub %x, %m : tensor<2x3x16xf32>, tensor<2x3x1xf32> -> tensor<2x3x16xf32>
  %e = tcc.exp %t : tensor<2x3x16xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x3x16xf32> -> tensor<2x3x1xf32>
  %l = tcc.log %s : tensor<2x3x1xf32>
  %y = tcc.sub %t, %l : tensor<2x3x16xf32>, tensor<2x3x1xf32> -> tensor<2x3x16xf32>
  return %y : tensor<2x3x16xf32>
}

// -----

// Log-sum-exp: the max is read twice, by the subtraction and the final add.
// CHECK-LABEL: func.func @logsumexp
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<4x1xf32> {
// CHECK:   %[[M:.*]] = tcc.reduce_max
// CHECK:   tcc.reduce_sum
// CHECK:   %[[L:.*]] = tcc.log
// CHECK:   %[[Y:.*]] = tcc.add %[[M]], %[[L]]
// CHECK:   tcc.yield %[[Y]]
// CHECK: return %[[C]]
func.func @logsumexp(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %t = tcc.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = tcc.exp %t : tensor<4x8xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %l = tcc.log %s : tensor<4x1xf32>
  %y = tcc.add %m, %l : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}

// -----

// Layer norm: mean → variance; eps is recomputed inside, gamma and beta
// are captured.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<4x8xf32> {
// CHECK:   tcc.constant
// CHECK:   tcc.reduce_mean %[[X]]
// CHECK:   tcc.sub
// CHECK:   tcc.mul
// CHECK:   tcc.reduce_mean
// CHECK:   tcc.add
// CHECK:   tcc.rsqrt
// CHECK:   tcc.mul
// CHECK:   tcc.mul %{{.*}}, %[[G]]
// CHECK:   %[[Y:.*]] = tcc.add %{{.*}}, %[[B]]
// CHECK:   tcc.yield %[[Y]]
// CHECK-NOT: tcc.constant
// CHECK: return %[[C]]
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %m = tcc.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tcc.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %sq = tcc.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %v = tcc.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = tcc.constant {value = 1.0e-05 : f32} : tensor<f32>
  %ve = tcc.add %v, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %r = tcc.rsqrt %ve : tensor<4x1xf32>
  %n = tcc.mul %d, %r : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %ng = tcc.mul %n, %g : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %y = tcc.add %ng, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// RMS norm has one reduction, but its result is broadcast back over the
// axis: the square before it (read only by it) and the scaling after it are
// one chain.
// CHECK-LABEL: func.func @rms_norm
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<4x8xf32> {
// CHECK:   tcc.mul
// CHECK:   tcc.reduce_mean
// CHECK:   tcc.add
// CHECK:   tcc.rsqrt
// CHECK:   tcc.mul
// CHECK:   %[[Y:.*]] = tcc.mul
// CHECK:   tcc.yield %[[Y]]
// CHECK: return %[[C]]
func.func @rms_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %sq = tcc.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %ms = tcc.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = tcc.constant {value = 1.0e-06 : f32} : tensor<f32>
  %a = tcc.add %ms, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %r = tcc.rsqrt %a : tensor<4x1xf32>
  %n = tcc.mul %x, %r : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %y = tcc.mul %n, %g : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Attention written plainly: the scores matmul, scale and causal mask (built
// from iotas, recomputed inside) are the prologue, P·V contracts the key
// axis: one chain along it, both matmuls included.
// CHECK-LABEL: func.func @attention
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 2 : i64} -> tensor<2x16x8xf32> {
// CHECK-DAG: tcc.iota
// CHECK-DAG: tcc.iota
// CHECK:   tcc.matmul {{.*}}transpose_b = true
// CHECK:   tcc.mul
// CHECK:   tcc.greater_equal
// CHECK:   tcc.select
// CHECK:   tcc.reduce_max
// CHECK:   tcc.exp
// CHECK:   tcc.reduce_sum
// CHECK:   tcc.div
// CHECK:   %[[O:.*]] = tcc.matmul
// CHECK:   tcc.yield %[[O]]
// CHECK-NOT: tcc.
// CHECK: return %[[C]]
func.func @attention(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<2x16x16xf32>
  %c = tcc.constant {value = 0.125 : f32} : tensor<f32>
  %ss = tcc.mul %s, %c : tensor<2x16x16xf32>, tensor<f32> -> tensor<2x16x16xf32>
  %row = tcc.iota {axis = 0 : i64} : tensor<16x16xi32>
  %col = tcc.iota {axis = 1 : i64} : tensor<16x16xi32>
  %keep = tcc.greater_equal %row, %col : tensor<16x16xi32>, tensor<16x16xi32> -> tensor<16x16xi1>
  %neg = tcc.constant {value = -1.0e+30 : f32} : tensor<f32>
  %sm = tcc.select %keep, %ss, %neg : tensor<16x16xi1>, tensor<2x16x16xf32>, tensor<f32> -> tensor<2x16x16xf32>
  %m = tcc.reduce_max %sm {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
  %d = tcc.sub %sm, %m : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
  %e = tcc.exp %d : tensor<2x16x16xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
  %p = tcc.div %e, %sum : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
  %o = tcc.matmul %p, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  return %o : tensor<2x16x8xf32>
}

// -----

// Q and V scaled before the matmuls with a head size equal to the key count
// (16): their shape is the scores' by coincidence, yet they are the
// matmuls' operands, not values of the chain, and stay outside it (the
// attention match wants Q, K and V from outside).
// CHECK-LABEL: func.func @operands_shaped_like_scores
// CHECK: %[[QS:.*]] = tcc.mul %arg0
// CHECK: %[[VS:.*]] = tcc.mul %arg2
// CHECK: tcc.chain attributes {axis = 2 : i64}
// CHECK:   tcc.matmul %[[QS]], %arg1 {transpose_b = true}
// CHECK:   tcc.matmul %{{.*}}, %[[VS]]
func.func @operands_shaped_like_scores(%q: tensor<2x16x16xf32>, %k: tensor<2x16x16xf32>, %v: tensor<2x16x16xf32>) -> tensor<2x16x16xf32> {
  %c = tcc.constant {value = 0.25 : f32} : tensor<f32>
  %qs = tcc.mul %q, %c : tensor<2x16x16xf32>, tensor<f32> -> tensor<2x16x16xf32>
  %vs = tcc.mul %v, %c : tensor<2x16x16xf32>, tensor<f32> -> tensor<2x16x16xf32>
  %s = tcc.matmul %qs, %k {transpose_b = true} : tensor<2x16x16xf32>, tensor<2x16x16xf32> -> tensor<2x16x16xf32>
  %m = tcc.reduce_max %s {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
  %d = tcc.sub %s, %m : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
  %e = tcc.exp %d : tensor<2x16x16xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
  %p = tcc.div %e, %sum : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
  %o = tcc.matmul %p, %vs : tensor<2x16x16xf32>, tensor<2x16x16xf32> -> tensor<2x16x16xf32>
  return %o : tensor<2x16x16xf32>
}

// -----

// A matmul whose contraction is longer than max-matmul-extent (300 > 256)
// stays outside: the chain starts at the max reduction.
// CHECK-LABEL: func.func @long_scores
// CHECK: %[[S:.*]] = tcc.matmul
// CHECK: tcc.chain attributes {axis = 2 : i64}
// CHECK:   tcc.reduce_max %[[S]]
// CHECK:   tcc.matmul
func.func @long_scores(%q: tensor<2x16x300xf32>, %k: tensor<2x16x300xf32>, %v: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x16x300xf32>, tensor<2x16x300xf32> -> tensor<2x16x16xf32>
  %m = tcc.reduce_max %s {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
  %d = tcc.sub %s, %m : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
  %e = tcc.exp %d : tensor<2x16x16xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
  %p = tcc.div %e, %sum : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
  %o = tcc.matmul %p, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  return %o : tensor<2x16x8xf32>
}

// -----

// MQA written with the matmuls' own batch broadcast (K and V [2, 1, 16, 8]
// against Q [2, 4, 16, 8]): the broadcasts are made explicit, the form the
// attention match folds, and both matmuls join the chain.
// CHECK-LABEL: func.func @mqa_implicit
// CHECK-DAG: %[[K:.*]] = tcc.broadcast_to %arg1 : tensor<2x1x16x8xf32> -> tensor<2x4x16x8xf32>
// CHECK-DAG: %[[V:.*]] = tcc.broadcast_to %arg2 : tensor<2x1x16x8xf32> -> tensor<2x4x16x8xf32>
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x16x8xf32> {
// CHECK:   tcc.matmul %arg0, %[[K]] {transpose_b = true}
// CHECK:   tcc.exp
// CHECK:   %[[O:.*]] = tcc.matmul %{{.*}}, %[[V]]
// CHECK:   tcc.yield %[[O]]
// CHECK: return %[[C]]
func.func @mqa_implicit(%q: tensor<2x4x16x8xf32>, %k: tensor<2x1x16x8xf32>, %v: tensor<2x1x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x16x8xf32>, tensor<2x1x16x8xf32> -> tensor<2x4x16x16xf32>
  %m = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = true} : tensor<2x4x16x16xf32> -> tensor<2x4x16x1xf32>
  %d = tcc.sub %s, %m : tensor<2x4x16x16xf32>, tensor<2x4x16x1xf32> -> tensor<2x4x16x16xf32>
  %e = tcc.exp %d : tensor<2x4x16x16xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<2x4x16x16xf32> -> tensor<2x4x16x1xf32>
  %p = tcc.div %e, %sum : tensor<2x4x16x16xf32>, tensor<2x4x16x1xf32> -> tensor<2x4x16x16xf32>
  %o = tcc.matmul %p, %v : tensor<2x4x16x16xf32>, tensor<2x1x16x8xf32> -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

// GQA written with the query heads as two axes (Q [2, 2, 3, 16, 8], K and V
// [2, 2, 1, 16, 8], broadcast by the matmuls over the groups): made explicit
// too, and one chain.
// CHECK-LABEL: func.func @gqa_rank5_implicit
// CHECK-DAG: %[[K:.*]] = tcc.broadcast_to %arg1 : tensor<2x2x1x16x8xf32> -> tensor<2x2x3x16x8xf32>
// CHECK-DAG: %[[V:.*]] = tcc.broadcast_to %arg2 : tensor<2x2x1x16x8xf32> -> tensor<2x2x3x16x8xf32>
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 4 : i64} -> tensor<2x2x3x16x8xf32> {
// CHECK:   tcc.matmul %arg0, %[[K]] {transpose_b = true}
// CHECK:   %[[O:.*]] = tcc.matmul %{{.*}}, %[[V]]
// CHECK:   tcc.yield %[[O]]
// CHECK: return %[[C]]
func.func @gqa_rank5_implicit(%q: tensor<2x2x3x16x8xf32>, %k: tensor<2x2x1x16x8xf32>, %v: tensor<2x2x1x16x8xf32>) -> tensor<2x2x3x16x8xf32> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x2x3x16x8xf32>, tensor<2x2x1x16x8xf32> -> tensor<2x2x3x16x16xf32>
  %m = tcc.reduce_max %s {axes = array<i64: 4>, keepdims = true} : tensor<2x2x3x16x16xf32> -> tensor<2x2x3x16x1xf32>
  %d = tcc.sub %s, %m : tensor<2x2x3x16x16xf32>, tensor<2x2x3x16x1xf32> -> tensor<2x2x3x16x16xf32>
  %e = tcc.exp %d : tensor<2x2x3x16x16xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 4>, keepdims = true} : tensor<2x2x3x16x16xf32> -> tensor<2x2x3x16x1xf32>
  %p = tcc.div %e, %sum : tensor<2x2x3x16x16xf32>, tensor<2x2x3x16x1xf32> -> tensor<2x2x3x16x16xf32>
  %o = tcc.matmul %p, %v : tensor<2x2x3x16x16xf32>, tensor<2x2x1x16x8xf32> -> tensor<2x2x3x16x8xf32>
  return %o : tensor<2x2x3x16x8xf32>
}

// -----

// Softmax between two linear layers whose weights are 2-D (shared by the
// batch): nothing is broadcast, and the matmuls stay GEMMs.
// CHECK-LABEL: func.func @linear_softmax_linear
// CHECK-NOT: tcc.broadcast_to
// CHECK: tcc.matmul %arg0, %arg1
// CHECK: tcc.chain
// CHECK-NOT: tcc.matmul
// CHECK: tcc.yield
// CHECK: tcc.matmul
func.func @linear_softmax_linear(%x: tensor<2x16x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<2x16x8xf32> {
  %s = tcc.matmul %x, %w1 : tensor<2x16x8xf32>, tensor<8x16xf32> -> tensor<2x16x16xf32>
  %m = tcc.reduce_max %s {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
  %d = tcc.sub %s, %m : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
  %e = tcc.exp %d : tensor<2x16x16xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
  %p = tcc.div %e, %sum : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
  %o = tcc.matmul %p, %w2 : tensor<2x16x16xf32>, tensor<16x8xf32> -> tensor<2x16x8xf32>
  return %o : tensor<2x16x8xf32>
}

// -----

// An exp between two matmuls whose [1, K, N] weights the matmuls
// broadcast, with no sum of the exponentials over the last axis: no
// softmax, so no attention, and the weights are not copied.
// CHECK-LABEL: func.func @mixture_exp
// CHECK-NOT: tcc.broadcast_to
// CHECK: return
func.func @mixture_exp(%x: tensor<8x16x32xf32>, %w1: tensor<1x32x64xf32>, %w2: tensor<1x64x32xf32>) -> tensor<8x16x32xf32> {
  %h = tcc.matmul %x, %w1 : tensor<8x16x32xf32>, tensor<1x32x64xf32> -> tensor<8x16x64xf32>
  %e = tcc.exp %h : tensor<8x16x64xf32>
  %o = tcc.matmul %e, %w2 : tensor<8x16x64xf32>, tensor<1x64x32xf32> -> tensor<8x16x32xf32>
  return %o : tensor<8x16x32xf32>
}

// -----

// A matmul with a weight shared by every row (a linear layer after layer
// norm) is a GEMM, not part of the chain, though it contracts the axis.
// CHECK-LABEL: func.func @norm_then_linear
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 2 : i64} -> tensor<2x16x32xf32> {
// CHECK-NOT: tcc.matmul
// CHECK:   tcc.yield
// CHECK: tcc.matmul %[[C]]
func.func @norm_then_linear(%x: tensor<2x16x32xf32>, %w: tensor<8x32xf32>) -> tensor<2x16x8xf32> {
  %sq = tcc.mul %x, %x : tensor<2x16x32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>
  %ms = tcc.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : tensor<2x16x32xf32> -> tensor<2x16x1xf32>
  %r = tcc.rsqrt %ms : tensor<2x16x1xf32>
  %n = tcc.mul %x, %r : tensor<2x16x32xf32>, tensor<2x16x1xf32> -> tensor<2x16x32xf32>
  %y = tcc.matmul %n, %w {transpose_b = true} : tensor<2x16x32xf32>, tensor<8x32xf32> -> tensor<2x16x8xf32>
  return %y : tensor<2x16x8xf32>
}

// -----

// Cross-entropy against one-hot targets: the third reduction reads the
// log-softmax, so all three are one chain; the batch mean reduces another
// axis and stays outside.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<4x1xf32> {
// CHECK:   tcc.reduce_max
// CHECK:   tcc.reduce_sum
// CHECK:   tcc.log
// CHECK:   tcc.mul
// CHECK:   tcc.reduce_sum
// CHECK:   %[[L:.*]] = tcc.neg
// CHECK:   tcc.yield %[[L]]
// CHECK: tcc.reduce_mean %[[C]] {axes = array<i64: 0>
func.func @cross_entropy(%x: tensor<4x10xf32>, %t: tensor<4x10xf32>) -> tensor<1x1xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x10xf32> -> tensor<4x1xf32>
  %z = tcc.sub %x, %m : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
  %e = tcc.exp %z : tensor<4x10xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x10xf32> -> tensor<4x1xf32>
  %l = tcc.log %s : tensor<4x1xf32>
  %ls = tcc.sub %z, %l : tensor<4x10xf32>, tensor<4x1xf32> -> tensor<4x10xf32>
  %p = tcc.mul %t, %ls : tensor<4x10xf32>, tensor<4x10xf32> -> tensor<4x10xf32>
  %pick = tcc.reduce_sum %p {axes = array<i64: 1>, keepdims = true} : tensor<4x10xf32> -> tensor<4x1xf32>
  %loss = tcc.neg %pick : tensor<4x1xf32>
  %mean = tcc.reduce_mean %loss {axes = array<i64: 0>, keepdims = true} : tensor<4x1xf32> -> tensor<1x1xf32>
  return %mean : tensor<1x1xf32>
}

// -----

// Reductions over different axes do not chain: the max and what broadcasts
// it back form a chain along axis 1, the sum over axis 0 reads its result.
// CHECK-LABEL: func.func @different_axes
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<4x8xf32> {
// CHECK:   tcc.reduce_max
// CHECK:   tcc.exp
// CHECK:   tcc.yield
// CHECK: tcc.reduce_sum %[[C]] {axes = array<i64: 0>
func.func @different_axes(%x: tensor<4x8xf32>) -> tensor<1x8xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tcc.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = tcc.exp %d : tensor<4x8xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 0>, keepdims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  return %s : tensor<1x8xf32>
}

// -----

// Two reductions of the same axis where neither reads the other, and whose
// results are never broadcast back: no chain.
// CHECK-LABEL: func.func @independent
// CHECK-NOT: tcc.chain
// CHECK: return
func.func @independent(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %a = tcc.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %b = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = tcc.add %a, %b : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}

// -----

// Multi-axis reductions are no chain (a chain has one axis).
// CHECK-LABEL: func.func @two_axes
// CHECK-NOT: tcc.chain
// CHECK: return
func.func @two_axes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = tcc.reduce_mean %x {axes = array<i64: 0, 1>, keepdims = true} : tensor<4x8xf32> -> tensor<1x1xf32>
  %d = tcc.sub %x, %m : tensor<4x8xf32>, tensor<1x1xf32> -> tensor<4x8xf32>
  %sq = tcc.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %v = tcc.reduce_mean %sq {axes = array<i64: 0, 1>, keepdims = true} : tensor<4x8xf32> -> tensor<1x1xf32>
  %y = tcc.div %d, %v : tensor<4x8xf32>, tensor<1x1xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Cycle risk: %a reads the max through a transpose, which a chain of max and
// sum would have to both produce and read. %a and the sum stay outside; the
// max and its broadcast subtraction still chain. The transpose, which read a
// member, moves after the chain.
// CHECK-LABEL: func.func @cycle
// CHECK: %[[C:.*]]:2 = tcc.chain attributes {axis = 1 : i64} -> tensor<4x1xf32>, tensor<4x4xf32> {
// CHECK:   tcc.reduce_max
// CHECK:   tcc.sub
// CHECK:   tcc.yield
// CHECK-NOT: tcc.reduce_sum
// CHECK: }
// CHECK: %[[T:.*]] = tcc.transpose %[[C]]#0
// CHECK: %[[A:.*]] = tcc.add %[[C]]#1, %[[T]]
// CHECK: tcc.reduce_sum %[[A]]
func.func @cycle(%x: tensor<4x4xf32>) -> tensor<4x1xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x4xf32> -> tensor<4x1xf32>
  %t = tcc.transpose %m {perm = array<i64: 1, 0>} : tensor<4x1xf32> -> tensor<1x4xf32>
  %d = tcc.sub %x, %m : tensor<4x4xf32>, tensor<4x1xf32> -> tensor<4x4xf32>
  %a = tcc.add %d, %t : tensor<4x4xf32>, tensor<1x4xf32> -> tensor<4x4xf32>
  %s = tcc.reduce_sum %a {axes = array<i64: 1>, keepdims = true} : tensor<4x4xf32> -> tensor<4x1xf32>
  return %s : tensor<4x1xf32>
}

// -----

// Attention normalised after P·V, as users write it: e = exp(s - max(s)),
// O = (cast(e)·v) / sum(e) with the softmax in f32, O cast back. The
// division and the casts around it scale P·V's rows by the sum, a row value
// of the chain: they join it (its epilogue), which yields O alone.
// CHECK-LABEL: func.func @attention_normalised_after
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 3 : i64} -> tensor<1x2x16x8xf16> {
// CHECK:   tcc.matmul {{.*}}transpose_b = true
// CHECK:   tcc.reduce_max
// CHECK:   tcc.reduce_sum
// CHECK:   tcc.matmul
// CHECK:   tcc.cast
// CHECK:   tcc.div
// CHECK:   %[[O:.*]] = tcc.cast
// CHECK:   tcc.yield %[[O]]
// CHECK-NOT: tcc.
// CHECK: return %[[C]]
func.func @attention_normalised_after(%q: tensor<1x2x16x8xf16>, %k: tensor<1x2x16x8xf16>, %v: tensor<1x2x16x8xf16>) -> tensor<1x2x16x8xf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x16x8xf16>, tensor<1x2x16x8xf16> -> tensor<1x2x16x16xf16>
  %s32 = tcc.cast %s : tensor<1x2x16x16xf16> -> tensor<1x2x16x16xf32>
  %m = tcc.reduce_max %s32 {axes = array<i64: 3>, keepdims = true} : tensor<1x2x16x16xf32> -> tensor<1x2x16x1xf32>
  %d = tcc.sub %s32, %m : tensor<1x2x16x16xf32>, tensor<1x2x16x1xf32> -> tensor<1x2x16x16xf32>
  %e = tcc.exp %d : tensor<1x2x16x16xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x16x16xf32> -> tensor<1x2x16x1xf32>
  %p = tcc.cast %e : tensor<1x2x16x16xf32> -> tensor<1x2x16x16xf16>
  %pv = tcc.matmul %p, %v : tensor<1x2x16x16xf16>, tensor<1x2x16x8xf16> -> tensor<1x2x16x8xf16>
  %pv32 = tcc.cast %pv : tensor<1x2x16x8xf16> -> tensor<1x2x16x8xf32>
  %o32 = tcc.div %pv32, %sum : tensor<1x2x16x8xf32>, tensor<1x2x16x1xf32> -> tensor<1x2x16x8xf32>
  %o = tcc.cast %o32 : tensor<1x2x16x8xf32> -> tensor<1x2x16x8xf16>
  return %o : tensor<1x2x16x8xf16>
}

// -----

// Without the max, exp(s)·v times the sum's reciprocal: P·V and the sum
// only share their input, and the epilogue's product links them.
// CHECK-LABEL: func.func @attention_no_max_reciprocal
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 2 : i64} -> tensor<2x16x8xf32> {
// CHECK:   tcc.matmul {{.*}}transpose_b = true
// CHECK:   tcc.exp
// CHECK:   tcc.matmul
// CHECK:   tcc.reduce_sum
// CHECK:   tcc.reciprocal
// CHECK:   %[[O:.*]] = tcc.mul
// CHECK:   tcc.yield %[[O]]
// CHECK-NOT: tcc.
// CHECK: return %[[C]]
func.func @attention_no_max_reciprocal(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<2x16x16xf32>
  %e = tcc.exp %s : tensor<2x16x16xf32>
  %pv = tcc.matmul %e, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
  %r = tcc.reciprocal %sum : tensor<2x16x1xf32>
  %o = tcc.mul %r, %pv : tensor<2x16x1xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  return %o : tensor<2x16x8xf32>
}

// -----

// A cast of P·V reads no row value: no epilogue, the chain ends at P·V.
// CHECK-LABEL: func.func @attention_cast_after
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 2 : i64} -> tensor<2x16x8xf16> {
// CHECK:   tcc.div
// CHECK:   %[[O:.*]] = tcc.matmul
// CHECK:   tcc.yield %[[O]]
// CHECK: %[[Y:.*]] = tcc.cast %[[C]]
// CHECK: return %[[Y]]
func.func @attention_cast_after(%q: tensor<2x16x8xf16>, %k: tensor<2x16x8xf16>, %v: tensor<2x16x8xf16>) -> tensor<2x16x8xf32> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x16x8xf16>, tensor<2x16x8xf16> -> tensor<2x16x16xf16>
  %m = tcc.reduce_max %s {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf16> -> tensor<2x16x1xf16>
  %d = tcc.sub %s, %m : tensor<2x16x16xf16>, tensor<2x16x1xf16> -> tensor<2x16x16xf16>
  %e = tcc.exp %d : tensor<2x16x16xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf16> -> tensor<2x16x1xf16>
  %p = tcc.div %e, %sum : tensor<2x16x16xf16>, tensor<2x16x1xf16> -> tensor<2x16x16xf16>
  %o = tcc.matmul %p, %v : tensor<2x16x16xf16>, tensor<2x16x8xf16> -> tensor<2x16x8xf16>
  %y = tcc.cast %o : tensor<2x16x8xf16> -> tensor<2x16x8xf32>
  return %y : tensor<2x16x8xf32>
}

// -----

// The max and the sum taken without keepdims and reshaped back to
// [.., 1] (the max then broadcast): the reductions become the keepdims
// form, the reshapes go, and the chain forms as for `softmax`.
// CHECK-LABEL: func.func @softmax_reshaped_back
// CHECK-NOT: tcc.reshape
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<4x8xf32> {
// CHECK:   %[[M:.*]] = tcc.reduce_max %{{.*}} {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK:   tcc.broadcast_to %[[M]]
// CHECK:   %[[S:.*]] = tcc.reduce_sum %{{.*}} {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK:   %[[Y:.*]] = tcc.div %{{.*}}, %[[S]]
// CHECK:   tcc.yield %[[Y]]
// CHECK-NOT: tcc.reshape
// CHECK: return %[[C]]
func.func @softmax_reshaped_back(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
  %mk = tcc.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %mb = tcc.broadcast_to %mk : tensor<4x1xf32> -> tensor<4x8xf32>
  %d = tcc.sub %x, %mb : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e = tcc.exp %d : tensor<4x8xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
  %sk = tcc.reshape %s : tensor<4xf32> -> tensor<4x1xf32>
  %y = tcc.div %e, %sk : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A reduction without keepdims also used as it is: it becomes the chain's
// reduction with keepdims, and the other reader (here the function's
// result; log-sum-exp's `+ max` alike) reads it reshaped back.
// CHECK-LABEL: func.func @max_used_unreshaped
// CHECK: %[[C:.*]]:2 = tcc.chain
// CHECK: tcc.reduce_max %{{.*}} keepdims = true
// CHECK: tcc.yield
// CHECK: %[[M:.*]] = tcc.reshape %[[C]]#0 : tensor<4x1xf32> -> tensor<4xf32>
// CHECK: return %[[C]]#1, %[[M]]
func.func @max_used_unreshaped(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
  %mk = tcc.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %d = tcc.sub %x, %mk : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %d, %m : tensor<4x8xf32>, tensor<4xf32>
}
