// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-plan=target=sm_90a | FileCheck %s --check-prefixes=CHECK,SM90A
// RUN: tcc-opt %s --split-input-file --tcc-gpu-attention-plan=target=sm_90 | FileCheck %s --check-prefixes=CHECK,SM90

// The template and schedule of each chain marked tcc.attention, as a typed
// attribute: wgmma on sm_90a for head size 64 (8 warps' worth of rows in
// two consumer warpgroups fed by a producer warpgroup; unmasked, so the
// softmax of a key tile overlaps P V of the one before, over 3 stages),
// mma.sync on sm_90.
// CHECK-LABEL: func.func @prefill_d64
// SM90A: tcc.attention_plan = #tcc.wgmma_attention<warpgroups = 2, blockKV = 128, stages = 3, overlap = true, producer = true, pingpong = false, tma = true>
// SM90: tcc.attention_plan = #tcc.mma_attention<blockQ = {{[0-9]+}}, blockKV = {{[0-9]+}}, warps = {{[0-9]+}}, stages = {{[0-9]+}}>
func.func @prefill_d64(%q: tensor<1x4x512x64xbf16>, %k: tensor<1x4x512x64xbf16>, %v: tensor<1x4x512x64xbf16>) -> tensor<1x4x512x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x512x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x512x64xbf16>, tensor<1x4x512x64xbf16> -> tensor<1x4x512x512xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x512x512xbf16> -> tensor<1x4x512x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x512x512xbf16>, tensor<1x4x512x1xbf16> -> tensor<1x4x512x512xbf16>
    %11 = tcc.exp %10 : tensor<1x4x512x512xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x512x512xbf16> -> tensor<1x4x512x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x512x512xbf16>, tensor<1x4x512x1xbf16> -> tensor<1x4x512x512xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x512x512xbf16>, tensor<1x4x512x64xbf16> -> tensor<1x4x512x64xbf16>
    tcc.yield %14 : tensor<1x4x512x64xbf16>
  }
  return %0 : tensor<1x4x512x64xbf16>
}

// -----

// Head size 96: wgmma takes 64 and 128 only, mma.sync on both targets.
// CHECK-LABEL: func.func @prefill_d96
// CHECK: tcc.attention_plan = #tcc.mma_attention<
func.func @prefill_d96(%q: tensor<1x4x512x96xf16>, %k: tensor<1x4x512x96xf16>, %v: tensor<1x4x512x96xf16>) -> tensor<1x4x512x96xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x512x96xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x512x96xf16>, tensor<1x4x512x96xf16> -> tensor<1x4x512x512xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x512x512xf16> -> tensor<1x4x512x1xf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x512x512xf16>, tensor<1x4x512x1xf16> -> tensor<1x4x512x512xf16>
    %11 = tcc.exp %10 : tensor<1x4x512x512xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x512x512xf16> -> tensor<1x4x512x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x512x512xf16>, tensor<1x4x512x1xf16> -> tensor<1x4x512x512xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x512x512xf16>, tensor<1x4x512x96xf16> -> tensor<1x4x512x96xf16>
    tcc.yield %14 : tensor<1x4x512x96xf16>
  }
  return %0 : tensor<1x4x512x96xf16>
}

// -----

// One query row against 2048 keys: the split-K decode pair.
// CHECK-LABEL: func.func @decode
// CHECK: tcc.attention_plan = #tcc.mma_decode<blockKV = {{[0-9]+}}, warps = {{[0-9]+}}, stages = {{[0-9]+}}, chunkTiles = {{[1-9][0-9]*}}>
func.func @decode(%q: tensor<1x4x1x128xbf16>, %k: tensor<1x4x2048x128xbf16>, %v: tensor<1x4x2048x128xbf16>) -> tensor<1x4x1x128xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x1x128xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x1x128xbf16>, tensor<1x4x2048x128xbf16> -> tensor<1x4x1x2048xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x1x2048xbf16> -> tensor<1x4x1x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x1x2048xbf16>, tensor<1x4x1x1xbf16> -> tensor<1x4x1x2048xbf16>
    %11 = tcc.exp %10 : tensor<1x4x1x2048xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x1x2048xbf16> -> tensor<1x4x1x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x1x2048xbf16>, tensor<1x4x1x1xbf16> -> tensor<1x4x1x2048xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x1x2048xbf16>, tensor<1x4x2048x128xbf16> -> tensor<1x4x1x128xbf16>
    tcc.yield %14 : tensor<1x4x1x128xbf16>
  }
  return %0 : tensor<1x4x1x128xbf16>
}

