// RUN: tcc-opt %s --split-input-file --tcc-gpu-row-reductions --mlir-print-local-scope | FileCheck %s

// A row sum over 100 elements: a warp per row, 8 rows a block of 256; each
// lane adds every 32nd element from 0.0, the lanes combine by xor shuffles,
// and lane 0 adds the total to the output's initial value.
// CHECK-LABEL: func.func @row_sum
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK: %[[ROW:.*]] = arith.addi
// CHECK: scf.if
// CHECK: %[[ACC:.*]] = scf.for %[[K:.*]] = %{{.*}} to %c100{{.*}} step %c32{{.*}} iter_args(%[[A:.*]] = %cst
// CHECK: %[[X:.*]] = memref.load %arg0[%[[ROW]], %[[K]]]
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[A]]
// CHECK: scf.yield %[[S]]
// CHECK: gpu.shuffle xor %[[ACC]], %c16
// CHECK: gpu.shuffle xor {{.*}}, %c1_i32
// CHECK: scf.if
// CHECK: %[[OLD:.*]] = memref.load %arg1[%[[ROW]]]
// CHECK: arith.addf %[[OLD]]
// CHECK: memref.store
// CHECK-NOT: linalg.generic
func.func @row_sum(%a: memref<16x100xf32>, %o: memref<16xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<16x100xf32>) outs(%o : memref<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A long row gets a block: warp totals meet in shared memory after a barrier
// and the first warp combines them. The max starts from -inf; the prologue
// (exp) is computed on each element.
// CHECK-LABEL: func.func @long_row_max
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}) workgroup(%[[SH:.*]] : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} to %c4096{{.*}} step %c256
// CHECK: math.exp
// CHECK: arith.maximumf
// CHECK: memref.store {{.*}}, %[[SH]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[SH]]
// CHECK: gpu.shuffle xor
func.func @long_row_max(%a: memref<4x4096xf32>, %o: memref<4xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<4x4096xf32>) outs(%o : memref<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %e = math.exp %x : f32
    %m = arith.maximumf %e, %acc : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// f64 accumulators move through shuffles in two 32-bit halves.
// CHECK-LABEL: func.func @f64_sum
// CHECK: arith.extf
// CHECK: arith.trunci {{.*}} : i64 to i32
// CHECK: gpu.shuffle xor {{.*}} : i32
func.func @f64_sum(%a: memref<3x50xf32>, %o: memref<3xf64>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<3x50xf32>) outs(%o : memref<3xf64>) {
  ^bb0(%x: f32, %acc: f64):
    %w = arith.extf %x : f32 to f64
    %s = arith.addf %w, %acc : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// Reducing along a strided dimension (a column sum) is left to the generic
// mapping: neighbouring threads would not read neighbouring elements.
// CHECK-LABEL: func.func @column_sum
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
func.func @column_sum(%a: memref<100x16xf32>, %o: memref<16xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<100x16xf32>) outs(%o : memref<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A combination that is not one arith op (an argmax-like select) is left
// alone.
// CHECK-LABEL: func.func @not_a_combiner
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
func.func @not_a_combiner(%a: memref<4x8xf32>, %o: memref<4xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<4x8xf32>) outs(%o : memref<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %c = arith.cmpf ogt, %x, %acc : f32
    %s = arith.select %c, %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A sum over the rows of a column [N, 1] (loops reduction, then parallel of
// extent 1: a cross-entropy's mean over the batch) is one row of N values,
// the unit loop at 0: split into 4 parts of 4096, a block each, its threads
// reading neighbouring elements, the totals added atomically.
// CHECK-LABEL: func.func @unit_column_sum
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}) workgroup(
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c256
// CHECK: memref.load %arg0[%[[K]], %c0{{.*}}]
// CHECK: gpu.barrier
// CHECK: memref.atomic_rmw addf %{{.*}}, %arg1[%c0{{.*}}, %c0{{.*}}]
// CHECK-NOT: linalg.generic
func.func @unit_column_sum(%a: memref<16384x1xf32>, %o: memref<1x1xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%a : memref<16384x1xf32>) outs(%o : memref<1x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A unit loop between a row's loops and its reduction: [8, 1, 100] summed
// over the last axis, a warp a row (the row index skips the unit loop).
// CHECK-LABEL: func.func @unit_between
// CHECK: gpu.launch
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c100{{.*}} step %c32
// CHECK: memref.load %arg0[%{{.*}}, %c0{{.*}}, %[[K]]]
// CHECK-NOT: linalg.generic
func.func @unit_between(%a: memref<8x1x100xf32>, %o: memref<8x1xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : memref<8x1x100xf32>) outs(%o : memref<8x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A column of a wider matrix ([N, 2], a sum over the rows) still reads
// memory a row apart: left to the generic mapping.
// CHECK-LABEL: func.func @strided_column_sum
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
func.func @strided_column_sum(%a: memref<1000x2xf32>, %o: memref<1x2xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%a : memref<1000x2xf32>) outs(%o : memref<1x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A mean's sum over H and W of [N, H, W, C] (channels last): its reduced
// loops are not innermost, so it stays a generic, with its parallel loops
// moved outermost (N, C, then H, W) for a thread per output element.
// CHECK-LABEL: func.func @nhwc_pool_sum
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
// CHECK-NOT: gpu.launch
func.func @nhwc_pool_sum(%a: memref<2x7x7x64xf32>, %o: memref<2x64xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3)>],
                  iterator_types = ["parallel", "reduction", "reduction", "parallel"]}
      ins(%a : memref<2x7x7x64xf32>) outs(%o : memref<2x64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Few long rows (4 of a million): each row is split into parts of 4352
// elements (at least 4096, a multiple of the block), 230 a row, a block
// each; a block reduces [part * 4352, min(part * 4352 + 4352, 10^6)) and
// adds its total to the output atomically.
// CHECK-LABEL: func.func @split_rows
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c920{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK: %[[ROW:.*]] = arith.divui %{{.*}}, %c230{{[_0-9]*}}
// CHECK: %[[PART:.*]] = arith.remui %{{.*}}, %c230{{[_0-9]*}}
// CHECK: %[[BEGIN:.*]] = arith.muli %[[PART]], %c4352{{[_0-9]*}}
// CHECK: %[[NEXT:.*]] = arith.addi %[[BEGIN]], %c4352{{[_0-9]*}}
// CHECK: %[[END:.*]] = arith.minui %[[NEXT]], %c1000000{{[_0-9]*}}
// CHECK: %[[FIRST:.*]] = arith.addi %[[BEGIN]], %{{.*}}
// CHECK: scf.for {{.*}} = %[[FIRST]] to %[[END]] step %c256{{[_0-9]*}}
// CHECK: gpu.barrier
// CHECK: memref.atomic_rmw addf %{{.*}}, %arg1[%[[ROW]]]
// CHECK-NOT: memref.store {{.*}}, %arg1
func.func @split_rows(%a: memref<4x1000000xf32>, %o: memref<4xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<4x1000000xf32>) outs(%o : memref<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A float max has no atomic on the GPU: a few long rows keep a block each.
// CHECK-LABEL: func.func @long_max_unsplit
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{[_0-9]*}}, {{.*}})
// CHECK-NOT: memref.atomic_rmw
func.func @long_max_unsplit(%a: memref<2x1000000xf32>, %o: memref<2xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<2x1000000xf32>) outs(%o : memref<2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %m = arith.maximumf %x, %acc : f32
    linalg.yield %m : f32
  }
  return
}
