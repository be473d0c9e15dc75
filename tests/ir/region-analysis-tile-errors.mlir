// RUN: not tcc-opt %s --tcc-annotate-regions=tile=0x4 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not tcc-opt %s --tcc-annotate-regions=tile=abc 2>&1 | FileCheck %s --check-prefix=TEXT
// RUN: not tcc-opt %s --tcc-annotate-regions=tile=8x-2 2>&1 | FileCheck %s --check-prefix=NEG

// A tile that is not HxW of positive integers: one line at the function.
// ZERO: error: tcc-annotate-regions: tile '0x4' is not HxW with H and W positive integers
// ZERO-NOT: error:
// TEXT: error: tcc-annotate-regions: tile 'abc' is not HxW with H and W positive integers
// NEG: error: tcc-annotate-regions: tile '8x-2' is not HxW with H and W positive integers
func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}
