// RUN: tcc-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(tcc-form-chains{unbatched-attention=1 remark-unfused-attention=1}, tcc-gpu-attention-chains, tcc-gpu-attention-plan{target=sm_90}, tcc-form-attention, tcc-form-chains{max-matmul-extent=0}, tcc-form-groups), tcc-outline-groups)' | FileCheck %s

// The graph passes in the order tcc compile runs them for a GPU target with
// the attention templates (compiler/Pipeline.cpp): attention written with
// primitives is recognised once, planned, and formed as tcc.attention right
// after planning; the passes after it (chains without matmuls, groups,
// outlining) leave it whole, and its kernel (named as the chain's was) holds
// the op alone, over the kernel's arguments, for GpuCodegen to build from.

// -----

// Scaled attention beside a softmax of another tensor: the softmax is a
// chain of its own kernel, attention one tcc.attention carrying its plan.
// CHECK-LABEL: func.func @main
// CHECK: call @k0_chain(%arg0, %arg1, %arg2)
// CHECK: call @k1_chain(%arg3)
// CHECK-LABEL: func.func private @k0_chain
// CHECK-SAME: tcc.kind = "chain"
// CHECK-NEXT: %[[A:.*]] = tcc.attention %arg0, %arg1, %arg2 attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64, tcc.attention_plan = #tcc.mma_attention<{{.*}}>}
// CHECK-NOT: tcc.matmul
// CHECK: return %[[A]]
// CHECK-LABEL: func.func private @k1_chain
// CHECK-NOT: tcc.attention
// CHECK: tcc.chain
// CHECK: tcc.reduce_max
// CHECK: tcc.reduce_sum
func.func @main(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>, %x: tensor<4x8xf32>) -> (tensor<1x4x128x64xbf16>, tensor<4x8xf32>) attributes {tcc.entry} {
  %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
  %ss = tcc.mul %s, %c : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
  %m = tcc.reduce_max %ss {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
  %d = tcc.sub %ss, %m : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
  %e = tcc.exp %d : tensor<1x4x128x128xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
  %p = tcc.div %e, %sum : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
  %o = tcc.matmul %p, %v : tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16>
  %xm = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %xd = tcc.sub %x, %xm : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %xe = tcc.exp %xd : tensor<4x8xf32>
  %xs = tcc.reduce_sum %xe {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = tcc.div %xe, %xs : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %o, %y : tensor<1x4x128x64xbf16>, tensor<4x8xf32>
}

// -----

// A bias read from a model input: captured, an operand of the op and an
// argument of its kernel, read in the `score` region. The output's
// elementwise consumer (a cast) does not join attention's kernel.
// CHECK-LABEL: func.func @bias
// CHECK: %[[O:.*]] = call @k0_chain(%arg0, %arg1, %arg2, %arg3)
// CHECK: call @k1_elementwise(%[[O]])
// CHECK-LABEL: func.func private @k0_chain
// CHECK-NEXT: %[[A:.*]] = tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<1x4x128x128xf32>) attributes {{{.*}}tcc.attention_plan = #tcc.mma_attention<{{.*}}>}
// CHECK: tensor.extract
// CHECK: return %[[A]]
// CHECK-LABEL: func.func private @k1_elementwise
// CHECK: tcc.cast
func.func @bias(%q: tensor<1x4x128x64xf16>, %k: tensor<1x4x128x64xf16>, %v: tensor<1x4x128x64xf16>, %bias: tensor<1x4x128x128xf32>) -> tensor<1x4x128x64xf32> attributes {tcc.entry} {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16> -> tensor<1x4x128x128xf16>
  %sf = tcc.cast %s : tensor<1x4x128x128xf16> -> tensor<1x4x128x128xf32>
  %sb = tcc.add %sf, %bias : tensor<1x4x128x128xf32>, tensor<1x4x128x128xf32> -> tensor<1x4x128x128xf32>
  %sh = tcc.cast %sb : tensor<1x4x128x128xf32> -> tensor<1x4x128x128xf16>
  %m = tcc.reduce_max %sh {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xf16> -> tensor<1x4x128x1xf16>
  %d = tcc.sub %sh, %m : tensor<1x4x128x128xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x128xf16>
  %e = tcc.exp %d : tensor<1x4x128x128xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xf16> -> tensor<1x4x128x1xf16>
  %p = tcc.div %e, %sum : tensor<1x4x128x128xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x128xf16>
  %o = tcc.matmul %p, %v : tensor<1x4x128x128xf16>, tensor<1x4x128x64xf16> -> tensor<1x4x128x64xf16>
  %of = tcc.cast %o : tensor<1x4x128x64xf16> -> tensor<1x4x128x64xf32>
  return %of : tensor<1x4x128x64xf32>
}

// -----

// A chain the templates do not take (a mask constraint of 1e8 · q overflows
// their 32-bit positions): tcc-gpu-attention-plan says why and leaves no
// plan, so it stays a chain, with its matmuls, in a kernel of its own
// (generic loops): the unfused fallback is decided before the op is formed.
// CHECK-LABEL: func.func private @k0_chain
// CHECK-NOT: tcc.attention
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NOT: tcc.attention_plan
// CHECK: tcc.matmul
// CHECK: tcc.matmul
func.func @steep(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> attributes {tcc.entry} {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %row = tcc.iota {axis = 0 : i64} : tensor<64x1xi32>
  %col = tcc.iota {axis = 1 : i64} : tensor<1x64xi32>
  %big = tcc.constant {value = 100000000 : i32} : tensor<i32>
  %far = tcc.mul %row, %big : tensor<64x1xi32>, tensor<i32> -> tensor<64x1xi32>
  %keep = tcc.greater_equal %far, %col : tensor<64x1xi32>, tensor<1x64xi32> -> tensor<64x64xi1>
  %neg = tcc.constant {value = -1.000000e+30 : bf16} : tensor<bf16>
  %sm = tcc.select %keep, %s, %neg : tensor<64x64xi1>, tensor<1x2x64x64xbf16>, tensor<bf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %sm {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %sm, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %p = tcc.div %e, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  // expected-remark @below {{attention not fused: attention kernel: a mask constraint's values exceed the 32-bit range}}
  %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

// Head size 320, over the 256 the templates take: the chain forms without
// Q·Kᵀ and P·V (they stay GEMM kernels), and a remark says why, at P·V.
// CHECK-LABEL: func.func @head320
// CHECK: call @k0_matmul
// CHECK: call @k1_chain
// CHECK: call @k2_matmul
// CHECK-NOT: tcc.attention
func.func @head320(%q: tensor<1x2x64x320xbf16>, %k: tensor<1x2x64x320xbf16>, %v: tensor<1x2x64x320xbf16>) -> tensor<1x2x64x320xbf16> attributes {tcc.entry} {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x320xbf16>, tensor<1x2x64x320xbf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %s, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %p = tcc.div %e, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  // expected-remark @below {{attention not fused: head size 320 is over 256, the largest the attention templates take}}
  %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x320xbf16> -> tensor<1x2x64x320xbf16>
  return %o : tensor<1x2x64x320xbf16>
}

// -----

// V of head size 320 under Q and K of 128: P·V stays a GEMM, and the one
// remark is P·V's (the chain formed without it, which holds Q·Kᵀ, is not
// refused again); Q·Kᵀ then leaves the chain for a GEMM too.
// CHECK-LABEL: func.func @values320
// CHECK: call @k0_matmul
// CHECK: call @k1_chain
// CHECK: call @k2_matmul
// CHECK-NOT: tcc.attention
func.func @values320(%q: tensor<1x2x64x128xbf16>, %k: tensor<1x2x64x128xbf16>, %v: tensor<1x2x64x320xbf16>) -> tensor<1x2x64x320xbf16> attributes {tcc.entry} {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x128xbf16>, tensor<1x2x64x128xbf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %s, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %p = tcc.div %e, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  // expected-remark @below {{attention not fused: head size 320 is over 256, the largest the attention templates take}}
  %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x320xbf16> -> tensor<1x2x64x320xbf16>
  return %o : tensor<1x2x64x320xbf16>
}

// -----

// Q, K and V given as [B, L, H·D] (a projection's output) and reshaped to
// [B, L, H, D], then transposed: the reshapes and transposes are views of
// the inputs, which the op reads through its strides (no copy kernels).
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[A:.*]] = call @k{{[0-9]+}}_chain(%arg0, %arg1, %arg2)
// CHECK-NEXT: return %[[A]]
// CHECK-LABEL: func.func private @k{{[0-9]+}}_chain
// CHECK-NOT: tcc.reshape
// CHECK: tcc.attention %arg0, %arg1, %arg2
// CHECK-SAME: k_strides = array<i64: 11520, 64, 128, 1>
// CHECK-SAME: q_strides = array<i64: 11520, 64, 128, 1>
// CHECK-SAME: v_strides = array<i64: 11520, 64, 128, 1>
// CHECK-SAME: tensor<2x90x128xbf16>, tensor<2x90x128xbf16>, tensor<2x90x128xbf16> -> tensor<2x2x90x64xbf16>
func.func @main(%qp: tensor<2x90x128xbf16>, %kp: tensor<2x90x128xbf16>, %vp: tensor<2x90x128xbf16>) -> tensor<2x2x90x64xbf16> attributes {tcc.entry} {
  %q4 = tcc.reshape %qp : tensor<2x90x128xbf16> -> tensor<2x90x2x64xbf16>
  %k4 = tcc.reshape %kp : tensor<2x90x128xbf16> -> tensor<2x90x2x64xbf16>
  %v4 = tcc.reshape %vp : tensor<2x90x128xbf16> -> tensor<2x90x2x64xbf16>
  %q = tcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x90x2x64xbf16> -> tensor<2x2x90x64xbf16>
  %k = tcc.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x90x2x64xbf16> -> tensor<2x2x90x64xbf16>
  %v = tcc.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x90x2x64xbf16> -> tensor<2x2x90x64xbf16>
  %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16> -> tensor<2x2x90x90xbf16>
  %ss = tcc.mul %s, %c : tensor<2x2x90x90xbf16>, tensor<bf16> -> tensor<2x2x90x90xbf16>
  %m = tcc.reduce_max %ss {axes = array<i64: 3>, keepdims = true} : tensor<2x2x90x90xbf16> -> tensor<2x2x90x1xbf16>
  %d = tcc.sub %ss, %m : tensor<2x2x90x90xbf16>, tensor<2x2x90x1xbf16> -> tensor<2x2x90x90xbf16>
  %e = tcc.exp %d : tensor<2x2x90x90xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<2x2x90x90xbf16> -> tensor<2x2x90x1xbf16>
  %p = tcc.div %e, %sum : tensor<2x2x90x90xbf16>, tensor<2x2x90x1xbf16> -> tensor<2x2x90x90xbf16>
  %o = tcc.matmul %p, %v : tensor<2x2x90x90xbf16>, tensor<2x2x90x64xbf16> -> tensor<2x2x90x64xbf16>
  return %o : tensor<2x2x90x64xbf16>
}
