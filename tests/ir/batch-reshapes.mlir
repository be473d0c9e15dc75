// RUN: tcc-opt %s --tcc-batch-reshapes | FileCheck %s

// Attention over flattened heads as BART writes it: Q, K and V merged to
// [B*H, L, D], K transposed for torch.bmm, the scores viewed [B, H, L, S]
// for a mask and merged back for the softmax, the result viewed [B, H, L, D].
// Every reshape meets its inverse: one chain over [B, H].
// CHECK-LABEL: func.func @flattened_heads
// CHECK-NOT: tcc.reshape
// CHECK: %[[KT:.*]] = tcc.transpose %arg1 {perm = array<i64: 0, 1, 3, 2>} : tensor<2x4x8x16xf16> -> tensor<2x4x16x8xf16>
// CHECK: %[[S:.*]] = tcc.matmul %arg0, %[[KT]] : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16> -> tensor<2x4x8x8xf16>
// CHECK: %[[SM:.*]] = tcc.add %[[S]], %arg3
// CHECK: tcc.reduce_max %[[SM]] {axes = array<i64: 3>, keepdims = true} : tensor<2x4x8x8xf16> -> tensor<2x4x8x1xf16>
// CHECK: %[[P:.*]] = tcc.div
// CHECK: %[[O:.*]] = tcc.matmul %[[P]], %arg2 : tensor<2x4x8x8xf16>, tensor<2x4x8x16xf16> -> tensor<2x4x8x16xf16>
// CHECK-NOT: tcc.reshape
// CHECK: return %[[O]]
func.func @flattened_heads(%q: tensor<2x4x8x16xf16>, %k: tensor<2x4x8x16xf16>, %v: tensor<2x4x8x16xf16>, %mask: tensor<2x1x8x8xf16>) -> tensor<2x4x8x16xf16> {
  %q3 = tcc.reshape %q : tensor<2x4x8x16xf16> -> tensor<8x8x16xf16>
  %k3 = tcc.reshape %k : tensor<2x4x8x16xf16> -> tensor<8x8x16xf16>
  %v3 = tcc.reshape %v : tensor<2x4x8x16xf16> -> tensor<8x8x16xf16>
  %kt = tcc.transpose %k3 {perm = array<i64: 0, 2, 1>} : tensor<8x8x16xf16> -> tensor<8x16x8xf16>
  %s = tcc.matmul %q3, %kt : tensor<8x8x16xf16>, tensor<8x16x8xf16> -> tensor<8x8x8xf16>
  %s4 = tcc.reshape %s : tensor<8x8x8xf16> -> tensor<2x4x8x8xf16>
  %sm = tcc.add %s4, %mask : tensor<2x4x8x8xf16>, tensor<2x1x8x8xf16> -> tensor<2x4x8x8xf16>
  %s3 = tcc.reshape %sm : tensor<2x4x8x8xf16> -> tensor<8x8x8xf16>
  %mx = tcc.reduce_max %s3 {axes = array<i64: 2>, keepdims = true} : tensor<8x8x8xf16> -> tensor<8x8x1xf16>
  %d = tcc.sub %s3, %mx : tensor<8x8x8xf16>, tensor<8x8x1xf16> -> tensor<8x8x8xf16>
  %e = tcc.exp %d : tensor<8x8x8xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<8x8x8xf16> -> tensor<8x8x1xf16>
  %p = tcc.div %e, %sum : tensor<8x8x8xf16>, tensor<8x8x1xf16> -> tensor<8x8x8xf16>
  %o = tcc.matmul %p, %v3 : tensor<8x8x8xf16>, tensor<8x8x16xf16> -> tensor<8x8x16xf16>
  %o4 = tcc.reshape %o : tensor<8x8x16xf16> -> tensor<2x4x8x16xf16>
  return %o4 : tensor<2x4x8x16xf16>
}

// K given flattened and transposed for bmm: the split the matmul's rule
// makes of the transpose moves above it (a split read only by a matmul),
// leaving the transpose of a view, which the attention match folds.
// CHECK-LABEL: func.func @flattened_k_transposed
// CHECK: %[[K:.*]] = tcc.reshape %arg1 : tensor<8x8x16xf16> -> tensor<2x4x8x16xf16>
// CHECK: %[[KT:.*]] = tcc.transpose %[[K]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: tcc.matmul %arg0, %[[KT]] : tensor<2x4x8x16xf16>, tensor<2x4x16x8xf16>
func.func @flattened_k_transposed(%q: tensor<2x4x8x16xf16>, %k: tensor<8x8x16xf16>) -> tensor<8x8x8xf16> {
  %q3 = tcc.reshape %q : tensor<2x4x8x16xf16> -> tensor<8x8x16xf16>
  %kt = tcc.transpose %k {perm = array<i64: 0, 2, 1>} : tensor<8x8x16xf16> -> tensor<8x16x8xf16>
  %s = tcc.matmul %q3, %kt : tensor<8x8x16xf16>, tensor<8x16x8xf16> -> tensor<8x8x8xf16>
  return %s : tensor<8x8x8xf16>
}

