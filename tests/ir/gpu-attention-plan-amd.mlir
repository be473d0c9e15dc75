// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-plan=target=gfx942 | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-plan=target=gfx90a | FileCheck %s

// AMD targets (64-lane waves, 64 KiB of LDS, no cp.async, no tensor-core
// attention template): every attention chain takes the SIMT template, f32
// and bf16 and f16 alike (16-bit inputs widened to f32 in the copies), with
// no minctasm (minBlocks = 0).

// CHECK-LABEL: func.func @f32_prefill
// CHECK: tcc.attention_plan = #tcc.simt_attention<blockQ = {{[0-9]+}}, blockKV = {{[0-9]+}}, tileRows = {{4|8}}, tileKeys = 4, splitKV = {{true|false}}, minBlocks = 0, chunkTiles = 0>
func.func @f32_prefill(%q: tensor<1x4x256x64xf32>, %k: tensor<1x4x256x64xf32>, %v: tensor<1x4x256x64xf32>) -> tensor<1x4x256x64xf32> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x256x64xf32> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x64xf32>, tensor<1x4x256x64xf32> -> tensor<1x4x256x256xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xf32> -> tensor<1x4x256x1xf32>
    %10 = tcc.sub %5, %9 : tensor<1x4x256x256xf32>, tensor<1x4x256x1xf32> -> tensor<1x4x256x256xf32>
    %11 = tcc.exp %10 : tensor<1x4x256x256xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xf32> -> tensor<1x4x256x1xf32>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xf32>, tensor<1x4x256x1xf32> -> tensor<1x4x256x256xf32>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xf32>, tensor<1x4x256x64xf32> -> tensor<1x4x256x64xf32>
    tcc.yield %14 : tensor<1x4x256x64xf32>
  }
  return %0 : tensor<1x4x256x64xf32>
}

// -----

// bf16 prefill: the SIMT template too (no mma.sync plan on AMD).
// CHECK-LABEL: func.func @bf16_prefill
// CHECK: tcc.attention_plan = #tcc.simt_attention<blockQ = {{[0-9]+}}, blockKV = {{[0-9]+}}, tileRows = {{4|8}}, tileKeys = 4, splitKV = {{true|false}}, minBlocks = 0, chunkTiles = 0>
func.func @bf16_prefill(%q: tensor<1x8x2048x128xbf16>, %k: tensor<1x8x2048x128xbf16>, %v: tensor<1x8x2048x128xbf16>) -> tensor<1x8x2048x128xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x8x2048x128xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x8x2048x128xbf16>, tensor<1x8x2048x128xbf16> -> tensor<1x8x2048x2048xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x2048x2048xbf16> -> tensor<1x8x2048x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x8x2048x2048xbf16>, tensor<1x8x2048x1xbf16> -> tensor<1x8x2048x2048xbf16>
    %11 = tcc.exp %10 : tensor<1x8x2048x2048xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x2048x2048xbf16> -> tensor<1x8x2048x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x8x2048x2048xbf16>, tensor<1x8x2048x1xbf16> -> tensor<1x8x2048x2048xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x8x2048x2048xbf16>, tensor<1x8x2048x128xbf16> -> tensor<1x8x2048x128xbf16>
    tcc.yield %14 : tensor<1x8x2048x128xbf16>
  }
  return %0 : tensor<1x8x2048x128xbf16>
}

// -----

// One f16 query row against 4096 keys: the SIMT split-K pair (chunks of
// key tiles).
// CHECK-LABEL: func.func @f16_decode
// CHECK: tcc.attention_plan = #tcc.simt_attention<blockQ = 16, blockKV = {{[0-9]+}}, tileRows = 4, tileKeys = 4, splitKV = {{true|false}}, minBlocks = 0, chunkTiles = {{[1-9][0-9]*}}>
func.func @f16_decode(%q: tensor<1x4x1x128xf16>, %k: tensor<1x4x4096x128xf16>, %v: tensor<1x4x4096x128xf16>) -> tensor<1x4x1x128xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x1x128xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x1x128xf16>, tensor<1x4x4096x128xf16> -> tensor<1x4x1x4096xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x1x4096xf16> -> tensor<1x4x1x1xf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x1x4096xf16>, tensor<1x4x1x1xf16> -> tensor<1x4x1x4096xf16>
    %11 = tcc.exp %10 : tensor<1x4x1x4096xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x1x4096xf16> -> tensor<1x4x1x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x1x4096xf16>, tensor<1x4x1x1xf16> -> tensor<1x4x1x4096xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x1x4096xf16>, tensor<1x4x4096x128xf16> -> tensor<1x4x1x128xf16>
    tcc.yield %14 : tensor<1x4x1x128xf16>
  }
  return %0 : tensor<1x4x1x128xf16>
}