// -----

// 8 x 32 (batch, head) pairs fill a wave of the H200's 132 multiprocessors
// (two blocks each): one chunk of all 32 key tiles, no combine.
// CHECK-LABEL: func.func @decode_wide
// CHECK: tcc.attention_plan = #tcc.mma_decode<blockKV = 64, warps = 4, stages = 3, chunkTiles = 32>
func.func @decode_wide(%q: tensor<8x32x1x128xbf16>, %k: tensor<8x32x2048x128xbf16>, %v: tensor<8x32x2048x128xbf16>) -> tensor<8x32x1x128xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<8x32x1x128xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<8x32x1x128xbf16>, tensor<8x32x2048x128xbf16> -> tensor<8x32x1x2048xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<8x32x1x2048xbf16> -> tensor<8x32x1x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<8x32x1x2048xbf16>, tensor<8x32x1x1xbf16> -> tensor<8x32x1x2048xbf16>
    %11 = tcc.exp %10 : tensor<8x32x1x2048xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<8x32x1x2048xbf16> -> tensor<8x32x1x1xbf16>
    %13 = tcc.div %11, %12 : tensor<8x32x1x2048xbf16>, tensor<8x32x1x1xbf16> -> tensor<8x32x1x2048xbf16>
    %14 = tcc.matmul %13, %v : tensor<8x32x1x2048xbf16>, tensor<8x32x2048x128xbf16> -> tensor<8x32x1x128xbf16>
    tcc.yield %14 : tensor<8x32x1x128xbf16>
  }
  return %0 : tensor<8x32x1x128xbf16>
}

// -----

// f32 prefill: the mma.sync template as 3xTF32 on both targets (wgmma
// takes 16-bit operands); 8 query tiles, so 64-row blocks of 4 warps.
// CHECK-LABEL: func.func @f32
// CHECK: tcc.attention_plan = #tcc.mma_attention<blockQ = 64, blockKV = 32, warps = 4, stages = 3>
func.func @f32(%q: tensor<1x4x256x64xf32>, %k: tensor<1x4x256x64xf32>, %v: tensor<1x4x256x64xf32>) -> tensor<1x4x256x64xf32> {
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

// f32 with K given transposed (which ldmatrix cannot read as tf32: the SIMT
// template) at head size 192 with few query rows: 16 x 128 tiles of 218 KiB
// of shared memory, so one block a multiprocessor, and minctasm asks for no
// more (4 blocks' 128 registers would buy nothing and cost the score
// blocks of 8 their registers).
// CHECK-LABEL: func.func @f32_shared_bound
// CHECK: tcc.attention_plan = #tcc.simt_attention<blockQ = 16, blockKV = 128, tileRows = 4, tileKeys = 4, splitKV = true, minBlocks = 1, chunkTiles = 0
func.func @f32_shared_bound(%q: tensor<2x4x448x192xf32>, %k: tensor<2x4x192x269xf32>, %v: tensor<2x4x269x192xf32>) -> tensor<2x4x448x192xf32> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<2x4x448x192xf32> {
    %5 = tcc.matmul %q, %k : tensor<2x4x448x192xf32>, tensor<2x4x192x269xf32> -> tensor<2x4x448x269xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x448x269xf32> -> tensor<2x4x448x1xf32>
    %10 = tcc.sub %5, %9 : tensor<2x4x448x269xf32>, tensor<2x4x448x1xf32> -> tensor<2x4x448x269xf32>
    %11 = tcc.exp %10 : tensor<2x4x448x269xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<2x4x448x269xf32> -> tensor<2x4x448x1xf32>
    %13 = tcc.div %11, %12 : tensor<2x4x448x269xf32>, tensor<2x4x448x1xf32> -> tensor<2x4x448x269xf32>
    %14 = tcc.matmul %13, %v : tensor<2x4x448x269xf32>, tensor<2x4x269x192xf32> -> tensor<2x4x448x192xf32>
    tcc.yield %14 : tensor<2x4x448x192xf32>
  }
  return %0 : tensor<2x4x448x192xf32>
}

// -----

