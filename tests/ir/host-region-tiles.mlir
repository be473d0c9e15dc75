// RUN: tcc-opt %s --split-input-file --tcc-host-region-tiles --canonicalize --cse | FileCheck %s

// A 1x1 convolution (4 -> 8 channels, 13x17, bias), a ReLU and a 3x3
// stride-2 pad-1 convolution (-> 7x9) as one region kernel, at the plan's
// 4x4 tile. The last convolution is tiled: loops over rows 0..7 and columns
// 0..9 in steps of 4, a tile of min(4, 7 - i) x min(4, 9 - j) outputs. The
// producers are fused into the tile loop and computed per tile: the 3x3
// stride-2 window of a t-row tile spans 2t + 1 rows of the padded input
// (9 for a full tile, the halo), which tensor.pad's tiling turns into rows
// max(0, 2i - 1) .. of the 13-row image (clamped: min(13 - start, ...)),
// padded with zeros at the border. So the 1x1 convolution, its bias and
// the ReLU run on a slice of %x of that size inside the loop, and only the
// last convolution's tile is inserted into the result. Every per-tile value
// has its own tensor.empty inside the loop (threads share no scratch).
// CHECK-DAG: #[[TH:.*]] = affine_map<(d0) -> (-d0 + 7, 4)>
// CHECK-DAG: #[[TW:.*]] = affine_map<(d0) -> (-d0 + 9, 4)>
// CHECK-DAG: #[[WIN:.*]] = affine_map<(d0) -> (d0 * 2 + 1)>
// CHECK-DAG: #[[START:.*]] = affine_map<(d0) -> (0, d0 * 2 - 1)>
// CHECK-DAG: #[[CLAMPH:.*]] = affine_map<(d0, d1, d2) -> (-d0 + 13, -d1 + d2 * 2 + 1)>
// CHECK-DAG: #[[CLAMPW:.*]] = affine_map<(d0, d1, d2) -> (-d0 + 17, -d1 + d2 * 2 + 1)>
// CHECK-LABEL: func.func private @k0_region
// CHECK-SAME: tcc.region_tiles
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[I:.*]] = %c0 to %c7 step %c4
// CHECK:   scf.for %[[J:.*]] = %c0 to %c9 step %c4
// CHECK:     %[[H:.*]] = affine.min #[[TH]](%[[I]])
// CHECK:     %[[W:.*]] = affine.min #[[TW]](%[[J]])
// CHECK:     affine.apply #[[WIN]](%[[H]])
// CHECK:     affine.apply #[[WIN]](%[[W]])
// CHECK:     %[[R0:.*]] = affine.max #[[START]](%[[I]])
// CHECK:     %[[ROW:.*]] = affine.min #{{.*}}(%[[R0]])
// CHECK:     %[[ROWS:.*]] = affine.min #[[CLAMPH]](%[[ROW]], %{{.*}}, %[[H]])
// CHECK:     %[[NROWS:.*]] = affine.max #{{.*}}(%[[ROWS]])
// CHECK:     %[[C0:.*]] = affine.max #[[START]](%[[J]])
// CHECK:     %[[COL:.*]] = affine.min #{{.*}}(%[[C0]])
// CHECK:     %[[COLS:.*]] = affine.min #[[CLAMPW]](%[[COL]], %{{.*}}, %[[W]])
// CHECK:     %[[NCOLS:.*]] = affine.max #{{.*}}(%[[COLS]])
// CHECK:     scf.if
// CHECK:       tensor.generate
// CHECK:     } else {
// CHECK:       %[[XS:.*]] = tensor.extract_slice %arg0[0, 0, %[[ROW]], %[[COL]]] [1, 4, %[[NROWS]], %[[NCOLS]]] [1, 1, 1, 1] : tensor<1x4x13x17xf32> to tensor<1x4x?x?xf32>
// CHECK:       %[[OWN:.*]] = tensor.empty(%[[NROWS]], %[[NCOLS]]) : tensor<1x8x?x?xf32>
// CHECK:       linalg.fill {{.*}} outs(%[[OWN]]
// CHECK:       linalg.generic {{.*}} ins(%[[XS]], %arg1 : tensor<1x4x?x?xf32>, tensor<8x4x1x1xf32>)
// CHECK:       linalg.generic {{.*}} ins(%{{.*}}, %arg2 : tensor<1x8x?x?xf32>, tensor<8xf32>)
// CHECK:       arith.maximumf
// CHECK:       tensor.pad
// CHECK:     tensor.empty(%[[H]], %[[W]]) : tensor<1x8x?x?xf32>
// CHECK:     linalg.fill
// CHECK:     linalg.generic {{.*}} ins(%{{.*}}, %arg3 : tensor<1x8x?x?xf32>, tensor<8x8x3x3xf32>)
// CHECK:     tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, %[[I]], %[[J]]] [1, 8, %[[H]], %[[W]]]
func.func private @k0_region(%x: tensor<1x4x13x17xf32>, %w1: tensor<8x4x1x1xf32>, %b1: tensor<8xf32>, %w2: tensor<8x8x3x3xf32>) -> tensor<1x8x7x9xf32> attributes {tcc.kernel, tcc.kind = "region"} {
  %0 = tcc.conv2d %x, %w1, %b1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : tensor<1x4x13x17xf32>, tensor<8x4x1x1xf32>, tensor<8xf32> -> tensor<1x8x13x17xf32>
  %1 = tcc.relu %0 : tensor<1x8x13x17xf32>
  %2 = tcc.conv2d %1, %w2 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, tcc.region_plan = #tcc.region_plan<tile = [4, 4], members = 3, predicted_ns = 1, unfused_ns = 2, shared = 3>} : tensor<1x8x13x17xf32>, tensor<8x8x3x3xf32> -> tensor<1x8x7x9xf32>
  return %2 : tensor<1x8x7x9xf32>
}

