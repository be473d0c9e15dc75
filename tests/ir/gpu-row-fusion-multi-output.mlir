// RUN: tcc-opt %s --split-input-file --tcc-gpu-row-fusion | FileCheck %s

// Cross-entropy with ignore_index (-100), as the ONNX importer writes it
// (300 rows of 7 f32): one generic with two outputs (the kept rows' mask,
// the targets with ignored ones sent to class 0) feeds the gather, the
// index check's count, the loss's sum and the count of kept rows. All of
// it runs in the row launch: the two-output op's values stay in registers.
// The fills run before the launch (the last block's counter's with
// them); in it, the last block adds the partials of the three whole
// reductions to their outputs, and then narrows the two sums to f32 (the
// first stood between the planned reductions: it reads a whole
// reduction's output, so it moves after them).
// CHECK-LABEL: func.func @ignore_index_loss
// CHECK-NOT: outs(%{{.*}}, %{{.*}} : memref<300x1xi1>, memref<300x1xi64>)
// CHECK-COUNT-3: iterator_types = []} ins(%{{.*}} : {{i32|f64}}) outs
// CHECK: linalg.fill ins(%{{.*}} : i32) outs(%{{.*}} : memref<i32>)
// CHECK: gpu.launch
// CHECK: memref.atomic_rmw addi
// CHECK: scf.for {{.*}} -> (i32)
// CHECK: memref.store %{{.*}}, %arg2[]
// CHECK: scf.for {{.*}} -> (f64)
// CHECK: scf.for {{.*}} -> (f64)
// CHECK: linalg.generic {{.*}} iterator_types = []} ins(%{{.*}} : memref<f64>) outs(%arg3 : memref<f32>)
// CHECK: linalg.generic {{.*}} iterator_types = []} ins(%{{.*}} : memref<f64>) outs(%arg4 : memref<f32>)
// CHECK: gpu.terminator
// CHECK-NOT: linalg
// CHECK: return

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> ()>
#map2 = affine_map<(d0, d1) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<() -> ()>
module {
  func.func @ignore_index_loss(%arg0: memref<300xi64>, %arg1: memref<300x7xf32>, %arg2: memref<i32>, %arg3: memref<f32>, %arg4: memref<f32>) attributes {tcc.kernel, tcc.kind = "chain"} {
    %cst = arith.constant 1.000000e+00 : f32
    %cst_0 = arith.constant 0.000000e+00 : f64
    %cst_1 = arith.constant 0xFF800000 : f32
    %cst_2 = arith.constant 0.000000e+00 : f32
    %c-7_i64 = arith.constant -7 : i64
    %c0_i32 = arith.constant 0 : i32
    %c6_i64 = arith.constant 6 : i64
    %c7_i64 = arith.constant 7 : i64
    %c0_i64 = arith.constant 0 : i64
    %c-100_i64 = arith.constant -100 : i64
    %expand_shape = memref.expand_shape %arg0 [[0, 1]] output_shape [300, 1] : memref<300xi64> into memref<300x1xi64>
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<300x1xi1>
    %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<300x1xi64>
    linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%expand_shape : memref<300x1xi64>) outs(%alloc, %alloc_3 : memref<300x1xi1>, memref<300x1xi64>) {
    ^bb0(%in: i64, %out: i1, %out_10: i64):
      %0 = arith.cmpi ne, %in, %c-100_i64 : i64
      %1 = arith.select %0, %in, %c0_i64 : i64
      linalg.yield %0, %1 : i1, i64
    }
    linalg.fill ins(%c0_i32 : i32) outs(%arg2 : memref<i32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%alloc_3 : memref<300x1xi64>) outs(%arg2 : memref<i32>) {
    ^bb0(%in: i64, %out: i32):
      %0 = arith.cmpi slt, %in, %c-7_i64 : i64
      %1 = arith.cmpi sge, %in, %c7_i64 : i64
      %2 = arith.ori %0, %1 : i1
      %3 = arith.extui %2 : i1 to i32
      %4 = arith.addi %out, %3 : i32
      linalg.yield %4 : i32
    }
    %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<300xf32>
    linalg.fill ins(%cst_1 : f32) outs(%alloc_4 : memref<300xf32>)
    linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg1 : memref<300x7xf32>) outs(%alloc_4 : memref<300xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.maximumf %out, %in : f32
      linalg.yield %0 : f32
    }
    %expand_shape_5 = memref.expand_shape %alloc_4 [[0, 1]] output_shape [300, 1] : memref<300xf32> into memref<300x1xf32>
    %alloc_6 = memref.alloc() {alignment = 64 : i64} : memref<300xf64>
    linalg.fill ins(%cst_0 : f64) outs(%alloc_6 : memref<300xf64>)
    linalg.generic {indexing_maps = [#map, #map3, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg1, %expand_shape_5 : memref<300x7xf32>, memref<300x1xf32>) outs(%alloc_6 : memref<300xf64>) {
    ^bb0(%in: f32, %in_10: f32, %out: f64):
      %0 = arith.subf %in, %in_10 : f32
      %1 = math.exp %0 : f32
      %2 = arith.extf %1 : f32 to f64
      %3 = arith.addf %out, %2 : f64
      linalg.yield %3 : f64
    }
    %expand_shape_7 = memref.expand_shape %alloc_6 [[0, 1]] output_shape [300, 1] : memref<300xf64> into memref<300x1xf64>
    %alloc_8 = memref.alloc() {alignment = 64 : i64} : memref<f64>
    linalg.fill ins(%cst_0 : f64) outs(%alloc_8 : memref<f64>)
    %alloc_9 = memref.alloc() {alignment = 64 : i64} : memref<f64>
    linalg.fill ins(%cst_0 : f64) outs(%alloc_9 : memref<f64>)
    linalg.generic {indexing_maps = [#map, #map, #map, #map, #map1], iterator_types = ["reduction", "reduction"]} ins(%alloc, %expand_shape_7, %alloc_3, %expand_shape_5 : memref<300x1xi1>, memref<300x1xf64>, memref<300x1xi64>, memref<300x1xf32>) outs(%alloc_9 : memref<f64>) {
    ^bb0(%in: i1, %in_10: f64, %in_11: i64, %in_12: f32, %out: f64):
      %0 = linalg.index 0 : index
      %1 = arith.addi %in_11, %c7_i64 : i64
      %2 = arith.cmpi slt, %in_11, %c0_i64 : i64
      %3 = arith.select %2, %1, %in_11 : i64
      %4 = arith.maxsi %3, %c0_i64 : i64
      %5 = arith.minsi %4, %c6_i64 : i64
      %6 = arith.index_cast %5 : i64 to index
      %7 = memref.load %arg1[%0, %6] : memref<300x7xf32>
      %8 = arith.truncf %in_10 : f64 to f32
      %9 = math.log %8 : f32
      %10 = arith.subf %7, %in_12 : f32
      %11 = arith.subf %10, %9 : f32
      %12 = arith.negf %11 : f32
      %13 = arith.select %in, %12, %cst_2 : f32
      %14 = arith.extf %13 : f32 to f64
      %15 = arith.addf %out, %14 : f64
      linalg.yield %15 : f64
    }
    linalg.generic {indexing_maps = [#map4, #map4], iterator_types = []} ins(%alloc_9 : memref<f64>) outs(%arg3 : memref<f32>) {
    ^bb0(%in: f64, %out: f32):
      %0 = arith.truncf %in : f64 to f32
      linalg.yield %0 : f32
    }
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%alloc : memref<300x1xi1>) outs(%alloc_8 : memref<f64>) {
    ^bb0(%in: i1, %out: f64):
      %0 = arith.select %in, %cst, %cst_2 : f32
      %1 = arith.extf %0 : f32 to f64
      %2 = arith.addf %out, %1 : f64
      linalg.yield %2 : f64
    }
    linalg.generic {indexing_maps = [#map4, #map4], iterator_types = []} ins(%alloc_8 : memref<f64>) outs(%arg4 : memref<f32>) {
    ^bb0(%in: f64, %out: f32):
      %0 = arith.truncf %in : f64 to f32
      linalg.yield %0 : f32
    }
    return
  }
}

// -----

// A single-value op that reads a whole reduction's output before any
// planned op wrote it (here the mean's division, placed before the loss's
// sum: it reads the fill) stays before the launch; moved after it, it
// would read the sum instead.
// CHECK-LABEL: func.func @reads_before_written
// CHECK: arith.divf
// CHECK: gpu.launch

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> ()>
#map2 = affine_map<(d0, d1) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> (d1)>
func.func @reads_before_written(%arg0: memref<300x7xf32>, %arg1: memref<300x1xi64>, %arg2: memref<i32>, %arg3: memref<1x1xf32>) attributes {tcc.kernel} {
  %cst = arith.constant 300.0 : f64
  %cst_0 = arith.constant 0.000000e+00 : f64
  %cst_1 = arith.constant 0xFF800000 : f32
  %c-7_i64 = arith.constant -7 : i64
  %c0_i32 = arith.constant 0 : i32
  %c6_i64 = arith.constant 6 : i64
  %c7_i64 = arith.constant 7 : i64
  %c0_i64 = arith.constant 0 : i64
  linalg.fill ins(%c0_i32 : i32) outs(%arg2 : memref<i32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%arg1 : memref<300x1xi64>) outs(%arg2 : memref<i32>) {
  ^bb0(%in: i64, %out: i32):
    %0 = arith.cmpi slt, %in, %c-7_i64 : i64
    %1 = arith.cmpi sge, %in, %c7_i64 : i64
    %2 = arith.ori %0, %1 : i1
    %3 = arith.extui %2 : i1 to i32
    %4 = arith.addi %out, %3 : i32
    linalg.yield %4 : i32
  }
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<300xf32>
  linalg.fill ins(%cst_1 : f32) outs(%alloc : memref<300xf32>)
  linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<300x7xf32>) outs(%alloc : memref<300xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %expand_shape = memref.expand_shape %alloc [[0, 1]] output_shape [300, 1] : memref<300xf32> into memref<300x1xf32>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<300xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_2 : memref<300xf64>)
  linalg.generic {indexing_maps = [#map, #map3, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %expand_shape : memref<300x7xf32>, memref<300x1xf32>) outs(%alloc_2 : memref<300xf64>) {
  ^bb0(%in: f32, %in_6: f32, %out: f64):
    %0 = arith.subf %in, %in_6 : f32
    %1 = math.exp %0 : f32
    %2 = arith.extf %1 : f32 to f64
    %3 = arith.addf %out, %2 : f64
    linalg.yield %3 : f64
  }
  %expand_shape_3 = memref.expand_shape %alloc_2 [[0, 1]] output_shape [300, 1] : memref<300xf64> into memref<300x1xf64>
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<1xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_4 : memref<1xf64>)
  %expand_shape_5 = memref.expand_shape %alloc_4 [[0, 1]] output_shape [1, 1] : memref<1xf64> into memref<1x1xf64>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%expand_shape_5 : memref<1x1xf64>) outs(%arg3 : memref<1x1xf32>) {
  ^bb0(%in: f64, %out: f32):
    %0 = arith.divf %in, %cst : f64
    %1 = arith.truncf %0 : f64 to f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map, #map, #map4], iterator_types = ["reduction", "parallel"]} ins(%expand_shape_3, %arg1, %expand_shape : memref<300x1xf64>, memref<300x1xi64>, memref<300x1xf32>) outs(%alloc_4 : memref<1xf64>) {
  ^bb0(%in: f64, %in_6: i64, %in_7: f32, %out: f64):
    %0 = linalg.index 0 : index
    %1 = arith.addi %in_6, %c7_i64 : i64
    %2 = arith.cmpi slt, %in_6, %c0_i64 : i64
    %3 = arith.select %2, %1, %in_6 : i64
    %4 = arith.maxsi %3, %c0_i64 : i64
    %5 = arith.minsi %4, %c6_i64 : i64
    %6 = arith.index_cast %5 : i64 to index
    %7 = memref.load %arg0[%0, %6] : memref<300x7xf32>
    %8 = arith.truncf %in : f64 to f32
    %9 = math.log %8 : f32
    %10 = arith.subf %7, %in_7 : f32
    %11 = arith.subf %10, %9 : f32
    %12 = arith.negf %11 : f32
    %13 = arith.extf %12 : f32 to f64
    %14 = arith.addf %out, %13 : f64
    linalg.yield %14 : f64
  }
  return
}

