// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains --tcc-gpu-attention-plan=target=sm_90 --tcc-form-attention | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains --tcc-gpu-attention-plan=target=sm_90 --tcc-form-attention | tcc-opt --split-input-file | FileCheck %s

// Each planned attention chain becomes one tcc.attention carrying its plan:
// Q, K, V and captured tensors as operands, sizes, strides and mask as
// attributes, the score change and key mask as regions of scalar code (the
// second run parses and verifies the printed ops).

// -----

// A scale alone: no score code (an empty `score`), the scale an attribute.
// CHECK-LABEL: func.func @plain
// CHECK-NOT: tcc.chain
// CHECK: %[[A:.*]] = tcc.attention %arg0, %arg1, %arg2 attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, scale = 1.250000e-01 : f64, tcc.attention_plan = #tcc.mma_attention<{{.*}}>} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16> score {
// CHECK-NEXT: } key_keep {
// CHECK-NEXT: }
// CHECK-NEXT: return %[[A]]
func.func @plain(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %1 = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
    %6 = tcc.mul %5, %1 : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %9 = tcc.reduce_max %6 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %6, %9 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x128xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// Softcap: the change as scalar code, s / 30 as a product and one fma
// step (AttentionMatch's correctly rounded quotient), tanh, * 30.
// CHECK-LABEL: func.func @softcap
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {
// CHECK-NOT: scale =
// CHECK-SAME: score {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32):
// CHECK: %[[X:.*]] = arith.mulf %[[S]], %{{.*}} : f32
// CHECK: math.fma
// CHECK: %[[D:.*]] = math.fma
// CHECK: %[[T:.*]] = math.tanh %[[D]] : f32
// CHECK: %[[R:.*]] = arith.mulf %[[T]], %{{.*}} : f32
// CHECK-NEXT: tcc.yield %[[R]] : f32
// CHECK-NEXT: } key_keep {
// CHECK-NEXT: }
func.func @softcap(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %1 = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %cap = tcc.constant {value = 3.000000e+01 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
    %6 = tcc.mul %5, %1 : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %7 = tcc.div %6, %cap : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %8 = tcc.tanh %7 : tensor<1x4x128x128xbf16>
    %s = tcc.mul %8, %cap : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %9 = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %s, %9 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x128xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// ALiBi: per-head slopes [1, H, 1, 1] captured, read at the head (clamped)
// and index 0 on the axes of size 1; the causal mask as constraints.
// CHECK-LABEL: func.func @alibi_slopes
// CHECK: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<1x4x1x1xbf16>) attributes {{{.*}}mask = array<i64: 1, -1, 0>, masked_to_infinity,
// CHECK-SAME: score {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: i32, %[[H:.*]]: i32, %[[Q:.*]]: i32, %[[K:.*]]: i32, %[[SL:.*]]: tensor<1x4x1x1xbf16>):
// CHECK: %[[X:.*]] = arith.mulf %[[S]], %{{.*}} : f32
// CHECK: %[[P:.*]] = arith.subi %[[K]], %[[Q]] : i32
// CHECK: %[[PF:.*]] = arith.sitofp %[[P]] : i32 to f32
// CHECK: %[[HC:.*]] = arith.minsi %[[H]], %c3_i32 : i32
// CHECK: %[[HI:.*]] = arith.index_cast %[[HC]] : i32 to index
// CHECK: %[[E:.*]] = tensor.extract %[[SL]][%{{.*}}, %[[HI]], %{{.*}}, %{{.*}}] : tensor<1x4x1x1xbf16>
// CHECK: %[[EF:.*]] = arith.extf %[[E]] : bf16 to f32
// CHECK: %[[B:.*]] = arith.mulf %[[PF]], %[[EF]] : f32
// CHECK: %[[R:.*]] = arith.addf %[[X]], %[[B]] : f32
// CHECK-NEXT: tcc.yield %[[R]] : f32
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

// An additive bias [1, H, L, L]: read at (0, head, q, k), each clamped.
// CHECK-LABEL: func.func @bias_input
// CHECK: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<1x4x64x64xf16>)
// CHECK-SAME: score {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: i32, %[[H:.*]]: i32, %[[Q:.*]]: i32, %[[K:.*]]: i32, %[[BIAS:.*]]: tensor<1x4x64x64xf16>):
// CHECK: arith.minsi %[[H]], %c3_i32
// CHECK: arith.minsi %[[Q]], %c63_i32
// CHECK: arith.minsi %[[K]], %c63_i32
// CHECK: %[[E:.*]] = tensor.extract %[[BIAS]][
// CHECK: %[[EF:.*]] = arith.extf %[[E]] : f16 to f32
// CHECK: %[[R:.*]] = arith.addf %{{.*}}, %[[EF]] : f32
// CHECK-NEXT: tcc.yield %[[R]] : f32
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

// A padding mask [B, 1, 1, L] against -inf beside a scale: `key_keep`
// reads it per (batch, key); `score` is the same change as code (for the
// SIMT template).
// CHECK-LABEL: func.func @padding_mask
// CHECK: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<2x1x1x64xi1>) attributes {batch = 2 : i64, {{.*}}key_mask_alone, {{.*}}scale = 1.250000e-01 : f64
// CHECK: arith.select
// CHECK: } key_keep {
// CHECK-NEXT: ^bb0(%[[B:.*]]: i32, %{{.*}}: i32, %[[K:.*]]: i32, %[[M:.*]]: tensor<2x1x1x64xi1>):
// CHECK: arith.minsi %[[B]], %c1_i32
// CHECK: arith.minsi %[[K]], %c63_i32
// CHECK: %[[E:.*]] = tensor.extract %[[M]][
// CHECK-NEXT: tcc.yield %[[E]] : i1
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

// Causal from iotas: q - k >= 0 as the constraint (1, -1, 0), no score code.
// CHECK-LABEL: func.func @causal
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {{{.*}}mask = array<i64: 1, -1, 0>, scale = 1.250000e-01 : f64
// CHECK-SAME: score {
// CHECK-NEXT: } key_keep {
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

// Q, K, V and the result kept [B, L, H, D]: the untransposed tensors,
// read and written with strides of attention's axes.
// CHECK-LABEL: func.func @blhd
// CHECK-NOT: tcc.transpose
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {{{.*}}k_strides = array<i64: 65536, 64, 256, 1>, {{.*}}o_strides = array<i64: 32768, 64, 256, 1>, q_strides = array<i64: 32768, 64, 256, 1>, {{.*}}v_strides = array<i64: 65536, 64, 256, 1>} : tensor<1x128x4x64xbf16>, tensor<1x256x4x64xbf16>, tensor<1x256x4x64xbf16> -> tensor<1x128x4x64xbf16>
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

// GQA: K and V of 2 heads repeated over 8 query heads, read unrepeated.
// CHECK-LABEL: func.func @gqa
// CHECK-NOT: tcc.broadcast_to
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {{{.*}}heads = 8 : i64, kv_heads = 2 : i64{{.*}}} : tensor<1x8x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x8x64x64xbf16>
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

// A chain that is not attention has no plan, and stays.
// CHECK-LABEL: func.func @softmax
// CHECK: tcc.chain
// CHECK-NOT: tcc.attention
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

// K given transposed ([.., D, Lk], scores as matmul(Q, Kt)): `k_transposed`.
// CHECK-LABEL: func.func @kt_input
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {{{.*}}k_transposed, kv_heads = 4 : i64, lk = 256 : i64, lq = 128 : i64{{.*}}} : tensor<1x4x128x64xbf16>, tensor<1x4x64x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x64xbf16>
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

// A document mask from ids [L] reshaped to [L, 1] and [1, L] outside the
// chain (doc[:, None] == doc[None, :]): the reshapes only add axes of size
// 1, so the ids themselves are captured, once, and read at the query index
// for the [L, 1] view and at the key index for the [1, L] one (no copy
// kernel for either view).
// CHECK-LABEL: func.func @document_ids
// CHECK: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<48xi32>)
// CHECK-SAME: score {
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: i32, %{{.*}}: i32, %[[Q:.*]]: i32, %[[K:.*]]: i32, %[[D:.*]]: tensor<48xi32>):
// CHECK-DAG: %[[QC:.*]] = arith.minsi %[[Q]], %c47_i32{{.*}} : i32
// CHECK-DAG: %[[QI:.*]] = arith.index_cast %[[QC]] : i32 to index
// CHECK-DAG: %[[DQ:.*]] = tensor.extract %[[D]][%[[QI]]] : tensor<48xi32>
// CHECK-DAG: %[[KC:.*]] = arith.minsi %[[K]], %c47_i32{{.*}} : i32
// CHECK-DAG: %[[KI:.*]] = arith.index_cast %[[KC]] : i32 to index
// CHECK-DAG: %[[DK:.*]] = tensor.extract %[[D]][%[[KI]]] : tensor<48xi32>
// CHECK: arith.cmpi eq, %[[DQ]], %[[DK]] : i32
// CHECK-NOT: tcc.reshape
// CHECK: return
func.func @document_ids(%q: tensor<1x2x48x64xf16>, %k: tensor<1x2x48x64xf16>, %v: tensor<1x2x48x64xf16>, %doc: tensor<48xi32>) -> tensor<1x2x48x64xf16> {
  %dq = tcc.reshape %doc : tensor<48xi32> -> tensor<48x1xi32>
  %dk = tcc.reshape %doc : tensor<48xi32> -> tensor<1x48xi32>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x2x48x64xf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x48x64xf16>, tensor<1x2x48x64xf16> -> tensor<1x2x48x48xf16>
    %c = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %ss = tcc.mul %s, %c : tensor<1x2x48x48xf16>, tensor<f16> -> tensor<1x2x48x48xf16>
    %same = tcc.equal %dq, %dk : tensor<48x1xi32>, tensor<1x48xi32> -> tensor<48x48xi1>
    %neg = tcc.constant {value = 0xFC00 : f16} : tensor<f16>
    %sm = tcc.select %same, %ss, %neg : tensor<48x48xi1>, tensor<1x2x48x48xf16>, tensor<f16> -> tensor<1x2x48x48xf16>
    %9 = tcc.reduce_max %sm {axes = array<i64: 3>, keepdims = true} : tensor<1x2x48x48xf16> -> tensor<1x2x48x1xf16>
    %10 = tcc.sub %sm, %9 : tensor<1x2x48x48xf16>, tensor<1x2x48x1xf16> -> tensor<1x2x48x48xf16>
    %11 = tcc.exp %10 : tensor<1x2x48x48xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x2x48x48xf16> -> tensor<1x2x48x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x2x48x48xf16>, tensor<1x2x48x1xf16> -> tensor<1x2x48x48xf16>
    %14 = tcc.matmul %13, %v : tensor<1x2x48x48xf16>, tensor<1x2x48x64xf16> -> tensor<1x2x48x64xf16>
    tcc.yield %14 : tensor<1x2x48x64xf16>
  }
  return %0 : tensor<1x2x48x64xf16>
}

// -----

// A padding mask kept [B, L] (Hugging Face's attention_mask) and made
// [B, 1, 1, L] outside the chain: read through, the [B, L] input captured.
// CHECK-LABEL: func.func @padding_mask_2d
// CHECK: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<2x48xi1>)
func.func @padding_mask_2d(%q: tensor<2x2x48x64xf16>, %k: tensor<2x2x48x64xf16>, %v: tensor<2x2x48x64xf16>, %mask: tensor<2x48xi1>) -> tensor<2x2x48x64xf16> {
  %m4 = tcc.reshape %mask : tensor<2x48xi1> -> tensor<2x1x1x48xi1>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x2x48x64xf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x2x48x64xf16>, tensor<2x2x48x64xf16> -> tensor<2x2x48x48xf16>
    %c = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %ss = tcc.mul %s, %c : tensor<2x2x48x48xf16>, tensor<f16> -> tensor<2x2x48x48xf16>
    %neg = tcc.constant {value = 0xFC00 : f16} : tensor<f16>
    %sm = tcc.select %m4, %ss, %neg : tensor<2x1x1x48xi1>, tensor<2x2x48x48xf16>, tensor<f16> -> tensor<2x2x48x48xf16>
    %9 = tcc.reduce_max %sm {axes = array<i64: 3>, keepdims = true} : tensor<2x2x48x48xf16> -> tensor<2x2x48x1xf16>
    %10 = tcc.sub %sm, %9 : tensor<2x2x48x48xf16>, tensor<2x2x48x1xf16> -> tensor<2x2x48x48xf16>
    %11 = tcc.exp %10 : tensor<2x2x48x48xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x2x48x48xf16> -> tensor<2x2x48x1xf16>
    %13 = tcc.div %11, %12 : tensor<2x2x48x48xf16>, tensor<2x2x48x1xf16> -> tensor<2x2x48x48xf16>
    %14 = tcc.matmul %13, %v : tensor<2x2x48x48xf16>, tensor<2x2x48x64xf16> -> tensor<2x2x48x64xf16>
    tcc.yield %14 : tensor<2x2x48x64xf16>
  }
  return %0 : tensor<2x2x48x64xf16>
}

// -----

// A per-head, per-key bias kept [H, Lk] with H = Lq, made [1, H, 1, Lk]:
// read through too, and listed in captured_views, since its own shape
// would pass for an [Lq, Lk] plane (which the wgmma template stages by its
// shape). A reshape that regroups axes ([2, 24] -> [1, 48]) is no view of
// attention's axes: captured as the reshape's result.
// CHECK-LABEL: func.func @views_kept
// CHECK: tcc.attention %arg0, %arg1, %arg2 captures(%arg3, %{{.*}} : tensor<48x48xf16>, tensor<1x48xf16>)
// CHECK-SAME: captured_views = array<i64: 0>
func.func @views_kept(%q: tensor<1x48x48x16xf16>, %k: tensor<1x48x48x16xf16>, %v: tensor<1x48x48x16xf16>, %hb: tensor<48x48xf16>, %kb: tensor<2x24xf16>) -> tensor<1x48x48x16xf16> {
  %hb4 = tcc.reshape %hb : tensor<48x48xf16> -> tensor<1x48x1x48xf16>
  %kb2 = tcc.reshape %kb : tensor<2x24xf16> -> tensor<1x48xf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x48x48x16xf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x48x48x16xf16>, tensor<1x48x48x16xf16> -> tensor<1x48x48x48xf16>
    %c = tcc.constant {value = 2.500000e-01 : f16} : tensor<f16>
    %ss = tcc.mul %s, %c : tensor<1x48x48x48xf16>, tensor<f16> -> tensor<1x48x48x48xf16>
    %a = tcc.add %ss, %hb4 : tensor<1x48x48x48xf16>, tensor<1x48x1x48xf16> -> tensor<1x48x48x48xf16>
    %sm = tcc.add %a, %kb2 : tensor<1x48x48x48xf16>, tensor<1x48xf16> -> tensor<1x48x48x48xf16>
    %9 = tcc.reduce_max %sm {axes = array<i64: 3>, keepdims = true} : tensor<1x48x48x48xf16> -> tensor<1x48x48x1xf16>
    %10 = tcc.sub %sm, %9 : tensor<1x48x48x48xf16>, tensor<1x48x48x1xf16> -> tensor<1x48x48x48xf16>
    %11 = tcc.exp %10 : tensor<1x48x48x48xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x48x48x48xf16> -> tensor<1x48x48x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x48x48x48xf16>, tensor<1x48x48x1xf16> -> tensor<1x48x48x48xf16>
    %14 = tcc.matmul %13, %v : tensor<1x48x48x48xf16>, tensor<1x48x48x16xf16> -> tensor<1x48x48x16xf16>
    tcc.yield %14 : tensor<1x48x48x16xf16>
  }
  return %0 : tensor<1x48x48x16xf16>
}

// -----

// Scores clipped to [-1, 1] (a clamp of floats): its scalar form, the max
// then the min, in the score region.
// CHECK-LABEL: func.func @clamped
// CHECK: tcc.attention %arg0, %arg1, %arg2
// CHECK-SAME: score {
// CHECK: %[[X:.*]] = arith.mulf
// CHECK: %[[LO:.*]] = arith.maximumf %[[X]], %{{.*}} : f32
// CHECK: %[[HI:.*]] = arith.minimumf %[[LO]], %{{.*}} : f32
// CHECK-NEXT: tcc.yield %[[HI]] : f32
func.func @clamped(%q: tensor<1x4x64x64xbf16>, %k: tensor<1x4x64x64xbf16>, %v: tensor<1x4x64x64xbf16>) -> tensor<1x4x64x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x64x64xbf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16> -> tensor<1x4x64x64xbf16>
    %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %ss = tcc.mul %s, %c : tensor<1x4x64x64xbf16>, tensor<bf16> -> tensor<1x4x64x64xbf16>
    %cl = tcc.clamp %ss {min = -1.0 : f64, max = 1.0 : f64} : tensor<1x4x64x64xbf16>
    %9 = tcc.reduce_max %cl {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xbf16> -> tensor<1x4x64x1xbf16>
    %10 = tcc.sub %cl, %9 : tensor<1x4x64x64xbf16>, tensor<1x4x64x1xbf16> -> tensor<1x4x64x64xbf16>
    %11 = tcc.exp %10 : tensor<1x4x64x64xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xbf16> -> tensor<1x4x64x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x64x64xbf16>, tensor<1x4x64x1xbf16> -> tensor<1x4x64x64xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x64x64xbf16>, tensor<1x4x64x64xbf16> -> tensor<1x4x64x64xbf16>
    tcc.yield %14 : tensor<1x4x64x64xbf16>
  }
  return %0 : tensor<1x4x64x64xbf16>
}

