// RUN: tcc-opt %s --split-input-file --tcc-form-chains --tcc-chain-fusion="mode=rolling chunk-size=3" --verify-diagnostics | FileCheck %s --check-prefix=ROLL
// RUN: tcc-opt %s --split-input-file --tcc-form-chains --tcc-chain-fusion="mode=splitk chunk-size=3" --verify-diagnostics | FileCheck %s --check-prefix=SPLIT
// RUN: tcc-opt %s --split-input-file --tcc-form-chains --tcc-chain-fusion 2>/dev/null | FileCheck %s --check-prefix=AUTO
// RUN: tcc-opt %s --split-input-file --tcc-form-chains --tcc-chain-fusion="mode=rolling chunk-size=3" --tcc-lower-to-linalg 2>/dev/null | FileCheck %s --check-prefix=LOWER
// RUN: tcc-opt %s --split-input-file --tcc-form-chains --tcc-chain-fusion="mode=splitk chunk-size=3" --tcc-lower-to-linalg 2>/dev/null | FileCheck %s --check-prefix=LOWER

// Softmax, 8 = 2 chunks of 3 and a remainder of 2.
// Rolling: an scf.for over the two full chunks carries the max, the sum and
// the count; a chunk's sum is taken at the chunk's own max, then both sides
// are scaled by exp(-m_new - -m_old) (the factor exp(-m) of exp(x - m)).
// ROLL-LABEL: func.func @softmax
// ROLL: tcc.chain
// ROLL: %[[L:.*]]:3 = scf.for {{.*}} iter_args({{.*}}) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<f32>)
// ROLL:   tensor.extract_slice %{{.*}}[0, %{{.*}}] [4, 3] [1, 1]
// ROLL:   tcc.reduce_max {{.*}} : tensor<4x3xf32> -> tensor<4x1xf32>
// ROLL:   tcc.exp {{.*}} : tensor<4x3xf32>
// ROLL:   tcc.reduce_sum {{.*}} : tensor<4x3xf32> -> tensor<4x1xf32>
// ROLL:   tcc.maximum
// ROLL:   tcc.neg
// ROLL:   tcc.exp {{.*}} : tensor<4x1xf32>
// ROLL:   tcc.mul
// ROLL:   linalg.copy
// ROLL:   scf.yield
// The remainder chunk (elements 6 and 7), merged into the exact result.
// ROLL: tcc.slice %{{.*}} {starts = array<i64: 0, 6>, {{.*}} -> tensor<4x2xf32>
// ROLL: tcc.div
// ROLL: tcc.yield
// Split-K: chunks along a leading dimension [2, 4, 3], the remainder chunk
// concatenated as one more partial, and a combine step over dimension 0.
// SPLIT-LABEL: func.func @softmax
// SPLIT-NOT: scf.for
// SPLIT: tcc.reshape {{.*}} -> tensor<4x2x3xf32>
// SPLIT: tcc.transpose {{.*}} -> tensor<2x4x3xf32>
// SPLIT: tcc.reduce_max {{.*}} {axes = array<i64: 2>, keepdims = true} : tensor<2x4x3xf32> -> tensor<2x4x1xf32>
// SPLIT: tcc.reduce_sum {{.*}} : tensor<2x4x3xf32> -> tensor<2x4x1xf32>
// SPLIT: tcc.concat {{.*}} -> tensor<3x4x1xf32>
// SPLIT: %[[M:.*]] = tcc.reduce_max {{.*}} {axes = array<i64: 0>, keepdims = false} : tensor<3x4x1xf32> -> tensor<4x1xf32>
// SPLIT: tcc.exp {{.*}} : tensor<3x4x1xf32>
// SPLIT: %[[S:.*]] = tcc.reduce_sum {{.*}} {axes = array<i64: 0>, keepdims = false} : tensor<3x4x1xf32> -> tensor<4x1xf32>
// SPLIT: tcc.sub %arg0, %[[M]]
// SPLIT: tcc.div %{{.*}}, %[[S]]
// A row of 8 fits one chunk of the cost model's 256: auto leaves it.
// AUTO-LABEL: func.func @softmax
// AUTO-NOT: scf.for
// AUTO-NOT: tcc.concat
// AUTO: tcc.yield
// Both forms lower to linalg (no tcc op left).
// LOWER-LABEL: func.func @softmax
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

