// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains | FileCheck %s

// Causal attention in bf16 with head size 64: the attention template takes
// it, the chain stays, marked for a kernel of its own.
// CHECK-LABEL: func.func @causal
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK: tcc.matmul
// CHECK: tcc.reduce_max
// CHECK: tcc.matmul
// CHECK: tcc.yield
func.func @causal(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %1 = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %2 = tcc.iota {axis = 0 : i64} : tensor<128x128xi32>
    %3 = tcc.iota {axis = 1 : i64} : tensor<128x128xi32>
    %4 = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
    %6 = tcc.mul %5, %1 : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %7 = tcc.greater_equal %2, %3 : tensor<128x128xi32>, tensor<128x128xi32> -> tensor<128x128xi1>
    %8 = tcc.select %7, %6, %4 : tensor<128x128xi1>, tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %9 = tcc.reduce_max %8 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %8, %9 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x128xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// The same in f32: the SIMT template computes it (head sizes that are
// multiples of 4 in [16, 256]), the chain is marked.
// CHECK-LABEL: func.func @f32_attention
// CHECK: tcc.chain attributes {axis = 2 : i64, tcc.attention}
// CHECK: tcc.matmul
// CHECK: tcc.reduce_max
// CHECK: tcc.matmul
// CHECK: tcc.yield
func.func @f32_attention(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %0 = tcc.chain attributes {axis = 2 : i64} -> tensor<2x16x64xf32> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<2x16x64xf32>, tensor<2x16x64xf32> -> tensor<2x16x16xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
    %10 = tcc.sub %5, %9 : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
    %11 = tcc.exp %10 : tensor<2x16x16xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
    %13 = tcc.div %11, %12 : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
    %14 = tcc.matmul %13, %v : tensor<2x16x16xf32>, tensor<2x16x64xf32> -> tensor<2x16x64xf32>
    tcc.yield %14 : tensor<2x16x64xf32>
  }
  return %0 : tensor<2x16x64xf32>
}

// -----

// f32 with head size 18 (not a multiple of 4): the SIMT template reads its
// rows element by element, so the chain stays, marked.
// CHECK-LABEL: func.func @f32_head_18
// CHECK: tcc.chain attributes {axis = 2 : i64, tcc.attention}
// CHECK: tcc.yield
func.func @f32_head_18(%q: tensor<2x16x18xf32>, %k: tensor<2x16x18xf32>, %v: tensor<2x16x18xf32>) -> tensor<2x16x18xf32> {
  %0 = tcc.chain attributes {axis = 2 : i64} -> tensor<2x16x18xf32> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<2x16x18xf32>, tensor<2x16x18xf32> -> tensor<2x16x16xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
    %10 = tcc.sub %5, %9 : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
    %11 = tcc.exp %10 : tensor<2x16x16xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 2>, keepdims = true} : tensor<2x16x16xf32> -> tensor<2x16x1xf32>
    %13 = tcc.div %11, %12 : tensor<2x16x16xf32>, tensor<2x16x1xf32> -> tensor<2x16x16xf32>
    %14 = tcc.matmul %13, %v : tensor<2x16x16xf32>, tensor<2x16x18xf32> -> tensor<2x16x18xf32>
    tcc.yield %14 : tensor<2x16x18xf32>
  }
  return %0 : tensor<2x16x18xf32>
}

// -----

// Head size 80 (a multiple of 16): the mma.sync template pads its shared
// rows to 128 elements.
// CHECK-LABEL: func.func @head_80
// CHECK: tcc.chain attributes {axis = 1 : i64, tcc.attention}
func.func @head_80(%q: tensor<16x80xf16>, %k: tensor<16x80xf16>, %v: tensor<16x80xf16>) -> tensor<16x80xf16> {
  %0 = tcc.chain attributes {axis = 1 : i64} -> tensor<16x80xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<16x80xf16>, tensor<16x80xf16> -> tensor<16x16xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 1>, keepdims = true} : tensor<16x16xf16> -> tensor<16x1xf16>
    %10 = tcc.sub %5, %9 : tensor<16x16xf16>, tensor<16x1xf16> -> tensor<16x16xf16>
    %11 = tcc.exp %10 : tensor<16x16xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 1>, keepdims = true} : tensor<16x16xf16> -> tensor<16x1xf16>
    %13 = tcc.div %11, %12 : tensor<16x16xf16>, tensor<16x1xf16> -> tensor<16x16xf16>
    %14 = tcc.matmul %13, %v : tensor<16x16xf16>, tensor<16x80xf16> -> tensor<16x80xf16>
    tcc.yield %14 : tensor<16x80xf16>
  }
  return %0 : tensor<16x80xf16>
}

