// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tcc-form-chains, tcc-gpu-attention-chains, tcc-gpu-attention-plan{target=sm_90a}, tcc-form-attention, tcc-form-chains{max-matmul-extent=0}, tcc-form-groups), tcc-outline-groups)' | FileCheck %s

// Q, K and V cut from one packed projection [B, L, 3·H·D] (GPT-2's c_attn
// split in three), each reshaped to [B, L, H, D] and transposed: views of
// the packed tensor, which tcc.attention reads through (strides over its
// layout, offsets H·D and 2·H·D for K and V). One kernel, no copies; the
// dead views are erased.
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[A:.*]] = call @k0_chain(%arg0) : (tensor<2x64x384xbf16>) -> tensor<2x2x64x64xbf16>
// CHECK-NEXT: return %[[A]]
// CHECK-LABEL: func.func private @k0_chain
// CHECK-NOT: tcc.slice
// CHECK: tcc.attention %arg0, %arg0, %arg0
// CHECK-SAME: k_offset = 128 : i64
// CHECK-SAME: k_strides = array<i64: 24576, 64, 384, 1>
// CHECK-SAME: q_strides = array<i64: 24576, 64, 384, 1>
// CHECK-SAME: tcc.attention_plan = #tcc.wgmma_attention
// CHECK-SAME: v_offset = 256 : i64
// CHECK-SAME: v_strides = array<i64: 24576, 64, 384, 1>
func.func @main(%arg0: tensor<2x64x384xbf16>) -> (tensor<2x2x64x64xbf16>) attributes {tcc.entry} {
  %0 = tcc.slice %arg0 {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
  %1 = tcc.reshape %0 : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %2 = tcc.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %3 = tcc.slice %arg0 {starts = array<i64: 0, 0, 128>, steps = array<i64: 1, 1, 1>} : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
  %4 = tcc.reshape %3 : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %5 = tcc.transpose %4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %6 = tcc.slice %arg0 {starts = array<i64: 0, 0, 256>, steps = array<i64: 1, 1, 1>} : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
  %7 = tcc.reshape %6 : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %8 = tcc.transpose %7 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %9 = tcc.matmul %2, %5 {transpose_b = true} : tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x2x64x64xbf16>
  %10 = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
  %11 = tcc.mul %9, %10 : tensor<2x2x64x64xbf16>, tensor<bf16> -> tensor<2x2x64x64xbf16>
  %12 = tcc.reduce_max %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x2x64x64xbf16> -> tensor<2x2x64x1xbf16>
  %13 = tcc.sub %11, %12 : tensor<2x2x64x64xbf16>, tensor<2x2x64x1xbf16> -> tensor<2x2x64x64xbf16>
  %14 = tcc.exp %13 : tensor<2x2x64x64xbf16>
  %15 = tcc.reduce_sum %14 {axes = array<i64: 3>, keepdims = true} : tensor<2x2x64x64xbf16> -> tensor<2x2x64x1xbf16>
  %16 = tcc.div %14, %15 : tensor<2x2x64x64xbf16>, tensor<2x2x64x1xbf16> -> tensor<2x2x64x64xbf16>
  %17 = tcc.matmul %16, %8 : tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x2x64x64xbf16>
  return %17 : tensor<2x2x64x64xbf16>
}

// -----

// Q, K and V interleaved per head, [B, L, H, 3·D] (a fused projection
// viewed per head, then split on the last axis): offsets D and 2·D, rows of
// 3·D elements.
// CHECK-LABEL: func.func @main
// CHECK-NEXT: call @k0_chain(%arg0) : (tensor<2x64x2x192xbf16>)
// CHECK-LABEL: func.func private @k0_chain
// CHECK: tcc.attention %arg0, %arg0, %arg0
// CHECK-SAME: k_offset = 64 : i64
// CHECK-SAME: k_strides = array<i64: 24576, 192, 384, 1>
// CHECK-SAME: q_strides = array<i64: 24576, 192, 384, 1>
// CHECK-SAME: v_offset = 128 : i64
func.func @main(%arg0: tensor<2x64x2x192xbf16>) -> (tensor<2x2x64x64xbf16>) attributes {tcc.entry} {
  %0 = tcc.slice %arg0 {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : tensor<2x64x2x192xbf16> -> tensor<2x64x2x64xbf16>
  %1 = tcc.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %2 = tcc.slice %arg0 {starts = array<i64: 0, 0, 0, 64>, steps = array<i64: 1, 1, 1, 1>} : tensor<2x64x2x192xbf16> -> tensor<2x64x2x64xbf16>
  %3 = tcc.transpose %2 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %4 = tcc.slice %arg0 {starts = array<i64: 0, 0, 0, 128>, steps = array<i64: 1, 1, 1, 1>} : tensor<2x64x2x192xbf16> -> tensor<2x64x2x64xbf16>
  %5 = tcc.transpose %4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %6 = tcc.matmul %1, %3 {transpose_b = true} : tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x2x64x64xbf16>
  %7 = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
  %8 = tcc.mul %6, %7 : tensor<2x2x64x64xbf16>, tensor<bf16> -> tensor<2x2x64x64xbf16>
  %9 = tcc.reduce_max %8 {axes = array<i64: 3>, keepdims = true} : tensor<2x2x64x64xbf16> -> tensor<2x2x64x1xbf16>
  %10 = tcc.sub %8, %9 : tensor<2x2x64x64xbf16>, tensor<2x2x64x1xbf16> -> tensor<2x2x64x64xbf16>
  %11 = tcc.exp %10 : tensor<2x2x64x64xbf16>
  %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x2x64x64xbf16> -> tensor<2x2x64x1xbf16>
  %13 = tcc.div %11, %12 : tensor<2x2x64x64xbf16>, tensor<2x2x64x1xbf16> -> tensor<2x2x64x64xbf16>
  %14 = tcc.matmul %13, %5 : tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x2x64x64xbf16>
  return %14 : tensor<2x2x64x64xbf16>
}

// -----

// K's slice also a result of the model: its copy kernel stays for that
// output, and attention still reads through the view (not the copy).
// CHECK-LABEL: func.func @main
// CHECK-DAG: call @k{{[0-9]+}}_elementwise(%arg0)
// CHECK-DAG: call @k{{[0-9]+}}_chain(%arg0)
// CHECK: func.func private @k{{[0-9]+}}_chain(%arg0: tensor<2x64x384xbf16>)
// CHECK-NEXT: tcc.attention %arg0, %arg0, %arg0
// CHECK-SAME: k_offset = 128 : i64
func.func @main(%arg0: tensor<2x64x384xbf16>) -> (tensor<2x2x64x64xbf16>, tensor<2x64x128xbf16>) attributes {tcc.entry} {
  %0 = tcc.slice %arg0 {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
  %1 = tcc.reshape %0 : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %2 = tcc.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %3 = tcc.slice %arg0 {starts = array<i64: 0, 0, 128>, steps = array<i64: 1, 1, 1>} : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
  %4 = tcc.reshape %3 : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %5 = tcc.transpose %4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %6 = tcc.slice %arg0 {starts = array<i64: 0, 0, 256>, steps = array<i64: 1, 1, 1>} : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
  %7 = tcc.reshape %6 : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %8 = tcc.transpose %7 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %9 = tcc.matmul %2, %5 {transpose_b = true} : tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x2x64x64xbf16>
  %10 = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
  %11 = tcc.mul %9, %10 : tensor<2x2x64x64xbf16>, tensor<bf16> -> tensor<2x2x64x64xbf16>
  %12 = tcc.reduce_max %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x2x64x64xbf16> -> tensor<2x2x64x1xbf16>
  %13 = tcc.sub %11, %12 : tensor<2x2x64x64xbf16>, tensor<2x2x64x1xbf16> -> tensor<2x2x64x64xbf16>
  %14 = tcc.exp %13 : tensor<2x2x64x64xbf16>
  %15 = tcc.reduce_sum %14 {axes = array<i64: 3>, keepdims = true} : tensor<2x2x64x64xbf16> -> tensor<2x2x64x1xbf16>
  %16 = tcc.div %14, %15 : tensor<2x2x64x64xbf16>, tensor<2x2x64x1xbf16> -> tensor<2x2x64x64xbf16>
  %17 = tcc.matmul %16, %8 : tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x2x64x64xbf16>
  return %17, %3 : tensor<2x2x64x64xbf16>, tensor<2x64x128xbf16>
}

// -----

// The result transposed back and its heads merged ([B, L, H·D], before an
// output projection): the reshape is a view of the result, which the op
// writes through o_strides (the result type is the merged one; no copy
// kernel after attention).
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[A:.*]] = call @k0_chain(%arg0) : (tensor<2x64x384xbf16>) -> tensor<2x64x128xbf16>
// CHECK-NEXT: return %[[A]]
// CHECK-LABEL: func.func private @k0_chain
// CHECK-NEXT: tcc.attention %arg0, %arg0, %arg0
// CHECK-SAME: o_strides = array<i64: 8192, 64, 128, 1>
// CHECK-SAME: -> tensor<2x64x128xbf16>
func.func @main(%arg0: tensor<2x64x384xbf16>) -> (tensor<2x64x128xbf16>) attributes {tcc.entry} {
  %0 = tcc.slice %arg0 {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
  %1 = tcc.reshape %0 : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %2 = tcc.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %3 = tcc.slice %arg0 {starts = array<i64: 0, 0, 128>, steps = array<i64: 1, 1, 1>} : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
  %4 = tcc.reshape %3 : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %5 = tcc.transpose %4 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %6 = tcc.slice %arg0 {starts = array<i64: 0, 0, 256>, steps = array<i64: 1, 1, 1>} : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
  %7 = tcc.reshape %6 : tensor<2x64x128xbf16> -> tensor<2x64x2x64xbf16>
  %8 = tcc.transpose %7 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
  %9 = tcc.matmul %2, %5 {transpose_b = true} : tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x2x64x64xbf16>
  %10 = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
  %11 = tcc.mul %9, %10 : tensor<2x2x64x64xbf16>, tensor<bf16> -> tensor<2x2x64x64xbf16>
  %12 = tcc.reduce_max %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x2x64x64xbf16> -> tensor<2x2x64x1xbf16>
  %13 = tcc.sub %11, %12 : tensor<2x2x64x64xbf16>, tensor<2x2x64x1xbf16> -> tensor<2x2x64x64xbf16>
  %14 = tcc.exp %13 : tensor<2x2x64x64xbf16>
  %15 = tcc.reduce_sum %14 {axes = array<i64: 3>, keepdims = true} : tensor<2x2x64x64xbf16> -> tensor<2x2x64x1xbf16>
  %16 = tcc.div %14, %15 : tensor<2x2x64x64xbf16>, tensor<2x2x64x1xbf16> -> tensor<2x2x64x64xbf16>
  %17 = tcc.matmul %16, %8 : tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16> -> tensor<2x2x64x64xbf16>
  %18 = tcc.transpose %17 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x64x64xbf16> -> tensor<2x64x2x64xbf16>
  %19 = tcc.reshape %18 : tensor<2x64x2x64xbf16> -> tensor<2x64x128xbf16>
  return %19 : tensor<2x64x128xbf16>
}