// Log-sum-exp along axis 0 of a bf16 tensor: accumulators are f32; the
// result is rounded to bf16 as the unfused chain's.
// ROLL-LABEL: func.func @logsumexp_bf16
// ROLL: scf.for {{.*}} -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<f32>)
// ROLL:   tensor.extract_slice %{{.*}}[%{{.*}}, 0] [3, 4] [1, 1]
// ROLL:   tcc.cast {{.*}} : tensor<3x4xbf16> -> tensor<3x4xf32>
// ROLL: tcc.cast {{.*}} : tensor<1x4xf32> -> tensor<1x4xbf16>
// ROLL: tcc.log
// ROLL: tcc.add
// SPLIT-LABEL: func.func @logsumexp_bf16
// SPLIT: tcc.reshape {{.*}} : tensor<6x4xbf16> -> tensor<2x3x4xbf16>
// SPLIT-NOT: tcc.transpose
// SPLIT: tcc.reduce_max {{.*}} {axes = array<i64: 1>, keepdims = true} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
// LOWER-LABEL: func.func @logsumexp_bf16
// LOWER-NOT: tcc.
// LOWER: return
func.func @logsumexp_bf16(%x: tensor<7x4xbf16>) -> tensor<1x4xbf16> {
  %m = tcc.reduce_max %x {axes = array<i64: 0>, keepdims = true} : tensor<7x4xbf16> -> tensor<1x4xbf16>
  %t = tcc.sub %x, %m : tensor<7x4xbf16>, tensor<1x4xbf16> -> tensor<7x4xbf16>
  %e = tcc.exp %t : tensor<7x4xbf16>
  %s = tcc.reduce_sum %e {axes = array<i64: 0>, keepdims = true} : tensor<7x4xbf16> -> tensor<1x4xbf16>
  %l = tcc.log %s : tensor<1x4xbf16>
  %y = tcc.add %m, %l : tensor<1x4xbf16>, tensor<1x4xbf16> -> tensor<1x4xbf16>
  return %y : tensor<1x4xbf16>
}

// -----

// Layer norm: the variance's input (x - mean)² is a product of two additive
// forms, so the shifted update keeps Σ(x - mean) next to the sum of squares:
// Σ(u + d)² = Σu² + 2d·Σu + n·d². gamma (along the axis) is sliced per
// chunk only in the epilogue, which stays unfused.
// ROLL-LABEL: func.func @layer_norm
// ROLL: scf.for {{.*}} -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<f32>)
// ROLL:   tcc.reduce_sum {{.*}} : tensor<4x3xf32> -> tensor<4x1xf32>
// ROLL:   tcc.div {{.*}} : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
// ROLL:   tcc.mul {{.*}} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
// ROLL:   tcc.reduce_sum
// ROLL:   tcc.reduce_sum
// ROLL:   tcc.reduce_sum
// ROLL: tcc.rsqrt
// ROLL: tcc.mul %{{.*}}, %arg1
// SPLIT-LABEL: func.func @layer_norm
// SPLIT: tcc.reduce_sum {{.*}} : tensor<2x4x3xf32> -> tensor<2x4x1xf32>
// SPLIT: tcc.concat
// SPLIT: tcc.reduce_sum {{.*}} {axes = array<i64: 0>, keepdims = false}
// SPLIT: tcc.rsqrt
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %m = tcc.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tcc.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %sq = tcc.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %v = tcc.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = tcc.constant {value = 1.0e-05 : f32} : tensor<f32>
  %ve = tcc.add %v, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %r = tcc.rsqrt %ve : tensor<4x1xf32>
  %n = tcc.mul %d, %r : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %y = tcc.mul %n, %g : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// RMS norm: one reduction reading no running value, combined plainly.
