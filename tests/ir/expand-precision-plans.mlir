// RUN: tcc-opt %s --split-input-file --tcc-expand-precision-plans | FileCheck %s

// Two precisions over a 2 x 2 tile grid of a 100 x 70 output (edge tiles
// partial). bf16 is unscaled: the operands rounded and multiplied. f8E4M3FN
// is scaled: A's largest magnitude per row, then per block of 64 rows
// (padded to 128, 2 blocks, spread back over the 100 rows), over 448 (1
// where a block is all zeros); B's per column block likewise; the rounded
// operands multiplied in f32 and the scales multiplied back, rows then
// columns. Each tile picks its precision's result by its code.
// CHECK-LABEL: func.func @two
// CHECK: %[[A:.*]] = tcc.cast %arg0 : tensor<100x64xbf16> -> tensor<100x64xf32>
// CHECK: %[[B:.*]] = tcc.cast %arg1 : tensor<64x70xbf16> -> tensor<64x70xf32>
// CHECK: %[[BF:.*]] = tcc.matmul {{.*}} : tensor<100x64xbf16>, tensor<64x70xbf16> -> tensor<100x70xf32>
// CHECK: %[[AABS:.*]] = tcc.abs %[[A]]
// CHECK: tcc.reduce_max %[[AABS]] {axes = array<i64: 1>, keepdims = true} : tensor<100x64xf32> -> tensor<100x1xf32>
// CHECK: tcc.pad {{.*}} {pads = array<i64: 0, 28>, {{.*}}} : tensor<100xf32> -> tensor<128xf32>
// CHECK: tcc.reduce_max {{.*}} {axes = array<i64: 1>, keepdims = true} : tensor<2x64xf32> -> tensor<2x1xf32>
// CHECK: tcc.broadcast_to {{.*}} : tensor<2x1xf32> -> tensor<2x64xf32>
// CHECK: tcc.slice {{.*}} : tensor<128xf32> -> tensor<100xf32>
// CHECK: %[[QMAX:.*]] = tcc.constant {value = 4.480000e+02 : f32}
// CHECK: %[[SAD:.*]] = tcc.div %{{.*}}, %[[QMAX]] : tensor<100x1xf32>
// CHECK: %[[SA:.*]] = tcc.select %{{.*}}, %[[SAD]], %{{.*}} : tensor<100x1xi1>, tensor<100x1xf32>, tensor<f32> -> tensor<100x1xf32>
// CHECK: %[[BABS:.*]] = tcc.abs %[[B]]
// CHECK: tcc.reduce_max %[[BABS]] {axes = array<i64: 0>, keepdims = true} : tensor<64x70xf32> -> tensor<1x70xf32>
// CHECK: %[[SB:.*]] = tcc.select {{.*}} -> tensor<1x70xf32>
// CHECK: %[[AQ:.*]] = tcc.div %[[A]], %[[SA]] : tensor<100x64xf32>, tensor<100x1xf32> -> tensor<100x64xf32>
// CHECK: %[[BQ:.*]] = tcc.div %[[B]], %[[SB]] : tensor<64x70xf32>, tensor<1x70xf32> -> tensor<64x70xf32>
// CHECK: %[[A8:.*]] = tcc.cast %[[AQ]] : tensor<100x64xf32> -> tensor<100x64xf8E4M3FN>
// CHECK: %[[B8:.*]] = tcc.cast %[[BQ]] : tensor<64x70xf32> -> tensor<64x70xf8E4M3FN>
// CHECK: %[[P8:.*]] = tcc.matmul %[[A8]], %[[B8]] : tensor<100x64xf8E4M3FN>, tensor<64x70xf8E4M3FN> -> tensor<100x70xf32>
// CHECK: %[[R8:.*]] = tcc.mul %[[P8]], %[[SA]]
// CHECK: %[[C8:.*]] = tcc.mul %[[R8]], %[[SB]]
// CHECK: %[[CR:.*]] = tcc.reshape %arg2 : tensor<2x2xi8> -> tensor<2x1x2x1xi8>
// CHECK: tcc.broadcast_to %[[CR]] : tensor<2x1x2x1xi8> -> tensor<2x64x2x64xi8>
// CHECK: %[[CODES:.*]] = tcc.slice {{.*}} : tensor<128x128xi8> -> tensor<100x70xi8>
// CHECK: %[[ZERO:.*]] = tcc.constant {value = 0 : i8} : tensor<i8>
// CHECK: %[[IS0:.*]] = tcc.equal %[[CODES]], %[[ZERO]]
// CHECK: %[[SEL:.*]] = tcc.select %[[IS0]], %[[BF]], %[[C8]]
// CHECK: %[[OUT:.*]] = tcc.cast %[[SEL]] : tensor<100x70xf32> -> tensor<100x70xbf16>
// CHECK: return %[[OUT]]
func.func @two(%a: tensor<100x64xbf16>, %b: tensor<64x70xbf16>, %codes: tensor<2x2xi8>) -> tensor<100x70xbf16> {
  %c = tcc.planned_matmul %a, %b, %codes {plan = #tcc.precision_plan<tile = [64, 64], precisions = [bf16, f8E4M3FN]>} : tensor<100x64xbf16>, tensor<64x70xbf16>, tensor<2x2xi8> -> tensor<100x70xbf16>
  return %c : tensor<100x70xbf16>
}

// -----

// i8 with B stored [N, K] and a batch of A: B's blocks run along its rows
// (C's columns), scales per matrix of the batch; values rounded halves up
// and clamped to [-127, 127]; the product accumulates in i32. One precision:
// no select.
// CHECK-LABEL: func.func @int8
// CHECK: tcc.reduce_max {{.*}} {axes = array<i64: 2>, keepdims = true} : tensor<3x40x32xf32> -> tensor<3x40x1xf32>
// CHECK: tcc.reduce_max {{.*}} {axes = array<i64: 2>, keepdims = true} : tensor<3x2x32xf32> -> tensor<3x2x1xf32>
// CHECK: tcc.constant {value = 1.270000e+02 : f32}
// CHECK: tcc.reduce_max {{.*}} {axes = array<i64: 1>, keepdims = true} : tensor<50x32xf32> -> tensor<50x1xf32>
// CHECK: %[[H:.*]] = tcc.add %{{.*}}, %{{.*}} : tensor<3x40x32xf32>, tensor<f32>
// CHECK: %[[F:.*]] = tcc.floor %[[H]]
// CHECK: %[[CL:.*]] = tcc.clamp %[[F]] {max = 1.270000e+02 : f64, min = -1.270000e+02 : f64}
// CHECK: %[[QA:.*]] = tcc.cast %[[CL]] : tensor<3x40x32xf32> -> tensor<3x40x32xi8>
// CHECK: %[[P:.*]] = tcc.matmul %[[QA]], %{{.*}} {transpose_b = true} : tensor<3x40x32xi8>, tensor<50x32xi8> -> tensor<3x40x50xi32>
// CHECK: %[[PF:.*]] = tcc.cast %[[P]] : tensor<3x40x50xi32> -> tensor<3x40x50xf32>
// CHECK: %[[SBC:.*]] = tcc.reshape %{{.*}} : tensor<50x1xf32> -> tensor<1x50xf32>
// CHECK: tcc.mul %{{.*}}, %[[SBC]] : tensor<3x40x50xf32>, tensor<1x50xf32> -> tensor<3x40x50xf32>
// CHECK-NOT: tcc.select {{.*}}xi8
// CHECK: return
func.func @int8(%a: tensor<3x40x32xf32>, %b: tensor<50x32xf32>, %codes: tensor<2x1xi8>) -> tensor<3x40x50xf32> {
  %c = tcc.planned_matmul %a, %b, %codes {plan = #tcc.precision_plan<tile = [32, 64], precisions = [i8]>, transpose_b = true} : tensor<3x40x32xf32>, tensor<50x32xf32>, tensor<2x1xi8> -> tensor<3x40x50xf32>
  return %c : tensor<3x40x50xf32>
}

// -----

// With tile-kernels (sm_90a): the precisions the wgmma template takes
// become tcc.tile_matmul, each computing only its code's tiles, the block
// scales (row [M, 1], column [1, N]) in its epilogue; bf16 is unscaled.
// f32 stays a whole matmul (wgmma's f32 is tf32). The select is the same.
// RUN: tcc-opt %s --split-input-file --tcc-expand-precision-plans="tile-kernels=true" | FileCheck %s --check-prefix=TILES
// TILES-LABEL: func.func @tiles
// TILES: %[[BF:.*]] = tcc.tile_matmul %{{.*}}, %{{.*}}, %arg2 {code = 0 : i64, tile_m = 128 : i64, tile_n = 128 : i64, transpose_b = true} : tensor<256x64xbf16>, tensor<200x64xbf16>, tensor<2x2xi8> -> tensor<256x200xf32>
// TILES: %[[F8:.*]] = tcc.tile_matmul %{{.*}}, %{{.*}}, %arg2 row_scale %{{.*}} col_scale %{{.*}} {code = 1 : i64, tile_m = 128 : i64, tile_n = 128 : i64, transpose_b = true} : tensor<256x64xf8E4M3FN>, tensor<200x64xf8E4M3FN>, tensor<2x2xi8>, tensor<256x1xf32>, tensor<1x200xf32> -> tensor<256x200xf32>
// TILES: %[[F32:.*]] = tcc.matmul %{{.*}}, %{{.*}} {transpose_b = true} : tensor<256x64xf32>, tensor<200x64xf32> -> tensor<256x200xf32>
// TILES: tcc.select {{.*}}, %[[F8]], %[[F32]]
// TILES: tcc.select {{.*}}, %[[BF]], %{{.*}}
func.func @tiles(%a: tensor<256x64xf32>, %b: tensor<200x64xf32>, %codes: tensor<2x2xi8>) -> tensor<256x200xf32> {
  %c = tcc.planned_matmul %a, %b, %codes {plan = #tcc.precision_plan<tile = [128, 128], precisions = [bf16, f8E4M3FN, f32]>, transpose_b = true} : tensor<256x64xf32>, tensor<200x64xf32>, tensor<2x2xi8> -> tensor<256x200xf32>
  return %c : tensor<256x200xf32>
}
