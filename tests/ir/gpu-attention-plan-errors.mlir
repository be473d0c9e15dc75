// RUN: tcc-opt %s --split-input-file --verify-diagnostics --tcc-gpu-attention-plan=target=sm_90

// A plan given by hand that the target cannot build is an error, not
// replaced: wgmma on sm_90.
func.func @given_wgmma(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  // expected-error @+1 {{cannot be built: the wgmma attention template needs a target with wgmma (sm_90a)}}
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = #tcc.wgmma_attention<warpgroups = 2, blockKV = 128, stages = 2, overlap = false, producer = false, pingpong = false, tma = false>} -> tensor<1x4x256x64xbf16> {
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

// A schedule the template refuses (48-row blocks of 4 warps).
func.func @bad_schedule(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  // expected-error @+1 {{cannot be built: attention schedule: blockQ, blockKV and warps must be powers of two}}
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = #tcc.mma_attention<blockQ = 48, blockKV = 64, warps = 4, stages = 2>} -> tensor<1x4x256x64xbf16> {
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

// A block size whose shared bytes would overflow: bounded first.
func.func @huge(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  // expected-error @+1 {{cannot be built: attention schedule: blockQ and blockKV must be <= 1024}}
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = #tcc.mma_attention<blockQ = 4611686018427387904, blockKV = 64, warps = 4, stages = 2>} -> tensor<1x4x256x64xbf16> {
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

// An attribute of another kind.
func.func @not_a_plan(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  // expected-error @+1 {{cannot be built: the attention plan is not one of the attention templates}}
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = "mma"} -> tensor<1x4x256x64xbf16> {
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

// A plan on a chain that is not attention (no softmax): an error, not
// kept for GpuCodegen to drop.
func.func @not_attention(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  // expected-error @+1 {{cannot be built: P is not normalised by a sum}}
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention, tcc.attention_plan = #tcc.mma_attention<blockQ = 64, blockKV = 64, warps = 4, stages = 2>} -> tensor<1x4x256x64xbf16> {
    %5 = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x256xbf16>
    %14 = tcc.matmul %5, %v : tensor<1x4x256x256xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x256x64xbf16>
    tcc.yield %14 : tensor<1x4x256x64xbf16>
  }
  return %0 : tensor<1x4x256x64xbf16>
}

// -----

// A plan on a chain tcc-gpu-attention-chains did not mark.
func.func @unmarked(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  // expected-error @+1 {{on a chain not marked tcc.attention}}
  %0 = tcc.chain attributes {axis = 3 : i64, tcc.attention_plan = #tcc.mma_attention<blockQ = 64, blockKV = 64, warps = 4, stages = 2>} -> tensor<1x4x256x64xbf16> {
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
