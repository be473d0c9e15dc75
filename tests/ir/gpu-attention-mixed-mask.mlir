// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-chains --tcc-gpu-attention-plan=target=sm_90 --tcc-form-attention | FileCheck %s --check-prefix=FORM

// A causal mask and a padding mask made one condition (as Hugging Face
// builds its 4-D mask): tcc-gpu-attention-chains splits the select in two
// (splitMixedMasks), the positions outside (linear constraints, tiles
// skipped at compile time) and the padding mask inside (a key mask, tiles
// skipped at run time), so nothing is left as score code.
// CHECK-LABEL: func.func @causal_and_padding
// CHECK: tcc.chain attributes {axis = 3 : i64, tcc.attention}
// CHECK-NOT: tcc.and
// CHECK: %[[IN:.*]] = tcc.select %arg3, %{{.*}}, %{{.*}} : tensor<2x1x1x128xi1>, tensor<2x4x128x128xf16>, tensor<f16>
// CHECK: tcc.select %{{.*}}, %[[IN]], %{{.*}} : tensor<128x128xi1>, tensor<2x4x128x128xf16>, tensor<f16>
// FORM-LABEL: func.func @causal_and_padding
// FORM: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<2x1x1x128xi1>) attributes {{.*}}key_mask_alone{{.*}}mask = array<i64: 1, -1, 0>{{.*}}scale = 1.250000e-01 : f64
func.func @causal_and_padding(%q: tensor<2x4x128x64xf16>, %k: tensor<2x4x128x64xf16>, %v: tensor<2x4x128x64xf16>, %pad: tensor<2x1x1x128xi1>) -> tensor<2x4x128x64xf16> {
  %r = tcc.iota {axis = 0 : i64} : tensor<128x128xi32>
  %c = tcc.iota {axis = 1 : i64} : tensor<128x128xi32>
  %causal = tcc.greater_equal %r, %c : tensor<128x128xi32>, tensor<128x128xi32> -> tensor<128x128xi1>
  %keep = tcc.and %causal, %pad : tensor<128x128xi1>, tensor<2x1x1x128xi1> -> tensor<2x1x128x128xi1>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x128x64xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x128x64xf16>, tensor<2x4x128x64xf16> -> tensor<2x4x128x128xf16>
    %s = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %6 = tcc.mul %5, %s : tensor<2x4x128x128xf16>, tensor<f16> -> tensor<2x4x128x128xf16>
    %ninf = tcc.constant {value = 0xFC00 : f16} : tensor<f16>
    %7 = tcc.select %keep, %6, %ninf : tensor<2x1x128x128xi1>, tensor<2x4x128x128xf16>, tensor<f16> -> tensor<2x4x128x128xf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x128xf16> -> tensor<2x4x128x1xf16>
    %10 = tcc.sub %7, %9 : tensor<2x4x128x128xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x128xf16>
    %11 = tcc.exp %10 : tensor<2x4x128x128xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x128xf16> -> tensor<2x4x128x1xf16>
    %13 = tcc.div %11, %12 : tensor<2x4x128x128xf16>, tensor<2x4x128x1xf16> -> tensor<2x4x128x128xf16>
    %14 = tcc.matmul %13, %v : tensor<2x4x128x128xf16>, tensor<2x4x128x64xf16> -> tensor<2x4x128x64xf16>
    tcc.yield %14 : tensor<2x4x128x64xf16>
  }
  return %0 : tensor<2x4x128x64xf16>
}

// -----