// Q, K and V given flattened: the split after Q*K^T moves up to them (a
// scale by a scalar and a [L, S] bias on the way), the merge before the
// softmax down through P*V, where V is split; the result merged once.
// CHECK-LABEL: func.func @flattened_inputs
// CHECK-DAG: %[[Q:.*]] = tcc.reshape %arg0 : tensor<8x8x16xf32> -> tensor<2x4x8x16xf32>
// CHECK-DAG: %[[K:.*]] = tcc.reshape %arg1 : tensor<8x8x16xf32> -> tensor<2x4x8x16xf32>
// CHECK: %[[S:.*]] = tcc.matmul %[[Q]], %[[K]] {transpose_b = true} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x8xf32>
// CHECK: tcc.mul %[[S]], %{{.*}} : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
// CHECK: tcc.add %{{.*}}, %arg4 : tensor<2x4x8x8xf32>, tensor<8x8xf32> -> tensor<2x4x8x8xf32>
// CHECK: tcc.select %arg3, %{{.*}}, %{{.*}} : tensor<2x1x1x8xi1>, tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
// CHECK: %[[V:.*]] = tcc.reshape %arg2 : tensor<8x8x16xf32> -> tensor<2x4x8x16xf32>
// CHECK: %[[O:.*]] = tcc.matmul %{{.*}}, %[[V]] : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
// CHECK: %[[R:.*]] = tcc.reshape %[[O]] : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
// CHECK: return %[[R]]
func.func @flattened_inputs(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>, %keep: tensor<2x1x1x8xi1>, %bias: tensor<8x8xf32>) -> tensor<8x8x16xf32> {
  %c = tcc.constant {value = 2.500000e-01 : f32} : tensor<f32>
  %ninf = tcc.constant {value = 0xFF800000 : f32} : tensor<f32>
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<8x8x16xf32>, tensor<8x8x16xf32> -> tensor<8x8x8xf32>
  %ss = tcc.mul %s, %c : tensor<8x8x8xf32>, tensor<f32> -> tensor<8x8x8xf32>
  %sb = tcc.add %ss, %bias : tensor<8x8x8xf32>, tensor<8x8xf32> -> tensor<8x8x8xf32>
  %s4 = tcc.reshape %sb : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  %sm = tcc.select %keep, %s4, %ninf : tensor<2x1x1x8xi1>, tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
  %s3 = tcc.reshape %sm : tensor<2x4x8x8xf32> -> tensor<8x8x8xf32>
  %mx = tcc.reduce_max %s3 {axes = array<i64: 2>, keepdims = true} : tensor<8x8x8xf32> -> tensor<8x8x1xf32>
  %d = tcc.sub %s3, %mx : tensor<8x8x8xf32>, tensor<8x8x1xf32> -> tensor<8x8x8xf32>
  %e = tcc.exp %d : tensor<8x8x8xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<8x8x8xf32> -> tensor<8x8x1xf32>
  %p = tcc.div %e, %sum : tensor<8x8x8xf32>, tensor<8x8x1xf32> -> tensor<8x8x8xf32>
  %o = tcc.matmul %p, %v : tensor<8x8x8xf32>, tensor<8x8x16xf32> -> tensor<8x8x16xf32>
  return %o : tensor<8x8x16xf32>
}

