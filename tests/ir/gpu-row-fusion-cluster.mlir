// RUN: tcc-opt %s --tcc-gpu-row-fusion="max-cluster=8" | FileCheck %s
// RUN: tcc-opt %s --tcc-gpu-row-fusion="max-cluster=8 cluster-threads=1024" | FileCheck %s --check-prefix=WIDE
// RUN: tcc-opt %s --tcc-gpu-row-fusion | FileCheck %s --check-prefix=NOCLUSTER

// Softmax over rows of 50000 f32: 12500 vectors of 4, more than a block of
// 1024 threads holds at 32 values a thread (13 vectors). With clusters a
// row spans the blocks of one: 8 blocks of 256 threads (7 vectors a
// thread), so 3 rows are 24 blocks; with blocks of 1024 at least, 2 of
// them. Each reduction combines its block's warps in shared memory, the
// block's first thread leaves the block's total in the reduction's slot,
// and after the cluster's barrier every thread folds the blocks' slots in
// rank order through distributed shared memory; a last barrier keeps
// every block until the others have read it. (The max and the sum do not
// pair into one round, gpu-row-fusion-cluster-pair.mlir: the division
// reads the exponentials again, which the pairing would compute twice.)
// Without clusters the kernel is left to the other GPU passes.
// CHECK-LABEL: func.func @softmax_long_rows
// CHECK: gpu.launch clusters({{.*}}) in ({{%.*}} = %c8, {{%.*}} = %c1, {{%.*}} = %c1) blocks({{.*}}) in ({{%.*}} = %c24, {{%.*}} = %c1, {{%.*}} = %c1) threads({{.*}}) in ({{%.*}} = %c256,
// CHECK-SAME: workgroup({{%.*}} : memref<8xf32, #gpu.address_space<workgroup>>, {{%.*}} : memref<8xf32, #gpu.address_space<workgroup>>, [[SLOT0:%.*]] : memref<1xf32, #gpu.address_space<workgroup>>, [[SLOT1:%.*]] : memref<1xf32, #gpu.address_space<workgroup>>)
// CHECK: memref.store {{%.*}}, [[SLOT0]]
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: memref.extract_aligned_pointer_as_index [[SLOT0]]
// CHECK-COUNT-8: mapa.shared::cluster.u32
// CHECK: memref.store {{%.*}}, [[SLOT1]]
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-COUNT-8: mapa.shared::cluster.u32
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: gpu.terminator
// WIDE-LABEL: func.func @softmax_long_rows
// WIDE: gpu.launch clusters({{.*}}) in ({{%.*}} = %c2, {{%.*}} = %c1, {{%.*}} = %c1) blocks({{.*}}) in ({{%.*}} = %c6, {{%.*}} = %c1, {{%.*}} = %c1) threads({{.*}}) in ({{%.*}} = %c1024,
// WIDE-COUNT-2: mapa.shared::cluster.u32
// NOCLUSTER-LABEL: func.func @softmax_long_rows
// NOCLUSTER-NOT: gpu.launch
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>

module {
  func.func @softmax_long_rows(%arg0: memref<3x50000xf32>, %arg1: memref<3x50000xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
    %cst = arith.constant 0.000000e+00 : f64
    %cst_0 = arith.constant 0xFF800000 : f32
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
    linalg.fill ins(%cst_0 : f32) outs(%alloc : memref<3xf32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.maximumf %out, %in : f32
      linalg.yield %0 : f32
    }
    %expand_shape = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
    %alloc_1 = memref.alloc() {alignment = 64 : i64} : memref<3x50000xf32>
    linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %expand_shape : memref<3x50000xf32>, memref<3x1xf32>) outs(%alloc_1 : memref<3x50000xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %0 = arith.subf %in, %in_5 : f32
      %1 = math.exp %0 : f32
      linalg.yield %1 : f32
    }
    %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<3xf64>
    linalg.fill ins(%cst : f64) outs(%alloc_2 : memref<3xf64>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%alloc_1 : memref<3x50000xf32>) outs(%alloc_2 : memref<3xf64>) {
    ^bb0(%in: f32, %out: f64):
      %0 = arith.extf %in : f32 to f64
      %1 = arith.addf %out, %0 : f64
      linalg.yield %1 : f64
    }
    %expand_shape_3 = memref.expand_shape %alloc_2 [[0, 1]] output_shape [3, 1] : memref<3xf64> into memref<3x1xf64>
    %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<3x1xf32>
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%expand_shape_3 : memref<3x1xf64>) outs(%alloc_4 : memref<3x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %0 = arith.truncf %in : f64 to f32
      linalg.yield %0 : f32
    }
    linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%alloc_1, %alloc_4 : memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x50000xf32>) {
    ^bb0(%in: f32, %in_5: f32, %out: f32):
      %0 = arith.divf %in, %in_5 : f32
      linalg.yield %0 : f32
    }
    return
  }
}