// -----

// A chain without matmuls (softmax) is not this pass's business.
// CHECK-LABEL: func.func @softmax
// CHECK: tcc.chain
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tcc.chain attributes {axis = 1 : i64} -> tensor<4x8xf32> {
    %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
    %d = tcc.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    %e = tcc.exp %d : tensor<4x8xf32>
    %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
    %y = tcc.div %e, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    tcc.yield %y : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// GQA: K and V repeated from 2 heads to 8 (reshape, broadcast, reshape):
// the chain stays and takes the repeats in, so its kernel reads K and V
// as they are.
// CHECK-LABEL: func.func @gqa
// CHECK-NEXT: tcc.chain
// CHECK-NEXT: tcc.reshape %arg1
// CHECK-NEXT: tcc.broadcast_to
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: tcc.reshape %arg2
// CHECK: tcc.matmul %arg0
func.func @gqa(%q: tensor<1x8x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x8x64x64xbf16> {
  %k5 = tcc.reshape %k : tensor<1x2x64x64xbf16> -> tensor<1x2x1x64x64xbf16>
  %kb = tcc.broadcast_to %k5 : tensor<1x2x1x64x64xbf16> -> tensor<1x2x4x64x64xbf16>
  %kk = tcc.reshape %kb : tensor<1x2x4x64x64xbf16> -> tensor<1x8x64x64xbf16>
  %v5 = tcc.reshape %v : tensor<1x2x64x64xbf16> -> tensor<1x2x1x64x64xbf16>
  %vb = tcc.broadcast_to %v5 : tensor<1x2x1x64x64xbf16> -> tensor<1x2x4x64x64xbf16>
  %vv = tcc.reshape %vb : tensor<1x2x4x64x64xbf16> -> tensor<1x8x64x64xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x8x64x64xbf16> {
    %5 = tcc.matmul %q, %kk {transpose_b = true} : tensor<1x8x64x64xbf16>, tensor<1x8x64x64xbf16> -> tensor<1x8x64x64xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x64x64xbf16> -> tensor<1x8x64x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x8x64x64xbf16>, tensor<1x8x64x1xbf16> -> tensor<1x8x64x64xbf16>
    %11 = tcc.exp %10 : tensor<1x8x64x64xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x64x64xbf16> -> tensor<1x8x64x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x8x64x64xbf16>, tensor<1x8x64x1xbf16> -> tensor<1x8x64x64xbf16>
    %14 = tcc.matmul %13, %vv : tensor<1x8x64x64xbf16>, tensor<1x8x64x64xbf16> -> tensor<1x8x64x64xbf16>
    tcc.yield %14 : tensor<1x8x64x64xbf16>
  }
  return %0 : tensor<1x8x64x64xbf16>
}

// -----

// K repeated over heads (MQA's broadcast) but V not: the template reads
// both with one head count, so the chain is dissolved.
// CHECK-LABEL: func.func @gqa_broadcast
// CHECK-NOT: tcc.chain
// CHECK: return
func.func @gqa_broadcast(%q: tensor<4x16x64xbf16>, %k: tensor<1x16x64xbf16>, %v: tensor<4x16x64xbf16>) -> tensor<4x16x64xbf16> {
  %kb = tcc.broadcast_to %k : tensor<1x16x64xbf16> -> tensor<4x16x64xbf16>
  %0 = tcc.chain attributes {axis = 2 : i64} -> tensor<4x16x64xbf16> {
    %5 = tcc.matmul %q, %kb {transpose_b = true} : tensor<4x16x64xbf16>, tensor<4x16x64xbf16> -> tensor<4x16x16xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 2>, keepdims = true} : tensor<4x16x16xbf16> -> tensor<4x16x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<4x16x16xbf16>, tensor<4x16x1xbf16> -> tensor<4x16x16xbf16>
    %11 = tcc.exp %10 : tensor<4x16x16xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 2>, keepdims = true} : tensor<4x16x16xbf16> -> tensor<4x16x1xbf16>
    %13 = tcc.div %11, %12 : tensor<4x16x16xbf16>, tensor<4x16x1xbf16> -> tensor<4x16x16xbf16>
    %14 = tcc.matmul %13, %v : tensor<4x16x16xbf16>, tensor<4x16x64xbf16> -> tensor<4x16x64xbf16>
    tcc.yield %14 : tensor<4x16x64xbf16>
  }
  return %0 : tensor<4x16x64xbf16>
}

