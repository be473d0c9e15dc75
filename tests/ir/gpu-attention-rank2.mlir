// RUN: tcc-opt %s --split-input-file --tcc-form-chains=unbatched-attention=true --tcc-gpu-attention-chains --tcc-form-chains=max-matmul-extent=0 --tcc-gpu-attention-plan=target=sm_90 | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: tcc-opt %s --split-input-file --tcc-form-chains=unbatched-attention=true --tcc-gpu-attention-chains --tcc-form-chains=max-matmul-extent=0 --tcc-gpu-attention-plan=target=sm_90a | FileCheck %s --check-prefixes=CHECK,SM90A
// RUN: tcc-opt %s --split-input-file --tcc-form-chains=unbatched-attention=true --tcc-gpu-attention-chains --verify-diagnostics > /dev/null

// Single-head attention at rank 2 ([L, D], no batch or head axis) through
// the passes compiler/Pipeline.cpp runs with --gpu-attention: the chain of
// both matmuls is attention's, marked, and planned as batch 1, one head.
// Causal f16 prefill, an odd length: mma.sync on sm_90, wgmma on sm_90a.
// CHECK-LABEL: func.func @causal_f16
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64, tcc.attention, tcc.attention_plan =
// SM90-SAME: #tcc.mma_attention<
// SM90A-SAME: #tcc.wgmma_attention<
// CHECK:   tcc.matmul %arg0, %arg1 {transpose_b = true}
// CHECK:   tcc.matmul
// CHECK:   tcc.yield
// CHECK-NOT: tcc.matmul
// CHECK: return %[[C]]
func.func @causal_f16(%q: tensor<1000x64xf16>, %k: tensor<1000x64xf16>, %v: tensor<1000x64xf16>) -> tensor<1000x64xf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1000x64xf16>, tensor<1000x64xf16> -> tensor<1000x1000xf16>
  %c = tcc.constant {value = 0.125 : f16} : tensor<f16>
  %ss = tcc.mul %s, %c : tensor<1000x1000xf16>, tensor<f16> -> tensor<1000x1000xf16>
  %row = tcc.iota {axis = 0 : i64} : tensor<1000x1000xi32>
  %col = tcc.iota {axis = 1 : i64} : tensor<1000x1000xi32>
  %keep = tcc.greater_equal %row, %col : tensor<1000x1000xi32>, tensor<1000x1000xi32> -> tensor<1000x1000xi1>
  %neg = tcc.constant {value = -1.0e+30 : f16} : tensor<f16>
  %sm = tcc.select %keep, %ss, %neg : tensor<1000x1000xi1>, tensor<1000x1000xf16>, tensor<f16> -> tensor<1000x1000xf16>
  %m = tcc.reduce_max %sm {axes = array<i64: 1>, keepdims = true} : tensor<1000x1000xf16> -> tensor<1000x1xf16>
  %d = tcc.sub %sm, %m : tensor<1000x1000xf16>, tensor<1000x1xf16> -> tensor<1000x1000xf16>
  %e = tcc.exp %d : tensor<1000x1000xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<1000x1000xf16> -> tensor<1000x1xf16>
  %p = tcc.div %e, %sum : tensor<1000x1000xf16>, tensor<1000x1xf16> -> tensor<1000x1000xf16>
  %o = tcc.matmul %p, %v : tensor<1000x1000xf16>, tensor<1000x64xf16> -> tensor<1000x64xf16>
  return %o : tensor<1000x64xf16>
}

// -----

