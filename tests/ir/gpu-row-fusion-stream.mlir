// RUN: tcc-opt %s --tcc-gpu-row-fusion="max-cluster=8 sync-scope=device stream-rows=true" | FileCheck %s

// Cross-entropy over 3 rows of 50000 f32 with stream-rows: nothing after
// the sum of exponentials reads the row, so each row streams through one
// block of 512 threads (no cluster), in 4 chunks of 8 vectors of 4 a
// thread (the last chunk guarded at the row's end). The loop carries the
// thread's running max and sum; the sum is corrected by exp(-(m - m_old))
// when the max grows, and dropped while the max is still -inf. After the
// loop the block combines the threads' pairs, and the last block finishes
// the loss in the same launch.
// CHECK-LABEL: func.func @loss_streamed
// CHECK: gpu.launch blocks({{.*}}) in ({{%.*}} = %c3, {{.*}}) threads({{.*}}) in ({{%.*}} = %c512,
// CHECK: %[[PAIR:.*]]:2 = scf.for %{{.*}} = %c0{{.*}} to %c4 step %c1{{.*}} iter_args(%[[M:.*]] = %cst{{.*}}, %[[S:.*]] = %cst{{.*}}) -> (f32, f32)
// CHECK: scf.if
// CHECK: vector.load %{{.*}} : memref<150000xf32>, vector<4xf32>
// CHECK: arith.maximumf %[[M]]
// CHECK: math.exp
// CHECK: arith.cmpf oeq, %[[M]]
// CHECK: scf.yield %{{.*}}, %{{.*}} : f32, f32
// CHECK: gpu.shuffle xor %[[PAIR]]#0
// CHECK: arith.mulf %[[PAIR]]#1
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> ()>
#map2 = affine_map<(d0, d1) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> (d1)>
func.func @loss_streamed(%arg0: memref<3x50000xf32>, %arg1: memref<3x1xi64>, %arg2: memref<i32>, %arg3: memref<1x1xf32>) attributes {tcc.kernel} {
  %cst = arith.constant 3.0 : f64
  %cst_0 = arith.constant 0.000000e+00 : f64
  %cst_1 = arith.constant 0xFF800000 : f32
  %c-7_i64 = arith.constant -50000 : i64
  %c0_i32 = arith.constant 0 : i32
  %c6_i64 = arith.constant 49999 : i64
  %c7_i64 = arith.constant 50000 : i64
  %c0_i64 = arith.constant 0 : i64
  linalg.fill ins(%c0_i32 : i32) outs(%arg2 : memref<i32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%arg1 : memref<3x1xi64>) outs(%arg2 : memref<i32>) {
  ^bb0(%in: i64, %out: i32):
    %0 = arith.cmpi slt, %in, %c-7_i64 : i64
    %1 = arith.cmpi sge, %in, %c7_i64 : i64
    %2 = arith.ori %0, %1 : i1
    %3 = arith.extui %2 : i1 to i32
    %4 = arith.addi %out, %3 : i32
    linalg.yield %4 : i32
  }
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%cst_1 : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %expand_shape = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<3xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_2 : memref<3xf64>)
  linalg.generic {indexing_maps = [#map, #map3, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %expand_shape : memref<3x50000xf32>, memref<3x1xf32>) outs(%alloc_2 : memref<3xf64>) {
  ^bb0(%in: f32, %in_6: f32, %out: f64):
    %0 = arith.subf %in, %in_6 : f32
    %1 = math.exp %0 : f32
    %2 = arith.extf %1 : f32 to f64
    %3 = arith.addf %out, %2 : f64
    linalg.yield %3 : f64
  }
  %expand_shape_3 = memref.expand_shape %alloc_2 [[0, 1]] output_shape [3, 1] : memref<3xf64> into memref<3x1xf64>
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<1xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_4 : memref<1xf64>)
  linalg.generic {indexing_maps = [#map, #map, #map, #map4], iterator_types = ["reduction", "parallel"]} ins(%expand_shape_3, %arg1, %expand_shape : memref<3x1xf64>, memref<3x1xi64>, memref<3x1xf32>) outs(%alloc_4 : memref<1xf64>) {
  ^bb0(%in: f64, %in_6: i64, %in_7: f32, %out: f64):
    %0 = linalg.index 0 : index
    %1 = arith.addi %in_6, %c7_i64 : i64
    %2 = arith.cmpi slt, %in_6, %c0_i64 : i64
    %3 = arith.select %2, %1, %in_6 : i64
    %4 = arith.maxsi %3, %c0_i64 : i64
    %5 = arith.minsi %4, %c6_i64 : i64
    %6 = arith.index_cast %5 : i64 to index
    %7 = memref.load %arg0[%0, %6] : memref<3x50000xf32>
    %8 = arith.truncf %in : f64 to f32
    %9 = math.log %8 : f32
    %10 = arith.subf %7, %in_7 : f32
    %11 = arith.subf %10, %9 : f32
    %12 = arith.negf %11 : f32
    %13 = arith.extf %12 : f32 to f64
    %14 = arith.addf %out, %13 : f64
    linalg.yield %14 : f64
  }
  %expand_shape_5 = memref.expand_shape %alloc_4 [[0, 1]] output_shape [1, 1] : memref<1xf64> into memref<1x1xf64>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%expand_shape_5 : memref<1x1xf64>) outs(%arg3 : memref<1x1xf32>) {
  ^bb0(%in: f64, %out: f32):
    %0 = arith.divf %in, %cst : f64
    %1 = arith.truncf %0 : f64 to f32
    linalg.yield %1 : f32
  }
  return
}