// -----

// A change reading the score twice (leaky: s > 0 ? s : 0.1 s), then a
// causal mask: the DAG is score code as written (the compare and both
// select operands read the one score), the mask on the changes' tail
// stays a constraint.
// CHECK-LABEL: func.func @leaky_then_causal
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {{{.*}}mask = array<i64: 1, -1, 0>
// CHECK-NOT: scale =
// CHECK-SAME: score {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32):
// CHECK-DAG: %[[T:.*]] = arith.mulf %[[S]], %{{.*}} : f32
// CHECK-DAG: %[[C:.*]] = arith.cmpf ogt, %[[T]], %{{.*}} : f32
// CHECK-DAG: %[[L:.*]] = arith.mulf %[[T]], %{{.*}} : f32
// CHECK: %[[R:.*]] = arith.select %[[C]], %[[T]], %[[L]] : f32
// CHECK-NEXT: tcc.yield %[[R]] : f32
// CHECK-NEXT: } key_keep {
func.func @leaky_then_causal(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %1 = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %z = tcc.constant {value = 0.0 : bf16} : tensor<bf16>
    %slope = tcc.constant {value = 1.000000e-01 : bf16} : tensor<bf16>
    %2 = tcc.iota {axis = 0 : i64} : tensor<128x128xi32>
    %3 = tcc.iota {axis = 1 : i64} : tensor<128x128xi32>
    %4 = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
    %6 = tcc.mul %5, %1 : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %pos = tcc.greater %6, %z : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xi1>
    %low = tcc.mul %6, %slope : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %lk = tcc.select %pos, %6, %low : tensor<1x4x128x128xi1>, tensor<1x4x128x128xbf16>, tensor<1x4x128x128xbf16> -> tensor<1x4x128x128xbf16>
    %7 = tcc.greater_equal %2, %3 : tensor<128x128xi32>, tensor<128x128xi32> -> tensor<128x128xi1>
    %8 = tcc.select %7, %lk, %4 : tensor<128x128xi1>, tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
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

// A causal mask read twice (m · sigmoid(m), m the masked score): inside the
// DAG it does not move to the end, so it stays score code (no `mask`
// attribute; the select is in the score region).
// CHECK-LABEL: func.func @mask_inside_dag
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {
// CHECK-NOT: mask =
// CHECK-SAME: score {
// CHECK: arith.select
// CHECK: } key_keep {
func.func @mask_inside_dag(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %2 = tcc.iota {axis = 0 : i64} : tensor<128x128xi32>
    %3 = tcc.iota {axis = 1 : i64} : tensor<128x128xi32>
    %4 = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
    %7 = tcc.greater_equal %2, %3 : tensor<128x128xi32>, tensor<128x128xi32> -> tensor<128x128xi1>
    %8 = tcc.select %7, %5, %4 : tensor<128x128xi1>, tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %sg = tcc.sigmoid %8 : tensor<1x4x128x128xbf16>
    %sw = tcc.mul %8, %sg : tensor<1x4x128x128xbf16>, tensor<1x4x128x128xbf16> -> tensor<1x4x128x128xbf16>
    %9 = tcc.reduce_max %sw {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %sw, %9 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x128xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// The format's softmax over bf16 scores: its chain in f32 between two
// casts. The casts are no code: the padding mask before them is still the
// key mask beside a scale, and the causal mask a constraint.
// CHECK-LABEL: func.func @softmax_in_f32
// CHECK: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<2x1x1x64xi1>) attributes {batch = 2 : i64, {{.*}}key_mask_alone, {{.*}}mask = array<i64: 1, -1, 0>, masked_to_infinity, scale = 1.250000e-01 : f64
func.func @softmax_in_f32(%q: tensor<2x4x64x64xbf16>, %k: tensor<2x4x64x64xbf16>, %v: tensor<2x4x64x64xbf16>, %mask: tensor<2x1x1x64xi1>) -> tensor<2x4x64x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x64x64xbf16> {
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xbf16>
    %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %ss = tcc.mul %s, %c : tensor<2x4x64x64xbf16>, tensor<bf16> -> tensor<2x4x64x64xbf16>
    %neg = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
    %sm = tcc.select %mask, %ss, %neg : tensor<2x1x1x64xi1>, tensor<2x4x64x64xbf16>, tensor<bf16> -> tensor<2x4x64x64xbf16>
    %row = tcc.iota {axis = 0 : i64} : tensor<64x64xi32>
    %col = tcc.iota {axis = 1 : i64} : tensor<64x64xi32>
    %keep = tcc.greater_equal %row, %col : tensor<64x64xi32>, tensor<64x64xi32> -> tensor<64x64xi1>
    %sc = tcc.select %keep, %sm, %neg : tensor<64x64xi1>, tensor<2x4x64x64xbf16>, tensor<bf16> -> tensor<2x4x64x64xbf16>
    %w = tcc.cast %sc : tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xf32>
    %9 = tcc.reduce_max %w {axes = array<i64: 3>, keepdims = true} : tensor<2x4x64x64xf32> -> tensor<2x4x64x1xf32>
    %10 = tcc.sub %w, %9 : tensor<2x4x64x64xf32>, tensor<2x4x64x1xf32> -> tensor<2x4x64x64xf32>
    %11 = tcc.exp %10 : tensor<2x4x64x64xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x64x64xf32> -> tensor<2x4x64x1xf32>
    %13 = tcc.div %11, %12 : tensor<2x4x64x64xf32>, tensor<2x4x64x1xf32> -> tensor<2x4x64x64xf32>
    %p = tcc.cast %13 : tensor<2x4x64x64xf32> -> tensor<2x4x64x64xbf16>
    %14 = tcc.matmul %p, %v : tensor<2x4x64x64xbf16>, tensor<2x4x64x64xbf16> -> tensor<2x4x64x64xbf16>
    tcc.yield %14 : tensor<2x4x64x64xbf16>
  }
  return %0 : tensor<2x4x64x64xbf16>
}

// -----

// P·V kept in f32 (out_dtype) and cast back to bf16 by the model: the op
// yields bf16 (O accumulated in f32, rounded once) and the casts fold away.
// CHECK-LABEL: func.func @pv_in_f32
// CHECK: %[[A:.*]] = tcc.attention %arg0, %arg1, %arg2 attributes {{.*}} -> tensor<1x4x128x64xbf16>
// CHECK-NOT: tcc.cast
// CHECK: return %[[A]]
func.func @pv_in_f32(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xf32> {
    %1 = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
    %6 = tcc.mul %5, %1 : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %9 = tcc.reduce_max %6 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %6, %9 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x128xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xf32>
    tcc.yield %14 : tensor<1x4x128x64xf32>
  }
  %r = tcc.cast %0 : tensor<1x4x128x64xf32> -> tensor<1x4x128x64xbf16>
  return %r : tensor<1x4x128x64xbf16>
}

// -----

// A padding mask expanded to the scores' shape and combined with a causal
// one: the causal part a constraint, the mask score code reading it where
// it is (the broadcast is the element it reads); the scale written
// pow(64, -0.5) is score code too beside it (a pow of constants).
// CHECK-LABEL: func.func @pow_scale_expanded_mask
// CHECK: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<2x1x1x64xi1>) attributes {{{.*}}mask = array<i64: 1, -1, 0>
// CHECK-SAME: score {
// CHECK: %[[M:.*]] = tensor.extract
// CHECK: %[[P:.*]] = math.powf
// CHECK: %[[S:.*]] = arith.mulf %{{.*}}, %[[P]]
// CHECK: arith.select %[[M]], %[[S]]
func.func @pow_scale_expanded_mask(%q: tensor<2x4x64x64xf32>, %k: tensor<2x4x64x64xf32>, %v: tensor<2x4x64x64xf32>, %mask: tensor<2x1x1x64xi1>) -> tensor<2x4x64x64xf32> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x64x64xf32> {
    %d = tcc.constant {value = 6.400000e+01 : f32} : tensor<f32>
    %e = tcc.constant {value = -5.000000e-01 : f32} : tensor<f32>
    %c = tcc.pow %d, %e : tensor<f32>, tensor<f32> -> tensor<f32>
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x64x64xf32>, tensor<2x4x64x64xf32> -> tensor<2x4x64x64xf32>
    %ss = tcc.mul %s, %c : tensor<2x4x64x64xf32>, tensor<f32> -> tensor<2x4x64x64xf32>
    %row = tcc.iota {axis = 0 : i64} : tensor<64x64xi32>
    %col = tcc.iota {axis = 1 : i64} : tensor<64x64xi32>
    %causal = tcc.greater_equal %row, %col : tensor<64x64xi32>, tensor<64x64xi32> -> tensor<64x64xi1>
    %mb = tcc.broadcast_to %mask : tensor<2x1x1x64xi1> -> tensor<2x4x64x64xi1>
    %keep = tcc.and %causal, %mb : tensor<64x64xi1>, tensor<2x4x64x64xi1> -> tensor<2x4x64x64xi1>
    %neg = tcc.constant {value = 0xFF800000 : f32} : tensor<f32>
    %sm = tcc.select %keep, %ss, %neg : tensor<2x4x64x64xi1>, tensor<2x4x64x64xf32>, tensor<f32> -> tensor<2x4x64x64xf32>
    %9 = tcc.reduce_max %sm {axes = array<i64: 3>, keepdims = true} : tensor<2x4x64x64xf32> -> tensor<2x4x64x1xf32>
    %10 = tcc.sub %sm, %9 : tensor<2x4x64x64xf32>, tensor<2x4x64x1xf32> -> tensor<2x4x64x64xf32>
    %11 = tcc.exp %10 : tensor<2x4x64x64xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x64x64xf32> -> tensor<2x4x64x1xf32>
    %13 = tcc.div %11, %12 : tensor<2x4x64x64xf32>, tensor<2x4x64x1xf32> -> tensor<2x4x64x64xf32>
    %14 = tcc.matmul %13, %v : tensor<2x4x64x64xf32>, tensor<2x4x64x64xf32> -> tensor<2x4x64x64xf32>
    tcc.yield %14 : tensor<2x4x64x64xf32>
  }
  return %0 : tensor<2x4x64x64xf32>
}

// -----

// GQA with the query heads as two axes, K broadcast over the groups, ALiBi
// slopes per query head [1, 2, 3, 1, 1]: 6 heads over 2, read and written
// through strides of rank 4 (the heads merged), the slopes read at
// (h / 3, h % 3) by the score code, and not a plane the templates stage.
// CHECK-LABEL: func.func @gqa_rank5_slopes
// CHECK: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<1x2x3x1x1xf32>) attributes {batch = 2 : i64, captured_views = array<i64: 0>, head_dim = 8 : i64, heads = 6 : i64, k_strides = array<i64: 256, 128, 8, 1>, kv_heads = 2 : i64
// CHECK-SAME: o_strides = array<i64: 768, 128, 8, 1>, q_strides = array<i64: 768, 128, 8, 1>
// CHECK-SAME: v_strides = array<i64: 256, 128, 8, 1>
// CHECK-SAME: -> tensor<2x2x3x16x8xbf16> score {
// CHECK: ^bb0(%{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: i32, %[[H:[a-z0-9]+]]: i32,
// CHECK-DAG: arith.divsi %[[H]], %c3_i32{{.*}} : i32
// CHECK-DAG: arith.remsi %[[H]], %c3_i32{{.*}} : i32
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : tensor<1x2x3x1x1xf32>
func.func @gqa_rank5_slopes(%q: tensor<2x2x3x16x8xbf16>, %k: tensor<2x2x1x16x8xbf16>, %v: tensor<2x2x1x16x8xbf16>, %slopes: tensor<1x2x3x1x1xf32>) -> tensor<2x2x3x16x8xbf16> {
  %0 = tcc.chain attributes {axis = 4 : i64} -> tensor<2x2x3x16x8xbf16> {
    %kb = tcc.broadcast_to %k : tensor<2x2x1x16x8xbf16> -> tensor<2x2x3x16x8xbf16>
    %vb = tcc.broadcast_to %v : tensor<2x2x1x16x8xbf16> -> tensor<2x2x3x16x8xbf16>
    %s = tcc.matmul %q, %kb {transpose_b = true} : tensor<2x2x3x16x8xbf16>, tensor<2x2x3x16x8xbf16> -> tensor<2x2x3x16x16xbf16>
    %s32 = tcc.cast %s : tensor<2x2x3x16x16xbf16> -> tensor<2x2x3x16x16xf32>
    %row = tcc.iota {axis = 0 : i64} : tensor<16x16xi32>
    %col = tcc.iota {axis = 1 : i64} : tensor<16x16xi32>
    %rel = tcc.sub %col, %row : tensor<16x16xi32>, tensor<16x16xi32> -> tensor<16x16xi32>
    %relf = tcc.cast %rel : tensor<16x16xi32> -> tensor<16x16xf32>
    %bias = tcc.mul %relf, %slopes : tensor<16x16xf32>, tensor<1x2x3x1x1xf32> -> tensor<1x2x3x16x16xf32>
    %sb = tcc.add %s32, %bias : tensor<2x2x3x16x16xf32>, tensor<1x2x3x16x16xf32> -> tensor<2x2x3x16x16xf32>
    %m = tcc.reduce_max %sb {axes = array<i64: 4>, keepdims = true} : tensor<2x2x3x16x16xf32> -> tensor<2x2x3x16x1xf32>
    %d = tcc.sub %sb, %m : tensor<2x2x3x16x16xf32>, tensor<2x2x3x16x1xf32> -> tensor<2x2x3x16x16xf32>
    %e = tcc.exp %d : tensor<2x2x3x16x16xf32>
    %sum = tcc.reduce_sum %e {axes = array<i64: 4>, keepdims = true} : tensor<2x2x3x16x16xf32> -> tensor<2x2x3x16x1xf32>
    %p32 = tcc.div %e, %sum : tensor<2x2x3x16x16xf32>, tensor<2x2x3x16x1xf32> -> tensor<2x2x3x16x16xf32>
    %p = tcc.cast %p32 : tensor<2x2x3x16x16xf32> -> tensor<2x2x3x16x16xbf16>
    %o = tcc.matmul %p, %vb : tensor<2x2x3x16x16xbf16>, tensor<2x2x3x16x8xbf16> -> tensor<2x2x3x16x8xbf16>
    tcc.yield %o : tensor<2x2x3x16x8xbf16>
  }
  return %0 : tensor<2x2x3x16x8xbf16>
}


// -----

// Softmax written by hand with its temperature after the shift,
// exp((s - max s) / 0.5): the softmax of 2 · s, so the scale is 0.125 · 2;
// beside a bias (score code), the code ends multiplying by 2.
// CHECK-LABEL: func.func @temperature_after_shift
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {{{.*}}scale = 2.500000e-01 : f64
// CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} captures(%arg3 : tensor<1x2x64x64xf32>)
// CHECK: %[[B:.*]] = arith.addf
// CHECK: %[[C:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: arith.mulf %[[B]], %[[C]] : f32
// CHECK-NEXT: tcc.yield
func.func @temperature_after_shift(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>, %bias: tensor<1x2x64x64xf32>) -> (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xf32>) {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x2x64x64xbf16> {
    %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %t = tcc.constant {value = 5.000000e-01 : bf16} : tensor<bf16>
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
    %ss = tcc.mul %s, %c : tensor<1x2x64x64xbf16>, tensor<bf16> -> tensor<1x2x64x64xbf16>
    %m = tcc.reduce_max %ss {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
    %d = tcc.sub %ss, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
    %u = tcc.div %d, %t : tensor<1x2x64x64xbf16>, tensor<bf16> -> tensor<1x2x64x64xbf16>
    %e = tcc.exp %u : tensor<1x2x64x64xbf16>
    %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
    %p = tcc.div %e, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
    %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
    tcc.yield %o : tensor<1x2x64x64xbf16>
  }
  %q32 = tcc.cast %q : tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xf32>
  %k32 = tcc.cast %k : tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xf32>
  %v32 = tcc.cast %v : tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xf32>
  %1 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x2x64x64xf32> {
    %two = tcc.constant {value = 2.000000e+00 : f32} : tensor<f32>
    %s = tcc.matmul %q32, %k32 {transpose_b = true} : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32> -> tensor<1x2x64x64xf32>
    %sb = tcc.add %s, %bias : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32> -> tensor<1x2x64x64xf32>
    %m = tcc.reduce_max %sb {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xf32> -> tensor<1x2x64x1xf32>
    %d = tcc.sub %sb, %m : tensor<1x2x64x64xf32>, tensor<1x2x64x1xf32> -> tensor<1x2x64x64xf32>
    %u = tcc.mul %two, %d : tensor<f32>, tensor<1x2x64x64xf32> -> tensor<1x2x64x64xf32>
    %e = tcc.exp %u : tensor<1x2x64x64xf32>
    %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xf32> -> tensor<1x2x64x1xf32>
    %p = tcc.div %e, %sum : tensor<1x2x64x64xf32>, tensor<1x2x64x1xf32> -> tensor<1x2x64x64xf32>
    %o = tcc.matmul %p, %v32 : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32> -> tensor<1x2x64x64xf32>
    tcc.yield %o : tensor<1x2x64x64xf32>
  }
  return %0, %1 : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xf32>
}

// -----

// Q and K widened to f32 for Q·Kᵀ, P cast back to V's bf16: the op reads
// the bf16 tensors (products of bf16 values are exact in f32), and the
// widened copies are gone.
// CHECK-LABEL: func.func @qk_in_f32
// CHECK-NOT: tcc.cast
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {{{.*}}scale = 1.250000e-01 : f64{{.*}}} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
// CHECK-NOT: tcc.cast
func.func @qk_in_f32(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %q32 = tcc.cast %q : tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xf32>
  %k32 = tcc.cast %k : tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xf32>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x2x64x64xbf16> {
    %c = tcc.constant {value = 1.250000e-01 : f32} : tensor<f32>
    %s = tcc.matmul %q32, %k32 {transpose_b = true} : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32> -> tensor<1x2x64x64xf32>
    %ss = tcc.mul %s, %c : tensor<1x2x64x64xf32>, tensor<f32> -> tensor<1x2x64x64xf32>
    %m = tcc.reduce_max %ss {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xf32> -> tensor<1x2x64x1xf32>
    %d = tcc.sub %ss, %m : tensor<1x2x64x64xf32>, tensor<1x2x64x1xf32> -> tensor<1x2x64x64xf32>
    %e = tcc.exp %d : tensor<1x2x64x64xf32>
    %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xf32> -> tensor<1x2x64x1xf32>
    %p32 = tcc.div %e, %sum : tensor<1x2x64x64xf32>, tensor<1x2x64x1xf32> -> tensor<1x2x64x64xf32>
    %p = tcc.cast %p32 : tensor<1x2x64x64xf32> -> tensor<1x2x64x64xbf16>
    %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>
    tcc.yield %o : tensor<1x2x64x64xbf16>
  }
  return %0 : tensor<1x2x64x64xbf16>
}

// -----

// K repeated over the query heads, then its last two axes swapped (Hugging
// Face's repeat_kv, then k.transpose(2, 3)): GQA 4/2 read as K [B, 2, L, D],
// not K given transposed.
// CHECK-LABEL: func.func @repeat_then_transpose
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {{{.*}}kv_heads = 2 : i64
// CHECK-NOT: k_transposed
// CHECK-SAME: : tensor<1x4x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x4x64x64xf16>
func.func @repeat_then_transpose(%q: tensor<1x4x64x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>) -> tensor<1x4x64x64xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x64x64xf16> {
    %k5 = tcc.reshape %k : tensor<1x2x64x64xf16> -> tensor<1x2x1x64x64xf16>
    %kb = tcc.broadcast_to %k5 : tensor<1x2x1x64x64xf16> -> tensor<1x2x2x64x64xf16>
    %kk = tcc.reshape %kb : tensor<1x2x2x64x64xf16> -> tensor<1x4x64x64xf16>
    %kt = tcc.transpose %kk {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    %v5 = tcc.reshape %v : tensor<1x2x64x64xf16> -> tensor<1x2x1x64x64xf16>
    %vb = tcc.broadcast_to %v5 : tensor<1x2x1x64x64xf16> -> tensor<1x2x2x64x64xf16>
    %vv = tcc.reshape %vb : tensor<1x2x2x64x64xf16> -> tensor<1x4x64x64xf16>
    %c = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %s = tcc.matmul %q, %kt : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    %ss = tcc.mul %s, %c : tensor<1x4x64x64xf16>, tensor<f16> -> tensor<1x4x64x64xf16>
    %m = tcc.reduce_max %ss {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xf16> -> tensor<1x4x64x1xf16>
    %d = tcc.sub %ss, %m : tensor<1x4x64x64xf16>, tensor<1x4x64x1xf16> -> tensor<1x4x64x64xf16>
    %e = tcc.exp %d : tensor<1x4x64x64xf16>
    %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x4x64x64xf16> -> tensor<1x4x64x1xf16>
    %p = tcc.div %e, %sum : tensor<1x4x64x64xf16>, tensor<1x4x64x1xf16> -> tensor<1x4x64x64xf16>
    %o = tcc.matmul %p, %vv : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
    tcc.yield %o : tensor<1x4x64x64xf16>
  }
  return %0 : tensor<1x4x64x64xf16>
}

// -----

// The exponential of a log-softmax, exp(t - log(sum exp t)) with the
// format's casts around it, is softmax: one attention op; a log of
// something else than the sum of exp(t) is not.
// CHECK-LABEL: func.func @exp_of_log_softmax
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {{{.*}}scale = 1.250000e-01 : f64
// CHECK-NOT: tcc.log %{{.*}} : tensor<1x2x64x1xf32>
// CHECK: tcc.log %{{.*}} : tensor<1x2x64x1xf16>
func.func @exp_of_log_softmax(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>, %v: tensor<1x2x64x64xf16>) -> (tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x2x64x64xf16> {
    %c = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
    %ss = tcc.mul %s, %c : tensor<1x2x64x64xf16>, tensor<f16> -> tensor<1x2x64x64xf16>
    %m = tcc.reduce_max %ss {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xf16> -> tensor<1x2x64x1xf16>
    %m32 = tcc.cast %m : tensor<1x2x64x1xf16> -> tensor<1x2x64x1xf32>
    %s32 = tcc.cast %ss : tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf32>
    %t = tcc.sub %s32, %m32 : tensor<1x2x64x64xf32>, tensor<1x2x64x1xf32> -> tensor<1x2x64x64xf32>
    %e = tcc.exp %t : tensor<1x2x64x64xf32>
    %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xf32> -> tensor<1x2x64x1xf32>
    %l = tcc.log %sum : tensor<1x2x64x1xf32>
    %ls = tcc.sub %t, %l : tensor<1x2x64x64xf32>, tensor<1x2x64x1xf32> -> tensor<1x2x64x64xf32>
    %ls16 = tcc.cast %ls : tensor<1x2x64x64xf32> -> tensor<1x2x64x64xf16>
    %p = tcc.exp %ls16 : tensor<1x2x64x64xf16>
    %o = tcc.matmul %p, %v : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
    tcc.yield %o : tensor<1x2x64x64xf16>
  }
  %1 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x2x64x64xf16> {
    %c = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %two = tcc.constant {value = 2.000000e+00 : f16} : tensor<f16>
    %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
    %ss = tcc.mul %s, %c : tensor<1x2x64x64xf16>, tensor<f16> -> tensor<1x2x64x64xf16>
    %m = tcc.reduce_max %ss {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xf16> -> tensor<1x2x64x1xf16>
    %t = tcc.sub %ss, %m : tensor<1x2x64x64xf16>, tensor<1x2x64x1xf16> -> tensor<1x2x64x64xf16>
    %e = tcc.exp %t : tensor<1x2x64x64xf16>
    %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xf16> -> tensor<1x2x64x1xf16>
    %sum2 = tcc.mul %sum, %two : tensor<1x2x64x1xf16>, tensor<f16> -> tensor<1x2x64x1xf16>
    %l = tcc.log %sum2 : tensor<1x2x64x1xf16>
    %ls = tcc.sub %t, %l : tensor<1x2x64x64xf16>, tensor<1x2x64x1xf16> -> tensor<1x2x64x64xf16>
    %p = tcc.exp %ls : tensor<1x2x64x64xf16>
    %o = tcc.matmul %p, %v : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
    tcc.yield %o : tensor<1x2x64x64xf16>
  }
  return %0, %1 : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>
}

// -----

// V of another head size than Q and K (DeepSeek's MLA: scores over 192,
// values of 128): value_dim, V's and the result's.
// CHECK-LABEL: func.func @mla
// CHECK: tcc.attention %arg0, %arg1, %arg2 attributes {batch = 1 : i64, head_dim = 192 : i64, heads = 2 : i64, kv_heads = 2 : i64, lk = 96 : i64, lq = 64 : i64, scale = 1.250000e-01 : f64, tcc.attention_plan = #tcc.mma_attention<{{.*}}>, value_dim = 128 : i64} : tensor<1x2x64x192xf16>, tensor<1x2x96x192xf16>, tensor<1x2x96x128xf16> -> tensor<1x2x64x128xf16>
func.func @mla(%q: tensor<1x2x64x192xf16>, %k: tensor<1x2x96x192xf16>, %v: tensor<1x2x96x128xf16>) -> tensor<1x2x64x128xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x2x64x128xf16> {
    %1 = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x192xf16>, tensor<1x2x96x192xf16> -> tensor<1x2x64x96xf16>
    %6 = tcc.mul %5, %1 : tensor<1x2x64x96xf16>, tensor<f16> -> tensor<1x2x64x96xf16>
    %9 = tcc.reduce_max %6 {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x96xf16> -> tensor<1x2x64x1xf16>
    %10 = tcc.sub %6, %9 : tensor<1x2x64x96xf16>, tensor<1x2x64x1xf16> -> tensor<1x2x64x96xf16>
    %11 = tcc.exp %10 : tensor<1x2x64x96xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x96xf16> -> tensor<1x2x64x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x2x64x96xf16>, tensor<1x2x64x1xf16> -> tensor<1x2x64x96xf16>
    %14 = tcc.matmul %13, %v : tensor<1x2x64x96xf16>, tensor<1x2x96x128xf16> -> tensor<1x2x64x128xf16>
    tcc.yield %14 : tensor<1x2x64x128xf16>
  }
  return %0 : tensor<1x2x64x128xf16>
}
