// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains --tcc-gpu-attention-plan=target=sm_90 --tcc-form-attention | FileCheck %s --check-prefix=FORM

// A boolean padding mask made a 0/-inf tensor and added to the scores (as
// PyTorch's SDPA export writes attn_mask): it becomes select(mask, s, -inf),
// which the match reads as a key mask applied alone beside the scale (the
// templates skip key tiles it removes; no score code).
// CHECK-LABEL: func.func @additive_key_mask
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK: %[[S:.*]] = tcc.mul
// CHECK-NOT: tcc.add
// CHECK: tcc.select %{{.*}}, %[[S]], %{{.*}} : tensor<2x1x1x256xi1>, tensor<2x4x128x256xf16>, tensor<f16>
// FORM-LABEL: func.func @additive_key_mask
// FORM: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<2x1x1x256xi1>) attributes {{.*}}key_mask_alone{{.*}}scale = 1.250000e-01 : f64
func.func @additive_key_mask(%q: tensor<2x4x128x64xf16>, %k: tensor<2x4x256x64xf16>, %v: tensor<2x4x256x64xf16>, %pad: tensor<2x1x1x256xi1>) -> tensor<2x4x128x64xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x128x64xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x128x64xf16>, tensor<2x4x256x64xf16> -> tensor<2x4x128x256xf16>
    %c = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %6 = tcc.mul %5, %c : tensor<2x4x128x256xf16>, tensor<f16> -> tensor<2x4x128x256xf16>
    %zero = tcc.constant {value = 0.0 : f16} : tensor<f16>
    %ninf = tcc.constant {value = 0xFC00 : f16} : tensor<f16>
    %bias = tcc.select %pad, %zero, %ninf : tensor<2x1x1x256xi1>, tensor<f16>, tensor<f16> -> tensor<2x1x1x256xf16>
    %7 = tcc.add %6, %bias : tensor<2x4x128x256xf16>, tensor<2x1x1x256xf16> -> tensor<2x4x128x256xf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x256xf16> -> tensor<2x4x128x1xf16>
    %10 = tcc.sub %7, %9 : tensor<2x4x128x256xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x256xf16>
    %11 = tcc.exp %10 : tensor<2x4x128x256xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x256xf16> -> tensor<2x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<2x4x128x256xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x256xf16>
    %14 = tcc.matmul %13, %v : tensor<2x4x128x256xf16>, tensor<2x4x256x64xf16> -> tensor<2x4x128x64xf16>
    tcc.yield %14 : tensor<2x4x128x64xf16>
  }
  return %0 : tensor<2x4x128x64xf16>
}

// -----

// A causal mask given additively, select(col > row, -inf, 0) added: the
// condition is negated and the select becomes the mask of positions, which
// the templates apply as constraints (whole tiles skipped or unmasked).
// CHECK-LABEL: func.func @additive_causal
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NOT: tcc.add
// CHECK: %[[K:.*]] = tcc.not
// CHECK: tcc.select %[[K]], %{{.*}}, %{{.*}} : tensor<128x128xi1>, tensor<1x4x128x128xf16>, tensor<f16>
// FORM-LABEL: func.func @additive_causal
// FORM: tcc.attention %arg0, %arg1, %arg2 attributes {{.*}}mask = array<i64: 1, -1, 0>
func.func @additive_causal(%q: tensor<1x4x128x64xf16>, %k: tensor<1x4x128x64xf16>, %v: tensor<1x4x128x64xf16>) -> tensor<1x4x128x64xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16> -> tensor<1x4x128x128xf16>
    %r = tcc.iota {axis = 0 : i64} : tensor<128x128xi32>
    %c = tcc.iota {axis = 1 : i64} : tensor<128x128xi32>
    %future = tcc.greater %c, %r : tensor<128x128xi32>, tensor<128x128xi32> -> tensor<128x128xi1>
    %zero = tcc.constant {value = 0.0 : f16} : tensor<f16>
    %ninf = tcc.constant {value = 0xFC00 : f16} : tensor<f16>
    %bias = tcc.select %future, %ninf, %zero : tensor<128x128xi1>, tensor<f16>, tensor<f16> -> tensor<128x128xf16>
    %7 = tcc.add %bias, %5 : tensor<128x128xf16>, tensor<1x4x128x128xf16> -> tensor<1x4x128x128xf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xf16> -> tensor<1x4x128x1xf16>
    %10 = tcc.sub %7, %9 : tensor<1x4x128x128xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x128xf16>
    %11 = tcc.exp %10 : tensor<1x4x128x128xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xf16> -> tensor<1x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x128xf16>, tensor<1x4x128x1xf16> -> tensor<1x4x128x128xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x128xf16>, tensor<1x4x128x64xf16> -> tensor<1x4x128x64xf16>
    tcc.yield %14 : tensor<1x4x128x64xf16>
  }
  return %0 : tensor<1x4x128x64xf16>
}

// -----

