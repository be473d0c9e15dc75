// RUN: tcc-opt %s --split-input-file --tcc-lower-to-linalg --mlir-print-local-scope | FileCheck %s

// conv2d with groups: explicit zero padding (a generic), expand_shape views to the
// grouped layout [N, G, C/G, H, W] x [G, O/G, C/G, KH, KW], one generic with
// strides and dilations in the input map, f32 accumulation, and the bias
// added in the epilogue that rounds to f16.
// CHECK-LABEL: func.func @conv2d
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x9x8xf16>, %[[W:.*]]: tensor<6x2x3x3xf16>, %[[B:.*]]: tensor<6xf16>)
// CHECK-NOT: tcc.
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f16
// CHECK: %[[P:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x12x9xf16>)
// CHECK: tensor.extract %[[X]]
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[ZERO]] : f16
// CHECK: %[[XG:.*]] = tensor.expand_shape %[[P]] {{\[\[}}0], [1, 2], [3], [4]] output_shape [2, 2, 2, 12, 9]
// CHECK: %[[WG:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2], [3], [4]] output_shape [2, 3, 2, 3, 3]
// CHECK: %[[ACC:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6, d4 + d7 * 3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[XG]], %[[WG]] : tensor<2x2x2x12x9xf16>, tensor<2x3x2x3x3xf16>) outs(%{{.*}} : tensor<2x2x3x5x3xf32>)
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[ACC]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<2x2x3x5x3xf32> into tensor<2x6x5x3xf32>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[FLAT]], %[[B]] : tensor<2x6x5x3xf32>, tensor<6xf16>)
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.truncf %[[SUM]] : f32 to f16
func.func @conv2d(%x: tensor<2x4x9x8xf16>, %w: tensor<6x2x3x3xf16>, %b: tensor<6xf16>) -> tensor<2x6x5x3xf16> {
  %0 = tcc.conv2d %x, %w, %b {strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 2, 1>, dilations = array<i64: 1, 3>, groups = 2 : i64} : tensor<2x4x9x8xf16>, tensor<6x2x3x3xf16>, tensor<6xf16> -> tensor<2x6x5x3xf16>
  return %0 : tensor<2x6x5x3xf16>
}

// -----

// conv_transpose2d: the input spaced by the stride (positions off the
// stride grid read as zero) inside a zero border of dilation * (k - 1) plus
// output_padding, then a convolution reading it at y + pad + (k - 1 - kh):
// the flipped kernel.
// CHECK-LABEL: func.func @conv_transpose2d
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x12x12xf32>)
// CHECK: linalg.index 2 : index
// CHECK: %[[REM:.*]] = arith.remsi %{{.*}}, %[[TWO:.*]] : index
// CHECK-NEXT: %[[ON:.*]] = arith.cmpi eq, %[[REM]], %{{.*}} : index
// CHECK-NEXT: arith.andi %{{.*}}, %[[ON]] : i1
// CHECK-NEXT: arith.divsi %{{.*}}, %[[TWO]] : index
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 - d6 + 3, d4 - d7 + 3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>]
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x1x3x8x8xf32> into tensor<1x3x8x8xf32>
func.func @conv_transpose2d(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x3x8x8xf32> {
  %0 = tcc.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32> -> tensor<1x3x8x8xf32>
  return %0 : tensor<1x3x8x8xf32>
}

// -----

// max_pool2d with a small window: one all-parallel generic over the output,
// its 9 taps unrolled, each read from the unpadded input at a clamped index
// and replaced by -inf outside the image (no padded copy, no reduction).
// CHECK-LABEL: func.func @max_pool
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%{{.*}} : tensor<1x2x4x4xf32>)
// CHECK: %[[OH:.*]] = linalg.index 2 : index
// CHECK: %[[OW:.*]] = linalg.index 3 : index
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: %[[X:.*]] = tensor.extract %arg0
// CHECK: %[[V:.*]] = arith.select %{{.*}}, %[[X]], %[[NEGINF]] : f32
// CHECK: arith.maximumf %[[NEGINF]], %[[V]] : f32
// CHECK-COUNT-8: arith.maximumf
// CHECK-NOT: arith.maximumf
// CHECK: linalg.yield
func.func @max_pool(%x: tensor<1x2x7x8xf32>) -> tensor<1x2x4x4xf32> {
  %0 = tcc.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false} : tensor<1x2x7x8xf32> -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

