// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains --tcc-gpu-attention-plan=target=sm_90 | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains --tcc-gpu-attention-plan=target=sm_90 --tcc-form-attention | FileCheck %s --check-prefix=FORM

// tcc-gpu-attention-plan folds Q's and K's scaling onto the scores where a
// template takes the folded chain (foldPrescales).
//
// Q and K each scaled by sqrt(1/sqrt(64)) before Q·Kᵀ, K after its
// transpose, the factor computed from a constant (as PyTorch's SDPA
// decomposition and its ONNX export write it): the matmul reads Q and K
// themselves (K with transpose_b) and the scores are scaled twice by the
// factor as the model rounds it in f16 (0.353515625), so no kernel scales
// Q or K; tcc.attention's scale is the product, with no score code.
// CHECK-LABEL: func.func @prescaled_qk
// CHECK-NOT: tcc.mul
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan
// CHECK: %[[S:.*]] = tcc.matmul %arg0, %arg1 {transpose_b = true}
// CHECK-NEXT: %[[C0:.*]] = tcc.constant {value = 3.535160e-01 : f16} : tensor<f16>
// CHECK-NEXT: %[[S1:.*]] = tcc.mul %[[S]], %[[C0]]
// CHECK-NEXT: %[[C1:.*]] = tcc.constant {value = 3.535160e-01 : f16} : tensor<f16>
// CHECK-NEXT: tcc.mul %[[S1]], %[[C1]]
// FORM-LABEL: func.func @prescaled_qk
// FORM: tcc.attention %arg0, %arg1, %arg2 attributes {{.*}}scale = 0.12497329711914063 : f64
func.func @prescaled_qk(%q: tensor<1x4x128x64xf16>, %k: tensor<1x4x256x64xf16>, %v: tensor<1x4x256x64xf16>) -> tensor<1x4x128x64xf16> {
  %d = tcc.constant {value = 64.0 : f32} : tensor<f32>
  %r = tcc.rsqrt %d : tensor<f32>
  %s = tcc.sqrt %r : tensor<f32>
  %c = tcc.cast %s {to = f16} : tensor<f32> -> tensor<f16>
  %qs = tcc.mul %q, %c : tensor<1x4x128x64xf16>, tensor<f16> -> tensor<1x4x128x64xf16>
  %kt = tcc.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x256x64xf16> -> tensor<1x4x64x256xf16>
  %ks = tcc.mul %kt, %c : tensor<1x4x64x256xf16>, tensor<f16> -> tensor<1x4x64x256xf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xf16> {
    %5 = tcc.matmul %qs, %ks : tensor<1x4x128x64xf16>, tensor<1x4x64x256xf16> -> tensor<1x4x128x256xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xf16> -> tensor<1x4x128x1xf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x256xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x256xf16>
    %11 = tcc.exp %10 : tensor<1x4x128x256xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xf16> -> tensor<1x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x256xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x256xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x256xf16>, tensor<1x4x256x64xf16> -> tensor<1x4x128x64xf16>
    tcc.yield %14 : tensor<1x4x128x64xf16>
  }
  return %0 : tensor<1x4x128x64xf16>
}

// -----

// A per-head factor given as an input ([1, H, 1, 1]): it scales every
// score of its head, so it moves onto the scores too, read by the chain
// as a captured tensor.
// CHECK-LABEL: func.func @per_head_factor
// CHECK-NOT: tcc.mul
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan
// CHECK-NEXT: %[[S:.*]] = tcc.matmul %arg0, %arg1 {transpose_b = true}
// CHECK-NEXT: tcc.mul %[[S]], %arg3 : tensor<1x4x128x256xf16>, tensor<1x4x1x1xf16>
// FORM-LABEL: func.func @per_head_factor
// FORM: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<1x4x1x1xf16>)
func.func @per_head_factor(%q: tensor<1x4x128x64xf16>, %k: tensor<1x4x256x64xf16>, %v: tensor<1x4x256x64xf16>, %f: tensor<1x4x1x1xf16>) -> tensor<1x4x128x64xf16> {
  %qs = tcc.mul %q, %f : tensor<1x4x128x64xf16>, tensor<1x4x1x1xf16> -> tensor<1x4x128x64xf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xf16> {
    %5 = tcc.matmul %qs, %k {transpose_b = true} : tensor<1x4x128x64xf16>, tensor<1x4x256x64xf16> -> tensor<1x4x128x256xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xf16> -> tensor<1x4x128x1xf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x256xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x256xf16>
    %11 = tcc.exp %10 : tensor<1x4x128x256xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xf16> -> tensor<1x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x256xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x256xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x256xf16>, tensor<1x4x256x64xf16> -> tensor<1x4x128x64xf16>
    tcc.yield %14 : tensor<1x4x128x64xf16>
  }
  return %0 : tensor<1x4x128x64xf16>
}