// -----

// NHWC f16, a depthwise 3x3 convolution, a ReLU6 and a 3x3 max pool with
// stride 2 (pads of -inf, the type's lowest): the pool is the tiled op
// (batch 2 by 1, rows and columns by the default 8x8 tile, channels whole),
// the depthwise convolution is fused into its loop, on an f16 slice of the
// input with all 16 channels, accumulating in f32.
// CHECK-LABEL: func.func private @k1_region
// CHECK: scf.for %[[N:.*]] = %c0 to %c2 step %c1
// CHECK:   scf.for %[[I:.*]] = %c0 to %c9 step %c8
// CHECK:     scf.for %[[J:.*]] = %c0 to %c9 step %c8
// CHECK:       tensor.extract_slice %arg0[%[[N]], %{{.*}}, %{{.*}}, 0] [1, %{{.*}}, %{{.*}}, 16] [1, 1, 1, 1] : tensor<2x17x17x16xf16> to tensor<1x?x?x16xf16>
// CHECK:       linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<1x?x?x16xf16>, tensor<16x3x3x1xf16>) outs(%{{.*}} : tensor<1x?x?x16xf32>)
// CHECK:       arith.truncf
// CHECK:       arith.minimumf
// CHECK:       tensor.pad
// CHECK:       arith.maximumf
// CHECK:       tensor.insert_slice
func.func private @k1_region(%x: tensor<2x17x17x16xf16>, %w: tensor<16x3x3x1xf16>) -> tensor<2x9x9x16xf16> attributes {tcc.kernel, tcc.kind = "region"} {
  %0 = tcc.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 16 : i64, nhwc} : tensor<2x17x17x16xf16>, tensor<16x3x3x1xf16> -> tensor<2x17x17x16xf16>
  %1 = tcc.clamp %0 {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x17x17x16xf16>
  %2 = tcc.max_pool2d %1 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false, nhwc} : tensor<2x17x17x16xf16> -> tensor<2x9x9x16xf16>
  return %2 : tensor<2x9x9x16xf16>
}