// -----

// Q, K and V made by the function (a projection's transpose, a scaling):
// the template reads them from memory, so the chain stays too.
// CHECK-LABEL: func.func @computed_qkv
// CHECK: tcc.transpose
// CHECK: tcc.mul
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
func.func @computed_qkv(%x: tensor<1x128x4x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %t = tcc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<1x128x4x64xbf16> -> tensor<1x4x128x64xbf16>
  %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
  %q = tcc.mul %t, %c : tensor<1x4x128x64xbf16>, tensor<bf16> -> tensor<1x4x128x64xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x128xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// Two layers share one causal mask, made outside both chains (CSE does
// that): each chain gets its own copy of the mask and stays.
// CHECK-LABEL: func.func @shared_mask
// CHECK: tcc.chain attributes {axis = 2 : i64, tcc.attention}
// CHECK:   tcc.iota
// CHECK:   tcc.greater_equal
// CHECK:   tcc.select
// CHECK: tcc.chain attributes {axis = 2 : i64, tcc.attention}
// CHECK:   tcc.iota
// CHECK:   tcc.greater_equal
// CHECK:   tcc.select
func.func @shared_mask(%q: tensor<4x64x64xbf16>, %k: tensor<4x64x64xbf16>, %v: tensor<4x64x64xbf16>) -> tensor<4x64x64xbf16> {
  %r = tcc.iota {axis = 0 : i64} : tensor<64x64xi32>
  %c = tcc.iota {axis = 1 : i64} : tensor<64x64xi32>
  %keep = tcc.greater_equal %r, %c : tensor<64x64xi32>, tensor<64x64xi32> -> tensor<64x64xi1>
  %0 = tcc.chain attributes {axis = 2 : i64} -> tensor<4x64x64xbf16> {
    %n = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
    %6 = tcc.select %keep, %5, %n : tensor<64x64xi1>, tensor<4x64x64xbf16>, tensor<bf16> -> tensor<4x64x64xbf16>
    %9 = tcc.reduce_max %6 {axes = array<i64: 2>, keepdims = true} : tensor<4x64x64xbf16> -> tensor<4x64x1xbf16>
    %10 = tcc.sub %6, %9 : tensor<4x64x64xbf16>, tensor<4x64x1xbf16> -> tensor<4x64x64xbf16>
    %11 = tcc.exp %10 : tensor<4x64x64xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 2>, keepdims = true} : tensor<4x64x64xbf16> -> tensor<4x64x1xbf16>
    %13 = tcc.div %11, %12 : tensor<4x64x64xbf16>, tensor<4x64x1xbf16> -> tensor<4x64x64xbf16>
    %14 = tcc.matmul %13, %v : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
    tcc.yield %14 : tensor<4x64x64xbf16>
  }
  %1 = tcc.chain attributes {axis = 2 : i64} -> tensor<4x64x64xbf16> {
    %n = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %5 = tcc.matmul %0, %k {transpose_b = true} : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
    %6 = tcc.select %keep, %5, %n : tensor<64x64xi1>, tensor<4x64x64xbf16>, tensor<bf16> -> tensor<4x64x64xbf16>
    %9 = tcc.reduce_max %6 {axes = array<i64: 2>, keepdims = true} : tensor<4x64x64xbf16> -> tensor<4x64x1xbf16>
    %10 = tcc.sub %6, %9 : tensor<4x64x64xbf16>, tensor<4x64x1xbf16> -> tensor<4x64x64xbf16>
    %11 = tcc.exp %10 : tensor<4x64x64xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 2>, keepdims = true} : tensor<4x64x64xbf16> -> tensor<4x64x1xbf16>
    %13 = tcc.div %11, %12 : tensor<4x64x64xbf16>, tensor<4x64x1xbf16> -> tensor<4x64x64xbf16>
    %14 = tcc.matmul %13, %v : tensor<4x64x64xbf16>, tensor<4x64x64xbf16> -> tensor<4x64x64xbf16>
    tcc.yield %14 : tensor<4x64x64xbf16>
  }
  return %1 : tensor<4x64x64xbf16>
}

// -----