// What stays: an operand broadcast along some of the batch axes ([1, 4] of
// [6, 4]); a merge on a matmul's right operand (K and V repeated for grouped
// heads); a split of a value with other uses; a reduction over a batch axis;
// a reshape that changes the last two axes; a split whose producers lead to
// no matmul or merge (K scaled, then unsqueezed for its repeat); a merge of
// a broadcast (the repeat), before an element-wise op too; a split after
// P·V, whose way up meets values read twice (the softmax's).
// CHECK-LABEL: func.func @stays
// CHECK: tcc.reshape %arg0 : tensor<2x3x4x8x8xf32> -> tensor<6x4x8x8xf32>
// CHECK: tcc.add %{{.*}}, %arg1 : tensor<6x4x8x8xf32>, tensor<1x4x8x8xf32>
// CHECK: %[[KV:.*]] = tcc.reshape %arg2 : tensor<2x2x2x8x8xf32> -> tensor<2x4x8x8xf32>
// CHECK: tcc.matmul %arg3, %[[KV]] : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
// CHECK: %[[E:.*]] = tcc.exp %arg4 : tensor<8x8x8xf32>
// CHECK: tcc.reshape %[[E]] : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
// CHECK: tcc.reduce_sum %{{.*}} {axes = array<i64: 0>, keepdims = true} : tensor<8x8x8xf32>
// CHECK: tcc.reshape %{{.*}} : tensor<8x8x8xf32> -> tensor<8x64xf32>
// CHECK: %[[KS:.*]] = tcc.mul %arg5, %{{.*}} : tensor<1x2x8x8xf32>, tensor<f32>
// CHECK: %[[K5:.*]] = tcc.reshape %[[KS]] : tensor<1x2x8x8xf32> -> tensor<1x2x1x8x8xf32>
// CHECK: %[[KB:.*]] = tcc.broadcast_to %[[K5]]
// CHECK: %[[KR:.*]] = tcc.reshape %[[KB]] : tensor<1x2x2x8x8xf32> -> tensor<1x4x8x8xf32>
// CHECK: tcc.mul %[[KR]], %{{.*}} : tensor<1x4x8x8xf32>, tensor<f32>
// CHECK: %[[PV:.*]] = tcc.matmul %{{.*}}, %arg4 : tensor<8x8x8xf32>, tensor<8x8x8xf32> -> tensor<8x8x8xf32>
// CHECK: tcc.reshape %[[PV]] : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
func.func @stays(%x: tensor<2x3x4x8x8xf32>, %y: tensor<1x4x8x8xf32>, %kv: tensor<2x2x2x8x8xf32>, %q: tensor<2x4x8x8xf32>, %z: tensor<8x8x8xf32>, %k2: tensor<1x2x8x8xf32>) -> (tensor<6x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<8x8x8xf32>, tensor<1x8x8xf32>, tensor<8x64xf32>, tensor<1x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %m = tcc.reshape %x : tensor<2x3x4x8x8xf32> -> tensor<6x4x8x8xf32>
  %a = tcc.add %m, %y : tensor<6x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<6x4x8x8xf32>
  %k = tcc.reshape %kv : tensor<2x2x2x8x8xf32> -> tensor<2x4x8x8xf32>
  %s = tcc.matmul %q, %k : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %e = tcc.exp %z : tensor<8x8x8xf32>
  %e4 = tcc.reshape %e : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  %r = tcc.reduce_sum %e {axes = array<i64: 0>, keepdims = true} : tensor<8x8x8xf32> -> tensor<1x8x8xf32>
  %f = tcc.reshape %e : tensor<8x8x8xf32> -> tensor<8x64xf32>
  %c = tcc.constant {value = 2.500000e-01 : f32} : tensor<f32>
  %ks = tcc.mul %k2, %c : tensor<1x2x8x8xf32>, tensor<f32> -> tensor<1x2x8x8xf32>
  %k5 = tcc.reshape %ks : tensor<1x2x8x8xf32> -> tensor<1x2x1x8x8xf32>
  %kb = tcc.broadcast_to %k5 : tensor<1x2x1x8x8xf32> -> tensor<1x2x2x8x8xf32>
  %kr = tcc.reshape %kb : tensor<1x2x2x8x8xf32> -> tensor<1x4x8x8xf32>
  %ke = tcc.mul %kr, %c : tensor<1x4x8x8xf32>, tensor<f32> -> tensor<1x4x8x8xf32>
  %ez = tcc.exp %z : tensor<8x8x8xf32>
  %sm = tcc.reduce_sum %ez {axes = array<i64: 2>, keepdims = true} : tensor<8x8x8xf32> -> tensor<8x8x1xf32>
  %p = tcc.div %ez, %sm : tensor<8x8x8xf32>, tensor<8x8x1xf32> -> tensor<8x8x8xf32>
  %pv = tcc.matmul %p, %z : tensor<8x8x8xf32>, tensor<8x8x8xf32> -> tensor<8x8x8xf32>
  %pv4 = tcc.reshape %pv : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  return %a, %s, %e4, %e, %r, %f, %ke, %pv4 : tensor<6x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<8x8x8xf32>, tensor<1x8x8xf32>, tensor<8x64xf32>, tensor<1x4x8x8xf32>, tensor<2x4x8x8xf32>
}

