// RUN: tcc-opt %s --split-input-file --verify-diagnostics --tcc-form-chains --tcc-gpu-attention-chains | FileCheck %s

// Softmax and P·V as users write them by hand, from the function as the
// frontend gives it: tcc-form-chains makes each one chain, and the GPU
// attention template takes it (marked tcc.attention), as it takes the
// `softmax` op's form. A chain that is not taken is dissolved with a
// remark saying why (`tcc compile --explain` prints it).

// O = (e·v) / sum(e): normalised after P·V.
// CHECK-LABEL: func.func @normalised_after
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK:   %[[O:.*]] = tcc.div
// CHECK:   tcc.yield %[[O]]
func.func @normalised_after(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %s, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %pv = tcc.matmul %e, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %o = tcc.div %pv, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// In f16 with the softmax in f32 (the scores cast up, a causal mask, the
// sum in f32), P cast to V's dtype, O divided in f32 and cast back; head
// size 128, 32 queries against 96 keys.
// CHECK-LABEL: func.func @f32_softmax_f16
// CHECK: tcc.chain attributes {axis = 2 : i64, tcc.attention}
// CHECK:   tcc.div
// CHECK:   %[[O:.*]] = tcc.cast
// CHECK:   tcc.yield %[[O]]
func.func @f32_softmax_f16(%q: tensor<4x32x128xf16>, %k: tensor<4x96x128xf16>, %v: tensor<4x96x128xf16>) -> tensor<4x32x128xf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<4x32x128xf16>, tensor<4x96x128xf16> -> tensor<4x32x96xf16>
  %s32 = tcc.cast %s : tensor<4x32x96xf16> -> tensor<4x32x96xf32>
  %row = tcc.iota {axis = 0 : i64} : tensor<32x96xi32>
  %col = tcc.iota {axis = 1 : i64} : tensor<32x96xi32>
  %keep = tcc.greater_equal %row, %col : tensor<32x96xi32>, tensor<32x96xi32> -> tensor<32x96xi1>
  %neg = tcc.constant {value = -1.0e+30 : f32} : tensor<f32>
  %sm = tcc.select %keep, %s32, %neg : tensor<32x96xi1>, tensor<4x32x96xf32>, tensor<f32> -> tensor<4x32x96xf32>
  %m = tcc.reduce_max %sm {axes = array<i64: 2>, keepdims = true} : tensor<4x32x96xf32> -> tensor<4x32x1xf32>
  %d = tcc.sub %sm, %m : tensor<4x32x96xf32>, tensor<4x32x1xf32> -> tensor<4x32x96xf32>
  %e = tcc.exp %d : tensor<4x32x96xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<4x32x96xf32> -> tensor<4x32x1xf32>
  %p = tcc.cast %e : tensor<4x32x96xf32> -> tensor<4x32x96xf16>
  %pv = tcc.matmul %p, %v : tensor<4x32x96xf16>, tensor<4x96x128xf16> -> tensor<4x32x128xf16>
  %pv32 = tcc.cast %pv : tensor<4x32x128xf16> -> tensor<4x32x128xf32>
  %o32 = tcc.div %pv32, %sum : tensor<4x32x128xf32>, tensor<4x32x1xf32> -> tensor<4x32x128xf32>
  %o = tcc.cast %o32 : tensor<4x32x128xf32> -> tensor<4x32x128xf16>
  return %o : tensor<4x32x128xf16>
}

// -----

// O = (e·v) * reciprocal(sum(e)).
// CHECK-LABEL: func.func @reciprocal_after
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK:   tcc.reciprocal
// CHECK:   %[[O:.*]] = tcc.mul
// CHECK:   tcc.yield %[[O]]
func.func @reciprocal_after(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %s, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %pv = tcc.matmul %e, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %r = tcc.reciprocal %sum : tensor<1x2x64x1xbf16>
  %o = tcc.mul %pv, %r : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// P = reciprocal(sum(e)) * e before P·V.
// CHECK-LABEL: func.func @reciprocal_before
// CHECK: tcc.chain attributes {axis = 2 : i64, tcc.attention}
func.func @reciprocal_before(%q: tensor<2x80x64xf16>, %k: tensor<2x80x64xf16>, %v: tensor<2x80x64xf16>) -> tensor<2x80x64xf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x80x64xf16>, tensor<2x80x64xf16> -> tensor<2x80x80xf16>
  %m = tcc.reduce_max %s {axes = array<i64: 2>, keepdims = true} : tensor<2x80x80xf16> -> tensor<2x80x1xf16>
  %d = tcc.sub %s, %m : tensor<2x80x80xf16>, tensor<2x80x1xf16> -> tensor<2x80x80xf16>
  %e = tcc.exp %d : tensor<2x80x80xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x80x80xf16> -> tensor<2x80x1xf16>
  %r = tcc.reciprocal %sum : tensor<2x80x1xf16>
  %p = tcc.mul %r, %e : tensor<2x80x1xf16>, tensor<2x80x80xf16> -> tensor<2x80x80xf16>
  %o = tcc.matmul %p, %v : tensor<2x80x80xf16>, tensor<2x80x64xf16> -> tensor<2x80x64xf16>
  return %o : tensor<2x80x64xf16>
}

// -----