// Multi-query attention with K and V one tensor repeated once: the repeat
// is taken into the chain once.
// CHECK-LABEL: func.func @mqa_shared_kv
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-COUNT-1: tcc.broadcast_to
// CHECK-NOT: tcc.broadcast_to
// CHECK: tcc.yield
func.func @mqa_shared_kv(%q: tensor<1x8x128x64xbf16>, %kv: tensor<1x1x128x64xbf16>) -> tensor<1x8x128x64xbf16> {
  %b = tcc.broadcast_to %kv : tensor<1x1x128x64xbf16> -> tensor<1x8x128x64xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x8x128x64xbf16> {
    %5 = tcc.matmul %q, %b {transpose_b = true} : tensor<1x8x128x64xbf16>, tensor<1x8x128x64xbf16> -> tensor<1x8x128x128xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x128x128xbf16> -> tensor<1x8x128x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x8x128x128xbf16>, tensor<1x8x128x1xbf16> -> tensor<1x8x128x128xbf16>
    %11 = tcc.exp %10 : tensor<1x8x128x128xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x128x128xbf16> -> tensor<1x8x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x8x128x128xbf16>, tensor<1x8x128x1xbf16> -> tensor<1x8x128x128xbf16>
    %14 = tcc.matmul %13, %b : tensor<1x8x128x128xbf16>, tensor<1x8x128x64xbf16> -> tensor<1x8x128x64xbf16>
    tcc.yield %14 : tensor<1x8x128x64xbf16>
  }
  return %0 : tensor<1x8x128x64xbf16>
}

// -----

// Head size 256: the mma.sync template, 8 warps of 16 rows.
// CHECK-LABEL: func.func @head_256
// CHECK: tcc.chain attributes {axis = 2 : i64, tcc.attention}
func.func @head_256(%q: tensor<1x64x256xbf16>, %k: tensor<1x64x256xbf16>, %v: tensor<1x64x256xbf16>) -> tensor<1x64x256xbf16> {
  %0 = tcc.chain attributes {axis = 2 : i64} -> tensor<1x64x256xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x64x256xbf16>, tensor<1x64x256xbf16> -> tensor<1x64x64xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 2>, keepdims = true} : tensor<1x64x64xbf16> -> tensor<1x64x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x64x64xbf16>, tensor<1x64x1xbf16> -> tensor<1x64x64xbf16>
    %11 = tcc.exp %10 : tensor<1x64x64xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 2>, keepdims = true} : tensor<1x64x64xbf16> -> tensor<1x64x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x64x64xbf16>, tensor<1x64x1xbf16> -> tensor<1x64x64xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x64x64xbf16>, tensor<1x64x256xbf16> -> tensor<1x64x256xbf16>
    tcc.yield %14 : tensor<1x64x256xbf16>
  }
  return %0 : tensor<1x64x256xbf16>
}

// -----

// An additive bias given as an input (a captured tensor, read per score):
// the template takes the chain and reads the bias in it.
// CHECK-LABEL: func.func @bias_input
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK: tcc.add %{{.*}}, %arg3
func.func @bias_input(%q: tensor<1x4x64x64xf16>, %k: tensor<1x4x64x64xf16>, %v: tensor<1x4x64x64xf16>, %bias: tensor<1x4x64x64xf16>) -> tensor<1x4x64x64xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x64x64xf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    %c = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %ss = tcc.mul %s, %c : tensor<1x4x64x64xf16>, tensor<f16> -> tensor<1x4x64x64xf16>
    %sb = tcc.add %ss, %bias : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    %9 = tcc.reduce_max %sb {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xf16> -> tensor<1x4x64x1xf16>
    %10 = tcc.sub %sb, %9 : tensor<1x4x64x64xf16>, tensor<1x4x64x1xf16> -> tensor<1x4x64x64xf16>
    %11 = tcc.exp %10 : tensor<1x4x64x64xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xf16> -> tensor<1x4x64x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x64x64xf16>, tensor<1x4x64x1xf16> -> tensor<1x4x64x64xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    tcc.yield %14 : tensor<1x4x64x64xf16>
  }
  return %0 : tensor<1x4x64x64xf16>
}

// -----

