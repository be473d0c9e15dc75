// RUN: tcc-opt %s --split-input-file --verify-diagnostics --tcc-gpu-attention-plan=target=gfx942

// What the AMD path refuses: plans given by hand that it cannot build are
// errors; a chain no schedule fits is left to generic kernels with a
// remark (tcc compile --explain).

func.func @given_mma(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  // expected-error @+1 {{cannot be built: the attention plan names a tensor-core template (mma.sync), which gfx942 does not have: its attention takes the SIMT template}}
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

// minctasm is NVIDIA's.
func.func @given_min_blocks(%q: tensor<1x4x256x64xf32>, %k: tensor<1x4x256x64xf32>, %v: tensor<1x4x256x64xf32>) -> tensor<1x4x256x64xf32> {
  // expected-error @+1 {{cannot be built: SIMT attention schedule: minBlocks (NVIDIA's minctasm) must be 0 on gfx942}}
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = #tcc.simt_attention<blockQ = 64, blockKV = 64, tileRows = 4, tileKeys = 4, splitKV = true, minBlocks = 2, chunkTiles = 0>} -> tensor<1x4x256x64xf32> {
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

// 2 x 8 threads: not even one warp of 32 (a block of 32 is one wave with
// half its lanes; more are whole waves).
func.func @given_16_threads(%q: tensor<1x4x256x64xf16>, %k: tensor<1x4x256x64xf16>, %v: tensor<1x4x256x64xf16>) -> tensor<1x4x256x64xf16> {
  // expected-error @+1 {{cannot be built: SIMT attention schedule: (blockQ / tileRows) x (blockKV / tileKeys) threads must be whole warps (one of 32 threads, or waves of 64), at most 1024}}
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = #tcc.simt_attention<blockQ = 16, blockKV = 32, tileRows = 8, tileKeys = 4, splitKV = true, minBlocks = 0, chunkTiles = 0>} -> tensor<1x4x256x64xf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x64xf16>, tensor<1x4x256x64xf16> -> tensor<1x4x256x256xf16>
    %9 = tcc.reduce_max %5 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xf16> -> tensor<1x4x256x1xf16>
    %10 = tcc.sub %5, %9 : tensor<1x4x256x256xf16>, tensor<1x4x256x1xf16> -> tensor<1x4x256x256xf16>
    %11 = tcc.exp %10 : tensor<1x4x256x256xf16>
    %12 = tcc.reduce_sum %11 {axes = array<i64: 3>, keepdims = true} : tensor<1x4x256x256xf16> -> tensor<1x4x256x1xf16>
    %13 = tcc.div %11, %12 : tensor<1x4x256x256xf16>, tensor<1x4x256x1xf16> -> tensor<1x4x256x256xf16>
    %14 = tcc.matmul %13, %v : tensor<1x4x256x256xf16>, tensor<1x4x256x64xf16> -> tensor<1x4x256x64xf16>
    tcc.yield %14 : tensor<1x4x256x64xf16>
  }
  return %0 : tensor<1x4x256x64xf16>
}
