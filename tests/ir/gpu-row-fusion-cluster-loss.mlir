// RUN: tcc-opt %s --tcc-gpu-row-fusion="max-cluster=8 sync-scope=device" | FileCheck %s
// RUN: tcc-opt %s --tcc-gpu-row-fusion="max-cluster=8 sync-scope=device last-block=false" | FileCheck %s --check-prefix=LAUNCHES

// Cross-entropy over 3 rows of 50000 f32 (a loss over long rows, as a
// vocabulary's): each row spans a cluster of 8 blocks of 256 threads. The
// index check's count and the loss's sum over the rows are whole
// reductions: a cluster's blocks agree on their row's value, so its first
// block writes the row's partial (3 partials, not 24). They are combined
// by a launch of one block after the row launch, not by the row launch's
// last block (a cluster's first block waiting for its count delayed the
// next cluster's start, measured slower): its first thread fills the
// outputs, its 256 threads combine the partials, and its first thread
// adds them and runs the mean's division. With last-block=false, a
// reduction launch for each and the division after them.
// CHECK-LABEL: func.func @loss_long_rows
// CHECK: %[[PC:.*]] = memref.alloc() : memref<3xi32>
// CHECK: %[[PS:.*]] = memref.alloc() : memref<3xf32>
// CHECK-NOT: memref.alloc() : memref<i32>
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch clusters({{.*}}) in ({{%.*}} = %c8, {{.*}}) blocks(%[[BLOCK:[^,]*]], {{.*}}) in ({{%.*}} = %c24, {{.*}}) threads(%[[TID:[^,]*]], {{.*}}) in ({{%.*}} = %c256,
// CHECK: %[[ROW:.*]] = arith.divui %[[BLOCK]], %c8
// CHECK: %[[RANK:.*]] = arith.remui %[[BLOCK]], %c8
// CHECK: %[[T0:.*]] = arith.cmpi eq, %[[TID]], %{{.*}}
// CHECK: %[[R0:.*]] = arith.cmpi eq, %[[RANK]], %{{.*}}
// CHECK: %[[W:.*]] = arith.andi %[[T0]], %[[R0]]
// CHECK: scf.if %[[W]] {
// CHECK-NEXT: memref.store %{{.*}}, %[[PC]][%[[ROW]]] : memref<3xi32>
// CHECK: memref.store %{{.*}}, %[[PS]][%[[ROW]]] : memref<3xf32>
// CHECK-NOT: atomic_rmw
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch blocks({{.*}}) in ({{%.*}} = %c1{{.*}}, {{%.*}} = %c1{{.*}}, {{%.*}} = %c1{{.*}}) threads(%[[FT:[^,]*]], {{.*}}) in ({{%.*}} = %c256{{.*}}, {{%.*}} = %c1{{.*}}, {{%.*}} = %c1{{.*}}) workgroup({{%.*}} : memref<8xi32, #gpu.address_space<workgroup>>, {{%.*}} : memref<8xf64, #gpu.address_space<workgroup>>)
// CHECK: scf.if
// CHECK-NEXT: linalg.generic {{.*}} ins(%c0_i32 : i32) outs(%arg2 : memref<i32>)
// CHECK: linalg.generic {{.*}} outs(%alloc : memref<1xf64>)
// CHECK: scf.for {{.*}} = %[[FT]] to %c3{{.*}} step %c256
// CHECK: memref.load %[[PC]]
// CHECK: scf.for {{.*}} = %[[FT]] to %c3{{.*}} step %c256
// CHECK: memref.load %[[PS]]
// CHECK: arith.divf
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: return
// LAUNCHES-LABEL: func.func @loss_long_rows
// LAUNCHES: gpu.launch clusters
// LAUNCHES-NOT: atomic_rmw
// LAUNCHES: gpu.terminator
// LAUNCHES: linalg.generic {{.*}} ins(%{{.*}} : memref<3xi32>) outs(%arg2 : memref<i32>)
// LAUNCHES: linalg.generic {{.*}} ins(%{{.*}} : memref<3xf32>)
// LAUNCHES: arith.divf
// LAUNCHES: return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> ()>
#map2 = affine_map<(d0, d1) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> (d1)>
func.func @loss_long_rows(%arg0: memref<3x50000xf32>, %arg1: memref<3x1xi64>, %arg2: memref<i32>, %arg3: memref<1x1xf32>) attributes {tcc.kernel} {
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