// A causal mask, then a sliding window in a select of its own: both are
// the mask's linear constraints (q - k >= 0 and k - q + 63 >= 0), taken
// from two selects as one conjunction; no score code.
// FORM-LABEL: func.func @causal_then_window
// FORM: tcc.attention %arg0, %arg1, %arg2 attributes {{.*}}mask = array<i64: 1, -1, 0, -1, 1, 63>{{.*}}scale = 1.250000e-01 : f64
// FORM-NEXT: } key_keep {
func.func @causal_then_window(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x256x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x256xbf16>
    %s = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %6 = tcc.mul %5, %s : tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %r = tcc.iota {axis = 0 : i64} : tensor<256x256xi32>
    %c = tcc.iota {axis = 1 : i64} : tensor<256x256xi32>
    %causal = tcc.greater_equal %r, %c : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi1>
    %ninf = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
    %7 = tcc.select %causal, %6, %ninf : tensor<256x256xi1>, tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %d = tcc.sub %r, %c : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi32>
    %w = tcc.constant {value = 64 : i32} : tensor<i32>
    %near = tcc.less %d, %w : tensor<256x256xi32>, tensor<i32> -> tensor<256x256xi1>
    %big = tcc.constant {value = -1.0e30 : bf16} : tensor<bf16>
    %8 = tcc.select %near, %7, %big : tensor<256x256xi1>, tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %9 = tcc.reduce_max %8 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %10 = tcc.sub %8, %9 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x256x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x64xbf16>
    tcc.yield %14 : tensor<1x4x256x64xbf16>
  }
  return %0 : tensor<1x4x256x64xbf16>
}

// -----

// A causal mask with f16's lowest value, -65504 (torch.finfo(f16).min, as
// Hugging Face masks in f16): a mask of positions like -inf's (every row
// keeps a key, beside which exp(-65504 - max) is 0), not score code.
// FORM-LABEL: func.func @causal_f16_lowest
// FORM: tcc.attention %arg0, %arg1, %arg2 attributes {{.*}}mask = array<i64: 1, -1, 0>{{.*}}scale = 1.250000e-01 : f64
// FORM-NEXT: } key_keep {
func.func @causal_f16_lowest(%q: tensor<1x4x128x64xf16>, %k: tensor<1x4x128x64xf16>, %v: tensor<1x4x128x64xf16>) -> tensor<1x4x128x64xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16> -> tensor<1x4x128x128xf16>
    %s = tcc.constant {value = 1.250000e-01 : f16} : tensor<f16>
    %6 = tcc.mul %5, %s : tensor<1x4x128x128xf16>, tensor<f16> -> tensor<1x4x128x128xf16>
    %r = tcc.iota {axis = 0 : i64} : tensor<128x128xi32>
    %c = tcc.iota {axis = 1 : i64} : tensor<128x128xi32>
    %causal = tcc.greater_equal %r, %c : tensor<128x128xi32>, tensor<128x128xi32> -> tensor<128x128xi1>
    %low = tcc.constant {value = -6.550400e+04 : f16} : tensor<f16>
    %7 = tcc.select %causal, %6, %low : tensor<128x128xi1>, tensor<1x4x128x128xf16>, tensor<f16> -> tensor<1x4x128x128xf16>
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

// The same with -1e30: split too, but the padding select, finite, is no
// key mask and stays score code, so the causal one may not become
// constraints (a row whose causal keys the padding all drops averages V
// over every key in the model, -1e30 everywhere): both stay score code.
// FORM-LABEL: func.func @causal_and_padding_finite
// FORM: tcc.attention %arg0, %arg1, %arg2 captures(%arg3 : tensor<2x1x1x128xi1>) attributes {batch = 2 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, tcc.attention_plan
func.func @causal_and_padding_finite(%q: tensor<2x4x128x64xbf16>, %k: tensor<2x4x128x64xbf16>, %v: tensor<2x4x128x64xbf16>, %pad: tensor<2x1x1x128xi1>) -> tensor<2x4x128x64xbf16> {
  %r = tcc.iota {axis = 0 : i64} : tensor<128x128xi32>
  %c = tcc.iota {axis = 1 : i64} : tensor<128x128xi32>
  %causal = tcc.greater_equal %r, %c : tensor<128x128xi32>, tensor<128x128xi32> -> tensor<128x128xi1>
  %keep = tcc.and %causal, %pad : tensor<128x128xi1>, tensor<2x1x1x128xi1> -> tensor<2x1x128x128xi1>
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<2x4x128x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16> -> tensor<2x4x128x128xbf16>
    %s = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %6 = tcc.mul %5, %s : tensor<2x4x128x128xbf16>, tensor<bf16> -> tensor<2x4x128x128xbf16>
    %big = tcc.constant {value = -1.0e30 : bf16} : tensor<bf16>
    %7 = tcc.select %keep, %6, %big : tensor<2x1x128x128xi1>, tensor<2x4x128x128xbf16>, tensor<bf16> -> tensor<2x4x128x128xbf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x128xbf16> -> tensor<2x4x128x1xbf16>
    %10 = tcc.sub %7, %9 : tensor<2x4x128x128xbf16>, tensor<2x4x128x1xbf16> -> tensor<2x4x128x128xbf16>
    %11 = tcc.exp %10 : tensor<2x4x128x128xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x128x128xbf16> -> tensor<2x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<2x4x128x128xbf16>, tensor<2x4x128x1xbf16> -> tensor<2x4x128x128xbf16>
    %14 = tcc.matmul %13, %v : tensor<2x4x128x128xbf16>, tensor<2x4x128x64xbf16> -> tensor<2x4x128x64xbf16>
    tcc.yield %14 : tensor<2x4x128x64xbf16>
  }
  return %0 : tensor<2x4x128x64xbf16>
}