// A softmax written over a flat view of attention's scores ([2, 3, 5, 7]
// as [30, 7] rows) and reshaped back for P V: the view sinks past the
// row-wise ops (the scale's [30, 1]-shaped operand reshaped with it, the
// broadcast [7] mask as it is) and folds with the reshape back: no reshape
// is left but the scale's, every op runs over [2, 3, 5, 7].
// CHECK-LABEL: func.func @flat_rows_softmax
// CHECK-NEXT: tcc.reshape %arg2 : tensor<30x1xf32> -> tensor<2x3x5x1xf32>
// CHECK-NOT: tcc.reshape
// CHECK: tcc.reduce_max %{{.*}} {axes = array<i64: 3>, keepdims = true} : tensor<2x3x5x7xf32> -> tensor<2x3x5x1xf32>
// CHECK-NOT: tcc.reshape
// CHECK: tcc.reduce_sum %{{.*}} {axes = array<i64: 3>, keepdims = true} : tensor<2x3x5x7xf32> -> tensor<2x3x5x1xf32>
// CHECK-NOT: tcc.reshape
// CHECK: tcc.matmul %{{.*}}, %arg1 : tensor<2x3x5x7xf32>, tensor<2x3x7x4xf32>
func.func @flat_rows_softmax(%s: tensor<2x3x5x7xf32>, %v: tensor<2x3x7x4xf32>, %t: tensor<30x1xf32>, %m: tensor<7xf32>) -> tensor<2x3x5x4xf32> {
  %f = tcc.reshape %s : tensor<2x3x5x7xf32> -> tensor<30x7xf32>
  %sc = tcc.mul %f, %t : tensor<30x7xf32>, tensor<30x1xf32> -> tensor<30x7xf32>
  %sm = tcc.add %sc, %m : tensor<30x7xf32>, tensor<7xf32> -> tensor<30x7xf32>
  %mx = tcc.reduce_max %sm {axes = array<i64: 1>, keepdims = true} : tensor<30x7xf32> -> tensor<30x1xf32>
  %d = tcc.sub %sm, %mx : tensor<30x7xf32>, tensor<30x1xf32> -> tensor<30x7xf32>
  %e = tcc.exp %d : tensor<30x7xf32>
  %su = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<30x7xf32> -> tensor<30x1xf32>
  %p = tcc.div %e, %su : tensor<30x7xf32>, tensor<30x1xf32> -> tensor<30x7xf32>
  %p4 = tcc.reshape %p : tensor<30x7xf32> -> tensor<2x3x5x7xf32>
  %o = tcc.matmul %p4, %v : tensor<2x3x5x7xf32>, tensor<2x3x7x4xf32> -> tensor<2x3x5x4xf32>
  return %o : tensor<2x3x5x4xf32>
}

// A flat view whose rows go on elsewhere stays where it is: a loss's
// log-softmax over [B*L, V] rows whose values are gathered by targets, a
// softmax over flat rows returned as they are, and an RMS-norm-like chain
// over flat rows reshaped back for no matmul.
// CHECK-LABEL: func.func @flat_rows_stay
// CHECK: tcc.reshape %arg0 : tensor<2x3x11xf32> -> tensor<6x11xf32>
// CHECK: tcc.reduce_max %{{.*}} {axes = array<i64: 1>, keepdims = true} : tensor<6x11xf32>
// CHECK: tcc.reshape %arg0 : tensor<2x3x11xf32> -> tensor<6x11xf32>
// CHECK: tcc.exp %{{.*}} : tensor<6x11xf32>
// CHECK: tcc.reduce_mean %{{.*}} {axes = array<i64: 1>, keepdims = true} : tensor<6x11xf32>
// CHECK: tcc.reshape %{{.*}} : tensor<6x11xf32> -> tensor<2x3x11xf32>
func.func @flat_rows_stay(%x: tensor<2x3x11xf32>, %idx: tensor<6x1xi32>) -> (tensor<6x1xf32>, tensor<6x11xf32>, tensor<2x3x11xf32>) {
  %f = tcc.reshape %x : tensor<2x3x11xf32> -> tensor<6x11xf32>
  %mx = tcc.reduce_max %f {axes = array<i64: 1>, keepdims = true} : tensor<6x11xf32> -> tensor<6x1xf32>
  %d = tcc.sub %f, %mx : tensor<6x11xf32>, tensor<6x1xf32> -> tensor<6x11xf32>
  %g = tcc.take_along_axis %d, %idx {axis = 1 : i64} : tensor<6x11xf32>, tensor<6x1xi32> -> tensor<6x1xf32>
  %f2 = tcc.reshape %x : tensor<2x3x11xf32> -> tensor<6x11xf32>
  %e = tcc.exp %f2 : tensor<6x11xf32>
  %sq = tcc.mul %f, %f : tensor<6x11xf32>, tensor<6x11xf32> -> tensor<6x11xf32>
  %ms = tcc.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<6x11xf32> -> tensor<6x1xf32>
  %rs = tcc.rsqrt %ms : tensor<6x1xf32>
  %n = tcc.mul %f, %rs : tensor<6x11xf32>, tensor<6x1xf32> -> tensor<6x11xf32>
  %n3 = tcc.reshape %n : tensor<6x11xf32> -> tensor<2x3x11xf32>
  return %g, %e, %n3 : tensor<6x1xf32>, tensor<6x11xf32>, tensor<2x3x11xf32>
}

