// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains | FileCheck %s

// K given transposed, [B, H, D, Lk], and the scores matmul(q, kt) without
// transpose_b: the attention templates take it (kTransposed), the chain
// stays, marked.
// CHECK-LABEL: func.func @kt_input
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NEXT: tcc.matmul %arg0, %arg1 :
// CHECK: tcc.yield
func.func @kt_input(%q: tensor<1x4x128x64xbf16>, %kt: tensor<1x4x64x256xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %kt : tensor<1x4x128x64xbf16>, tensor<1x4x64x256xbf16> -> tensor<1x4x128x256xbf16>
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

// K transposed from outside the chain by a swap of its last two axes: the
// scores read K itself with transpose_b, and the transpose (no longer used)
// is gone, so no kernel copies K.
// CHECK-LABEL: func.func @kt_swap_folded
// CHECK-NOT: tcc.transpose
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NEXT: tcc.matmul %arg0, %arg1 {transpose_b = true}
func.func @kt_swap_folded(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %kt = tcc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x256x64xbf16> -> tensor<1x4x64x256xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %kt : tensor<1x4x128x64xbf16>, tensor<1x4x64x256xbf16> -> tensor<1x4x128x256xbf16>
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

// K transposed from a projection's [B, L, H, D] by perm [0, 2, 3, 1]: the
// scores read K [B, H, L, D] with transpose_b, as a layout transpose of the
// projection in the chain (the template reads it with strides, no copy).
// CHECK-LABEL: func.func @kt_from_blhd
// CHECK-NEXT: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NEXT: %[[K:.*]] = tcc.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: tcc.matmul %arg0, %[[K]] {transpose_b = true}
func.func @kt_from_blhd(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x256x4x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %kt = tcc.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x256x4x64xbf16> -> tensor<1x4x64x256xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %kt : tensor<1x4x128x64xbf16>, tensor<1x4x64x256xbf16> -> tensor<1x4x128x256xbf16>
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

// GQA with K given transposed: the repeat of [B, Hkv, D, Lk] over query
// heads is taken into the chain as K's is.
// CHECK-LABEL: func.func @kt_gqa
// CHECK-NEXT: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NEXT: tcc.reshape %arg1
// CHECK-NEXT: tcc.broadcast_to
// CHECK-NEXT: tcc.reshape
// CHECK-NEXT: tcc.reshape %arg2
func.func @kt_gqa(%q: tensor<1x8x128x64xbf16>, %kt: tensor<1x2x64x256xbf16>, %v: tensor<1x2x256x64xbf16>) -> tensor<1x8x128x64xbf16> {
  %k5 = tcc.reshape %kt : tensor<1x2x64x256xbf16> -> tensor<1x2x1x64x256xbf16>
  %kb = tcc.broadcast_to %k5 : tensor<1x2x1x64x256xbf16> -> tensor<1x2x4x64x256xbf16>
  %kk = tcc.reshape %kb : tensor<1x2x4x64x256xbf16> -> tensor<1x8x64x256xbf16>
  %v5 = tcc.reshape %v : tensor<1x2x256x64xbf16> -> tensor<1x2x1x256x64xbf16>
  %vb = tcc.broadcast_to %v5 : tensor<1x2x1x256x64xbf16> -> tensor<1x2x4x256x64xbf16>
  %vv = tcc.reshape %vb : tensor<1x2x4x256x64xbf16> -> tensor<1x8x256x64xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x8x128x64xbf16> {
    %5 = tcc.matmul %q, %kk : tensor<1x8x128x64xbf16>, tensor<1x8x64x256xbf16> -> tensor<1x8x128x256xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x128x256xbf16> -> tensor<1x8x128x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x8x128x256xbf16>, tensor<1x8x128x1xbf16> -> tensor<1x8x128x256xbf16>
    %11 = tcc.exp %10 : tensor<1x8x128x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x128x256xbf16> -> tensor<1x8x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x8x128x256xbf16>, tensor<1x8x128x1xbf16> -> tensor<1x8x128x256xbf16>
    %14 = tcc.matmul %13, %vv : tensor<1x8x128x256xbf16>, tensor<1x8x256x64xbf16> -> tensor<1x8x128x64xbf16>
    tcc.yield %14 : tensor<1x8x128x64xbf16>
  }
  return %0 : tensor<1x8x128x64xbf16>
}

// -----

// K given transposed with 1001 keys: its rows are not 16-byte aligned for
// the tensor-core templates' copies; the SIMT template reads them key by
// key, so the chain stays, marked (tcc-gpu-attention-plan picks SIMT).
// CHECK-LABEL: func.func @kt_unaligned
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK: tcc.yield
func.func @kt_unaligned(%q: tensor<1x4x128x64xbf16>, %kt: tensor<1x4x64x1001xbf16>, %v: tensor<1x4x1001x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %kt : tensor<1x4x128x64xbf16>, tensor<1x4x64x1001xbf16> -> tensor<1x4x128x1001xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x1001xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x1001xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x1001xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x1001xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x1001xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x1001xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x1001xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x1001xbf16>, tensor<1x4x1001x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// f32 with K given transposed: the SIMT template copies it through
// registers, 4 keys of one d at a time; the chain stays, marked.
// CHECK-LABEL: func.func @kt_f32
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NEXT: tcc.matmul %arg0, %arg1 :
// CHECK: tcc.yield
func.func @kt_f32(%q: tensor<1x4x128x64xf32>, %kt: tensor<1x4x64x256xf32>, %v: tensor<1x4x256x64xf32>) -> tensor<1x4x128x64xf32> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xf32> {
    %5 = tcc.matmul %q, %kt : tensor<1x4x128x64xf32>, tensor<1x4x64x256xf32> -> tensor<1x4x128x256xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xf32> -> tensor<1x4x128x1xf32>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x256xf32>, tensor<1x4x128x1xf32> -> tensor<1x4x128x256xf32>
    %11 = tcc.exp %10 : tensor<1x4x128x256xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xf32> -> tensor<1x4x128x1xf32>
    %13 = tcc.div %11, %12 : tensor<1x4x128x256xf32>, tensor<1x4x128x1xf32> -> tensor<1x4x128x256xf32>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x256xf32>, tensor<1x4x256x64xf32> -> tensor<1x4x128x64xf32>
    tcc.yield %14 : tensor<1x4x128x64xf32>
  }
  return %0 : tensor<1x4x128x64xf32>
}

// -----

// f32 with K given transposed and 254 keys: rows of K not 16-byte aligned,
// read key by key by the SIMT template; the chain stays, marked.
// CHECK-LABEL: func.func @kt_f32_unaligned
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK: tcc.yield
func.func @kt_f32_unaligned(%q: tensor<1x4x128x64xf32>, %kt: tensor<1x4x64x254xf32>, %v: tensor<1x4x254x64xf32>) -> tensor<1x4x128x64xf32> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xf32> {
    %5 = tcc.matmul %q, %kt : tensor<1x4x128x64xf32>, tensor<1x4x64x254xf32> -> tensor<1x4x128x254xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x254xf32> -> tensor<1x4x128x1xf32>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x254xf32>, tensor<1x4x128x1xf32> -> tensor<1x4x128x254xf32>
    %11 = tcc.exp %10 : tensor<1x4x128x254xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x254xf32> -> tensor<1x4x128x1xf32>
    %13 = tcc.div %11, %12 : tensor<1x4x128x254xf32>, tensor<1x4x128x1xf32> -> tensor<1x4x128x254xf32>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x254xf32>, tensor<1x4x254x64xf32> -> tensor<1x4x128x64xf32>
    tcc.yield %14 : tensor<1x4x128x64xf32>
  }
  return %0 : tensor<1x4x128x64xf32>
}

// -----

// K transposed by a swap before its repeat over query heads (GQA 2 -> 4
// written as reshape, broadcast_to, reshape): the repeat is made again on
// K itself, [B, Hkv, L, D], and the scores read it with transpose_b.
// CHECK-LABEL: func.func @kt_swap_before_repeat
// CHECK-NOT: tcc.transpose
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK: tcc.reshape %arg1 : tensor<1x2x256x64xbf16> -> tensor<1x2x1x256x64xbf16>
// CHECK-NEXT: tcc.broadcast_to {{.*}} -> tensor<1x2x2x256x64xbf16>
// CHECK-NEXT: %[[K:.*]] = tcc.reshape {{.*}} -> tensor<1x4x256x64xbf16>
// CHECK: tcc.matmul %arg0, %[[K]] {transpose_b = true}
func.func @kt_swap_before_repeat(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %kt = tcc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x256x64xbf16> -> tensor<1x2x64x256xbf16>
  %k5 = tcc.reshape %kt : tensor<1x2x64x256xbf16> -> tensor<1x2x1x64x256xbf16>
  %kb = tcc.broadcast_to %k5 : tensor<1x2x1x64x256xbf16> -> tensor<1x2x2x64x256xbf16>
  %kk = tcc.reshape %kb : tensor<1x2x2x64x256xbf16> -> tensor<1x4x64x256xbf16>
  %v5 = tcc.reshape %v : tensor<1x2x256x64xbf16> -> tensor<1x2x1x256x64xbf16>
  %vb = tcc.broadcast_to %v5 : tensor<1x2x1x256x64xbf16> -> tensor<1x2x2x256x64xbf16>
  %vv = tcc.reshape %vb : tensor<1x2x2x256x64xbf16> -> tensor<1x4x256x64xbf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %kk : tensor<1x4x128x64xbf16>, tensor<1x4x64x256xbf16> -> tensor<1x4x128x256xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x256xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x256xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x256xbf16>
    %14 = tcc.matmul %13, %vv : tensor<1x4x128x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}
