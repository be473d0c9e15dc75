// RUN: tcc-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(tcc-host-region-grid))" -verify-diagnostics | FileCheck %s

// The row-tile loop (7 rows in tiles of 2: 4 iterations) runs iterations
// [begin, end): from 0 + begin * 2 to min(7, 0 + end * 2); the grid is 4.
// The batch loop above it, one iteration, is passed through.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: attributes {tcc.grid = 4 : i64, tcc.kernel, tcc.region_tiles}
// CHECK: scf.for %{{.*}} = %c0 to %c1 step %c1
// CHECK:   %[[B:.*]] = arith.muli %[[BEGIN:.*]], %c2
// CHECK:   %[[LO:.*]] = arith.addi %c0{{.*}}, %[[B]]
// CHECK:   %[[E:.*]] = arith.muli %[[END:.*]], %c2
// CHECK:   %[[HI0:.*]] = arith.addi %c0{{.*}}, %[[E]]
// CHECK:   %[[HI:.*]] = arith.minsi %c7, %[[HI0]]
// CHECK:   scf.for %{{.*}} = %[[LO]] to %[[HI]] step %c2
func.func @rows(%out: memref<1x7xf32>, %begin: index, %end: index) attributes {tcc.kernel, tcc.region_tiles, tcc.grid = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %f = arith.constant 1.0 : f32
  scf.for %n = %c0 to %c1 step %c1 {
    scf.for %h = %c0 to %c7 step %c2 {
      memref.store %f, %out[%n, %h] : memref<1x7xf32>
    }
  }
  return
}

// -----

// Batch 3: the batch loop is the grid.
// CHECK-LABEL: func.func @batch
// CHECK-SAME: tcc.grid = 3 : i64
// CHECK: %[[LO:.*]] = arith.addi
// CHECK: %[[HI:.*]] = arith.minsi %c3
// CHECK: scf.for %{{.*}} = %[[LO]] to %[[HI]] step %c1
// CHECK:   scf.for %{{.*}} = %c0 to %c7 step %c2
func.func @batch(%out: memref<3x7xf32>, %begin: index, %end: index) attributes {tcc.kernel, tcc.region_tiles, tcc.grid = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %f = arith.constant 1.0 : f32
  scf.for %n = %c0 to %c3 step %c1 {
    scf.for %h = %c0 to %c7 step %c2 {
      memref.store %f, %out[%n, %h] : memref<3x7xf32>
    }
  }
  return
}

// -----

// Not from tcc-partition-grid: refused.
// expected-error @+1 {{a region kernel must come from tcc-partition-grid unsplit (grid 1, begin and end arguments)}}
func.func @unsplit(%out: memref<3x7xf32>) attributes {tcc.kernel, tcc.region_tiles} {
  return
}
