// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains | FileCheck %s

// Q, K and V kept [B, L, H, D] by the model (a projection's layout) and
// transposed to [B, H, L, D] for attention, the result transposed back: the
// transposes move into the chain, which the template computes reading and
// writing the untransposed tensors with strides (no transpose kernels).
// CHECK-LABEL: func.func @blhd
// CHECK-NEXT: %[[C:.*]] = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x128x4x64xbf16>
// CHECK-DAG: tcc.transpose %arg0 {perm = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: tcc.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: tcc.transpose %arg2 {perm = array<i64: 0, 2, 1, 3>}
// CHECK: %[[O:.*]] = tcc.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x128x64xbf16> -> tensor<1x128x4x64xbf16>
// CHECK-NEXT: tcc.yield %[[O]]
// CHECK: return %[[C]] : tensor<1x128x4x64xbf16>
func.func @blhd(%qi: tensor<1x128x4x64xbf16>, %ki: tensor<1x256x4x64xbf16>, %vi: tensor<1x256x4x64xbf16>) -> tensor<1x128x4x64xbf16> {
  %q = tcc.transpose %qi {perm = array<i64: 0, 2, 1, 3>} : tensor<1x128x4x64xbf16> -> tensor<1x4x128x64xbf16>
  %k = tcc.transpose %ki {perm = array<i64: 0, 2, 1, 3>} : tensor<1x256x4x64xbf16> -> tensor<1x4x256x64xbf16>
  %v = tcc.transpose %vi {perm = array<i64: 0, 2, 1, 3>} : tensor<1x256x4x64xbf16> -> tensor<1x4x256x64xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x256xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x256xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x256xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  %o = tcc.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x128x64xbf16> -> tensor<1x128x4x64xbf16>
  return %o : tensor<1x128x4x64xbf16>
}

// -----

// The result read twice (transposed and as it is): it stays [B, H, L, D],
// the transpose outside; Q's layout transpose still moves in.
// CHECK-LABEL: func.func @result_twice
// CHECK-NEXT: tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x128x64xbf16>
// CHECK-NEXT: tcc.transpose %arg0
// CHECK: tcc.yield
// CHECK: tcc.transpose
// CHECK: return
func.func @result_twice(%qi: tensor<1x128x4x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> (tensor<1x128x4x64xbf16>, tensor<1x4x128x64xbf16>) {
  %q = tcc.transpose %qi {perm = array<i64: 0, 2, 1, 3>} : tensor<1x128x4x64xbf16> -> tensor<1x4x128x64xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x256xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x256xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x256xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  %o = tcc.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x128x64xbf16> -> tensor<1x128x4x64xbf16>
  return %o, %0 : tensor<1x128x4x64xbf16>, tensor<1x4x128x64xbf16>
}

// -----

// Q given [B, H, D, L] and transposed: the head dim is not innermost in the
// tensor, which the templates' 16-byte row copies need, so the transpose
// stays a kernel of its own; the chain reads its result.
// CHECK-LABEL: func.func @head_dim_moved
// CHECK-NEXT: %[[Q:.*]] = tcc.transpose %arg0 {perm = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NEXT: tcc.matmul %[[Q]], %arg1
func.func @head_dim_moved(%qi: tensor<1x4x64x128xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %q = tcc.transpose %qi {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x64x128xbf16> -> tensor<1x4x128x64xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x256xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x256xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x256xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// K and V one tensor in the model's layout (read twice through one
// transpose): the transpose moves in once.
// CHECK-LABEL: func.func @kv_shared
// CHECK-NEXT: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NEXT: %[[KV:.*]] = tcc.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: tcc.matmul %arg0, %[[KV]] {transpose_b = true}
// CHECK-NOT: tcc.transpose
// CHECK: tcc.matmul %{{.*}}, %[[KV]] :
func.func @kv_shared(%q: tensor<1x4x128x64xbf16>, %kvi: tensor<1x256x4x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %k = tcc.transpose %kvi {perm = array<i64: 0, 2, 1, 3>} : tensor<1x256x4x64xbf16> -> tensor<1x4x256x64xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x256xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x256xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x256xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x256xbf16>
    %14 = tcc.matmul %13, %k : tensor<1x4x128x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// GQA in the model's layout: K and V [B, L, Hkv, D] transposed, then
// repeated over query heads; both the transposes and the repeats move in.
// CHECK-LABEL: func.func @gqa_blhd
// CHECK-NEXT: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-DAG: tcc.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: tcc.transpose %arg2 {perm = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: tcc.broadcast_to
// CHECK: tcc.yield
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @gqa_blhd(%q: tensor<1x8x128x64xf16>, %ki: tensor<1x256x2x64xf16>, %vi: tensor<1x256x2x64xf16>) -> tensor<1x8x128x64xf16> {
  %kt = tcc.transpose %ki {perm = array<i64: 0, 2, 1, 3>} : tensor<1x256x2x64xf16> -> tensor<1x2x256x64xf16>
  %vt = tcc.transpose %vi {perm = array<i64: 0, 2, 1, 3>} : tensor<1x256x2x64xf16> -> tensor<1x2x256x64xf16>
  %k5 = tcc.reshape %kt : tensor<1x2x256x64xf16> -> tensor<1x2x1x256x64xf16>
  %kb = tcc.broadcast_to %k5 : tensor<1x2x1x256x64xf16> -> tensor<1x2x4x256x64xf16>
  %k = tcc.reshape %kb : tensor<1x2x4x256x64xf16> -> tensor<1x8x256x64xf16>
  %v5 = tcc.reshape %vt : tensor<1x2x256x64xf16> -> tensor<1x2x1x256x64xf16>
  %vb = tcc.broadcast_to %v5 : tensor<1x2x1x256x64xf16> -> tensor<1x2x4x256x64xf16>
  %v = tcc.reshape %vb : tensor<1x2x4x256x64xf16> -> tensor<1x8x256x64xf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x8x128x64xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x8x128x64xf16>, tensor<1x8x256x64xf16> -> tensor<1x8x128x256xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x128x256xf16> -> tensor<1x8x128x1xf16>
    %10 = tcc.sub %5, %9 : tensor<1x8x128x256xf16>, tensor<1x8x128x1xf16> -> tensor<1x8x128x256xf16>
    %11 = tcc.exp %10 : tensor<1x8x128x256xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x128x256xf16> -> tensor<1x8x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x8x128x256xf16>, tensor<1x8x128x1xf16> -> tensor<1x8x128x256xf16>
    %14 = tcc.matmul %13, %v : tensor<1x8x128x256xf16>, tensor<1x8x256x64xf16> -> tensor<1x8x128x64xf16>
    tcc.yield %14 : tensor<1x8x128x64xf16>
  }
  return %0 : tensor<1x8x128x64xf16>
}