// exp(s) / sum(exp(s)): no max subtracted, the same softmax (the template
// computes it less the max, docs/numerics.md); scaled scores.
// CHECK-LABEL: func.func @no_max
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NOT: tcc.reduce_max
// CHECK: tcc.yield
func.func @no_max(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
  %ss = tcc.mul %s, %c : tensor<1x2x64x64xbf16>, tensor<bf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %ss : tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %p = tcc.div %e, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// exp(s)·v / sum(exp(s)), the head size equal to the keys' length (so that
// P·V has the scores' shape).
// CHECK-LABEL: func.func @no_max_after_square
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK:   %[[O:.*]] = tcc.div
// CHECK:   tcc.yield %[[O]]
func.func @no_max_after_square(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %s : tensor<1x2x64x64xbf16>
  %pv = tcc.matmul %e, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %o = tcc.div %pv, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// The max and the sum without keepdims, reshaped back to [.., 1], the max
// broadcast to the scores' shape; O normalised after P·V.
// CHECK-LABEL: func.func @reshaped_back
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK:   tcc.broadcast_to
// CHECK:   %[[O:.*]] = tcc.div
// CHECK:   tcc.yield %[[O]]
func.func @reshaped_back(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = false} : tensor<1x2x64x64xbf16> -> tensor<1x2x64xbf16>
  %mk = tcc.reshape %m : tensor<1x2x64xbf16> -> tensor<1x2x64x1xbf16>
  %mb = tcc.broadcast_to %mk : tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %d = tcc.sub %s, %mb : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %pv = tcc.matmul %e, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = false} : tensor<1x2x64x64xbf16> -> tensor<1x2x64xbf16>
  %sk = tcc.reshape %sum : tensor<1x2x64xbf16> -> tensor<1x2x64x1xbf16>
  %o = tcc.div %pv, %sk : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// P = e / broadcast_to(sum(e)): the sum broadcast to the scores' shape by
// hand, as the max may be.
// CHECK-LABEL: func.func @sum_broadcast
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
func.func @sum_broadcast(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %s, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %sb = tcc.broadcast_to %sum : tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %p = tcc.div %e, %sb : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// Refused: softmax along the queries (axis 2 of the scores). Its chain
// holds Q·Kᵀ but not P·V, which contracts the keys: dissolved, the
// remark at the chain's result.
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT: tcc.chain
// CHECK: tcc.reduce_max %{{.*}} {axes = array<i64: 2>
func.func @softmax_over_queries(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 2>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x1x64xbf16>
  %d = tcc.sub %s, %m : tensor<1x2x64x64xbf16>, tensor<1x2x1x64xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x1x64xbf16>
  // expected-remark @below {{attention not fused: the chain does not end in P·V}}
  %p = tcc.div %e, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x1x64xbf16> -> tensor<1x2x64x64xbf16>
  %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// A score change that reads the score twice (s · s), then a causal mask:
// taken (the changes are a DAG, computed per score as written).
// CHECK-LABEL: func.func @squared_scores
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK:   tcc.mul %[[S:.*]], %[[S]]
func.func @squared_scores(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %ss = tcc.mul %s, %s : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %row = tcc.iota {axis = 0 : i64} : tensor<64x64xi32>
  %col = tcc.iota {axis = 1 : i64} : tensor<64x64xi32>
  %keep = tcc.greater_equal %row, %col : tensor<64x64xi32>, tensor<64x64xi32> -> tensor<64x64xi1>
  %neg = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
  %sm = tcc.select %keep, %ss, %neg : tensor<64x64xi1>, tensor<1x2x64x64xbf16>, tensor<bf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %sm {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %sm, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %p = tcc.div %e, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// Refused: a changed score read besides the changes (s · 0.125 is also
// added to the result): the chain forms without Q·Kᵀ, whose result leaves it.
// CHECK-LABEL: func.func @score_read_besides
// CHECK-NOT: tcc.attention
// CHECK: return
func.func @score_read_besides(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
  %ss = tcc.mul %s, %c : tensor<1x2x64x64xbf16>, tensor<bf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %ss {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %ss, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %p = tcc.div %e, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  // expected-remark @below {{attention not fused: the scores do not come from Q·Kᵀ in the chain}}
  %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %r = tcc.add %o, %ss : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %r : tensor<1x2x64x64xbf16>
}

// -----

// Refused: P·V divided by the max, not the sum (not softmax).
// CHECK-LABEL: func.func @divided_by_max
// CHECK-NOT: tcc.chain
// CHECK: return
func.func @divided_by_max(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %s, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %pv = tcc.matmul %e, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  // expected-remark @below {{attention not fused: the chain does not end in P·V (or P·V over a sum)}}
  %o = tcc.div %pv, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// A head size above 256, which no template takes: tcc-form-chains leaves
// the matmuls out of the chain (max-matmul-extent), so it is no attention.
// CHECK-LABEL: func.func @head_264
// CHECK: tcc.matmul
// CHECK: tcc.chain attributes {axis = 2 : i64} ->
// CHECK-NOT: tcc.attention
// CHECK: return
func.func @head_264(%q: tensor<2x64x264xbf16>, %k: tensor<2x64x264xbf16>, %v: tensor<2x64x264xbf16>) -> tensor<2x64x264xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x64x264xbf16>, tensor<2x64x264xbf16> -> tensor<2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 2>, keepdims = true} : tensor<2x64x64xbf16> -> tensor<2x64x1xbf16>
  %d = tcc.sub %s, %m : tensor<2x64x64xbf16>, tensor<2x64x1xbf16> -> tensor<2x64x64xbf16>
  %e = tcc.exp %d : tensor<2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x64x64xbf16> -> tensor<2x64x1xbf16>
  %p = tcc.div %e, %sum : tensor<2x64x64xbf16>, tensor<2x64x1xbf16> -> tensor<2x64x64xbf16>
  %o = tcc.matmul %p, %v : tensor<2x64x64xbf16>, tensor<2x64x264xbf16> -> tensor<2x64x264xbf16>
  return %o : tensor<2x64x264xbf16>
}