// A boolean padding mask [B, 1, 1, L] given as an input, applied with -inf:
// taken (the mask is applied per score, not analysed).
// CHECK-LABEL: func.func @padding_mask
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK: tcc.select %arg3
func.func @padding_mask(%q: tensor<2x4x64x64xbf16>, %k: tensor<2x4x64x64xbf16>, %v: tensor<2x4x64x64xbf16>, %mask: tensor<2x1x1x64xi1>) -> tensor<2x4x64x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x64x64xbf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xbf16>
    %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %ss = tcc.mul %s, %c : tensor<2x4x64x64xbf16>, tensor<bf16> -> tensor<2x4x64x64xbf16>
    %neg = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
    %sm = tcc.select %mask, %ss, %neg : tensor<2x1x1x64xi1>, tensor<2x4x64x64xbf16>, tensor<bf16> -> tensor<2x4x64x64xbf16>
    %9 = tcc.reduce_max %sm {axes = array<i64: 3>, keepdims = true} : tensor<2x4x64x64xbf16> -> tensor<2x4x64x1xbf16>
    %10 = tcc.sub %sm, %9 : tensor<2x4x64x64xbf16>, tensor<2x4x64x1xbf16> -> tensor<2x4x64x64xbf16>
    %11 = tcc.exp %10 : tensor<2x4x64x64xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x64x64xbf16> -> tensor<2x4x64x1xbf16>
    %13 = tcc.div %11, %12 : tensor<2x4x64x64xbf16>, tensor<2x4x64x1xbf16> -> tensor<2x4x64x64xbf16>
    %14 = tcc.matmul %13, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xbf16>
    tcc.yield %14 : tensor<2x4x64x64xbf16>
  }
  return %0 : tensor<2x4x64x64xbf16>
}

// -----

// ALiBi with per-head slopes [1, H, 1, 1] given as an input, causal: the
// bias is computed in the chain from positions and the slopes; taken.
// CHECK-LABEL: func.func @alibi_slopes
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK: tcc.mul %{{.*}}, %arg3
func.func @alibi_slopes(%q: tensor<1x4x64x64xbf16>, %k: tensor<1x4x64x64xbf16>, %v: tensor<1x4x64x64xbf16>, %slopes: tensor<1x4x1x1xbf16>) -> tensor<1x4x64x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x64x64xbf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16> -> tensor<1x4x64x64xbf16>
    %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %ss = tcc.mul %s, %c : tensor<1x4x64x64xbf16>, tensor<bf16> -> tensor<1x4x64x64xbf16>
    %row = tcc.iota {axis = 0 : i64} : tensor<64x64xi32>
    %col = tcc.iota {axis = 1 : i64} : tensor<64x64xi32>
    %d = tcc.sub %col, %row : tensor<64x64xi32>, tensor<64x64xi32> -> tensor<64x64xi32>
    %df = tcc.cast %d : tensor<64x64xi32> -> tensor<64x64xbf16>
    %b = tcc.mul %df, %slopes : tensor<64x64xbf16>, tensor<1x4x1x1xbf16> -> tensor<1x4x64x64xbf16>
    %sb = tcc.add %ss, %b : tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16> -> tensor<1x4x64x64xbf16>
    %keep = tcc.greater_equal %row, %col : tensor<64x64xi32>, tensor<64x64xi32> -> tensor<64x64xi1>
    %neg = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %sm = tcc.select %keep, %sb, %neg : tensor<64x64xi1>, tensor<1x4x64x64xbf16>, tensor<bf16> -> tensor<1x4x64x64xbf16>
    %9 = tcc.reduce_max %sm {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xbf16> -> tensor<1x4x64x1xbf16>
    %10 = tcc.sub %sm, %9 : tensor<1x4x64x64xbf16>, tensor<1x4x64x1xbf16> -> tensor<1x4x64x64xbf16>
    %11 = tcc.exp %10 : tensor<1x4x64x64xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xbf16> -> tensor<1x4x64x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x64x64xbf16>, tensor<1x4x64x1xbf16> -> tensor<1x4x64x64xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16> -> tensor<1x4x64x64xbf16>
    tcc.yield %14 : tensor<1x4x64x64xbf16>
  }
  return %0 : tensor<1x4x64x64xbf16>
}

// -----

// A captured tensor changed in the chain by an op with no scalar form (a
// transpose): not read per score, so the chain is dissolved.
// CHECK-LABEL: func.func @bias_transposed
// CHECK-NOT: tcc.chain
// CHECK: tcc.transpose
func.func @bias_transposed(%q: tensor<1x4x64x64xf16>, %k: tensor<1x4x64x64xf16>, %v: tensor<1x4x64x64xf16>, %bias: tensor<1x4x64x64xf16>) -> tensor<1x4x64x64xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x64x64xf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    %bt = tcc.transpose %bias {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    %sb = tcc.add %s, %bt : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    %9 = tcc.reduce_max %sb {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xf16> -> tensor<1x4x64x1xf16>
    %10 = tcc.sub %sb, %9 : tensor<1x4x64x64xf16>, tensor<1x4x64x1xf16> -> tensor<1x4x64x64xf16>
    %11 = tcc.exp %10 : tensor<1x4x64x64xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xf16> -> tensor<1x4x64x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x64x64xf16>, tensor<1x4x64x1xf16> -> tensor<1x4x64x64xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    tcc.yield %14 : tensor<1x4x64x64xf16>
  }
  return %0 : tensor<1x4x64x64xf16>
}