// nn.MultiheadAttention's heads: the projection [L, B, H·D] viewed as
// [L, B·H, D] and transposed to [B·H, L, D]. The transpose moves the merged
// B·H axis: it runs over the fine axes [L, B, H, D] instead, and the merge
// after it keeps the last two axes (a batch merge, which sinks further).
// CHECK-LABEL: func.func @heads_of_a_projection
// CHECK: %[[FINE:.*]] = tcc.reshape %arg0 : tensor<500x2x256xf32> -> tensor<500x2x8x32xf32>
// CHECK: %[[T:.*]] = tcc.transpose %[[FINE]] {perm = array<i64: 1, 2, 0, 3>} : tensor<500x2x8x32xf32> -> tensor<2x8x500x32xf32>
// CHECK: tcc.reshape %[[T]] : tensor<2x8x500x32xf32> -> tensor<16x500x32xf32>
func.func @heads_of_a_projection(%x: tensor<500x2x256xf32>) -> tensor<16x500x32xf32> {
  %0 = tcc.reshape %x : tensor<500x2x256xf32> -> tensor<500x16x32xf32>
  %1 = tcc.transpose %0 {perm = array<i64: 1, 0, 2>} : tensor<500x16x32xf32> -> tensor<16x500x32xf32>
  return %1 : tensor<16x500x32xf32>
}

// The result's way back, [B·H, L, D] to [L, B·H, D] after a merge: one
// transpose over [B, H, L, D] to [L, B, H, D], the merge after it.
// CHECK-LABEL: func.func @heads_back
// CHECK: %[[T:.*]] = tcc.transpose %arg0 {perm = array<i64: 2, 0, 1, 3>} : tensor<2x8x500x32xf32> -> tensor<500x2x8x32xf32>
// CHECK: tcc.reshape %[[T]] : tensor<500x2x8x32xf32> -> tensor<500x16x32xf32>
func.func @heads_back(%y: tensor<2x8x500x32xf32>) -> tensor<500x16x32xf32> {
  %0 = tcc.reshape %y : tensor<2x8x500x32xf32> -> tensor<16x500x32xf32>
  %1 = tcc.transpose %0 {perm = array<i64: 1, 0, 2>} : tensor<16x500x32xf32> -> tensor<500x16x32xf32>
  return %1 : tensor<500x16x32xf32>
}

// A merged axis the transpose leaves in place (K repeated over grouped
// heads, merged, transposed over its last two axes) stays as written: the
// form the attention match reads. So does a transpose of a split (heads
// cut from [B, L, H·D]), already over the fine axes.
// CHECK-LABEL: func.func @merge_not_moved
// CHECK: tcc.reshape %arg0 : tensor<1x2x2x8x4xf32> -> tensor<1x4x8x4xf32>
// CHECK-NEXT: tcc.transpose %{{.*}} {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x8x4xf32> -> tensor<1x4x4x8xf32>
// CHECK: tcc.reshape %arg1 : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
// CHECK-NEXT: tcc.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
func.func @merge_not_moved(%k: tensor<1x2x2x8x4xf32>, %q: tensor<2x8x64xf32>) -> (tensor<1x4x4x8xf32>, tensor<2x4x8x16xf32>) {
  %0 = tcc.reshape %k : tensor<1x2x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %1 = tcc.transpose %0 {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x8x4xf32> -> tensor<1x4x4x8xf32>
  %2 = tcc.reshape %q : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %3 = tcc.transpose %2 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  return %1, %3 : tensor<1x4x4x8xf32>, tensor<2x4x8x16xf32>
}