// -----

// A SIMT plan given by hand that the target builds (8 x 8 threads: one
// wave) is kept.
// CHECK-LABEL: func.func @given_simt
// CHECK: tcc.attention_plan = #tcc.simt_attention<blockQ = 64, blockKV = 32, tileRows = 8, tileKeys = 4, splitKV = true, minBlocks = 0, chunkTiles = 0>
func.func @given_simt(%q: tensor<1x2x300x64xbf16>, %k: tensor<1x2x300x64xbf16>, %v: tensor<1x2x300x64xbf16>) -> tensor<1x2x300x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = #tcc.simt_attention<blockQ = 64, blockKV = 32, tileRows = 8, tileKeys = 4, splitKV = true, minBlocks = 0, chunkTiles = 0>} -> tensor<1x2x300x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x300x64xbf16>, tensor<1x2x300x64xbf16> -> tensor<1x2x300x300xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x2x300x300xbf16> -> tensor<1x2x300x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x2x300x300xbf16>, tensor<1x2x300x1xbf16> -> tensor<1x2x300x300xbf16>
    %11 = tcc.exp %10 : tensor<1x2x300x300xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x2x300x300xbf16> -> tensor<1x2x300x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x2x300x300xbf16>, tensor<1x2x300x1xbf16> -> tensor<1x2x300x300xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x2x300x300xbf16>, tensor<1x2x300x64xbf16> -> tensor<1x2x300x64xbf16>
    tcc.yield %14 : tensor<1x2x300x64xbf16>
  }
  return %0 : tensor<1x2x300x64xbf16>
}

// -----

// Head dim 256: rows of 1 KiB in f32 (LDS holds f32) fit 16 x 32 tiles
// alone, 32 threads: one wave with half its lanes.
// CHECK-LABEL: func.func @head_256
// CHECK: tcc.attention_plan = #tcc.simt_attention<blockQ = 16, blockKV = 32, tileRows = 4, tileKeys = 4, splitKV = false, minBlocks = 0, chunkTiles = 0>
func.func @head_256(%q: tensor<1x2x200x256xbf16>, %k: tensor<1x2x200x256xbf16>, %v: tensor<1x2x200x256xbf16>) -> tensor<1x2x200x256xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x2x200x256xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x200x256xbf16>, tensor<1x2x200x256xbf16> -> tensor<1x2x200x200xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x2x200x200xbf16> -> tensor<1x2x200x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x2x200x200xbf16>, tensor<1x2x200x1xbf16> -> tensor<1x2x200x200xbf16>
    %11 = tcc.exp %10 : tensor<1x2x200x200xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x2x200x200xbf16> -> tensor<1x2x200x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x2x200x200xbf16>, tensor<1x2x200x1xbf16> -> tensor<1x2x200x200xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x2x200x200xbf16>, tensor<1x2x200x256xbf16> -> tensor<1x2x200x256xbf16>
    tcc.yield %14 : tensor<1x2x200x256xbf16>
  }
  return %0 : tensor<1x2x200x256xbf16>
}

// -----

// K given transposed ([.., D, Lk]): its copies scatter 4 keys of one d at
// a time into K's rows.
// CHECK-LABEL: func.func @k_transposed
// CHECK: tcc.attention_plan = #tcc.simt_attention<
func.func @k_transposed(%q: tensor<1x2x200x64xbf16>, %kt: tensor<1x2x64x200xbf16>, %v: tensor<1x2x200x64xbf16>) -> tensor<1x2x200x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x2x200x64xbf16> {
    %5 = tcc.matmul %q, %kt : tensor<1x2x200x64xbf16>, tensor<1x2x64x200xbf16> -> tensor<1x2x200x200xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x2x200x200xbf16> -> tensor<1x2x200x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x2x200x200xbf16>, tensor<1x2x200x1xbf16> -> tensor<1x2x200x200xbf16>
    %11 = tcc.exp %10 : tensor<1x2x200x200xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x2x200x200xbf16> -> tensor<1x2x200x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x2x200x200xbf16>, tensor<1x2x200x1xbf16> -> tensor<1x2x200x200xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x2x200x200xbf16>, tensor<1x2x200x64xbf16> -> tensor<1x2x200x64xbf16>
    tcc.yield %14 : tensor<1x2x200x64xbf16>
  }
  return %0 : tensor<1x2x200x64xbf16>
}