// f32 with K given transposed (the SIMT template) at head size 128 with
// enough query tiles for one 128-row block per multiprocessor: 8 x 4
// register tiles, 256 threads (1.14x 4 x 4's speed).
// CHECK-LABEL: func.func @f32_wide
// CHECK: tcc.attention_plan = #tcc.simt_attention<blockQ = 128, blockKV = 64, tileRows = 8, tileKeys = 4, splitKV = {{true|false}}, minBlocks = {{[0-9]+}}, chunkTiles = 0
func.func @f32_wide(%q: tensor<1x32x4096x128xf32>, %k: tensor<1x32x128x4096xf32>, %v: tensor<1x32x4096x128xf32>) -> tensor<1x32x4096x128xf32> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x32x4096x128xf32> {
    %5 = tcc.matmul %q, %k : tensor<1x32x4096x128xf32>, tensor<1x32x128x4096xf32> -> tensor<1x32x4096x4096xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x32x4096x4096xf32> -> tensor<1x32x4096x1xf32>
    %10 = tcc.sub %5, %9 : tensor<1x32x4096x4096xf32>, tensor<1x32x4096x1xf32> -> tensor<1x32x4096x4096xf32>
    %11 = tcc.exp %10 : tensor<1x32x4096x4096xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x32x4096x4096xf32> -> tensor<1x32x4096x1xf32>
    %13 = tcc.div %11, %12 : tensor<1x32x4096x4096xf32>, tensor<1x32x4096x1xf32> -> tensor<1x32x4096x4096xf32>
    %14 = tcc.matmul %13, %v : tensor<1x32x4096x4096xf32>, tensor<1x32x4096x128xf32> -> tensor<1x32x4096x128xf32>
    tcc.yield %14 : tensor<1x32x4096x128xf32>
  }
  return %0 : tensor<1x32x4096x128xf32>
}

// -----

// The same with the 4 x 4 register tile given by hand: checked and kept.
// CHECK-LABEL: func.func @f32_given_4x4
// CHECK: tcc.attention_plan = #tcc.simt_attention<blockQ = 128, blockKV = 64, tileRows = 4, tileKeys = 4, splitKV = {{true|false}}, minBlocks = {{[0-9]+}}, chunkTiles = 0
func.func @f32_given_4x4(%q: tensor<1x32x4096x128xf32>, %k: tensor<1x32x4096x128xf32>, %v: tensor<1x32x4096x128xf32>) -> tensor<1x32x4096x128xf32> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = #tcc.simt_attention<blockQ = 128, blockKV = 64, tileRows = 4, tileKeys = 4, splitKV = true, minBlocks = 1, chunkTiles = 0>} -> tensor<1x32x4096x128xf32> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x32x4096x128xf32>, tensor<1x32x4096x128xf32> -> tensor<1x32x4096x4096xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x32x4096x4096xf32> -> tensor<1x32x4096x1xf32>
    %10 = tcc.sub %5, %9 : tensor<1x32x4096x4096xf32>, tensor<1x32x4096x1xf32> -> tensor<1x32x4096x4096xf32>
    %11 = tcc.exp %10 : tensor<1x32x4096x4096xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x32x4096x4096xf32> -> tensor<1x32x4096x1xf32>
    %13 = tcc.div %11, %12 : tensor<1x32x4096x4096xf32>, tensor<1x32x4096x1xf32> -> tensor<1x32x4096x4096xf32>
    %14 = tcc.matmul %13, %v : tensor<1x32x4096x4096xf32>, tensor<1x32x4096x128xf32> -> tensor<1x32x4096x128xf32>
    tcc.yield %14 : tensor<1x32x4096x128xf32>
  }
  return %0 : tensor<1x32x4096x128xf32>
}

// -----

// A chain not marked tcc.attention gets no plan.
// CHECK-LABEL: func.func @unmarked
// CHECK-NOT: tcc.attention_plan
// CHECK: return
func.func @unmarked(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, foo} -> tensor<1x4x128x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %11 = tcc.exp %10 : tensor<1x4x128x128xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16>
    tcc.yield %14 : tensor<1x4x128x64xbf16>
  }
  return %0 : tensor<1x4x128x64xbf16>
}

// -----

// A plan given by hand is checked, not replaced: mma.sync with 64-row
// blocks of 4 warps is kept on both targets.
// CHECK-LABEL: func.func @given
// CHECK: tcc.attention_plan = #tcc.mma_attention<blockQ = 64, blockKV = 64, warps = 4, stages = 2>
func.func @given(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = #tcc.mma_attention<blockQ = 64, blockKV = 64, warps = 4, stages = 2>} -> tensor<1x4x256x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x256xbf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x256x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x64xbf16>
    tcc.yield %14 : tensor<1x4x256x64xbf16>
  }
  return %0 : tensor<1x4x256x64xbf16>
}