// Rows of 50001 (one value a load): streamed rows ran slower there, so
// they span clusters as without stream-rows.
// CHECK-LABEL: func.func @odd_rows_clustered
// CHECK: gpu.launch clusters
func.func @odd_rows_clustered(%arg0: memref<3x50001xf32>, %arg1: memref<3x1xi64>, %arg2: memref<i32>, %arg3: memref<1x1xf32>) attributes {tcc.kernel} {
  %cst = arith.constant 3.0 : f64
  %cst_0 = arith.constant 0.000000e+00 : f64
  %cst_1 = arith.constant 0xFF800000 : f32
  %c-7_i64 = arith.constant -50001 : i64
  %c0_i32 = arith.constant 0 : i32
  %c6_i64 = arith.constant 50000 : i64
  %c7_i64 = arith.constant 50001 : i64
  %c0_i64 = arith.constant 0 : i64
  linalg.fill ins(%c0_i32 : i32) outs(%arg2 : memref<i32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%arg1 : memref<3x1xi64>) outs(%arg2 : memref<i32>) {
  ^bb0(%in: i64, %out: i32):
    %0 = arith.cmpi slt, %in, %c-7_i64 : i64
    %1 = arith.cmpi sge, %in, %c7_i64 : i64
    %2 = arith.ori %0, %1 : i1
    %3 = arith.extui %2 : i1 to i32
    %4 = arith.addi %out, %3 : i32
    linalg.yield %4 : i32
  }
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%cst_1 : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50001xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %expand_shape = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<3xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_2 : memref<3xf64>)
  linalg.generic {indexing_maps = [#map, #map3, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %expand_shape : memref<3x50001xf32>, memref<3x1xf32>) outs(%alloc_2 : memref<3xf64>) {
  ^bb0(%in: f32, %in_6: f32, %out: f64):
    %0 = arith.subf %in, %in_6 : f32
    %1 = math.exp %0 : f32
    %2 = arith.extf %1 : f32 to f64
    %3 = arith.addf %out, %2 : f64
    linalg.yield %3 : f64
  }
  %expand_shape_3 = memref.expand_shape %alloc_2 [[0, 1]] output_shape [3, 1] : memref<3xf64> into memref<3x1xf64>
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<1xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_4 : memref<1xf64>)
  linalg.generic {indexing_maps = [#map, #map, #map, #map4], iterator_types = ["reduction", "parallel"]} ins(%expand_shape_3, %arg1, %expand_shape : memref<3x1xf64>, memref<3x1xi64>, memref<3x1xf32>) outs(%alloc_4 : memref<1xf64>) {
  ^bb0(%in: f64, %in_6: i64, %in_7: f32, %out: f64):
    %0 = linalg.index 0 : index
    %1 = arith.addi %in_6, %c7_i64 : i64
    %2 = arith.cmpi slt, %in_6, %c0_i64 : i64
    %3 = arith.select %2, %1, %in_6 : i64
    %4 = arith.maxsi %3, %c0_i64 : i64
    %5 = arith.minsi %4, %c6_i64 : i64
    %6 = arith.index_cast %5 : i64 to index
    %7 = memref.load %arg0[%0, %6] : memref<3x50001xf32>
    %8 = arith.truncf %in : f64 to f32
    %9 = math.log %8 : f32
    %10 = arith.subf %7, %in_7 : f32
    %11 = arith.subf %10, %9 : f32
    %12 = arith.negf %11 : f32
    %13 = arith.extf %12 : f32 to f64
    %14 = arith.addf %out, %13 : f64
    linalg.yield %14 : f64
  }
  %expand_shape_5 = memref.expand_shape %alloc_4 [[0, 1]] output_shape [1, 1] : memref<1xf64> into memref<1x1xf64>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%expand_shape_5 : memref<1x1xf64>) outs(%arg3 : memref<1x1xf32>) {
  ^bb0(%in: f64, %out: f32):
    %0 = arith.divf %in, %cst : f64
    %1 = arith.truncf %0 : f64 to f32
    linalg.yield %1 : f32
  }
  return
}

