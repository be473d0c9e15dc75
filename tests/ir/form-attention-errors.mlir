// RUN: tcc-opt %s --verify-diagnostics --tcc-form-attention

// A plan on a chain that is not attention (given by hand, or the chain
// changed after planning): an error, never a chain left planned.
func.func @not_attention(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{planned attention chain is not attention: the chain does not end in P·V (or P·V over a sum)}}
  %0 = tcc.chain attributes {axis = 1 : i64, tcc.attention, tcc.attention_plan = #tcc.simt_attention<blockQ = 64, blockKV = 64, tileRows = 4, tileKeys = 4, splitKV = false, minBlocks = 1, chunkTiles = 0>} -> tensor<4x8xf32> {
    %m = tcc.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
    %d = tcc.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    %e = tcc.exp %d : tensor<4x8xf32>
    %s = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
    %y = tcc.div %e, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    tcc.yield %y : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}