// -----

// A causal mask, written without a scale (scale 1, no score code): the
// overlapped loop in ping-pong (keys last to first: the mask on the first
// tile only).
// CHECK-LABEL: func.func @causal_d128
// SM90A: tcc.attention_plan = #tcc.wgmma_attention<warpgroups = 2, blockKV = 128, stages = 3, overlap = true, producer = true, pingpong = true, tma = true>
// SM90: tcc.attention_plan = #tcc.mma_attention<
func.func @causal_d128(%q: tensor<1x4x256x128xbf16>, %k: tensor<1x4x256x128xbf16>, %v: tensor<1x4x256x128xbf16>) -> tensor<1x4x256x128xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x256x128xbf16> {
    %2 = tcc.iota {axis = 0 : i64} : tensor<256x256xi32>
    %3 = tcc.iota {axis = 1 : i64} : tensor<256x256xi32>
    %4 = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x128xbf16>, tensor<1x4x256x128xbf16> -> tensor<1x4x256x256xbf16>
    %7 = tcc.greater_equal %2, %3 : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi1>
    %8 = tcc.select %7, %5, %4 : tensor<256x256xi1>, tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %9 = tcc.reduce_max %8 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %10 = tcc.sub %8, %9 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x256x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x128xbf16> -> tensor<1x4x256x128xbf16>
    tcc.yield %14 : tensor<1x4x256x128xbf16>
  }
  return %0 : tensor<1x4x256x128xbf16>
}

// -----

// A sliding window (keys bounded from below too): the producer's simple
// loop, which measured faster there than the overlapped one.
// CHECK-LABEL: func.func @window_d128
// SM90A: tcc.attention_plan = #tcc.wgmma_attention<warpgroups = 2, blockKV = 128, stages = 2, overlap = false, producer = true, pingpong = false, tma = true>
func.func @window_d128(%q: tensor<1x4x256x128xbf16>, %k: tensor<1x4x256x128xbf16>, %v: tensor<1x4x256x128xbf16>) -> tensor<1x4x256x128xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x256x128xbf16> {
    %2 = tcc.iota {axis = 0 : i64} : tensor<256x256xi32>
    %3 = tcc.iota {axis = 1 : i64} : tensor<256x256xi32>
    %4 = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x128xbf16>, tensor<1x4x256x128xbf16> -> tensor<1x4x256x256xbf16>
    %c = tcc.constant {value = 64 : i32} : tensor<i32>
    %w = tcc.sub %2, %c : tensor<256x256xi32>, tensor<i32> -> tensor<256x256xi32>
    %l = tcc.greater %3, %w : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi1>
    %u = tcc.greater_equal %2, %3 : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi1>
    %7 = tcc.and %u, %l : tensor<256x256xi1>, tensor<256x256xi1> -> tensor<256x256xi1>
    %8 = tcc.select %7, %5, %4 : tensor<256x256xi1>, tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %9 = tcc.reduce_max %8 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %10 = tcc.sub %8, %9 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x256x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x128xbf16> -> tensor<1x4x256x128xbf16>
    tcc.yield %14 : tensor<1x4x256x128xbf16>
  }
  return %0 : tensor<1x4x256x128xbf16>
}

// -----

// A score change (a softcap) under a causal mask: the keys are taken last to
// first, which leaves every tile but the first kept whole, so the
// overlapped loop needs no mask there and runs in ping-pong.
// CHECK-LABEL: func.func @softcap_causal_d128
// SM90A: tcc.attention_plan = #tcc.wgmma_attention<warpgroups = 2, blockKV = 128, stages = 3, overlap = true, producer = true, pingpong = true, tma = true>
func.func @softcap_causal_d128(%q: tensor<1x4x256x128xbf16>, %k: tensor<1x4x256x128xbf16>, %v: tensor<1x4x256x128xbf16>) -> tensor<1x4x256x128xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x256x128xbf16> {
    %2 = tcc.iota {axis = 0 : i64} : tensor<256x256xi32>
    %3 = tcc.iota {axis = 1 : i64} : tensor<256x256xi32>
    %4 = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x128xbf16>, tensor<1x4x256x128xbf16> -> tensor<1x4x256x256xbf16>
    %t = tcc.tanh %5 : tensor<1x4x256x256xbf16>
    %7 = tcc.greater_equal %2, %3 : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi1>
    %8 = tcc.select %7, %t, %4 : tensor<256x256xi1>, tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %9 = tcc.reduce_max %8 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %10 = tcc.sub %8, %9 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x256x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x128xbf16> -> tensor<1x4x256x128xbf16>
    tcc.yield %14 : tensor<1x4x256x128xbf16>
  }
  return %0 : tensor<1x4x256x128xbf16>
}