// ROLL-LABEL: func.func @rms_norm
// ROLL: scf.for {{.*}} -> (tensor<4x1xf32>, tensor<f32>)
// ROLL-NOT: tcc.exp
// ROLL: tcc.rsqrt
// SPLIT-LABEL: func.func @rms_norm
// SPLIT: tcc.reduce_sum {{.*}} {axes = array<i64: 0>, keepdims = false}
// SPLIT: tcc.rsqrt
func.func @rms_norm(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = tcc.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %ms = tcc.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %r = tcc.rsqrt %ms : tensor<4x1xf32>
  %y = tcc.mul %x, %r : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Cross-entropy: Σ t·(x - m - log s) is a product of t (no running value)
// and an additive form: its correction adds d·Σt, with Σt kept.
// ROLL-LABEL: func.func @cross_entropy
// ROLL: scf.for {{.*}} -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<f32>)
// ROLL:   tensor.extract_slice %arg1
// ROLL: tcc.neg
// SPLIT-LABEL: func.func @cross_entropy
// SPLIT: tcc.transpose %{{.*}} -> tensor<2x4x3xf32>
// SPLIT: tcc.neg
func.func @cross_entropy(%x: tensor<4x8xf32>, %t: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %z = tcc.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = tcc.exp %z : tensor<4x8xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %l = tcc.log %s : tensor<4x1xf32>
  %ls = tcc.sub %z, %l : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %p = tcc.mul %t, %ls : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %c = tcc.reduce_sum %p {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = tcc.neg %c : tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}

// -----

// Causal attention with both matmuls in the chain: each chunk of keys gets
// q·k_cᵀ, the mask's column iota offset by the chunk's start, and P_c·V_c;
// the P·V accumulator is rescaled by exp(m_old - m_new) · s_old / s_new
// (P = exp(s - m) / sum).
// ROLL-LABEL: func.func @attention
// ROLL: scf.for {{.*}} -> (tensor<2x16x1xf32>, tensor<2x16x1xf32>, tensor<2x16x8xf32>, tensor<f32>)
// ROLL:   %[[C:.*]] = tcc.iota {axis = 1 : i64} : tensor<16x3xi32>
// ROLL:   %[[O:.*]] = tensor.from_elements
// ROLL:   tcc.add %[[C]], %[[O]]
// ROLL:   %[[K:.*]] = tensor.extract_slice %arg1[0, %{{.*}}, 0] [2, 3, 8] [1, 1, 1]
// ROLL:   tcc.matmul %arg0, %[[K]] {transpose_b = true} : tensor<2x16x8xf32>, tensor<2x3x8xf32> -> tensor<2x16x3xf32>
// ROLL:   %[[V:.*]] = tensor.extract_slice %arg2[0, %{{.*}}, 0] [2, 3, 8] [1, 1, 1]
// ROLL:   tcc.matmul %{{.*}}, %[[V]] : tensor<2x16x3xf32>, tensor<2x3x8xf32> -> tensor<2x16x8xf32>
// ROLL:   tcc.div {{.*}} : tensor<2x16x1xf32>, tensor<2x16x1xf32> -> tensor<2x16x1xf32>
// ROLL: tcc.yield
// SPLIT-LABEL: func.func @attention
// SPLIT: tcc.iota {axis = 0 : i64} : tensor<5x1x16x3xi32>
// SPLIT: tcc.transpose {{.*}} -> tensor<5x2x3x8xf32>
// SPLIT: tcc.matmul %arg0, %{{.*}} {transpose_b = true} : tensor<2x16x8xf32>, tensor<5x2x3x8xf32> -> tensor<5x2x16x3xf32>
// SPLIT: tcc.matmul {{.*}} : tensor<5x2x16x3xf32>, tensor<5x2x3x8xf32> -> tensor<5x2x16x8xf32>
// SPLIT: tcc.concat {{.*}} -> tensor<6x2x16x8xf32>
// SPLIT: tcc.reduce_sum {{.*}} {axes = array<i64: 0>, keepdims = false} : tensor<6x2x16x8xf32> -> tensor<2x16x8xf32>
// LOWER-LABEL: func.func @attention
// LOWER-NOT: tcc.
// LOWER: return
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

// An f16 iota of key positions (a bias 0.25 · position): a chunk's
// positions are counted in i64 from its start and converted to f16 once,
// as the model's iota rounds each (f16 past 2048 is coarser than 1: a sum
// of a rounded start and a rounded offset would round twice).
// ROLL-LABEL: func.func @f16_positions
// ROLL: scf.for
// ROLL:   %[[C:.*]] = tcc.iota {axis = 1 : i64} : tensor<1x3xi64>
// ROLL:   %[[O:.*]] = tensor.from_elements %{{.*}} : tensor<i64>
// ROLL:   %[[P:.*]] = tcc.add %[[C]], %[[O]] : tensor<1x3xi64>, tensor<i64> -> tensor<1x3xi64>
// ROLL:   tcc.cast %[[P]] : tensor<1x3xi64> -> tensor<1x3xf16>
// SPLIT-LABEL: func.func @f16_positions
// SPLIT: %[[C:.*]] = tcc.iota {axis = 3 : i64} : tensor<3x1x1x3xi64>
// SPLIT: %[[K:.*]] = tcc.iota {axis = 0 : i64} : tensor<3x1x1x3xi64>
// SPLIT: %[[S:.*]] = tcc.mul %[[K]], %{{.*}} : tensor<3x1x1x3xi64>, tensor<i64>
// SPLIT: %[[P:.*]] = tcc.add %[[C]], %[[S]] : tensor<3x1x1x3xi64>, tensor<3x1x1x3xi64>
// SPLIT: tcc.cast %[[P]] : tensor<3x1x1x3xi64> -> tensor<3x1x1x3xf16>
func.func @f16_positions(%q: tensor<1x1x8xf16>, %k: tensor<1x9x8xf16>, %v: tensor<1x9x8xf16>) -> tensor<1x1x8xf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x1x8xf16>, tensor<1x9x8xf16> -> tensor<1x1x9xf16>
  %col = tcc.iota {axis = 1 : i64} : tensor<1x9xf16>
  %c = tcc.constant {value = 0.25 : f16} : tensor<f16>
  %bias = tcc.mul %col, %c : tensor<1x9xf16>, tensor<f16> -> tensor<1x9xf16>
  %sb = tcc.add %s, %bias : tensor<1x1x9xf16>, tensor<1x9xf16> -> tensor<1x1x9xf16>
  %m = tcc.reduce_max %sb {axes = array<i64: 2>, keepdims = true} : tensor<1x1x9xf16> -> tensor<1x1x1xf16>
  %d = tcc.sub %sb, %m : tensor<1x1x9xf16>, tensor<1x1x1xf16> -> tensor<1x1x9xf16>
  %e = tcc.exp %d : tensor<1x1x9xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<1x1x9xf16> -> tensor<1x1x1xf16>
  %p = tcc.div %e, %sum : tensor<1x1x9xf16>, tensor<1x1x1xf16> -> tensor<1x1x9xf16>
  %o = tcc.matmul %p, %v : tensor<1x1x9xf16>, tensor<1x9x8xf16> -> tensor<1x1x8xf16>
  return %o : tensor<1x1x8xf16>
}

// -----

// No factorization: tanh(x - m) is neither A(m)·B(x) nor a(m) + B(x).
// The chain stays as it is.
// ROLL-LABEL: func.func @refused_tanh
// ROLL-NOT: scf.for
// ROLL: tcc.tanh
// SPLIT-LABEL: func.func @refused_tanh
// SPLIT-NOT: tcc.concat
// SPLIT: tcc.tanh
func.func @refused_tanh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-warning @+1 {{chain fusion refused: 'tcc.reduce_sum': 'tcc.tanh' of an element and a running value has no factorization}}
  %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tcc.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %t = tcc.tanh %d : tensor<4x8xf32>
  %s = tcc.reduce_sum %t {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = tcc.div %d, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A max over x / s, s a running sum: scaling commutes with max only by a
// factor proven positive (exp(..)); 1 / s is not proven so.
// ROLL-LABEL: func.func @refused_max_scale
// ROLL-NOT: scf.for
func.func @refused_max_scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-warning @+1 {{chain fusion refused: 'tcc.reduce_max': its input is neither a(r) + B(x) nor exp(a(r))·B(x): the factor is not proven positive}}
  %s = tcc.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %q = tcc.div %x, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %m = tcc.reduce_max %q {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = tcc.sub %q, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// P zeroed after softmax and summed, over scores that may be -inf, with no
// attention match to prove the zeroing covers every -inf: a row of nothing
// but -inf gives zeros unfused, and the fused corrections would give NaN.
// ROLL-LABEL: func.func @refused_zeroed_sum
// ROLL-NOT: scf.for
func.func @refused_zeroed_sum(%x: tensor<4x8xf32>, %keep: tensor<4x8xi1>) -> tensor<4x1xf32> {
  %ninf = tcc.constant {value = 0xFF800000 : f32} : tensor<f32>
  %zero = tcc.constant {value = 0.000000e+00 : f32} : tensor<f32>
  // expected-warning @+1 {{chain fusion refused: values after the row max are zeroed (select(c, P, 0)) where scores may be -inf}}
  %s = tcc.select %keep, %x, %ninf : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %m = tcc.reduce_max %s {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tcc.sub %s, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = tcc.exp %d : tensor<4x8xf32>
  %t = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %p = tcc.div %e, %t : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %pz = tcc.select %keep, %p, %zero : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %y = tcc.reduce_sum %pz {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}

// -----

// The same over scores of a matmul and a finite mask (-1e30): no row is
// all -inf, so the sum of the zeroed P is fused. (An input read as the
// scores, as above, may hold -inf.)
// ROLL-LABEL: func.func @zeroed_sum_finite_mask
// ROLL: scf.for
func.func @zeroed_sum_finite_mask(%a: tensor<4x2xf32>, %b: tensor<2x8xf32>, %keep: tensor<4x8xi1>) -> tensor<4x1xf32> {
  %x = tcc.matmul %a, %b : tensor<4x2xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  %neg = tcc.constant {value = -1.000000e+30 : f32} : tensor<f32>
  %zero = tcc.constant {value = 0.000000e+00 : f32} : tensor<f32>
  %s = tcc.select %keep, %x, %neg : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %m = tcc.reduce_max %s {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tcc.sub %s, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = tcc.exp %d : tensor<4x8xf32>
  %t = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %p = tcc.div %e, %t : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %pz = tcc.select %keep, %p, %zero : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %y = tcc.reduce_sum %pz {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}