// A bias that is not 0 where kept (select(m, 0.5, -inf)) is a change of
// the scores, not a mask: the add stays.
// CHECK-LABEL: func.func @additive_not_a_mask
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK: tcc.add
func.func @additive_not_a_mask(%q: tensor<2x4x128x64xf16>, %k: tensor<2x4x256x64xf16>, %v: tensor<2x4x256x64xf16>, %pad: tensor<2x1x1x256xi1>) -> tensor<2x4x128x64xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x128x64xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x128x64xf16>, tensor<2x4x256x64xf16> -> tensor<2x4x128x256xf16>
    %half = tcc.constant {value = 0.5 : f16} : tensor<f16>
    %ninf = tcc.constant {value = 0xFC00 : f16} : tensor<f16>
    %bias = tcc.select %pad, %half, %ninf : tensor<2x1x1x256xi1>, tensor<f16>, tensor<f16> -> tensor<2x1x1x256xf16>
    %7 = tcc.add %5, %bias : tensor<2x4x128x256xf16>, tensor<2x1x1x256xf16> -> tensor<2x4x128x256xf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x256xf16> -> tensor<2x4x128x1xf16>
    %10 = tcc.sub %7, %9 : tensor<2x4x128x256xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x256xf16>
    %11 = tcc.exp %10 : tensor<2x4x128x256xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x256xf16> -> tensor<2x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<2x4x128x256xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x256xf16>
    %14 = tcc.matmul %13, %v : tensor<2x4x128x256xf16>, tensor<2x4x256x64xf16> -> tensor<2x4x128x64xf16>
    tcc.yield %14 : tensor<2x4x128x64xf16>
  }
  return %0 : tensor<2x4x128x64xf16>
}

// -----

// Two layers share one additive padding mask made outside both chains (CSE
// does that): each chain reads it as a key mask of its own.
// CHECK-LABEL: func.func @shared_additive_mask
// CHECK-COUNT-2: tcc.select %arg3, %{{.*}}, %{{.*}} : tensor<2x1x1x256xi1>, tensor<2x4x128x256xf16>, tensor<f16>
// FORM-LABEL: func.func @shared_additive_mask
// FORM-COUNT-2: key_mask_alone
func.func @shared_additive_mask(%q: tensor<2x4x128x64xf16>, %k: tensor<2x4x256x64xf16>, %v: tensor<2x4x256x64xf16>, %pad: tensor<2x1x1x256xi1>) -> (tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>) {
  %zero = tcc.constant {value = 0.0 : f16} : tensor<f16>
  %ninf = tcc.constant {value = 0xFC00 : f16} : tensor<f16>
  %bias = tcc.select %pad, %zero, %ninf : tensor<2x1x1x256xi1>, tensor<f16>, tensor<f16> -> tensor<2x1x1x256xf16>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x128x64xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x128x64xf16>, tensor<2x4x256x64xf16> -> tensor<2x4x128x256xf16>
    %7 = tcc.add %5, %bias : tensor<2x4x128x256xf16>, tensor<2x1x1x256xf16> -> tensor<2x4x128x256xf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x256xf16> -> tensor<2x4x128x1xf16>
    %10 = tcc.sub %7, %9 : tensor<2x4x128x256xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x256xf16>
    %11 = tcc.exp %10 : tensor<2x4x128x256xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x256xf16> -> tensor<2x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<2x4x128x256xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x256xf16>
    %14 = tcc.matmul %13, %v : tensor<2x4x128x256xf16>, tensor<2x4x256x64xf16> -> tensor<2x4x128x64xf16>
    tcc.yield %14 : tensor<2x4x128x64xf16>
  }
  %1 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x128x64xf16> {
    %5 = tcc.matmul %0, %k {transpose_b = true} : tensor<2x4x128x64xf16>, tensor<2x4x256x64xf16> -> tensor<2x4x128x256xf16>
    %7 = tcc.add %5, %bias : tensor<2x4x128x256xf16>, tensor<2x1x1x256xf16> -> tensor<2x4x128x256xf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x256xf16> -> tensor<2x4x128x1xf16>
    %10 = tcc.sub %7, %9 : tensor<2x4x128x256xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x256xf16>
    %11 = tcc.exp %10 : tensor<2x4x128x256xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x256xf16> -> tensor<2x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<2x4x128x256xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x256xf16>
    %14 = tcc.matmul %13, %v : tensor<2x4x128x256xf16>, tensor<2x4x256x64xf16> -> tensor<2x4x128x64xf16>
    tcc.yield %14 : tensor<2x4x128x64xf16>
  }
  return %0, %1 : tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16>
}

// -----

// The 0 is what widens the sum ([2, 1, 1, 128] against scores [4, 128,
// 128] and a mask [128]): select(c, s, -inf) would have another shape, so
// the add stays (and the IR stays valid).
// CHECK-LABEL: func.func @zero_widens
// CHECK: tcc.add
func.func @zero_widens(%q: tensor<4x128x64xf16>, %k: tensor<4x128x64xf16>, %v: tensor<4x128x64xf16>, %pad: tensor<128xi1>) -> tensor<2x4x128x64xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x128x64xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<4x128x64xf16>, tensor<4x128x64xf16> -> tensor<4x128x128xf16>
    %z = tcc.constant {value = 0.0 : f16} : tensor<2x1x1x128xf16>
    %ninf = tcc.constant {value = 0xFC00 : f16} : tensor<f16>
    %bias = tcc.select %pad, %z, %ninf : tensor<128xi1>, tensor<2x1x1x128xf16>, tensor<f16> -> tensor<2x1x1x128xf16>
    %7 = tcc.add %5, %bias : tensor<4x128x128xf16>, tensor<2x1x1x128xf16> -> tensor<2x4x128x128xf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x128xf16> -> tensor<2x4x128x1xf16>
    %10 = tcc.sub %7, %9 : tensor<2x4x128x128xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x128xf16>
    %11 = tcc.exp %10 : tensor<2x4x128x128xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x128xf16> -> tensor<2x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<2x4x128x128xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x128xf16>
    %14 = tcc.matmul %13, %v : tensor<2x4x128x128xf16>, tensor<4x128x64xf16> -> tensor<2x4x128x64xf16>
    tcc.yield %14 : tensor<2x4x128x64xf16>
  }
  return %0 : tensor<2x4x128x64xf16>
}
