// RUN: tcc-opt %s --split-input-file --tcc-partition-grid="min-work=1" | FileCheck %s

// An elementwise kernel is split along its largest parallel dimension; every
// operand that follows that dimension is viewed at [begin, end).
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: %[[A:.*]]: memref<64x8xf32>, %[[O:.*]]: memref<64x8xf32>, %[[B:.*]]: index, %[[E:.*]]: index
// CHECK-SAME: tcc.grid = 64
// CHECK: %[[N:.*]] = arith.subi %[[E]], %[[B]]
// CHECK: %[[AV:.*]] = memref.subview %[[A]][%[[B]], 0] [%[[N]], 8] [1, 1]
// CHECK: %[[OV:.*]] = memref.subview %[[O]][%[[B]], 0] [%[[N]], 8] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[AV]] : {{.*}}) outs(%[[OV]] : {{.*}})
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise(%a: memref<64x8xf32>, %o: memref<64x8xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<64x8xf32>) outs(%o : memref<64x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A row reduction and its init are split along the kept dimension, never the
// reduced one; linalg.index along it is shifted by begin.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: tcc.grid = 16
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : memref<?xf32, strided<[1], offset: ?>>)
// CHECK: linalg.generic
// CHECK:   %[[I:.*]] = linalg.index 0
// CHECK:   arith.addi %[[I]], %{{.*}}
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @rows(%a: memref<16x100xf32>, %o: memref<16xf32>) attributes {tcc.kernel} {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%o : memref<16xf32>)
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<16x100xf32>) outs(%o : memref<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %s = arith.addf %x, %acc : f32
    %t = arith.addf %s, %f : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// A full reduction writes one element from every row: it cannot be split.
// CHECK-LABEL: func.func @total
// CHECK-SAME: tcc.grid = 1
// CHECK-NOT: memref.subview
#in2 = affine_map<(d0) -> (d0)>
#out2 = affine_map<(d0) -> ()>
func.func @total(%a: memref<1000xf32>, %o: memref<f32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [#in2, #out2], iterator_types = ["reduction"]}
      ins(%a : memref<1000xf32>) outs(%o : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A transpose of the kernel's own output is split consistently: the first
// op writes columns of %o, which the second reads as its rows.
// CHECK-LABEL: func.func @transposed_reuse
// CHECK-SAME: tcc.grid = 32
// CHECK: memref.subview %arg1[0, %arg3] [32, %{{.*}}]
// CHECK: memref.subview %arg1[0, %arg3] [32, %{{.*}}]
// CHECK: memref.subview %arg2[%arg3, 0] [%{{.*}}, 32]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @transposed_reuse(%a: memref<32x32xf32>, %o: memref<32x32xf32>, %p: memref<32x32xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<32x32xf32>) outs(%o : memref<32x32xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [#t, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%o : memref<32x32xf32>) outs(%p : memref<32x32xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// Reading the kernel's own output both as rows and as columns cannot be
// split: the kernel stays whole.
// CHECK-LABEL: func.func @both_ways
// CHECK-SAME: tcc.grid = 1
// CHECK-NOT: memref.subview
#id3 = affine_map<(d0, d1) -> (d0, d1)>
#t3 = affine_map<(d0, d1) -> (d1, d0)>
func.func @both_ways(%a: memref<32x32xf32>, %o: memref<32x32xf32>, %p: memref<32x32xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<32x32xf32>) outs(%o : memref<32x32xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [#id3, #t3, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%o, %o : memref<32x32xf32>, memref<32x32xf32>) outs(%p : memref<32x32xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A chain kernel (softmax): the max, the exponentials and the sum write
// kernel-local buffers, read by rows only (through views that add a unit
// dimension): every op is restricted to the call's rows, so no call repeats
// another's work.
// CHECK-LABEL: func.func @softmax_rows
// CHECK-SAME: tcc.grid = 8
// CHECK: %[[M:.*]] = memref.alloc() {{.*}} : memref<8xf32>
// CHECK: %[[MV:.*]] = memref.expand_shape %[[M]]
// CHECK: %[[F:.*]] = memref.subview %[[MV]][%arg2, 0]
// CHECK: linalg.fill {{.*}} outs(%[[F]]
// CHECK: %[[X:.*]] = memref.subview %{{.*}}[%arg2, 0, 0]
// CHECK: %[[R:.*]] = memref.subview %[[MV]][%arg2, 0]
// CHECK: linalg.generic {{.*}} ins(%[[X]] {{.*}} outs(%[[R]]
// CHECK: %[[E:.*]] = memref.alloc() {{.*}} : memref<8x1000xf32>
// CHECK: %[[A:.*]] = memref.subview %arg0[%arg2, 0]
// CHECK: %[[B:.*]] = memref.subview %[[MV]][%arg2, 0]
// CHECK: %[[EV:.*]] = memref.subview %[[E]][%arg2, 0]
// CHECK: linalg.generic {{.*}} ins(%[[A]], %[[B]] {{.*}} outs(%[[EV]]
// CHECK: %[[EE:.*]] = memref.subview %[[E]][%arg2, 0]
// CHECK: %[[O:.*]] = memref.subview %arg1[%arg2, 0]
// CHECK: linalg.generic {{.*}} ins(%[[EE]], %{{.*}} outs(%[[O]]
#r3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#e2 = affine_map<(d0, d1) -> (d0, d1)>
#b2 = affine_map<(d0, d1) -> (d0, 0)>
func.func @softmax_rows(%arg0: memref<8x1000xf32>, %arg1: memref<8x1000xf32>) attributes {tcc.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %m = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  %mv = memref.expand_shape %m [[0, 1]] output_shape [8, 1] : memref<8xf32> into memref<8x1xf32>
  linalg.fill ins(%ninf : f32) outs(%mv : memref<8x1xf32>)
  %xv = memref.expand_shape %arg0 [[0, 1], [2]] output_shape [8, 1, 1000] : memref<8x1000xf32> into memref<8x1x1000xf32>
  linalg.generic {indexing_maps = [#r3, #r2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xv : memref<8x1x1000xf32>) outs(%mv : memref<8x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %e = memref.alloc() {alignment = 64 : i64} : memref<8x1000xf32>
  linalg.generic {indexing_maps = [#e2, #b2, #e2], iterator_types = ["parallel", "parallel"]}
      ins(%arg0, %mv : memref<8x1000xf32>, memref<8x1xf32>) outs(%e : memref<8x1000xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  %s = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  %sv = memref.expand_shape %s [[0, 1]] output_shape [8, 1] : memref<8xf32> into memref<8x1xf32>
  linalg.fill ins(%zero : f32) outs(%sv : memref<8x1xf32>)
  %ev = memref.expand_shape %e [[0, 1], [2]] output_shape [8, 1, 1000] : memref<8x1000xf32> into memref<8x1x1000xf32>
  linalg.generic {indexing_maps = [#r3, #r2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ev : memref<8x1x1000xf32>) outs(%sv : memref<8x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#e2, #b2, #e2], iterator_types = ["parallel", "parallel"]}
      ins(%e, %sv : memref<8x1000xf32>, memref<8x1xf32>) outs(%arg1 : memref<8x1000xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %0 = arith.divf %in, %sum : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A kernel-local buffer read both as rows and as columns: its writer cannot
// be split, so it runs whole in every call and only the writer of the
// kernel's output is restricted.
// CHECK-LABEL: func.func @local_both_ways
// CHECK-SAME: tcc.grid = 16
// CHECK: %[[L:.*]] = memref.alloc
// CHECK-NOT: memref.subview
// CHECK: linalg.generic {{.*}} outs(%[[L]] : memref<16x16xf32>)
// CHECK: memref.subview
// CHECK: linalg.generic
#l2 = affine_map<(d0, d1) -> (d0, d1)>
#lt = affine_map<(d0, d1) -> (d1, d0)>
func.func @local_both_ways(%a: memref<16x16xf32>, %o: memref<16x16xf32>) attributes {tcc.kernel} {
  %l = memref.alloc() : memref<16x16xf32>
  linalg.generic {indexing_maps = [#l2, #l2], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<16x16xf32>) outs(%l : memref<16x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [#l2, #lt, #l2], iterator_types = ["parallel", "parallel"]}
      ins(%l, %l : memref<16x16xf32>, memref<16x16xf32>) outs(%o : memref<16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A local buffer written row by row, then read by a load at a computed row
// (a slice feeding a pad): split by rows, a call would read rows of its own
// local buffer that only another call computed. So the local writer runs
// whole in every call, and only the writer of the argument is split.
// CHECK-LABEL: func.func @load_of_local
// CHECK: %[[T:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK: linalg.generic {{.*}} outs(%[[T]] : memref<16x8xf32>)
// CHECK: %[[OV:.*]] = memref.subview
// CHECK: linalg.generic {{.*}} outs(%[[OV]] :
// CHECK:   memref.load %[[T]]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @load_of_local(%a: memref<16x8xf32>, %o: memref<16x8xf32>) attributes {tcc.kernel} {
  %t = memref.alloc() : memref<16x8xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<16x8xf32>) outs(%t : memref<16x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%o : memref<16x8xf32>) {
  ^bb0(%y: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c15 = arith.constant 15 : index
    %r = arith.subi %c15, %i : index
    %v = memref.load %t[%r, %j] : memref<16x8xf32>
    linalg.yield %v : f32
  }
  return
}
