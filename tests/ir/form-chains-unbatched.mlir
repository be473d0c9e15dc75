// RUN: tcc-opt %s --split-input-file --tcc-form-chains=unbatched-attention=true | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-form-chains | FileCheck %s --check-prefix=OFF

// Single-head attention, [L, D] with no batch axis: with unbatched-attention
// (GPU targets with --gpu-attention) both 2-D matmuls join the chain, the
// causal mask's iotas recomputed inside. Without it (the host, and GPUs
// without --gpu-attention) the matmuls stay GEMMs, the softmax a chain.
// CHECK-LABEL: func.func @attention_2d
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<16x8xf16> {
// CHECK-DAG: tcc.iota
// CHECK-DAG: tcc.iota
// CHECK:   tcc.matmul {{.*}}transpose_b = true
// CHECK:   tcc.select
// CHECK:   tcc.reduce_max
// CHECK:   tcc.reduce_sum
// CHECK:   %[[O:.*]] = tcc.matmul
// CHECK:   tcc.yield %[[O]]
// CHECK-NOT: tcc.
// CHECK: return %[[C]]
// OFF-LABEL: func.func @attention_2d
// OFF: tcc.matmul
// OFF: tcc.chain attributes {axis = 1 : i64} -> tensor<16x24xf16> {
// OFF-NOT: tcc.matmul
// OFF: tcc.yield
// OFF: tcc.matmul
func.func @attention_2d(%q: tensor<16x8xf16>, %k: tensor<24x8xf16>, %v: tensor<24x8xf16>) -> tensor<16x8xf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<16x8xf16>, tensor<24x8xf16> -> tensor<16x24xf16>
  %c = tcc.constant {value = 0.125 : f16} : tensor<f16>
  %ss = tcc.mul %s, %c : tensor<16x24xf16>, tensor<f16> -> tensor<16x24xf16>
  %row = tcc.iota {axis = 0 : i64} : tensor<16x24xi32>
  %col = tcc.iota {axis = 1 : i64} : tensor<16x24xi32>
  %keep = tcc.greater_equal %row, %col : tensor<16x24xi32>, tensor<16x24xi32> -> tensor<16x24xi1>
  %neg = tcc.constant {value = -1.0e+30 : f16} : tensor<f16>
  %sm = tcc.select %keep, %ss, %neg : tensor<16x24xi1>, tensor<16x24xf16>, tensor<f16> -> tensor<16x24xf16>
  %m = tcc.reduce_max %sm {axes = array<i64: 1>, keepdims = true} : tensor<16x24xf16> -> tensor<16x1xf16>
  %d = tcc.sub %sm, %m : tensor<16x24xf16>, tensor<16x1xf16> -> tensor<16x24xf16>
  %e = tcc.exp %d : tensor<16x24xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<16x24xf16> -> tensor<16x1xf16>
  %p = tcc.div %e, %sum : tensor<16x24xf16>, tensor<16x1xf16> -> tensor<16x24xf16>
  %o = tcc.matmul %p, %v : tensor<16x24xf16>, tensor<24x8xf16> -> tensor<16x8xf16>
  return %o : tensor<16x8xf16>
}

// -----

