// RUN: tcc-opt %s --split-input-file --tcc-gpu-row-fusion | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-gpu-row-fusion="last-block=false" | FileCheck %s --check-prefix=AFTER

// Cross-entropy's kernel (f32, rows of 7) with its row members: the index
// check's count and the loss's sum over the rows (the gathered logit read
// per row, at linalg.index 0 = the row) are reductions of per-row values to
// one value. They run in the row launch: 300 rows, a thread a row (the
// kernel writes no rows), 128 rows a block (3 blocks, the last one's 84
// threads past the end counting nothing). Each block combines its rows by
// shuffles and its four warps' values in shared memory, and writes one
// partial. The last block to count itself in (the counter, zeroed with
// the outputs' fills before the launch) adds the partials to the outputs
// (its warps' values meet in shared memory again) and runs the mean's
// division: two launches in all.
// With last-block=false, the partials are combined after the launch and
// the division runs after that (launches of their own).
// AFTER-LABEL: func.func @cross_entropy_rows
// AFTER-NOT: atomic_rmw
// AFTER: gpu.terminator
// AFTER: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : memref<3xi32>) outs(%arg2 : memref<i32>)
// AFTER: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : memref<3xf32>) outs(%{{.*}} : memref<1xf64>)
// AFTER: arith.extf %{{.*}} : f32 to f64
// AFTER: linalg.generic {{.*}} outs(%arg3 : memref<1x1xf32>)
// AFTER: arith.divf
// AFTER-LABEL: func.func @cross_entropy_few_rows
// CHECK-LABEL: func.func @cross_entropy_rows
// CHECK: linalg.generic {{.*}} outs(%arg2 : memref<i32>)
// CHECK: %[[ACC:.*]] = memref.alloc() {{.*}} : memref<1xf64>
// CHECK: linalg.generic {{.*}} outs(%[[ACC]] : memref<1xf64>)
// CHECK: %[[EXP:.*]] = memref.expand_shape %[[ACC]]
// CHECK: %[[PC:.*]] = memref.alloc() : memref<3xi32>
// CHECK: %[[PS:.*]] = memref.alloc() : memref<3xf32>
// CHECK: %[[CNT:.*]] = memref.alloc() : memref<i32>
// CHECK: linalg.fill ins(%{{.*}} : i32) outs(%[[CNT]] : memref<i32>)
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c3{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c128{{[_0-9]*}}, {{.*}}) workgroup(%[[W0:[^ ]*]] : memref<4xi32, #gpu.address_space<workgroup>>, %[[W1:[^ ]*]] : memref<4xf32, #gpu.address_space<workgroup>>, %[[F0:[^ ]*]] : memref<4xi32, #gpu.address_space<workgroup>>, %[[F1:[^ ]*]] : memref<4xf64, #gpu.address_space<workgroup>>, %[[FLAG:[^ ]*]] : memref<1xi32, #gpu.address_space<workgroup>>)
// CHECK: %[[EXISTS:.*]] = arith.cmpi ule, %{{.*}}, %c299
// The count: each row's, nothing past the end, then lanes 16..1 apart.
// CHECK: arith.extui
// CHECK: arith.select %[[EXISTS]]
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK: memref.store %{{.*}}, %[[W0]]
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[PC]][%{{.*}}] : memref<3xi32>
// The loss, summed in f32 within the block.
// CHECK: memref.load %arg0[
// CHECK: math.log
// CHECK: arith.negf
// CHECK: arith.select %[[EXISTS]]
// CHECK: gpu.shuffle xor
// CHECK: memref.store %{{.*}}, %[[W1]]
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[PS]][%{{.*}}] : memref<3xf32>
// The block's first thread counts it in, fenced on both sides; the
// last block (3 - 1 before it) combines the partials, thread by thread
// and then across its warps, in the same order on every run.
// CHECK: gpu.barrier
// CHECK: llvm.fence acq_rel
// CHECK: %[[OLD:.*]] = memref.atomic_rmw addi %{{.*}}, %[[CNT]][] : (i32, memref<i32>) -> i32
// CHECK: arith.cmpi eq, %[[OLD]], %c2_i32
// CHECK: llvm.fence acq_rel
// CHECK: memref.store %{{.*}}, %[[FLAG]]
// CHECK: gpu.barrier
// CHECK: %[[IS:.*]] = memref.load %[[FLAG]]
// CHECK: %[[LAST:.*]] = arith.cmpi ne, %[[IS]]
// CHECK: scf.if %[[LAST]] {
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3{{[_0-9]*}} step %c128{{[_0-9]*}} iter_args
// CHECK: memref.load %[[PC]]
// CHECK: gpu.shuffle xor
// CHECK: memref.store %{{.*}}, %[[F0]]
// CHECK: gpu.barrier
// CHECK: memref.load %arg2[]
// CHECK: arith.addi
// CHECK: memref.store %{{.*}}, %arg2[]
// The loss's f32 partials widen to the f64 accumulator first.
// CHECK: scf.for {{.*}} -> (f64)
// CHECK: memref.load %[[PS]]
// CHECK-NEXT: arith.extf %{{.*}} : f32 to f64
// CHECK: memref.store %{{.*}}, %[[F1]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[ACC]]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store %{{.*}}, %[[ACC]]
// CHECK: linalg.generic {{.*}} ins(%[[EXP]] : memref<1x1xf64>) outs(%arg3 : memref<1x1xf32>)
// CHECK: arith.divf
// CHECK: gpu.terminator
// CHECK-NOT: linalg
// CHECK: return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> ()>
#map2 = affine_map<(d0, d1) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> (d1)>
func.func @cross_entropy_rows(%arg0: memref<300x7xf32>, %arg1: memref<300x1xi64>, %arg2: memref<i32>, %arg3: memref<1x1xf32>) attributes {tcc.kernel} {
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
  %expand_shape_5 = memref.expand_shape %alloc_4 [[0, 1]] output_shape [1, 1] : memref<1xf64> into memref<1x1xf64>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%expand_shape_5 : memref<1x1xf64>) outs(%arg3 : memref<1x1xf32>) {
  ^bb0(%in: f64, %out: f32):
    %0 = arith.divf %in, %cst : f64
    %1 = arith.truncf %0 : f64 to f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// 6 rows: one block of 6 threads (not a whole warp): each row's thread
// leaves its value in shared memory, read back in row order. The only
// block needs no counter: its first thread adds the partials.
// CHECK-LABEL: func.func @cross_entropy_few_rows
// CHECK-NOT: memref.alloc() : memref<i32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c6{{[_0-9]*}}, {{.*}}) workgroup(%[[W0:.*]] : memref<6xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<6xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: gpu.shuffle
// CHECK: memref.store %{{.*}}, %[[W0]]
// CHECK: gpu.barrier
// CHECK-COUNT-6: memref.load %[[W0]]
// CHECK-NOT: atomic_rmw
// CHECK: scf.for %{{.*}} = %c0{{[_0-9]*}} to %c1{{[_0-9]*}} step %c1{{[_0-9]*}}
// CHECK-NOT: gpu.shuffle
// CHECK: memref.store %{{.*}}, %arg2[]
// CHECK: linalg.generic {{.*}} outs(%arg3 : memref<1x1xf32>)
// CHECK: gpu.terminator
// CHECK-NOT: linalg
// CHECK: return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> ()>
#map2 = affine_map<(d0, d1) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<(d0, d1) -> (d1)>
func.func @cross_entropy_few_rows(%arg0: memref<6x7xf32>, %arg1: memref<6x1xi64>, %arg2: memref<i32>, %arg3: memref<1x1xf32>) attributes {tcc.kernel} {
  %cst = arith.constant 6.0 : f64
  %cst_0 = arith.constant 0.000000e+00 : f64
  %cst_1 = arith.constant 0xFF800000 : f32
  %c-7_i64 = arith.constant -7 : i64
  %c0_i32 = arith.constant 0 : i32
  %c6_i64 = arith.constant 6 : i64
  %c7_i64 = arith.constant 7 : i64
  %c0_i64 = arith.constant 0 : i64
  linalg.fill ins(%c0_i32 : i32) outs(%arg2 : memref<i32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%arg1 : memref<6x1xi64>) outs(%arg2 : memref<i32>) {
  ^bb0(%in: i64, %out: i32):
    %0 = arith.cmpi slt, %in, %c-7_i64 : i64
    %1 = arith.cmpi sge, %in, %c7_i64 : i64
    %2 = arith.ori %0, %1 : i1
    %3 = arith.extui %2 : i1 to i32
    %4 = arith.addi %out, %3 : i32
    linalg.yield %4 : i32
  }
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
  linalg.fill ins(%cst_1 : f32) outs(%alloc : memref<6xf32>)
  linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<6x7xf32>) outs(%alloc : memref<6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %expand_shape = memref.expand_shape %alloc [[0, 1]] output_shape [6, 1] : memref<6xf32> into memref<6x1xf32>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<6xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_2 : memref<6xf64>)
  linalg.generic {indexing_maps = [#map, #map3, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %expand_shape : memref<6x7xf32>, memref<6x1xf32>) outs(%alloc_2 : memref<6xf64>) {
  ^bb0(%in: f32, %in_6: f32, %out: f64):
    %0 = arith.subf %in, %in_6 : f32
    %1 = math.exp %0 : f32
    %2 = arith.extf %1 : f32 to f64
    %3 = arith.addf %out, %2 : f64
    linalg.yield %3 : f64
  }
  %expand_shape_3 = memref.expand_shape %alloc_2 [[0, 1]] output_shape [6, 1] : memref<6xf64> into memref<6x1xf64>
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<1xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_4 : memref<1xf64>)
  linalg.generic {indexing_maps = [#map, #map, #map, #map4], iterator_types = ["reduction", "parallel"]} ins(%expand_shape_3, %arg1, %expand_shape : memref<6x1xf64>, memref<6x1xi64>, memref<6x1xf32>) outs(%alloc_4 : memref<1xf64>) {
  ^bb0(%in: f64, %in_6: i64, %in_7: f32, %out: f64):
    %0 = linalg.index 0 : index
    %1 = arith.addi %in_6, %c7_i64 : i64
    %2 = arith.cmpi slt, %in_6, %c0_i64 : i64
    %3 = arith.select %2, %1, %in_6 : i64
    %4 = arith.maxsi %3, %c0_i64 : i64
    %5 = arith.minsi %4, %c6_i64 : i64
    %6 = arith.index_cast %5 : i64 to index
    %7 = memref.load %arg0[%0, %6] : memref<6x7xf32>
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

// -----

// The sum's initial value taken from what a row op writes (the first
// row's max): it would run before the launch that computes it, so the
// kernel stays with the other GPU passes.
// CHECK-LABEL: func.func @outside_reads_rows
// CHECK-NOT: gpu.launch
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#one = affine_map<(d0) -> ()>
#col = affine_map<(d0) -> (d0)>
#first = affine_map<() -> (0)>
#scalar = affine_map<() -> ()>
func.func @outside_reads_rows(%x: memref<64x8xf32>, %m: memref<64xf32>, %s: memref<f32>) attributes {tcc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.fill ins(%ninf : f32) outs(%m : memref<64xf32>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x8xf32>) outs(%m : memref<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#first, #scalar], iterator_types = []}
      ins(%m : memref<64xf32>) outs(%s : memref<f32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#col, #one], iterator_types = ["reduction"]}
      ins(%m : memref<64xf32>) outs(%s : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A body that loads through an index it computes from its position (here
// w[j], at linalg.index 1): rows of 100 f32, 8 threads a row, 4 vectors of
// 4 a thread, the last vector only partly inside the row. There the
// position is clamped to the row's last (99), so the load stays inside w.
// CHECK-LABEL: func.func @indexed_load
// CHECK: gpu.launch
// CHECK: %[[P:.*]] = arith.minui %{{.*}}, %c99
// CHECK: memref.load %arg1[%[[P]]]
#rows2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0)>
func.func @indexed_load(%x: memref<4x100xf32>, %w: memref<100xf32>, %y: memref<4xf32>) attributes {tcc.kernel} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<4xf32>)
  linalg.generic {indexing_maps = [#rows2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x100xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %j = linalg.index 1 : index
    %wj = memref.load %w[%j] : memref<100xf32>
    %p = arith.mulf %a, %wj : f32
    %r = arith.addf %p, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A row op whose body loads the whole sum's output (a gather, not an
// operand): inside the launch it would read the fill, the partials being
// added only after it, so the kernel stays with the other GPU passes.
// CHECK-LABEL: func.func @bodyload
// CHECK-NOT: gpu.launch
#rows3 = affine_map<(d0, d1) -> (d0, d1)>
#row3 = affine_map<(d0, d1) -> (d0)>
#all3 = affine_map<(d0) -> (d0)>
#sc3 = affine_map<(d0) -> ()>
func.func @bodyload(%x: memref<64x8xf32>, %y: memref<64x8xf32>, %s: memref<f32>) attributes {tcc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %z = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<64xf32>
  linalg.fill ins(%ninf : f32) outs(%m : memref<64xf32>)
  linalg.generic {indexing_maps = [#rows3, #row3], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x8xf32>) outs(%m : memref<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%z : f32) outs(%s : memref<f32>)
  linalg.generic {indexing_maps = [#all3, #sc3], iterator_types = ["reduction"]}
      ins(%m : memref<64xf32>) outs(%s : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#rows3, #row3, #rows3], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<64x8xf32>, memref<64xf32>) outs(%y : memref<64x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = memref.load %s[] : memref<f32>
    %r = arith.subf %a, %t : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Cross-entropy over 1025 rows of 1000 (blocks of 64 threads, a row each):
// 1025 partials, more than the last block's 64 threads take (16 each). A
// launch of one block after the row launch, 256 threads of at most 16
// partials each, combines them and runs the mean's division: two
// launches, not a reduction launch of their own for each and one for the
// division. With last-block=false, launches of their own as before.
// CHECK-LABEL: func.func @cross_entropy_many_rows
// CHECK: %[[PC:.*]] = memref.alloc() : memref<1025xi32>
// CHECK: %[[PS:.*]] = memref.alloc() : memref<1025xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1025{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c64{{[_0-9]*}}, {{.*}})
// CHECK: memref.store %{{.*}}, %[[PC]][%{{.*}}] : memref<1025xi32>
// CHECK: memref.store %{{.*}}, %[[PS]][%{{.*}}] : memref<1025xf32>
// CHECK: gpu.terminator
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{[_0-9]*}}, {{.*}} = %c1{{[_0-9]*}}, {{.*}} = %c1{{[_0-9]*}}) threads({{.*}}) in ({{.*}} = %c256{{[_0-9]*}}, {{.*}})
// CHECK: scf.for
// CHECK: memref.load %[[PC]]
// CHECK: scf.for
// CHECK: memref.load %[[PS]]
// CHECK: arith.divf
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK: return
// AFTER-LABEL: func.func @cross_entropy_many_rows
// AFTER: gpu.launch
// AFTER: gpu.terminator
// AFTER-NOT: gpu.launch
// AFTER: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : memref<1025xi32>) outs(%arg2 : memref<i32>)
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> ()>
#map2 = affine_map<(d0, d1) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
#map4 = affine_map<() -> ()>
func.func @cross_entropy_many_rows(%arg0: memref<1025x1000xf32>, %arg1: memref<1025x1xi64>, %arg2: memref<i32>, %arg3: memref<f32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %cst = arith.constant 1.025000e+03 : f64
  %cst_0 = arith.constant 0.000000e+00 : f64
  %cst_1 = arith.constant 0xFF800000 : f32
  %c-1000_i64 = arith.constant -1000 : i64
  %c0_i32 = arith.constant 0 : i32
  %c999_i64 = arith.constant 999 : i64
  %c1000_i64 = arith.constant 1000 : i64
  %c0_i64 = arith.constant 0 : i64
  linalg.fill ins(%c0_i32 : i32) outs(%arg2 : memref<i32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%arg1 : memref<1025x1xi64>) outs(%arg2 : memref<i32>) {
  ^bb0(%in: i64, %out: i32):
    %0 = arith.cmpi slt, %in, %c-1000_i64 : i64
    %1 = arith.cmpi sge, %in, %c1000_i64 : i64
    %2 = arith.ori %0, %1 : i1
    %3 = arith.extui %2 : i1 to i32
    %4 = arith.addi %out, %3 : i32
    linalg.yield %4 : i32
  }
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1025xf32>
  linalg.fill ins(%cst_1 : f32) outs(%alloc : memref<1025xf32>)
  linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<1025x1000xf32>) outs(%alloc : memref<1025xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %expand_shape = memref.expand_shape %alloc [[0, 1]] output_shape [1025, 1] : memref<1025xf32> into memref<1025x1xf32>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<1025xf64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_2 : memref<1025xf64>)
  linalg.generic {indexing_maps = [#map, #map3, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %expand_shape : memref<1025x1000xf32>, memref<1025x1xf32>) outs(%alloc_2 : memref<1025xf64>) {
  ^bb0(%in: f32, %in_5: f32, %out: f64):
    %0 = arith.subf %in, %in_5 : f32
    %1 = math.exp %0 : f32
    %2 = arith.extf %1 : f32 to f64
    %3 = arith.addf %out, %2 : f64
    linalg.yield %3 : f64
  }
  %expand_shape_3 = memref.expand_shape %alloc_2 [[0, 1]] output_shape [1025, 1] : memref<1025xf64> into memref<1025x1xf64>
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<f64>
  linalg.fill ins(%cst_0 : f64) outs(%alloc_4 : memref<f64>)
  linalg.generic {indexing_maps = [#map, #map, #map, #map1], iterator_types = ["reduction", "reduction"]} ins(%expand_shape_3, %arg1, %expand_shape : memref<1025x1xf64>, memref<1025x1xi64>, memref<1025x1xf32>) outs(%alloc_4 : memref<f64>) {
  ^bb0(%in: f64, %in_5: i64, %in_6: f32, %out: f64):
    %0 = linalg.index 0 : index
    %1 = arith.addi %in_5, %c1000_i64 : i64
    %2 = arith.cmpi slt, %in_5, %c0_i64 : i64
    %3 = arith.select %2, %1, %in_5 : i64
    %4 = arith.maxsi %3, %c0_i64 : i64
    %5 = arith.minsi %4, %c999_i64 : i64
    %6 = arith.index_cast %5 : i64 to index
    %7 = memref.load %arg0[%0, %6] : memref<1025x1000xf32>
    %8 = arith.truncf %in : f64 to f32
    %9 = math.log %8 : f32
    %10 = arith.subf %7, %in_6 : f32
    %11 = arith.subf %10, %9 : f32
    %12 = arith.negf %11 : f32
    %13 = arith.extf %12 : f32 to f64
    %14 = arith.addf %out, %13 : f64
    linalg.yield %14 : f64
  }
  linalg.generic {indexing_maps = [#map4, #map4], iterator_types = []} ins(%alloc_4 : memref<f64>) outs(%arg3 : memref<f32>) {
  ^bb0(%in: f64, %out: f32):
    %0 = arith.divf %in, %cst : f64
    %1 = arith.truncf %0 : f64 to f32
    linalg.yield %1 : f32
  }
  return
}
