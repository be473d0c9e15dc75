// RUN: tcc-opt %s --pass-pipeline='builtin.module(func.func(tcc-form-chains{unbatched-attention=1 remark-unfused-attention=1}, tcc-gpu-attention-chains, tcc-gpu-attention-plan{target=sm_90}, tcc-form-attention, tcc-form-chains{max-matmul-extent=0}, tcc-chain-fusion{mode=rolling}, tcc-form-groups), tcc-outline-groups)' | FileCheck %s --check-prefix=ROLLING

// Chain fusion (--fusion=rolling) after the op is formed: it reads chains
// only, so attention stays one tcc.attention (the template builds it
// whatever --fusion says) while the softmax beside it is rolled.
// ROLLING-LABEL: func.func private @k0_chain
// ROLLING-NEXT: tcc.attention %arg0, %arg1, %arg2 attributes {{{.*}}tcc.attention_plan = #tcc.mma_attention<{{.*}}>}
// ROLLING-NOT: tcc.matmul
// ROLLING: return
// ROLLING-LABEL: func.func private @k1_chain
// ROLLING-NOT: tcc.attention
// ROLLING: scf.for
func.func @main(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x128x64xbf16>, %v: tensor<1x4x128x64xbf16>, %x: tensor<4x8xf32>) -> (tensor<1x4x128x64xbf16>, tensor<4x8xf32>) attributes {tcc.entry} {
  %c = tcc.constant {value = 1.250000e-01 : bf16} : tensor<bf16>
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x128xbf16>
  %ss = tcc.mul %s, %c : tensor<1x4x128x128xbf16>, tensor<bf16> -> tensor<1x4x128x128xbf16>
  %m = tcc.reduce_max %ss {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
  %d = tcc.sub %ss, %m : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
  %e = tcc.exp %d : tensor<1x4x128x128xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x4x128x128xbf16> -> tensor<1x4x128x1xbf16>
  %p = tcc.div %e, %sum : tensor<1x4x128x128xbf16>, tensor<1x4x128x1xbf16> -> tensor<1x4x128x128xbf16>
  %o = tcc.matmul %p, %v : tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16> -> tensor<1x4x128x64xbf16>
  %xm = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %xd = tcc.sub %x, %xm : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %xe = tcc.exp %xd : tensor<4x8xf32>
  %xs = tcc.reduce_sum %xe {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = tcc.div %xe, %xs : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %o, %y : tensor<1x4x128x64xbf16>, tensor<4x8xf32>
}