// Decode: 4 query rows against 3001 keys, a padding mask given as [Lk]:
// the split-K pair on both targets.
// CHECK-LABEL: func.func @decode_keymask
// CHECK: tcc.chain attributes {axis = 1 : i64, tcc.attention, tcc.attention_plan = #tcc.mma_decode<
func.func @decode_keymask(%q: tensor<4x128xbf16>, %k: tensor<3001x128xbf16>, %v: tensor<3001x128xbf16>, %keep: tensor<3001xi1>) -> tensor<4x128xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<4x128xbf16>, tensor<3001x128xbf16> -> tensor<4x3001xbf16>
  %neg = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
  %sm = tcc.select %keep, %s, %neg : tensor<3001xi1>, tensor<4x3001xbf16>, tensor<bf16> -> tensor<4x3001xbf16>
  %m = tcc.reduce_max %sm {axes = array<i64: 1>, keepdims = true} : tensor<4x3001xbf16> -> tensor<4x1xbf16>
  %d = tcc.sub %sm, %m : tensor<4x3001xbf16>, tensor<4x1xbf16> -> tensor<4x3001xbf16>
  %e = tcc.exp %d : tensor<4x3001xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x3001xbf16> -> tensor<4x1xbf16>
  %p = tcc.div %e, %sum : tensor<4x3001xbf16>, tensor<4x1xbf16> -> tensor<4x3001xbf16>
  %o = tcc.matmul %p, %v : tensor<4x3001xbf16>, tensor<3001x128xbf16> -> tensor<4x128xbf16>
  return %o : tensor<4x128xbf16>
}

// -----

// f32, K given [Lk, D]: the mma.sync template as 3xTF32 on both targets.
// CHECK-LABEL: func.func @f32_plain
// CHECK: tcc.chain attributes {axis = 1 : i64, tcc.attention, tcc.attention_plan = #tcc.mma_attention<
func.func @f32_plain(%q: tensor<300x64xf32>, %k: tensor<300x64xf32>, %v: tensor<300x64xf32>) -> tensor<300x64xf32> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<300x64xf32>, tensor<300x64xf32> -> tensor<300x300xf32>
  %m = tcc.reduce_max %s {axes = array<i64: 1>, keepdims = true} : tensor<300x300xf32> -> tensor<300x1xf32>
  %d = tcc.sub %s, %m : tensor<300x300xf32>, tensor<300x1xf32> -> tensor<300x300xf32>
  %e = tcc.exp %d : tensor<300x300xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<300x300xf32> -> tensor<300x1xf32>
  %p = tcc.div %e, %sum : tensor<300x300xf32>, tensor<300x1xf32> -> tensor<300x300xf32>
  %o = tcc.matmul %p, %v : tensor<300x300xf32>, tensor<300x64xf32> -> tensor<300x64xf32>
  return %o : tensor<300x64xf32>
}

// -----

// Scores squared (a change that reads the score twice): the changes are
// a DAG of element-wise ops, score code as written; fused, planned as any
// changed score is.
// CHECK-LABEL: func.func @squared
// CHECK: %[[C:.*]] = tcc.chain attributes {axis = 1 : i64, tcc.attention, tcc.attention_plan =
// CHECK:   %[[S:.*]] = tcc.matmul %arg0, %arg1 {transpose_b = true}
// CHECK:   tcc.mul %[[S]], %[[S]]
// CHECK:   tcc.yield
// CHECK-NOT: tcc.matmul
// CHECK: return %[[C]]
func.func @squared(%q: tensor<32x64xf16>, %k: tensor<32x64xf16>, %v: tensor<32x64xf16>) -> tensor<32x64xf16> {
  %s0 = tcc.matmul %q, %k {transpose_b = true} : tensor<32x64xf16>, tensor<32x64xf16> -> tensor<32x32xf16>
  %s = tcc.mul %s0, %s0 : tensor<32x32xf16>, tensor<32x32xf16> -> tensor<32x32xf16>
  %m = tcc.reduce_max %s {axes = array<i64: 1>, keepdims = true} : tensor<32x32xf16> -> tensor<32x1xf16>
  %d = tcc.sub %s, %m : tensor<32x32xf16>, tensor<32x1xf16> -> tensor<32x32xf16>
  %e = tcc.exp %d : tensor<32x32xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<32x32xf16> -> tensor<32x1xf16>
  %p = tcc.div %e, %sum : tensor<32x32xf16>, tensor<32x1xf16> -> tensor<32x32xf16>
  %o = tcc.matmul %p, %v : tensor<32x32xf16>, tensor<32x64xf16> -> tensor<32x64xf16>
  return %o : tensor<32x64xf16>
}