// -----

// A factor that varies along the head dim ([1, 1, 1, 64]) weighs each
// term of the dot product differently, which is no scaling of the scores:
// left as it is, the matmul reads the scaled Q.
// CHECK-LABEL: func.func @per_column_factor_kept
// CHECK: %[[QS:.*]] = tcc.mul %arg0, %arg3
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan
// CHECK-NEXT: tcc.matmul %[[QS]], %arg1 {transpose_b = true}
func.func @per_column_factor_kept(%q: tensor<1x4x128x64xf16>, %k: tensor<1x4x256x64xf16>, %v: tensor<1x4x256x64xf16>, %f: tensor<1x1x1x64xf16>) -> tensor<1x4x128x64xf16> {
  %qs = tcc.mul %q, %f : tensor<1x4x128x64xf16>, tensor<1x1x1x64xf16> -> tensor<1x4x128x64xf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xf16> {
    %5 = tcc.matmul %qs, %k {transpose_b = true} : tensor<1x4x128x64xf16>, tensor<1x4x256x64xf16> -> tensor<1x4x128x256xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xf16> -> tensor<1x4x128x1xf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x256xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x256xf16>
    %11 = tcc.exp %10 : tensor<1x4x128x256xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xf16> -> tensor<1x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x256xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x256xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x256xf16>, tensor<1x4x256x64xf16> -> tensor<1x4x128x64xf16>
    tcc.yield %14 : tensor<1x4x128x64xf16>
  }
  return %0 : tensor<1x4x128x64xf16>
}

// -----

// K scaled before its repeat over query heads (GQA 2 -> 4 written as
// reshape, broadcast_to, reshape): the repeat is made again on K itself,
// and the scores are scaled instead (0.125, no score code).
// CHECK-LABEL: func.func @k_scaled_before_repeat
// CHECK-NOT: tcc.mul
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan
// CHECK: tcc.reshape %arg1 : tensor<1x2x256x64xf16> -> tensor<1x2x1x256x64xf16>
// CHECK: %[[S:.*]] = tcc.matmul %arg0, %{{.*}} {transpose_b = true}
// CHECK-NEXT: %[[C:.*]] = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
// CHECK-NEXT: tcc.mul %[[S]], %[[C]]
// FORM-LABEL: func.func @k_scaled_before_repeat
// FORM: tcc.attention %arg0, %arg1, %arg2 attributes {{.*}}kv_heads = 2 : i64{{.*}}scale = 1.250000e-01 : f64
func.func @k_scaled_before_repeat(%q: tensor<1x4x128x64xf16>, %k: tensor<1x2x256x64xf16>, %v: tensor<1x2x256x64xf16>) -> tensor<1x4x128x64xf16> {
  %c = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
  %ks = tcc.mul %k, %c : tensor<1x2x256x64xf16>, tensor<f16> -> tensor<1x2x256x64xf16>
  %k5 = tcc.reshape %ks : tensor<1x2x256x64xf16> -> tensor<1x2x1x256x64xf16>
  %kb = tcc.broadcast_to %k5 : tensor<1x2x1x256x64xf16> -> tensor<1x2x2x256x64xf16>
  %kk = tcc.reshape %kb : tensor<1x2x2x256x64xf16> -> tensor<1x4x256x64xf16>
  %v5 = tcc.reshape %v : tensor<1x2x256x64xf16> -> tensor<1x2x1x256x64xf16>
  %vb = tcc.broadcast_to %v5 : tensor<1x2x1x256x64xf16> -> tensor<1x2x2x256x64xf16>
  %vv = tcc.reshape %vb : tensor<1x2x2x256x64xf16> -> tensor<1x4x256x64xf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xf16> {
    %5 = tcc.matmul %q, %kk {transpose_b = true} : tensor<1x4x128x64xf16>, tensor<1x4x256x64xf16> -> tensor<1x4x128x256xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xf16> -> tensor<1x4x128x1xf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x256xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x256xf16>
    %11 = tcc.exp %10 : tensor<1x4x128x256xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x256xf16> -> tensor<1x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x256xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x256xf16>
    %14 = tcc.matmul %13, %vv : tensor<1x4x128x256xf16>, tensor<1x4x256x64xf16> -> tensor<1x4x128x64xf16>
    tcc.yield %14 : tensor<1x4x128x64xf16>
  }
  return %0 : tensor<1x4x128x64xf16>
}
