// RUN: tcc-opt %s --split-input-file --tcc-lower-to-linalg --mlir-print-local-scope | FileCheck %s

// conv2d {nhwc} with groups: the input padded along H and W (axes 1, 2), the
// channels split into [G, C/G] as the innermost axes of the input and of the
// OHWI weight, loops (n, oh, ow, g, f, kh, kw, c) with strides and dilations
// in the input map, f32 accumulation, the bias read along axis 3 in the
// epilogue that rounds to f16.
// CHECK-LABEL: func.func @conv2d
// CHECK-NOT: tcc.
// CHECK: %[[P:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x12x9x4xf16>)
// CHECK: %[[XG:.*]] = tensor.expand_shape %[[P]] {{\[\[}}0], [1], [2], [3, 4]] output_shape [2, 12, 9, 2, 2]
// CHECK: %[[WG:.*]] = tensor.expand_shape %arg1 {{\[\[}}0, 1], [2], [3], [4]] output_shape [2, 3, 3, 3, 2]
// CHECK: %[[ACC:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 * 2 + d5, d2 + d6 * 3, d3, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d5, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[XG]], %[[WG]] : tensor<2x12x9x2x2xf16>, tensor<2x3x3x3x2xf16>) outs(%{{.*}} : tensor<2x5x3x2x3xf32>)
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[ACC]] {{\[\[}}0], [1], [2], [3, 4]] : tensor<2x5x3x2x3xf32> into tensor<2x5x3x6xf32>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], {{.*}} ins(%[[FLAT]], %arg2 : tensor<2x5x3x6xf32>, tensor<6xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @conv2d(%x: tensor<2x9x8x4xf16>, %w: tensor<6x3x3x2xf16>, %b: tensor<6xf16>) -> tensor<2x5x3x6xf16> {
  %0 = tcc.conv2d %x, %w, %b {strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 2, 1>, dilations = array<i64: 1, 3>, groups = 2 : i64, nhwc} : tensor<2x9x8x4xf16>, tensor<6x3x3x2xf16>, tensor<6xf16> -> tensor<2x5x3x6xf16>
  return %0 : tensor<2x5x3x6xf16>
}

// -----

// avg_pool2d {nhwc} with ceil_mode: the window's taps read at output
// indices 1 and 2 (the spatial axes), the divisor from them clipped to the
// input (count_include_pad = false: 5 rows, 6 columns).
// CHECK-LABEL: func.func @avg
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%{{.*}} : tensor<1x3x3x3xf32>)
// CHECK-COUNT-6: arith.addf
// CHECK: linalg.index 1 : index
// CHECK: arith.minsi %{{.*}}, %c5_i64 : i64
// CHECK: linalg.index 2 : index
// CHECK: arith.minsi %{{.*}}, %c6_i64{{.*}} : i64
// CHECK: arith.divf
func.func @avg(%x: tensor<1x5x6x3xf32>) -> tensor<1x3x3x3xf32> {
  %0 = tcc.avg_pool2d %x {kernel = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 0>, ceil_mode = true, count_include_pad = false, nhwc} : tensor<1x5x6x3xf32> -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

// -----

// max_pool2d {nhwc}: the same taps, rows from index 1 (times the stride,
// minus the top pad), maximumf.
// CHECK-LABEL: func.func @max
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x3x3x3xf32>)
// CHECK: %[[OH:.*]] = linalg.index 1 : index
// CHECK: %[[R:.*]] = arith.muli %[[OH]], %c2{{.*}} : index
// CHECK: arith.subi %[[R]], %c1{{.*}} : index
// CHECK-COUNT-6: arith.maximumf
func.func @max(%x: tensor<1x5x6x3xf32>) -> tensor<1x3x3x3xf32> {
  %0 = tcc.max_pool2d %x {kernel = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 0>, ceil_mode = true, nhwc} : tensor<1x5x6x3xf32> -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

// -----

// global_avg_pool2d {nhwc}: an f64 sum over the pixels of axes 1 and 2.
// CHECK-LABEL: func.func @gap
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x1x1x3xbf16>)
// CHECK: scf.for {{.*}} -> (f64)
// CHECK: tensor.extract %arg0
// CHECK: arith.divf %{{.*}}, %{{.*}} : f64
func.func @gap(%x: tensor<2x5x6x3xbf16>) -> tensor<2x1x1x3xbf16> {
  %0 = tcc.global_avg_pool2d %x {nhwc} : tensor<2x5x6x3xbf16> -> tensor<2x1x1x3xbf16>
  return %0 : tensor<2x1x1x3xbf16>
}
