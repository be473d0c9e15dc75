// RUN: tcc-opt %s --split-input-file --tcc-promote-accumulators | FileCheck %s

// A row sum: the output element is loaded once before the loop, carried,
// and stored once after it.
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.for %[[I:.*]] =
// CHECK:   %[[INIT:.*]] = memref.load %arg1[%[[I]]]
// CHECK:   %[[SUM:.*]] = scf.for %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK:     %[[X:.*]] = memref.load %arg0
// CHECK:     %[[NEW:.*]] = arith.addf %[[ACC]], %[[X]]
// CHECK-NOT: memref.store
// CHECK:     scf.yield %[[NEW]]
// CHECK:   memref.store %[[SUM]], %arg1[%[[I]]]
func.func @row_sum(%in: memref<8x100xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c100 = arith.constant 100 : index
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c100 step %c1 {
      %a = memref.load %out[%i] : memref<8xf32>
      %x = memref.load %in[%i, %j] : memref<8x100xf32>
      %s = arith.addf %a, %x : f32
      memref.store %s, %out[%i] : memref<8xf32>
    }
  }
  return
}

// -----

// A 3x3 window (a depthwise convolution's taps): the inner loop is promoted
// first, then the load and store it leaves around itself make the outer
// loop's accumulator.
// CHECK-LABEL: func.func @window
// CHECK: scf.parallel
// CHECK:   %[[INIT:.*]] = memref.load %arg2
// CHECK:   %[[R:.*]] = scf.for %{{.*}} iter_args(%[[A:.*]] = %[[INIT]]) -> (f32)
// CHECK:     %[[R2:.*]] = scf.for %{{.*}} iter_args(%[[B:.*]] = %[[A]]) -> (f32)
// CHECK-NOT:   memref.store
// CHECK:       scf.yield
// CHECK:     scf.yield %[[R2]]
// CHECK:   memref.store %[[R]], %arg2
func.func @window(%in: memref<10x10xf16>, %w: memref<3x3xf16>, %out: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%y, %x) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    scf.for %kh = %c0 to %c3 step %c1 {
      scf.for %kw = %c0 to %c3 step %c1 {
        %iy = arith.addi %y, %kh : index
        %ix = arith.addi %x, %kw : index
        %a = memref.load %out[%y, %x] : memref<8x8xf32>
        %v = memref.load %in[%iy, %ix] : memref<10x10xf16>
        %k = memref.load %w[%kh, %kw] : memref<3x3xf16>
        %p = arith.mulf %v, %k : f16
        %e = arith.extf %p : f16 to f32
        %s = arith.addf %a, %e : f32
        memref.store %s, %out[%y, %x] : memref<8x8xf32>
      }
    }
    scf.reduce
  }
  return
}

// -----

// The loop also reads another element of the accumulator's buffer (through
// a view): not promoted, as any other access to that buffer would forbid it.
// CHECK-LABEL: func.func @other_access
// CHECK-NOT: iter_args
// CHECK: return
func.func @other_access(%out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %view = memref.subview %out[1] [7] [1] : memref<8xf32> to memref<7xf32, strided<[1], offset: 1>>
  scf.for %j = %c0 to %c7 step %c1 {
    %a = memref.load %out[%c0] : memref<8xf32>
    %x = memref.load %view[%j] : memref<7xf32, strided<[1], offset: 1>>
    %s = arith.addf %a, %x : f32
    memref.store %s, %out[%c0] : memref<8xf32>
  }
  return
}

// -----

// The element changes with the loop (a scan's store): not an accumulator.
// CHECK-LABEL: func.func @moving_index
// CHECK-NOT: iter_args
// CHECK: return
func.func @moving_index(%in: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %j = %c0 to %c8 step %c1 {
    %a = memref.load %out[%j] : memref<8xf32>
    %x = memref.load %in[%j] : memref<8xf32>
    %s = arith.addf %a, %x : f32
    memref.store %s, %out[%j] : memref<8xf32>
  }
  return
}

// -----

// A call might touch any buffer: left alone.
// CHECK-LABEL: func.func @opaque_call
// CHECK-NOT: iter_args
// CHECK: return
func.func private @touch(memref<8xf32>)
func.func @opaque_call(%in: memref<8xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %j = %c0 to %c8 step %c1 {
    %a = memref.load %out[%c0] : memref<1xf32>
    %x = memref.load %in[%j] : memref<8xf32>
    %s = arith.addf %a, %x : f32
    func.call @touch(%in) : (memref<8xf32>) -> ()
    memref.store %s, %out[%c0] : memref<1xf32>
  }
  return
}