// K given transposed ([D, Lk]: scores = Q·K) and normalised after P·V:
// the pair and the division join.
// CHECK-LABEL: func.func @attention_2d_kt_after
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<4x8xf32> {
// CHECK:   tcc.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x512xf32>
// CHECK:   tcc.reduce_max
// CHECK:   tcc.reduce_sum
// CHECK:   tcc.matmul
// CHECK:   %[[O:.*]] = tcc.div
// CHECK:   tcc.yield %[[O]]
// CHECK: return %[[C]]
func.func @attention_2d_kt_after(%q: tensor<4x8xf32>, %kt: tensor<8x512xf32>, %v: tensor<512x8xf32>) -> tensor<4x8xf32> {
  %s = tcc.matmul %q, %kt : tensor<4x8xf32>, tensor<8x512xf32> -> tensor<4x512xf32>
  %m = tcc.reduce_max %s {axes = array<i64: 1>, keepdims = true} : tensor<4x512xf32> -> tensor<4x1xf32>
  %d = tcc.sub %s, %m : tensor<4x512xf32>, tensor<4x1xf32> -> tensor<4x512xf32>
  %e = tcc.exp %d : tensor<4x512xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x512xf32> -> tensor<4x1xf32>
  %pv = tcc.matmul %e, %v : tensor<4x512xf32>, tensor<512x8xf32> -> tensor<4x8xf32>
  %o = tcc.div %pv, %sum : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// A softmax followed by a linear layer (a weight shared by every row): only
// one 2-D matmul, no attention pair, so it stays a GEMM outside the chain.
// CHECK-LABEL: func.func @softmax_then_linear
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<16x32xf32> {
// CHECK-NOT: tcc.matmul
// CHECK:   tcc.yield
// CHECK: tcc.matmul %[[C]]
func.func @softmax_then_linear(%x: tensor<16x32xf32>, %w: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<16x32xf32> -> tensor<16x1xf32>
  %d = tcc.sub %x, %m : tensor<16x32xf32>, tensor<16x1xf32> -> tensor<16x32xf32>
  %e = tcc.exp %d : tensor<16x32xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<16x32xf32> -> tensor<16x1xf32>
  %p = tcc.div %e, %sum : tensor<16x32xf32>, tensor<16x1xf32> -> tensor<16x32xf32>
  %y = tcc.matmul %p, %w : tensor<16x32xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

// -----

// The same written (e·W) / sum(e): the division is no epilogue of a matmul
// left out; the chain is the softmax's reductions alone.
// CHECK-LABEL: func.func @softmax_linear_after
// CHECK: %[[C:.*]]:2 = tcc.chain attributes {axis = 1 : i64}
// CHECK-NOT: tcc.matmul
// CHECK:   tcc.yield
// CHECK: %[[Y:.*]] = tcc.matmul %[[C]]#
// CHECK: tcc.div %[[Y]]
func.func @softmax_linear_after(%x: tensor<16x32xf32>, %w: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<16x32xf32> -> tensor<16x1xf32>
  %d = tcc.sub %x, %m : tensor<16x32xf32>, tensor<16x1xf32> -> tensor<16x32xf32>
  %e = tcc.exp %d : tensor<16x32xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<16x32xf32> -> tensor<16x1xf32>
  %y = tcc.matmul %e, %w : tensor<16x32xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  %o = tcc.div %y, %sum : tensor<16x8xf32>, tensor<16x1xf32> -> tensor<16x8xf32>
  return %o : tensor<16x8xf32>
}

// -----

// A linear layer, then a softmax over its outputs: the producer alone is no
// attention pair either; the logits' GEMM stays outside.
// CHECK-LABEL: func.func @linear_then_softmax
// CHECK: %[[L:.*]] = tcc.matmul
// CHECK: tcc.chain attributes {axis = 1 : i64} -> tensor<16x32xf32> {
// CHECK-NOT: tcc.matmul
// CHECK:   tcc.reduce_max %[[L]]
// CHECK-NOT: tcc.matmul
// CHECK:   tcc.yield
func.func @linear_then_softmax(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %l = tcc.matmul %x, %w : tensor<16x64xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
  %m = tcc.reduce_max %l {axes = array<i64: 1>, keepdims = true} : tensor<16x32xf32> -> tensor<16x1xf32>
  %d = tcc.sub %l, %m : tensor<16x32xf32>, tensor<16x1xf32> -> tensor<16x32xf32>
  %e = tcc.exp %d : tensor<16x32xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<16x32xf32> -> tensor<16x1xf32>
  %p = tcc.div %e, %sum : tensor<16x32xf32>, tensor<16x1xf32> -> tensor<16x32xf32>
  return %p : tensor<16x32xf32>
}

// -----

// Batched chains are unchanged by the option: a 2-D weight shared by every
// row of a 3-D softmax stays a GEMM.
// CHECK-LABEL: func.func @batched_softmax_then_linear
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 2 : i64} -> tensor<2x16x32xf32> {
// CHECK-NOT: tcc.matmul
// CHECK:   tcc.yield
// CHECK: tcc.matmul %[[C]]
func.func @batched_softmax_then_linear(%x: tensor<2x16x32xf32>, %w: tensor<32x8xf32>) -> tensor<2x16x8xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 2>, keepdims = true} : tensor<2x16x32xf32> -> tensor<2x16x1xf32>
  %d = tcc.sub %x, %m : tensor<2x16x32xf32>, tensor<2x16x1xf32> -> tensor<2x16x32xf32>
  %e = tcc.exp %d : tensor<2x16x32xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x16x32xf32> -> tensor<2x16x1xf32>
  %p = tcc.div %e, %sum : tensor<2x16x32xf32>, tensor<2x16x1xf32> -> tensor<2x16x32xf32>
  %y = tcc.matmul %p, %w : tensor<2x16x32xf32>, tensor<32x8xf32> -> tensor<2x16x8xf32>
  return %y : tensor<2x16x8xf32>
}

// -----

// RMS norm between two linear layers (2-D activations, as a flattened
// token batch): both matmuls fit, but with no softmax between them the
// pair is no attention; they stay GEMMs, the norm a chain alone.
// CHECK-LABEL: func.func @linear_norm_linear
// CHECK: %[[H:.*]] = tcc.matmul
// CHECK: %[[N:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<16x32xf32> {
// CHECK-NOT: tcc.matmul
// CHECK:   tcc.yield
// CHECK: tcc.matmul %[[N]]
func.func @linear_norm_linear(%x: tensor<16x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<16x64xf32> {
  %h = tcc.matmul %x, %w1 : tensor<16x64xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
  %sq = tcc.mul %h, %h : tensor<16x32xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
  %ms = tcc.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<16x32xf32> -> tensor<16x1xf32>
  %r = tcc.rsqrt %ms : tensor<16x1xf32>
  %n = tcc.mul %h, %r : tensor<16x32xf32>, tensor<16x1xf32> -> tensor<16x32xf32>
  %y = tcc.matmul %n, %w2 : tensor<16x32xf32>, tensor<32x64xf32> -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
