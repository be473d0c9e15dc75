// RUN: tcc-opt %s --verify-diagnostics --tcc-gpu-attention-plan=target=host

// The attention templates are NVIDIA's and, the SIMT one alone, AMD's: on
// the host the pass is an error (it refused an mma.sync plan there for
// "more than the 0 KiB of shared memory"). AMD's refusal of this plan:
// gpu-attention-plan-amd-errors.mlir.
// expected-error @+1 {{has no attention templates (NVIDIA, sm_80 and later; AMD gfx90a, gfx942)}}
func.func @given_mma(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
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