// -----

// The same softcap under a bottom-right causal mask (keys up to q + 700)
// whose partial keys span two key tiles of a block: reversal cannot confine
// the mask to one tile, so the producer's simple loop (masking only the
// partial tiles, with a branch).
// CHECK-LABEL: func.func @softcap_offset_causal
// SM90A: tcc.attention_plan = #tcc.wgmma_attention<warpgroups = 2, blockKV = 128, stages = 2, overlap = false, producer = true, pingpong = false, tma = true>
func.func @softcap_offset_causal(%q: tensor<1x4x300x128xbf16>, %k: tensor<1x4x1000x128xbf16>, %v: tensor<1x4x1000x128xbf16>) -> tensor<1x4x300x128xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x300x128xbf16> {
    %2 = tcc.iota {axis = 0 : i64} : tensor<300x1000xi32>
    %3 = tcc.iota {axis = 1 : i64} : tensor<300x1000xi32>
    %c = tcc.constant {value = 700 : i32} : tensor<i32>
    %qo = tcc.add %2, %c : tensor<300x1000xi32>, tensor<i32> -> tensor<300x1000xi32>
    %4 = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x300x128xbf16>, tensor<1x4x1000x128xbf16> -> tensor<1x4x300x1000xbf16>
    %t = tcc.tanh %5 : tensor<1x4x300x1000xbf16>
    %7 = tcc.greater_equal %qo, %3 : tensor<300x1000xi32>, tensor<300x1000xi32> -> tensor<300x1000xi1>
    %8 = tcc.select %7, %t, %4 : tensor<300x1000xi1>, tensor<1x4x300x1000xbf16>, tensor<bf16> -> tensor<1x4x300x1000xbf16>
    %9 = tcc.reduce_max %8 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x300x1000xbf16> -> tensor<1x4x300x1xbf16>
    %10 = tcc.sub %8, %9 : tensor<1x4x300x1000xbf16>, tensor<1x4x300x1xbf16> -> tensor<1x4x300x1000xbf16>
    %11 = tcc.exp %10 : tensor<1x4x300x1000xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x300x1000xbf16> -> tensor<1x4x300x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x300x1000xbf16>, tensor<1x4x300x1xbf16> -> tensor<1x4x300x1000xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x300x1000xbf16>, tensor<1x4x1000x128xbf16> -> tensor<1x4x300x128xbf16>
    tcc.yield %14 : tensor<1x4x300x128xbf16>
  }
  return %0 : tensor<1x4x300x128xbf16>
}

// -----

