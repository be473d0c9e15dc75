// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tcc-gpu-column-chains))' | FileCheck %s

// Softmax over axis 1 of [32, 1000, 1024] (the generic mapping ran a launch
// per op, the exponentials written to memory): one launch of 1024 blocks of
// 32 lanes (consecutive columns) by 8 warps (slices of 125 positions). The
// max and the sum of exponentials are one pass over the slice, 4 positions
// at a time: the group's max first, then its exponentials against it, the
// running sum scaled by exp(m_old - m_new) (the pair's correction, k = -1:
// the constant -1 times m_new - m_old). The warps' (max, sum) pairs meet
// in shared memory by a tree, warp w < h folding in warp w + h's pair (h =
// 4, 2, 1, a barrier after each round); the exponentials are recomputed in
// the last pass, which stores the result. No linalg op or buffer of the
// chain is left.
// CHECK-LABEL: func.func @k0_chain
// CHECK-NOT: linalg.
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1024, {{.*}}) threads({{.*}}) in ({{.*}} = %c32, {{.*}} = %c8, {{.*}}) workgroup({{.*}} : memref<8x32xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<8x32xf64, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} step %c4{{.*}} iter_args(%[[M:.*]] = %{{.*}}, %[[S:.*]] = %{{.*}}) -> (f32, f64)
// CHECK-COUNT-4: arith.maximumf
// CHECK: math.exp
// CHECK: arith.addf {{.*}} : f64
// CHECK-COUNT-3: math.exp
// CHECK: %[[D:.*]] = arith.subf %[[NEW:.*]], %[[M]] : f32
// CHECK: %[[CORR:.*]] = arith.constant -1.000000e+00 : f32
// CHECK: %[[X:.*]] = arith.mulf %[[CORR]], %[[D]] : f32
// CHECK: math.exp %[[X]]
// CHECK: arith.mulf %[[S]]
// CHECK: arith.cmpf oeq, %[[M]]
// CHECK: scf.yield %[[NEW]]
// CHECK: scf.for {{.*}} step %c1
// CHECK-NOT: scf.for
// CHECK: gpu.barrier
// CHECK: %[[H:.*]] = arith.constant 4 : index
// CHECK: arith.cmpi ult, %{{.*}}, %[[H]]
// CHECK: scf.if {{.*}} -> (f32, f64)
// CHECK-COUNT-2: scf.if {{.*}} -> (f32, f64)
// CHECK-NOT: scf.for
// CHECK: gpu.barrier
// CHECK-NOT: scf.for
// CHECK: scf.for {{.*}} step %c4
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: memref.store {{.*}}, %arg1[
// CHECK-NOT: linalg.
func.func @k0_chain(%arg0: memref<32x1000x1024xf32>, %arg1: memref<32x1000x1024xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %cst = arith.constant 0.000000e+00 : f64
  %cst_0 = arith.constant 0xFF800000 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<32x1024xf32>
  linalg.fill ins(%cst_0 : f32) outs(%alloc : memref<32x1024xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : memref<32x1000x1024xf32>) outs(%alloc : memref<32x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2]] output_shape [32, 1, 1024] : memref<32x1024xf32> into memref<32x1x1024xf32>
  %alloc_1 = memref.alloc() {alignment = 64 : i64} : memref<32x1000x1024xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, 0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %expand_shape : memref<32x1000x1024xf32>, memref<32x1x1024xf32>) outs(%alloc_1 : memref<32x1000x1024xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %0 = arith.subf %in, %in_5 : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<32x1024xf64>
  linalg.fill ins(%cst : f64) outs(%alloc_2 : memref<32x1024xf64>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%alloc_1 : memref<32x1000x1024xf32>) outs(%alloc_2 : memref<32x1024xf64>) {
  ^bb0(%in: f32, %out: f64):
    %0 = arith.extf %in : f32 to f64
    %1 = arith.addf %out, %0 : f64
    linalg.yield %1 : f64
  }
  %expand_shape_3 = memref.expand_shape %alloc_2 [[0], [1, 2]] output_shape [32, 1, 1024] : memref<32x1024xf64> into memref<32x1x1024xf64>
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<32x1x1024xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expand_shape_3 : memref<32x1x1024xf64>) outs(%alloc_4 : memref<32x1x1024xf32>) {
  ^bb0(%in: f64, %out: f32):
    %0 = arith.truncf %in : f64 to f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, 0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%alloc_1, %alloc_4 : memref<32x1000x1024xf32>, memref<32x1x1024xf32>) outs(%arg1 : memref<32x1000x1024xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %0 = arith.divf %in, %in_5 : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A plain sum over the middle axis of [16, 3001, 64] bf16 (accumulated in
// f64, then rounded to bf16 by a column op without the chain's loop): few
// columns (1024), so each takes a block's 32 warps, and 32 blocks still
// leave most of the GPU idle: each column's positions split into 2 parts
// over blocks (64 blocks), the first warp of each column writing the part's
// partial sum into [1024 columns, 2 parts]; a second launch (32 blocks: it
// writes no positions) has warp w of a column fold parts w, w + 32, ...,
// the warps' values then combined through shared memory in warp order, and
// the column's first warp stores the sum.
// CHECK-LABEL: func.func @k0_reduce_sum
// CHECK: %[[P:.*]] = memref.alloc() : memref<1024x2xf64>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c64, {{.*}}) threads({{.*}}) in ({{.*}} = %c32{{.*}}, {{.*}} = %c32{{.*}}, {{.*}}) workgroup({{.*}} : memref<32x32xf64, #gpu.address_space<workgroup>>)
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.store {{.*}}, %[[P]][{{.*}}] : memref<1024x2xf64>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c32{{.*}}, {{.*}})
// CHECK: scf.for {{.*}} to %c2{{.*}} step %c32{{.*}} -> (f64)
// CHECK: memref.load %[[P]]
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.store {{.*}}, %arg1[{{.*}}] : memref<16x64xbf16>
// CHECK-NOT: gpu.launch
// CHECK-NOT: linalg.
func.func @k0_reduce_sum(%arg0: memref<16x3001x64xbf16>, %arg1: memref<16x64xbf16>) attributes {tcc.kernel, tcc.kind = "reduce_sum"} {
  %c-4035207673937920001_i64 = arith.constant -4035207673937920001 : i64
  %c15_i64 = arith.constant 15 : i64
  %c32704_i64 = arith.constant 32704 : i64
  %c9218868437227405312_i64 = arith.constant 9218868437227405312 : i64
  %c32640_i64 = arith.constant 32640 : i64
  %c32639_i64 = arith.constant 32639 : i64
  %c4039728865751334912_i64 = arith.constant 4039728865751334912 : i64
  %cst = arith.constant 2.560000e+02 : f64
  %cst_0 = arith.constant 1.0889035741470031E+40 : f64
  %c1_i64 = arith.constant 1 : i64
  %c45_i64 = arith.constant 45 : i64
  %c4035225266123964416_i64 = arith.constant 4035225266123964416 : i64
  %c63_i64 = arith.constant 63 : i64
  %c9223372036854775807_i64 = arith.constant 9223372036854775807 : i64
  %cst_1 = arith.constant 0.000000e+00 : f64
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<16x64xf64>
  linalg.fill ins(%cst_1 : f64) outs(%alloc : memref<16x64xf64>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : memref<16x3001x64xbf16>) outs(%alloc : memref<16x64xf64>) {
  ^bb0(%in: bf16, %out: f64):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %0 : f32 to f64
    %2 = arith.addf %out, %1 : f64
    linalg.yield %2 : f64
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%alloc : memref<16x64xf64>) outs(%arg1 : memref<16x64xbf16>) {
  ^bb0(%in: f64, %out: bf16):
    %0 = arith.bitcast %in : f64 to i64
    %1 = arith.andi %0, %c9223372036854775807_i64 : i64
    %2 = arith.shrui %0, %c63_i64 : i64
    %3 = arith.subi %1, %c4035225266123964416_i64 : i64
    %4 = arith.shrui %3, %c45_i64 : i64
    %5 = arith.andi %4, %c1_i64 : i64
    %6 = arith.addi %1, %c-4035207673937920001_i64 : i64
    %7 = arith.addi %6, %5 : i64
    %8 = arith.shrui %7, %c45_i64 : i64
    %9 = math.absf %in : f64
    %10 = arith.mulf %9, %cst_0 : f64
    %11 = arith.minnumf %10, %cst : f64
    %12 = math.roundeven %11 : f64
    %13 = arith.fptoui %12 : f64 to i64
    %14 = arith.cmpi uge, %1, %c4039728865751334912_i64 : i64
    %15 = arith.select %14, %8, %13 : i64
    %16 = arith.cmpi ugt, %15, %c32639_i64 : i64
    %17 = arith.select %16, %c32640_i64, %15 : i64
    %18 = arith.cmpi eq, %1, %c9218868437227405312_i64 : i64
    %19 = arith.select %18, %c32640_i64, %17 : i64
    %20 = arith.cmpi ugt, %1, %c9218868437227405312_i64 : i64
    %21 = arith.select %20, %c32704_i64, %19 : i64
    %22 = arith.shli %2, %c15_i64 : i64
    %23 = arith.ori %21, %22 : i64
    %24 = arith.trunci %23 : i64 to i16
    %25 = arith.bitcast %24 : i16 to bf16
    linalg.yield %25 : bf16
  }
  return
}

// -----

// A mean over two axes (H and W of [N, H, W, C]): one chain of H·W = 4096
// positions, each delinearized into (h, w). Its 256 columns would leave the
// GPU idle: 4 parts a column over blocks (32 blocks of 32 warps), then a
// launch that folds the partials and writes the means.
// CHECK-LABEL: func.func @k0_reduce_mean
// CHECK: memref.alloc() : memref<256x4xf64>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c32, {{.*}})
// CHECK: scf.for {{.*}} step %c4{{.*}} -> (f64)
// CHECK: %[[W:.*]] = arith.remui %{{.*}}, %c64
// CHECK: %[[H:.*]] = arith.divui %{{.*}}, %c64
// CHECK: memref.load %arg0[%{{.*}}, %[[H]], %[[W]], %{{.*}}]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c8{{.*}}, {{.*}})
// CHECK: arith.divf
// CHECK: memref.store {{.*}}, %arg1[
// CHECK-NOT: gpu.launch
// CHECK-NOT: linalg.
func.func @k0_reduce_mean(%arg0: memref<8x64x64x32xf32>, %arg1: memref<8x1x1x32xf32>) attributes {tcc.kernel, tcc.kind = "reduce_mean"} {
  %cst = arith.constant 4.096000e+03 : f64
  %cst_0 = arith.constant 0.000000e+00 : f64
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<8x32xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc : memref<8x32xf64>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3)>], iterator_types = ["parallel", "reduction", "reduction", "parallel"]} ins(%arg0 : memref<8x64x64x32xf32>) outs(%alloc : memref<8x32xf64>) {
  ^bb0(%in: f32, %out: f64):
    %0 = arith.extf %in : f32 to f64
    %1 = arith.addf %out, %0 : f64
    linalg.yield %1 : f64
  }
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2, 3]] output_shape [8, 1, 1, 32] : memref<8x32xf64> into memref<8x1x1x32xf64>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expand_shape : memref<8x1x1x32xf64>) outs(%arg1 : memref<8x1x1x32xf32>) {
  ^bb0(%in: f64, %out: f32):
    %0 = arith.divf %in, %cst : f64
    %1 = arith.truncf %0 : f64 to f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Two kernels in one module (the pass runs on one after the other, its state
// fresh for each): both become a launch, each erasing only its own fills.
// CHECK-LABEL: func.func @k0_reduce_sum
// CHECK: gpu.launch
// CHECK-NOT: linalg.
// CHECK-LABEL: func.func @k1_reduce_sum
// CHECK: gpu.launch
// CHECK-NOT: linalg.
func.func @k0_reduce_sum(%arg0: memref<16x3001x64xbf16>, %arg1: memref<16x64xbf16>) attributes {tcc.kernel, tcc.kind = "reduce_sum"} {
  %c-4035207673937920001_i64 = arith.constant -4035207673937920001 : i64
  %c15_i64 = arith.constant 15 : i64
  %c32704_i64 = arith.constant 32704 : i64
  %c9218868437227405312_i64 = arith.constant 9218868437227405312 : i64
  %c32640_i64 = arith.constant 32640 : i64
  %c32639_i64 = arith.constant 32639 : i64
  %c4039728865751334912_i64 = arith.constant 4039728865751334912 : i64
  %cst = arith.constant 2.560000e+02 : f64
  %cst_0 = arith.constant 1.0889035741470031E+40 : f64
  %c1_i64 = arith.constant 1 : i64
  %c45_i64 = arith.constant 45 : i64
  %c4035225266123964416_i64 = arith.constant 4035225266123964416 : i64
  %c63_i64 = arith.constant 63 : i64
  %c9223372036854775807_i64 = arith.constant 9223372036854775807 : i64
  %cst_1 = arith.constant 0.000000e+00 : f64
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<16x64xf64>
  linalg.fill ins(%cst_1 : f64) outs(%alloc : memref<16x64xf64>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : memref<16x3001x64xbf16>) outs(%alloc : memref<16x64xf64>) {
  ^bb0(%in: bf16, %out: f64):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %0 : f32 to f64
    %2 = arith.addf %out, %1 : f64
    linalg.yield %2 : f64
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%alloc : memref<16x64xf64>) outs(%arg1 : memref<16x64xbf16>) {
  ^bb0(%in: f64, %out: bf16):
    %0 = arith.bitcast %in : f64 to i64
    %1 = arith.andi %0, %c9223372036854775807_i64 : i64
    %2 = arith.shrui %0, %c63_i64 : i64
    %3 = arith.subi %1, %c4035225266123964416_i64 : i64
    %4 = arith.shrui %3, %c45_i64 : i64
    %5 = arith.andi %4, %c1_i64 : i64
    %6 = arith.addi %1, %c-4035207673937920001_i64 : i64
    %7 = arith.addi %6, %5 : i64
    %8 = arith.shrui %7, %c45_i64 : i64
    %9 = math.absf %in : f64
    %10 = arith.mulf %9, %cst_0 : f64
    %11 = arith.minnumf %10, %cst : f64
    %12 = math.roundeven %11 : f64
    %13 = arith.fptoui %12 : f64 to i64
    %14 = arith.cmpi uge, %1, %c4039728865751334912_i64 : i64
    %15 = arith.select %14, %8, %13 : i64
    %16 = arith.cmpi ugt, %15, %c32639_i64 : i64
    %17 = arith.select %16, %c32640_i64, %15 : i64
    %18 = arith.cmpi eq, %1, %c9218868437227405312_i64 : i64
    %19 = arith.select %18, %c32640_i64, %17 : i64
    %20 = arith.cmpi ugt, %1, %c9218868437227405312_i64 : i64
    %21 = arith.select %20, %c32704_i64, %19 : i64
    %22 = arith.shli %2, %c15_i64 : i64
    %23 = arith.ori %21, %22 : i64
    %24 = arith.trunci %23 : i64 to i16
    %25 = arith.bitcast %24 : i16 to bf16
    linalg.yield %25 : bf16
  }
  return
}
func.func @k1_reduce_sum(%arg0: memref<16x3001x64xbf16>, %arg1: memref<16x64xbf16>) attributes {tcc.kernel, tcc.kind = "reduce_sum"} {
  %c-4035207673937920001_i64 = arith.constant -4035207673937920001 : i64
  %c15_i64 = arith.constant 15 : i64
  %c32704_i64 = arith.constant 32704 : i64
  %c9218868437227405312_i64 = arith.constant 9218868437227405312 : i64
  %c32640_i64 = arith.constant 32640 : i64
  %c32639_i64 = arith.constant 32639 : i64
  %c4039728865751334912_i64 = arith.constant 4039728865751334912 : i64
  %cst = arith.constant 2.560000e+02 : f64
  %cst_0 = arith.constant 1.0889035741470031E+40 : f64
  %c1_i64 = arith.constant 1 : i64
  %c45_i64 = arith.constant 45 : i64
  %c4035225266123964416_i64 = arith.constant 4035225266123964416 : i64
  %c63_i64 = arith.constant 63 : i64
  %c9223372036854775807_i64 = arith.constant 9223372036854775807 : i64
  %cst_1 = arith.constant 0.000000e+00 : f64
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<16x64xf64>
  linalg.fill ins(%cst_1 : f64) outs(%alloc : memref<16x64xf64>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : memref<16x3001x64xbf16>) outs(%alloc : memref<16x64xf64>) {
  ^bb0(%in: bf16, %out: f64):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %0 : f32 to f64
    %2 = arith.addf %out, %1 : f64
    linalg.yield %2 : f64
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%alloc : memref<16x64xf64>) outs(%arg1 : memref<16x64xbf16>) {
  ^bb0(%in: f64, %out: bf16):
    %0 = arith.bitcast %in : f64 to i64
    %1 = arith.andi %0, %c9223372036854775807_i64 : i64
    %2 = arith.shrui %0, %c63_i64 : i64
    %3 = arith.subi %1, %c4035225266123964416_i64 : i64
    %4 = arith.shrui %3, %c45_i64 : i64
    %5 = arith.andi %4, %c1_i64 : i64
    %6 = arith.addi %1, %c-4035207673937920001_i64 : i64
    %7 = arith.addi %6, %5 : i64
    %8 = arith.shrui %7, %c45_i64 : i64
    %9 = math.absf %in : f64
    %10 = arith.mulf %9, %cst_0 : f64
    %11 = arith.minnumf %10, %cst : f64
    %12 = math.roundeven %11 : f64
    %13 = arith.fptoui %12 : f64 to i64
    %14 = arith.cmpi uge, %1, %c4039728865751334912_i64 : i64
    %15 = arith.select %14, %8, %13 : i64
    %16 = arith.cmpi ugt, %15, %c32639_i64 : i64
    %17 = arith.select %16, %c32640_i64, %15 : i64
    %18 = arith.cmpi eq, %1, %c9218868437227405312_i64 : i64
    %19 = arith.select %18, %c32640_i64, %17 : i64
    %20 = arith.cmpi ugt, %1, %c9218868437227405312_i64 : i64
    %21 = arith.select %20, %c32704_i64, %19 : i64
    %22 = arith.shli %2, %c15_i64 : i64
    %23 = arith.ori %21, %22 : i64
    %24 = arith.trunci %23 : i64 to i16
    %25 = arith.bitcast %24 : i16 to bf16
    linalg.yield %25 : bf16
  }
  return
}

// -----

// A max and a sum after it whose shares are not exp(k·(m - x))·h (here
// x - m: shifted, not scaled, by the max) are not one pass: the pair's
// loop is tried and dropped, and the max and the sum each take a pass
// (two barriers), as any two reductions do.
// CHECK-LABEL: func.func @k0_centered_sum
// CHECK: gpu.launch
// CHECK-NOT: iter_args({{.*}}) -> (f32, f64)
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} -> (f64)
// CHECK-NOT: math.exp
// CHECK: gpu.barrier
// CHECK: memref.store {{.*}}, %arg1[{{.*}}] : memref<16x64xf32>
// CHECK-NOT: linalg.
func.func @k0_centered_sum(%arg0: memref<16x3001x64xf32>, %arg1: memref<16x64xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %cst = arith.constant 0.000000e+00 : f64
  %cst_0 = arith.constant 0xFF800000 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<16x64xf32>
  linalg.fill ins(%cst_0 : f32) outs(%alloc : memref<16x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : memref<16x3001x64xf32>) outs(%alloc : memref<16x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2]] output_shape [16, 1, 64] : memref<16x64xf32> into memref<16x1x64xf32>
  %alloc_1 = memref.alloc() {alignment = 64 : i64} : memref<16x64xf64>
  linalg.fill ins(%cst : f64) outs(%alloc_1 : memref<16x64xf64>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, 0, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0, %expand_shape : memref<16x3001x64xf32>, memref<16x1x64xf32>) outs(%alloc_1 : memref<16x64xf64>) {
  ^bb0(%in: f32, %in_2: f32, %out: f64):
    %0 = arith.subf %in, %in_2 : f32
    %1 = arith.extf %0 : f32 to f64
    %2 = arith.addf %out, %1 : f64
    linalg.yield %2 : f64
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%alloc_1 : memref<16x64xf64>) outs(%arg1 : memref<16x64xf32>) {
  ^bb0(%in: f64, %out: f32):
    %0 = arith.truncf %in : f64 to f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Softmax over rows of 2^20 f32 ([8, 1048576]: longer than a cluster of
// blocks holds, so row fusion left it, with its fills generalized to
// generics): split over blocks. 132 parts a row of 7968 positions (a
// multiple of 32), 1056 blocks of 256 threads, two launches. The first runs
// the paired max and sum (one pass, the thread's positions 256 apart, 4 a
// step), folds the block's pairs (butterflies over the lanes, the warps'
// through shared memory) and writes the block's pair to the partials. The
// second folds each row's 132 partial pairs (thread t the t-th) the same
// way in every block, then writes its part of the result.
// CHECK-LABEL: func.func @k0_long_rows
// CHECK-DAG: %[[PM:.*]] = memref.alloc() : memref<8x132xf32>
// CHECK-DAG: %[[PS:.*]] = memref.alloc() : memref<8x132xf64>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1056, {{.*}}) threads({{.*}}) in ({{.*}} = %c32, {{.*}} = %c8, {{.*}}) workgroup({{.*}} : memref<8xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<8xf64, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} step %c1024{{.*}} -> (f32, f64)
// CHECK: scf.for {{.*}} step %c256{{.*}} -> (f32, f64)
// CHECK: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: memref.store {{.*}}, %[[PM]][
// CHECK: memref.store {{.*}}, %[[PS]][
// CHECK: gpu.terminator
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1056{{.*}}, {{.*}})
// CHECK: scf.for {{.*}} to %c132{{.*}} step %c256{{.*}} -> (f32, f64)
// CHECK: memref.load %[[PM]]
// CHECK: memref.load %[[PS]]
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} step %c1024
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: memref.store {{.*}}, %arg1[
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK-NOT: linalg.
func.func @k0_long_rows(%arg0: memref<8x1048576xf32>, %arg1: memref<8x1048576xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %cst = arith.constant 0.000000e+00 : f64
  %cst_0 = arith.constant 0xFF800000 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%cst_0 : f32) outs(%alloc : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<8x1048576xf32>) outs(%alloc : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %expand_shape = memref.expand_shape %alloc [[0, 1]] output_shape [8, 1] : memref<8xf32> into memref<8x1xf32>
  %alloc_1 = memref.alloc() {alignment = 64 : i64} : memref<8x1048576xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %expand_shape : memref<8x1048576xf32>, memref<8x1xf32>) outs(%alloc_1 : memref<8x1048576xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %0 = arith.subf %in, %in_5 : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<8xf64>
  linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%cst : f64) outs(%alloc_2 : memref<8xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%alloc_1 : memref<8x1048576xf32>) outs(%alloc_2 : memref<8xf64>) {
  ^bb0(%in: f32, %out: f64):
    %0 = arith.extf %in : f32 to f64
    %1 = arith.addf %out, %0 : f64
    linalg.yield %1 : f64
  }
  %expand_shape_3 = memref.expand_shape %alloc_2 [[0, 1]] output_shape [8, 1] : memref<8xf64> into memref<8x1xf64>
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<8x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%expand_shape_3 : memref<8x1xf64>) outs(%alloc_4 : memref<8x1xf32>) {
  ^bb0(%in: f64, %out: f32):
    %0 = arith.truncf %in : f64 to f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%alloc_1, %alloc_4 : memref<8x1048576xf32>, memref<8x1xf32>) outs(%arg1 : memref<8x1048576xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %0 = arith.divf %in, %in_5 : f32
    linalg.yield %0 : f32
  }
  return
}