// Rows of 32768 f32 fit one block of 1024 threads (32 values a thread, one
// block a multiprocessor, whose loads stop while it reduces): streamed too,
// in 2 chunks of 512 threads (H100: 0.096 ms against 0.111).
// CHECK-LABEL: func.func @block_rows_streamed
// CHECK: gpu.launch blocks({{.*}}) in ({{%.*}} = %c3, {{.*}}) threads({{.*}}) in ({{%.*}} = %c512,
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c2 step %c1{{.*}} iter_args
func.func @block_rows_streamed(%arg0: memref<3x32768xf32>, %arg1: memref<3x1xi64>, %arg2: memref<i32>, %arg3: memref<1x1xf32>) attributes {tcc.kernel} {
  %cst = arith.constant 3.0 : f64
  %cst_0 = arith.constant 0.000000e+00 : f64
  %cst_1 = arith.constant 0xFF800000 : f32
  %c-7_i64 = arith.constant -32768 : i64
  %c0_i32 = arith.constant 0 : i32
  %c6_i64 = arith.constant 32767 : i64
  %c7_i64 = arith.constant 32768 : i64
  %c0_i64 = arith.constant 0 : i64
  linalg.fill ins(%c0_i32 : i32) outs(%arg2 : memref<i32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%arg1 : memref<3x1xi64>) outs(%arg2 : memref<i32>) {
  ^bb0(%in: i64, %out: i32):
    %0 = arith.cmpi slt, %in, %c-7_i64 : i64
    %1 = arith.cmpi sge, %in, %c7_i64 : i64
    %2 = arith.ori %0, %1 : i1
    %3 = arith.extui %2 : i1 to i32
    %4 = arith.addi %out, %3 : i32
    linalg.yield %4 : i32
  }
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%cst_1 : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x32768xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %expand_shape = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<3xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_2 : memref<3xf64>)
  linalg.generic {indexing_maps = [#map, #map3, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %expand_shape : memref<3x32768xf32>, memref<3x1xf32>) outs(%alloc_2 : memref<3xf64>) {
  ^bb0(%in: f32, %in_6: f32, %out: f64):
    %0 = arith.subf %in, %in_6 : f32
    %1 = math.exp %0 : f32
    %2 = arith.extf %1 : f32 to f64
    %3 = arith.addf %out, %2 : f64
    linalg.yield %3 : f64
  }
  %expand_shape_3 = memref.expand_shape %alloc_2 [[0, 1]] output_shape [3, 1] : memref<3xf64> into memref<3x1xf64>
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<1xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_4 : memref<1xf64>)
  linalg.generic {indexing_maps = [#map, #map, #map, #map4], iterator_types = ["reduction", "parallel"]} ins(%expand_shape_3, %arg1, %expand_shape : memref<3x1xf64>, memref<3x1xi64>, memref<3x1xf32>) outs(%alloc_4 : memref<1xf64>) {
  ^bb0(%in: f64, %in_6: i64, %in_7: f32, %out: f64):
    %0 = linalg.index 0 : index
    %1 = arith.addi %in_6, %c7_i64 : i64
    %2 = arith.cmpi slt, %in_6, %c0_i64 : i64
    %3 = arith.select %2, %1, %in_6 : i64
    %4 = arith.maxsi %3, %c0_i64 : i64
    %5 = arith.minsi %4, %c6_i64 : i64
    %6 = arith.index_cast %5 : i64 to index
    %7 = memref.load %arg0[%0, %6] : memref<3x32768xf32>
    %8 = arith.truncf %in : f64 to f32
    %9 = math.log %8 : f32
    %10 = arith.subf %7, %in_7 : f32
    %11 = arith.subf %10, %9 : f32
    %12 = arith.negf %11 : f32
    %13 = arith.extf %12 : f32 to f64
    %14 = arith.addf %out, %13 : f64
    linalg.yield %14 : f64
  }
  %expand_shape_5 = memref.expand_shape %alloc_4 [[0, 1]] output_shape [1, 1] : memref<1xf64> into memref<1x1xf64>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%expand_shape_5 : memref<1x1xf64>) outs(%arg3 : memref<1x1xf32>) {
  ^bb0(%in: f64, %out: f32):
    %0 = arith.divf %in, %cst : f64
    %1 = arith.truncf %0 : f64 to f32
    linalg.yield %1 : f32
  }
  return
}