// -----

// Head size 40, a multiple of 8 but not of 16: fused, on the mma.sync
// template on both targets (it computes on 48, the padding zero-filled;
// wgmma takes 64 and 128 only).
// CHECK-LABEL: func.func @head_40
// CHECK: tcc.chain attributes {axis = 1 : i64, tcc.attention, tcc.attention_plan = #tcc.mma_attention<
// CHECK:   tcc.yield
// CHECK-NOT: tcc.matmul
// CHECK: return
func.func @head_40(%q: tensor<100x40xf16>, %k: tensor<100x40xf16>, %v: tensor<100x40xf16>) -> tensor<100x40xf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<100x40xf16>, tensor<100x40xf16> -> tensor<100x100xf16>
  %m = tcc.reduce_max %s {axes = array<i64: 1>, keepdims = true} : tensor<100x100xf16> -> tensor<100x1xf16>
  %d = tcc.sub %s, %m : tensor<100x100xf16>, tensor<100x1xf16> -> tensor<100x100xf16>
  %e = tcc.exp %d : tensor<100x100xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<100x100xf16> -> tensor<100x1xf16>
  %p = tcc.div %e, %sum : tensor<100x100xf16>, tensor<100x1xf16> -> tensor<100x100xf16>
  %o = tcc.matmul %p, %v : tensor<100x100xf16>, tensor<100x40xf16> -> tensor<100x40xf16>
  return %o : tensor<100x40xf16>
}

// -----

// Head size 36 in f16, a multiple of 4 but not of 8 (rows that are not a
// whole number of 16-byte chunks): the tensor-core templates refuse it, the
// SIMT template takes it, the inputs widened to f32 on the way to shared
// memory.
// CHECK-LABEL: func.func @head_36
// CHECK: tcc.chain attributes {axis = 1 : i64, tcc.attention, tcc.attention_plan = #tcc.simt_attention<
// CHECK:   tcc.yield
// CHECK-NOT: tcc.matmul
// CHECK: return
func.func @head_36(%q: tensor<100x36xf16>, %k: tensor<100x36xf16>, %v: tensor<100x36xf16>) -> tensor<100x36xf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<100x36xf16>, tensor<100x36xf16> -> tensor<100x100xf16>
  %m = tcc.reduce_max %s {axes = array<i64: 1>, keepdims = true} : tensor<100x100xf16> -> tensor<100x1xf16>
  %d = tcc.sub %s, %m : tensor<100x100xf16>, tensor<100x1xf16> -> tensor<100x100xf16>
  %e = tcc.exp %d : tensor<100x100xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<100x100xf16> -> tensor<100x1xf16>
  %p = tcc.div %e, %sum : tensor<100x100xf16>, tensor<100x1xf16> -> tensor<100x100xf16>
  %o = tcc.matmul %p, %v : tensor<100x100xf16>, tensor<100x36xf16> -> tensor<100x36xf16>
  return %o : tensor<100x36xf16>
}