// -----

// Padding as an additive bias, select(mask, 0, -inf) of a bool mask input,
// then a causal mask of -1e30: taken (the causal select stays score code,
// since the bias can make a row's kept keys all -inf).
// CHECK-LABEL: func.func @padding_bias_causal
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK: tcc.select %arg3
func.func @padding_bias_causal(%q: tensor<2x4x64x64xbf16>, %k: tensor<2x4x64x64xbf16>, %v: tensor<2x4x64x64xbf16>, %mask: tensor<2x1x1x64xi1>) -> tensor<2x4x64x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x64x64xbf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xbf16>
    %zero = tcc.constant {value = 0.0 : bf16} : tensor<bf16>
    %ninf = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
    %pad = tcc.select %mask, %zero, %ninf : tensor<2x1x1x64xi1>, tensor<bf16>, tensor<bf16> -> tensor<2x1x1x64xbf16>
    %sp = tcc.add %s, %pad : tensor<2x4x64x64xbf16>, tensor<2x1x1x64xbf16> -> tensor<2x4x64x64xbf16>
    %row = tcc.iota {axis = 0 : i64} : tensor<64x64xi32>
    %col = tcc.iota {axis = 1 : i64} : tensor<64x64xi32>
    %keep = tcc.greater_equal %row, %col : tensor<64x64xi32>, tensor<64x64xi32> -> tensor<64x64xi1>
    %neg = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %sm = tcc.select %keep, %sp, %neg : tensor<64x64xi1>, tensor<2x4x64x64xbf16>, tensor<bf16> -> tensor<2x4x64x64xbf16>
    %9 = tcc.reduce_max %sm {axes = array<i64: 3>, keepdims = true} : tensor<2x4x64x64xbf16> -> tensor<2x4x64x1xbf16>
    %10 = tcc.sub %sm, %9 : tensor<2x4x64x64xbf16>, tensor<2x4x64x1xbf16> -> tensor<2x4x64x64xbf16>
    %11 = tcc.exp %10 : tensor<2x4x64x64xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x64x64xbf16> -> tensor<2x4x64x1xbf16>
    %13 = tcc.div %11, %12 : tensor<2x4x64x64xbf16>, tensor<2x4x64x1xbf16> -> tensor<2x4x64x64xbf16>
    %14 = tcc.matmul %13, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xbf16>
    tcc.yield %14 : tensor<2x4x64x64xbf16>
  }
  return %0 : tensor<2x4x64x64xbf16>
}

// -----

// Head size 300 (above 256: no template takes it): dissolved, its ops back
// in the function in order.
// CHECK-LABEL: func.func @head_300
// CHECK-NOT: tcc.chain
// CHECK: tcc.matmul
// CHECK: tcc.reduce_max
// CHECK: tcc.reduce_sum
// CHECK: %[[O:.*]] = tcc.matmul
// CHECK: return %[[O]]
func.func @head_300(%q: tensor<16x300xf16>, %k: tensor<16x300xf16>, %v: tensor<16x300xf16>) -> tensor<16x300xf16> {
  %0 = tcc.chain attributes {axis = 1 : i64} -> tensor<16x300xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<16x300xf16>, tensor<16x300xf16> -> tensor<16x16xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 1>, keepdims = true} : tensor<16x16xf16> -> tensor<16x1xf16>
    %10 = tcc.sub %5, %9 : tensor<16x16xf16>, tensor<16x1xf16> -> tensor<16x16xf16>
    %11 = tcc.exp %10 : tensor<16x16xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 1>, keepdims = true} : tensor<16x16xf16> -> tensor<16x1xf16>
    %13 = tcc.div %11, %12 : tensor<16x16xf16>, tensor<16x1xf16> -> tensor<16x16xf16>
    %14 = tcc.matmul %13, %v : tensor<16x16xf16>, tensor<16x300xf16> -> tensor<16x300xf16>
    tcc.yield %14 : tensor<16x300xf16>
  }
  return %0 : tensor<16x300xf16>
}