// A window of more than 64 taps is not unrolled: the input padded with the
// lowest value (f8e4m3 has no -inf: -448), which never wins, and an unused
// [KH, KW] operand bounds the window loops of a reduction.
// CHECK-LABEL: func.func @max_pool_f8
// CHECK: %[[LOW:.*]] = arith.constant -4.480000e+02 : f8E4M3FN
// CHECK: %[[P:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x13x13xf8E4M3FN>)
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[LOW]] : f8E4M3FN
// CHECK: %[[WIN:.*]] = tensor.empty() : tensor<9x9xi8>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[P]], %[[WIN]] : tensor<1x1x13x13xf8E4M3FN>, tensor<9x9xi8>)
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
func.func @max_pool_f8(%x: tensor<1x1x11x11xf8E4M3FN>) -> tensor<1x1x3x3xf8E4M3FN> {
  %0 = tcc.max_pool2d %x {kernel = array<i64: 9, 9>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false} : tensor<1x1x11x11xf8E4M3FN> -> tensor<1x1x3x3xf8E4M3FN>
  return %0 : tensor<1x1x3x3xf8E4M3FN>
}

// -----

// avg_pool2d with ceil_mode: the 3x2 taps summed in one generic (zero
// outside the image), then, in the same body, the divisor from the output
// position: the window clipped to the input (count_include_pad = false).
// CHECK-LABEL: func.func @avg_pool
// CHECK-NOT: reduction
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%{{.*}} : tensor<1x2x4x4xf32>)
// CHECK-COUNT-6: arith.addf
// CHECK: %[[OH:.*]] = linalg.index 2 : index
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: %[[OW:.*]] = linalg.index 3 : index
// CHECK: %[[D:.*]] = arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.divf %{{.*}}, %[[D]] : f32
// CHECK-NEXT: linalg.yield
func.func @avg_pool(%x: tensor<1x2x7x8xf32>) -> tensor<1x2x4x4xf32> {
  %0 = tcc.avg_pool2d %x {kernel = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>, ceil_mode = true, count_include_pad = false} : tensor<1x2x7x8xf32> -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

// An avg_pool2d window of 9x8 taps: zero padding and a reduction, then the
// divisor in a generic of its own.
// CHECK-LABEL: func.func @avg_pool_big
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[SUM]] : tensor<1x2x2x2xf32>)
// CHECK: arith.divf
func.func @avg_pool_big(%x: tensor<1x2x11x10xf32>) -> tensor<1x2x2x2xf32> {
  %0 = tcc.avg_pool2d %x {kernel = array<i64: 9, 8>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false, count_include_pad = true} : tensor<1x2x11x10xf32> -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

// -----

// global_avg_pool2d is a mean: its sum accumulates in f64 like reduce_mean.
// A small image (35 pixels): one generic over the output, a loop over the
// pixels in each element.
// CHECK-LABEL: func.func @global_avg_pool
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%{{.*}} : tensor<2x3x1x1xf16>)
// CHECK: %[[S:.*]] = scf.for %{{.*}} = %c0 to %c35 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (f64)
// CHECK: arith.divui
// CHECK: arith.remui
// CHECK: tensor.extract %arg0
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: %[[N:.*]] = arith.constant 3.500000e+01 : f64
// CHECK: %[[M:.*]] = arith.divf %[[S]], %[[N]] : f64
// CHECK: arith.truncf %[[M]] : f64 to f16
func.func @global_avg_pool(%x: tensor<2x3x5x7xf16>) -> tensor<2x3x1x1xf16> {
  %0 = tcc.global_avg_pool2d %x : tensor<2x3x5x7xf16> -> tensor<2x3x1x1xf16>
  return %0 : tensor<2x3x1x1xf16>
}

// -----

// A large image (40x40 = 1600 pixels): a reduction over H and W.
// CHECK-LABEL: func.func @global_avg_pool_big
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<1x3x40x40xf16>) outs(%{{.*}} : tensor<1x3xf64>)
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: tensor.expand_shape
// CHECK: %[[N:.*]] = arith.constant 1.600000e+03 : f64
// CHECK: arith.divf %{{.*}}, %[[N]] : f64
func.func @global_avg_pool_big(%x: tensor<1x3x40x40xf16>) -> tensor<1x3x1x1xf16> {
  %0 = tcc.global_avg_pool2d %x : tensor<1x3x40x40xf16> -> tensor<1x3x1x1xf16>
  return %0 : tensor<1x3x1x1xf16>
}

// -----

// batch_norm: one elementwise generic, per-channel operands read through
// (d1), computed in f32.
// CHECK-LABEL: func.func @batch_norm
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]
// CHECK: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[VE:.*]] = arith.addf %{{.*}}, %[[EPS]] : f32
// CHECK: math.rsqrt %[[VE]] : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @batch_norm(%x: tensor<2x3x4x5xbf16>, %s: tensor<3xbf16>, %b: tensor<3xbf16>, %m: tensor<3xbf16>, %v: tensor<3xbf16>) -> tensor<2x3x4x5xbf16> {
  %0 = tcc.batch_norm %x, %s, %b, %m, %v {eps = 1.0e-5 : f64} : (tensor<2x3x4x5xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>) -> tensor<2x3x4x5xbf16>
  return %0 : tensor<2x3x4x5xbf16>
}
