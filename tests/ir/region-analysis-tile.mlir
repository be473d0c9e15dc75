// RUN: tcc-opt %s --tcc-annotate-regions=tile=16x16 | FileCheck %s --check-prefix=WHOLE
// RUN: tcc-opt %s --tcc-annotate-regions=tile=4x16 | FileCheck %s --check-prefix=ROWS

// Clamping at the image edge: two 3x3 pad-1 convs on 1x4x6x6; per element
// 2 * 4 * 9 = 72, flops 4 * 36 * 72 = 10368 each.
//
// Tile 16x16, larger than the image: one tile; the second conv's out
// min(16, 6) = 6, in min(5 + 3, 6) = 6, halo max(0, 6 - 6) = 0; the first
// conv the same. executed 1 * 36 * 4 * 72 = 10368: nothing recomputed.
// WHOLE: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [6, 6], in = [6, 6], halo = [0, 0], flops = 10368, executed = 10368>
// WHOLE: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [6, 6], in = [6, 6], halo = [0, 0], flops = 10368, executed = 10368>
//
// Tile 4x16: ceil(6 / 4) * ceil(6 / 16) = 2 tiles. Second conv: out [4, 6],
// in [3 + 3, min(8, 6)] = [6, 6], halo [6 - 4, 0] = [2, 0], executed
// 2 * 24 * 4 * 72 = 13824 (the edge tile counted whole). First conv: out
// [6, 6] clamped, in [6, 6], halo [0, 0], executed 2 * 36 * 4 * 72 = 20736.
// ROWS: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [6, 6], in = [6, 6], halo = [0, 0], flops = 10368, executed = 20736>
// ROWS: tcc.conv2d {{.*}}tcc.region = #tcc.region_tile<out = [4, 6], in = [6, 6], halo = [2, 0], flops = 10368, executed = 13824>
func.func @edge(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  %1 = tcc.conv2d %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_group = 0 : i64} : tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  return %1 : tensor<1x4x6x6xf32>
}