// K given transposed ([B, H, D, Lk]): the producer copies it by TMA too,
// boxes of 64 keys by D rows (its tiles take V's layout).
// CHECK-LABEL: func.func @kt_producer
// SM90A: tcc.attention_plan = #tcc.wgmma_attention<warpgroups = 2, blockKV = 128, stages = 3, overlap = true, producer = true, pingpong = false, tma = true>
func.func @kt_producer(%q: tensor<1x4x128x64xbf16>, %kt: tensor<1x4x64x256xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x128x64xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x128x64xbf16> {
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

// Heavy score code (a softcap, ALiBi from positions with per-head slopes
// and a key bias, under a causal mask: 12 ops or more a score) keeps the
// producer's simple loop: beside the overlapped loop's two live score tiles
// such code spilled (ptxas, 168 registers).
// CHECK-LABEL: func.func @heavy_score_causal_d128
// SM90A: tcc.attention_plan = #tcc.wgmma_attention<warpgroups = 2, blockKV = 128, stages = 2, overlap = false, producer = true, pingpong = false, tma = true>
func.func @heavy_score_causal_d128(%q: tensor<1x4x256x128xbf16>, %k: tensor<1x4x256x128xbf16>, %v: tensor<1x4x256x128xbf16>, %slopes: tensor<1x4x1x1xbf16>, %kb: tensor<1x1x1x256xbf16>) -> tensor<1x4x256x128xbf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x256x128xbf16> {
    %2 = tcc.iota {axis = 0 : i64} : tensor<256x256xi32>
    %3 = tcc.iota {axis = 1 : i64} : tensor<256x256xi32>
    %4 = tcc.constant {value = -1.0e+30 : bf16} : tensor<bf16>
    %c30 = tcc.constant {value = 3.0e+01 : bf16} : tensor<bf16>
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x128xbf16>, tensor<1x4x256x128xbf16> -> tensor<1x4x256x256xbf16>
    %d = tcc.div %5, %c30 : tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %t = tcc.tanh %d : tensor<1x4x256x256xbf16>
    %sc = tcc.mul %t, %c30 : tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %rel = tcc.sub %3, %2 : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi32>
    %relf = tcc.cast %rel {to = bf16} : tensor<256x256xi32> -> tensor<256x256xbf16>
    %al = tcc.mul %relf, %slopes : tensor<256x256xbf16>, tensor<1x4x1x1xbf16> -> tensor<1x4x256x256xbf16>
    %s1 = tcc.add %sc, %al : tensor<1x4x256x256xbf16>, tensor<1x4x256x256xbf16> -> tensor<1x4x256x256xbf16>
    %s2 = tcc.add %s1, %kb : tensor<1x4x256x256xbf16>, tensor<1x1x1x256xbf16> -> tensor<1x4x256x256xbf16>
    %7 = tcc.greater_equal %2, %3 : tensor<256x256xi32>, tensor<256x256xi32> -> tensor<256x256xi1>
    %8 = tcc.select %7, %s2, %4 : tensor<256x256xi1>, tensor<1x4x256x256xbf16>, tensor<bf16> -> tensor<1x4x256x256xbf16>
    %9 = tcc.reduce_max %8 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %10 = tcc.sub %8, %9 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %11 = tcc.exp %10 : tensor<1x4x256x256xbf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xbf16> -> tensor<1x4x256x1xbf16>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xbf16>, tensor<1x4x256x1xbf16> -> tensor<1x4x256x256xbf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x128xbf16> -> tensor<1x4x256x128xbf16>
    tcc.yield %14 : tensor<1x4x256x128xbf16>
  }
  return %0 : tensor<1x4x256x128xbf16>
}

// -----

// f32 decode shapes (bound by memory) keep the SIMT template's split-K
// pair, in true f32.
// CHECK-LABEL: func.func @f32_decode
// CHECK: tcc.attention_plan = #tcc.simt_attention<blockQ = 16, blockKV = {{[0-9]+}}, tileRows = 4, tileKeys = 4, splitKV = {{true|false}}, minBlocks = {{[0-9]+}}, chunkTiles = {{[1-9][0-9]*}}>
func.func @f32_decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x8x2048x64xf32>, %v: tensor<1x8x2048x64xf32>) -> tensor<1x8x1x64xf32> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x8x1x64xf32> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x8x1x64xf32>, tensor<1x8x2048x64xf32> -> tensor<1x8x1x2048xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x1x2048xf32> -> tensor<1x8x1x1xf32>
    %10 = tcc.sub %5, %9 : tensor<1x8x1x2048xf32>, tensor<1x8x1x1xf32> -> tensor<1x8x1x2048xf32>
    %11 = tcc.exp %10 : tensor<1x8x1x2048xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x8x1x2048xf32> -> tensor<1x8x1x1xf32>
    %13 = tcc.div %11, %12 : tensor<1x8x1x2048xf32>, tensor<1x8x1x1xf32> -> tensor<1x8x1x2048xf32>
    %14 = tcc.matmul %13, %v : tensor<1x8x1x2048xf32>, tensor<1x8x2048x64xf32> -> tensor<1x8x1x64xf32>
    tcc.yield %14 : tensor<1x8x1x64xf32>
  }
  return %0 : tensor<1x8x1x64xf32>
}

// -----

