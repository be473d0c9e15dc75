// RUN: tcc-opt %s --split-input-file --verify-diagnostics --tcc-form-chains='unbatched-attention=1 remark-unfused-attention=1' | FileCheck %s
// RUN: sed 's/expected-remark.*//' %s | tcc-opt --split-input-file --tcc-form-chains 2>&1 | FileCheck %s --check-prefix=QUIET

// Attention whose head size is over max-matmul-extent (256, the largest
// the attention templates take) keeps Q·Kᵀ and P·V out of its chain (GEMM
// kernels); with remark-unfused-attention (tcc compile on GPU targets that
// fuse attention) a remark at P·V says why, for --explain. Without the
// option (host, GPU without attention templates) nothing is said.
// QUIET-NOT: remark

// -----

// CHECK-LABEL: func.func @head320
// CHECK: tcc.matmul
// CHECK: tcc.chain
// CHECK-NOT: tcc.matmul
// CHECK: tcc.yield
// CHECK: tcc.matmul
func.func @head320(%q: tensor<1x2x64x320xbf16>, %k: tensor<1x2x64x320xbf16>, %v: tensor<1x2x64x320xbf16>) -> tensor<1x2x64x320xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x320xbf16>, tensor<1x2x64x320xbf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %s, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %p = tcc.div %e, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  // expected-remark @below {{attention not fused: head size 320 is over 256, the largest the attention templates take}}
  %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x320xbf16> -> tensor<1x2x64x320xbf16>
  return %o : tensor<1x2x64x320xbf16>
}

// -----

// Head size 256: both matmuls join the chain, no remark.
// CHECK-LABEL: func.func @head256
// CHECK-NEXT: tcc.chain
// CHECK: tcc.matmul
// CHECK: tcc.matmul
// CHECK: tcc.yield
func.func @head256(%q: tensor<1x2x64x256xbf16>, %k: tensor<1x2x64x256xbf16>, %v: tensor<1x2x64x256xbf16>) -> tensor<1x2x64x256xbf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<1x2x64x256xbf16>, tensor<1x2x64x256xbf16> -> tensor<1x2x64x64xbf16>
  %m = tcc.reduce_max %s {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %d = tcc.sub %s, %m : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %e = tcc.exp %d : tensor<1x2x64x64xbf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 3>, keepdims = true} : tensor<1x2x64x64xbf16> -> tensor<1x2x64x1xbf16>
  %p = tcc.div %e, %sum : tensor<1x2x64x64xbf16>, tensor<1x2x64x1xbf16> -> tensor<1x2x64x64xbf16>
  %o = tcc.matmul %p, %v : tensor<1x2x64x64xbf16>, tensor<1x2x64x256xbf16> -> tensor<1x2x64x256xbf16>
  return %o : tensor<1x2x64x256xbf16>
}

// -----

// Single-head attention ([L, D]) of head size 512, normalised after P·V:
// the remark is at P·V too.
// CHECK-LABEL: func.func @single_head512
// CHECK: tcc.matmul
// CHECK: tcc.chain
// CHECK-NOT: tcc.matmul
// CHECK: tcc.yield
// CHECK: tcc.matmul
func.func @single_head512(%q: tensor<64x512xf16>, %k: tensor<64x512xf16>, %v: tensor<64x512xf16>) -> tensor<64x512xf16> {
  %s = tcc.matmul %q, %k {transpose_b = true} : tensor<64x512xf16>, tensor<64x512xf16> -> tensor<64x64xf16>
  %m = tcc.reduce_max %s {axes = array<i64: 1>, keepdims = true} : tensor<64x64xf16> -> tensor<64x1xf16>
  %d = tcc.sub %s, %m : tensor<64x64xf16>, tensor<64x1xf16> -> tensor<64x64xf16>
  %e = tcc.exp %d : tensor<64x64xf16>
  %sum = tcc.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<64x64xf16> -> tensor<64x1xf16>
  // expected-remark @below {{attention not fused: head size 512 is over 256, the largest the attention templates take}}
  %o = tcc.matmul %e, %v : tensor<64x64xf16>, tensor<64x512xf16> -> tensor<64x512xf16>
  %r = tcc.div %o, %sum : tensor<64x512xf16>, tensor<64x1xf16> -> tensor<64x512xf16>
  return %r : tensor<64x512xf16>
}

// -----

// A softmax before a linear layer whose output is wider than 256: no
// attention (the weight is shared by every row), no remark.
// CHECK-LABEL: func.func @linear
// CHECK: tcc.chain
// CHECK: tcc.yield
// CHECK: tcc.matmul
func.func @linear(%x: tensor<2x64x64xf32>, %w: tensor<64x512xf32>) -> tensor<2x64x512xf32> {
  %m = tcc.reduce_max %x {axes = array<i64: 2>, keepdims = true} : tensor<2x64x64xf32> -> tensor<2x64x1xf32>
  %d = tcc.sub %x, %m : tensor<2x64x64xf32>, tensor<2x64x1xf32> -> tensor<2x64x64xf32>
  %e = tcc.exp %d : tensor<2x64x64xf32>
  %sum = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : tensor<2x64x64xf32> -> tensor<2x64x1xf32>
  %p = tcc.div %e, %sum : tensor<2x64x64xf32>, tensor<2x64x1xf32> -> tensor<2x64x64xf32>
  %o = tcc.matmul %p, %w : tensor<2x64x64xf32>, tensor<64x512xf32> -> tensor<2x64x512xf32>
  return %o : tensor<2x64x512xf32>
}