// Head size 22 in f16, not a multiple of 4 (rows of no whole 16-byte chunks,
// 44 bytes apart): the SIMT template takes it too, reading the rows element
// by element and computing on 24 columns, the padding zero.
// CHECK-LABEL: func.func @head_22
// CHECK: tcc.chain attributes {axis = 1 : i64, tcc.attention, tcc.attention_plan = #tcc.simt_attention<
// CHECK:   tcc.yield
// CHECK-NOT: tcc.matmul
// CHECK: return
func.func @head_22(%q: tensor<100x22xf16>, %k: tensor<100x22xf16>, %v: tensor<100x22xf16>) -> tensor<100x22xf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<100x22xf16>, tensor<100x22xf16> -> tensor<100x100xf16>
  %m = tcc.reduce_max %s {axes = array<i64: 1>, keepdims = true} : tensor<100x100xf16> -> tensor<100x1xf16>
  %d = tcc.sub %s, %m : tensor<100x100xf16>, tensor<100x1xf16> -> tensor<100x100xf16>
  %e = tcc.exp %d : tensor<100x100xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<100x100xf16> -> tensor<100x1xf16>
  %p = tcc.div %e, %sum : tensor<100x100xf16>, tensor<100x1xf16> -> tensor<100x100xf16>
  %o = tcc.matmul %p, %v : tensor<100x100xf16>, tensor<100x22xf16> -> tensor<100x22xf16>
  return %o : tensor<100x22xf16>
}

// -----

// A softmax followed by a linear layer (a weight shared by every row): no
// attention pair, so no attention chain and no remark; the GEMM stays.
// CHECK-LABEL: func.func @softmax_then_linear
// CHECK: %[[P:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<128x64xf16> {
// CHECK-NOT: tcc.matmul
// CHECK:   tcc.yield
// CHECK: tcc.matmul %[[P]], %arg1
// CHECK-NOT: tcc.attention
func.func @softmax_then_linear(%x: tensor<128x64xf16>, %w: tensor<64x64xf16>) -> tensor<128x64xf16> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<128x64xf16> -> tensor<128x1xf16>
  %d = tcc.sub %x, %m : tensor<128x64xf16>, tensor<128x1xf16> -> tensor<128x64xf16>
  %e = tcc.exp %d : tensor<128x64xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<128x64xf16> -> tensor<128x1xf16>
  %p = tcc.div %e, %sum : tensor<128x64xf16>, tensor<128x1xf16> -> tensor<128x64xf16>
  %y = tcc.matmul %p, %w : tensor<128x64xf16>, tensor<64x64xf16> -> tensor<128x64xf16>
  return %y : tensor<128x64xf16>
}

// -----

// Layer norm between two linear layers of 2-D activations: no attention
// chain, so no remark either (--verify-diagnostics); the GEMMs stay.
// CHECK-LABEL: func.func @linear_norm_linear
// CHECK: %[[H:.*]] = tcc.matmul %arg0, %arg1
// CHECK: %[[N:.*]] = tcc.chain attributes {axis = 1 : i64} -> tensor<64x128xf16> {
// CHECK-NOT: tcc.matmul
// CHECK:   tcc.yield
// CHECK: tcc.matmul %[[N]], %arg2
// CHECK-NOT: tcc.attention
func.func @linear_norm_linear(%x: tensor<64x64xf16>, %w1: tensor<64x128xf16>, %w2: tensor<128x64xf16>) -> tensor<64x64xf16> {
  %h = tcc.matmul %x, %w1 : tensor<64x64xf16>, tensor<64x128xf16> -> tensor<64x128xf16>
  %mu = tcc.reduce_mean %h {axes = array<i64: 1>, keepdims = true} : tensor<64x128xf16> -> tensor<64x1xf16>
  %c = tcc.sub %h, %mu : tensor<64x128xf16>, tensor<64x1xf16> -> tensor<64x128xf16>
  %sq = tcc.mul %c, %c : tensor<64x128xf16>, tensor<64x128xf16> -> tensor<64x128xf16>
  %var = tcc.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<64x128xf16> -> tensor<64x1xf16>
  %r = tcc.rsqrt %var : tensor<64x1xf16>
  %n = tcc.mul %c, %r : tensor<64x128xf16>, tensor<64x1xf16> -> tensor<64x128xf16>
  %y = tcc.matmul %n, %w2 : tensor<64x128xf16>, tensor<128x64xf16> -> tensor<64x64xf16>
  return %y : tensor<64x64xf16>
}