// f32 prefill on tensor cores as 3xTF32 (the mma.sync template): a plan
// given by hand (16-key tiles, not the heuristic's 32) is checked and kept.
// CHECK-LABEL: func.func @f32_tf32x3
// CHECK: tcc.attention_plan = #tcc.mma_attention<blockQ = 128, blockKV = 16, warps = 8, stages = 2>
func.func @f32_tf32x3(%q: tensor<1x32x4096x128xf32>, %k: tensor<1x32x4096x128xf32>, %v: tensor<1x32x4096x128xf32>) -> tensor<1x32x4096x128xf32> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = #tcc.mma_attention<blockQ = 128, blockKV = 16, warps = 8, stages = 2>} -> tensor<1x32x4096x128xf32> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x32x4096x128xf32>, tensor<1x32x4096x128xf32> -> tensor<1x32x4096x4096xf32>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x32x4096x4096xf32> -> tensor<1x32x4096x1xf32>
    %10 = tcc.sub %5, %9 : tensor<1x32x4096x4096xf32>, tensor<1x32x4096x1xf32> -> tensor<1x32x4096x4096xf32>
    %11 = tcc.exp %10 : tensor<1x32x4096x4096xf32>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x32x4096x4096xf32> -> tensor<1x32x4096x1xf32>
    %13 = tcc.div %11, %12 : tensor<1x32x4096x4096xf32>, tensor<1x32x4096x1xf32> -> tensor<1x32x4096x4096xf32>
    %14 = tcc.matmul %13, %v : tensor<1x32x4096x4096xf32>, tensor<1x32x4096x128xf32> -> tensor<1x32x4096x128xf32>
    tcc.yield %14 : tensor<1x32x4096x128xf32>
  }
  return %0 : tensor<1x32x4096x128xf32>
}

// -----

// V of another head size (64 under scores over 128): wgmma on sm_90a (Q
// and K read from shared memory whatever their head size; V's sets O's
// accumulators), mma.sync on sm_90.
// CHECK-LABEL: func.func @prefill_value_dim
// SM90A: tcc.attention_plan = #tcc.wgmma_attention<warpgroups = 2, blockKV = 128, stages = 3, overlap = true, producer = true, pingpong = false, tma = true>
// SM90: tcc.attention_plan = #tcc.mma_attention<
func.func @prefill_value_dim(%q: tensor<1x4x512x128xf16>, %k: tensor<1x4x512x128xf16>, %v: tensor<1x4x512x64xf16>) -> tensor<1x4x512x64xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x512x64xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x512x128xf16>, tensor<1x4x512x128xf16> -> tensor<1x4x512x512xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x512x512xf16> -> tensor<1x4x512x1xf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x512x512xf16>, tensor<1x4x512x1xf16> -> tensor<1x4x512x512xf16>
    %11 = tcc.exp %10 : tensor<1x4x512x512xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x512x512xf16> -> tensor<1x4x512x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x512x512xf16>, tensor<1x4x512x1xf16> -> tensor<1x4x512x512xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x512x512xf16>, tensor<1x4x512x64xf16> -> tensor<1x4x512x64xf16>
    tcc.yield %14 : tensor<1x4x512x64xf16>
  }
  return %0 : tensor<1x4x512x64xf16>
}

// -----

// DeepSeek's MLA (scores over 192, values of 128): three stages of 128-key
// K and V tiles (80 KiB each) and Q (48 KiB) overflow the 227 KiB, so the
// producer's simple loop over 2 stages (measured faster than the overlapped
// loop over 64-key tiles).
// CHECK-LABEL: func.func @prefill_mla
// SM90A: tcc.attention_plan = #tcc.wgmma_attention<warpgroups = 2, blockKV = 128, stages = 2, overlap = false, producer = true, pingpong = false, tma = true>
// SM90: tcc.attention_plan = #tcc.mma_attention<
func.func @prefill_mla(%q: tensor<1x4x512x192xf16>, %k: tensor<1x4x512x192xf16>, %v: tensor<1x4x512x128xf16>) -> tensor<1x4x512x128xf16> {
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention} -> tensor<1x4x512x128xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x512x192xf16>, tensor<1x4x512x192xf16> -> tensor<1x4x512x512xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x512x512xf16> -> tensor<1x4x512x1xf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x512x512xf16>, tensor<1x4x512x1xf16> -> tensor<1x4x512x512xf16>
    %11 = tcc.exp %10 : tensor<1x4x512x512xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x512x512xf16> -> tensor<1x4x512x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x512x512xf16>, tensor<1x4x512x1xf16> -> tensor<1x4x512x512xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x512x512xf16>, tensor<1x4x512x128xf16> -> tensor<1x4x512x128xf16>
    tcc.yield %14 : tensor<1x4x512x128xf16>
  }
  return %0 : tensor<1x4x512x128xf16>
}