// -----

// A select of positions that would empty a row (col > row: the last row
// keeps nothing) is no mask and stays score code, -inf; a finite mask
// after it (col <= row, -1e30) is then not taken either: in row 0 the
// model averages V over keys 1.. (-1e30 beats -inf), which constraints
// keeping key 0 alone would not.
// FORM-LABEL: func.func @rejected_infinite_then_finite
// FORM: tcc.attention %arg0, %arg1, %arg2 attributes {batch = 1 : i64, head_dim = 64 : i64, heads = 4 : i64, kv_heads = 4 : i64, lk = 128 : i64, lq = 128 : i64, masked_to_infinity, tcc.attention_plan
func.func @rejected_infinite_then_finite(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
    %r = tcc.iota {axis = 0 : i64} : tensor<128x128xi32>
    %c = tcc.iota {axis = 1 : i64} : tensor<128x128xi32>
    %future = tcc.greater %c, %r : tensor<128x128xi32>, tensor<128x128xi32> -> tensor<128x128xi1>
    %ninf = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
    %6 = tcc.select %future, %5, %ninf : tensor<128x128xi1>, tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %past = tcc.less_equal %c, %r : tensor<128x128xi32>, tensor<128x128xi32> -> tensor<128x128xi1>
    %big = tcc.constant {value = -1.0e30 : bf16} : tensor<bf16>
    %7 = tcc.select %past, %6, %big : tensor<128x128xi1>, tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %7, %9 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x128xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// A causal mask written as the keys to drop, where(col > row, -inf, s) (how
// masked_fill exports): tcc-gpu-attention-chains turns it into
// select(not(col > row), s, -inf) (keepFormMasks), which the match takes as
// the linear constraint q - k >= 0: tiles skipped, no score code.
// CHECK-LABEL: func.func @causal_as_dropped
// CHECK: %[[DROP:.*]] = tcc.greater
// CHECK: %[[KEEP:.*]] = tcc.not %[[DROP]]
// CHECK: tcc.select %[[KEEP]], %{{.*}}, %{{.*}} : tensor<256x256xi1>, tensor<1x4x256x256xbf16>, tensor<bf16>
// FORM-LABEL: func.func @causal_as_dropped
// FORM: tcc.attention %arg0, %arg1, %arg2 attributes {{.*}}mask = array<i64: 1, -1, 0>, scale = 1.250000e-01 : f64
// FORM-NEXT: } key_keep {
func.func @causal_as_dropped(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x256x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x256xbf16>
    %s = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %6 = tcc.mul %5, %s : tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %r = tcc.iota {axis = 0 : i64} : tensor<256x256xi32>
    %c = tcc.iota {axis = 1 : i64} : tensor<256x256xi32>
    %drop = tcc.greater %c, %r : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi1>
    %ninf = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
    %7 = tcc.select %drop, %ninf, %6 : tensor<256x256xi1>, tensor<bf16>, tensor<1x4x256x256xbf16> -> tensor<1x4x256x256xbf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %10 = tcc.sub %7, %9 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x256x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x64xbf16>
    tcc.yield %14 : tensor<1x4x256x64xbf16>
  }
  return %0 : tensor<1x4x256x64xbf16>
}

// -----

// masked_fill of a keep mask as exported, where(not(keep), -inf, s):
// keepFormMasks selects on `keep` itself, a linear constraint.
// CHECK-LABEL: func.func @causal_fill_of_keep
// CHECK: %[[KEEP:.*]] = tcc.greater_equal
// CHECK: tcc.select %[[KEEP]], %{{.*}}, %{{.*}} : tensor<256x256xi1>, tensor<1x4x256x256xbf16>, tensor<bf16>
// FORM-LABEL: func.func @causal_fill_of_keep
// FORM: tcc.attention %arg0, %arg1, %arg2 attributes {{.*}}mask = array<i64: 1, -1, 0>, scale = 1.250000e-01 : f64
// FORM-NEXT: } key_keep {
func.func @causal_fill_of_keep(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x256x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x256xbf16>
    %s = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %6 = tcc.mul %5, %s : tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %r = tcc.iota {axis = 0 : i64} : tensor<256x256xi32>
    %c = tcc.iota {axis = 1 : i64} : tensor<256x256xi32>
    %ninf = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
    %keep = tcc.greater_equal %r, %c : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi1>
    %drop = tcc.not %keep : tensor<256x256xi1>
    %7 = tcc.select %drop, %ninf, %6 : tensor<256x256xi1>, tensor<bf16>, tensor<1x4x256x256xbf16> -> tensor<1x4x256x256xbf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %10 = tcc.sub %7, %9 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x256x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x64xbf16>
    tcc.yield %14 : tensor<1x4x256x64xbf16>
  }
  return %0 : tensor<1x4x256x64xbf16>
}

// -----

// A double negation and a negated or (a sliding window written as the
// keys it drops, not(k > q or q - k >= 64)) are the same linear
// constraints: q - k >= 0 and k - q + 63 >= 0.
// FORM-LABEL: func.func @window_negated_or
// FORM: tcc.attention %arg0, %arg1, %arg2 attributes {{.*}}mask = array<i64: 1, -1, 0, -1, 1, 63>, scale = 1.250000e-01 : f64
// FORM-NEXT: } key_keep {
func.func @window_negated_or(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64} -> tensor<1x4x256x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x256xbf16>
    %s = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
    %6 = tcc.mul %5, %s : tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %r = tcc.iota {axis = 0 : i64} : tensor<256x256xi32>
    %c = tcc.iota {axis = 1 : i64} : tensor<256x256xi32>
    %ninf = tcc.constant {value = 0xFF80 : bf16} : tensor<bf16>
    %future = tcc.greater %c, %r : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi1>
    %dist = tcc.sub %r, %c : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi32>
    %w = tcc.constant {value = 64 : i32} : tensor<i32>
    %far = tcc.greater_equal %dist, %w : tensor<256x256xi32>, tensor<i32> -> tensor<256x256xi1>
    %drop = tcc.or %future, %far : tensor<256x256xi1>, tensor<256x256xi1> -> tensor<256x256xi1>
    %keep = tcc.not %drop : tensor<256x256xi1>
    %keep2 = tcc.not %keep : tensor<256x256xi1>
    %keep3 = tcc.not %keep2 : tensor<256x256xi1>
    %7 = tcc.select %keep3, %6, %ninf : tensor<256x256xi1>, tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %9 = tcc.reduce_max %7 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %10 = tcc.sub %7, %9 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x256x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x64xbf16>
    tcc.yield %14 : tensor<1x4x256x64xbf16>
  }
  return %0 : tensor<1x4x256x64xbf16>
}
