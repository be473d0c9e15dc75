// RUN: tcc-opt %s --split-input-file --tcc-map-to-gpu="block-size=128 vector-accesses=0" | FileCheck %s

// The scalar clones (vector-accesses=0); map-to-gpu-vector.mlir has the
// vector accesses tcc compile makes.

// A 2-D parallel loop is one launch over its 40 x 7 = 280 iterations, in
// blocks of 128 threads: 3 blocks, a bounds check, the innermost dimension
// the remainder of the linear index.
// CHECK-LABEL: func.func @elementwise
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C3]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[C128]],
// CHECK: %[[LIN:.*]] = arith.addi
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[LIN]], %{{.*}}
// CHECK: scf.if %[[IN]]
// CHECK: %[[J:.*]] = arith.remui %[[LIN]], %{{.*}}
// CHECK: %[[I:.*]] = arith.divui %[[LIN]], %{{.*}}
// CHECK: memref.load %{{.*}}[%[[I]], %[[J]]]
// CHECK: math.exp
// CHECK: memref.store
// CHECK-NOT: scf.parallel
func.func @elementwise(%a: memref<40x7xf32>, %o: memref<40x7xf32>) attributes {tcc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c40 = arith.constant 40 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c40, %c7) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<40x7xf32>
    %e = math.exp %x : f32
    memref.store %e, %o[%i, %j] : memref<40x7xf32>
    scf.reduce
  }
  return
}

// -----

// A small loop gets a block rounded up to a warp; a view of an argument is
// sunk into the launch, so the launch captures the argument only.
// CHECK-LABEL: func.func @view_sunk
// CHECK: gpu.launch {{.*}} in ({{.*}} = %c1{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c32,
// CHECK: %[[A:.*]] = memref.assume_alignment %arg0, 16
// CHECK: memref.collapse_shape %[[A]]
// CHECK: gpu.terminator
func.func @view_sunk(%a: memref<2x5xf32>, %o: memref<10xf32>) attributes {tcc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %v = memref.collapse_shape %a [[0, 1]] : memref<2x5xf32> into memref<10xf32>
  scf.parallel (%i) = (%c0) to (%c10) step (%c1) {
    %x = memref.load %v[%i] : memref<10xf32>
    memref.store %x, %o[%i] : memref<10xf32>
    scf.reduce
  }
  return
}

// -----

// A whole-tensor reduction has no parallel loop: it runs in a launch of one
// thread, with the scalar ops that use its results.
// CHECK-LABEL: func.func @serial
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{[_0-9]*}}, {{.*}} = %c1{{[_0-9]*}}, {{.*}} = %c1{{[_0-9]*}}) threads({{.*}}) in ({{.*}} = %c1{{[_0-9]*}},
// CHECK: scf.for
// CHECK: arith.mulf
// CHECK: memref.store
// CHECK: gpu.terminator
func.func @serial(%a: memref<100xf32>, %o: memref<f32>) attributes {tcc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %s = scf.for %i = %c0 to %c100 step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %a[%i] : memref<100xf32>
    %n = arith.addf %acc, %x : f32
    scf.yield %n : f32
  }
  %h = arith.mulf %s, %half : f32
  memref.store %h, %o[] : memref<f32>
  return
}

// -----

// Scratch a thread allocates inside its loop becomes stack memory allocated
// once at the start of the launch; scratch of the whole kernel stays outside.
// CHECK-LABEL: func.func @private_scratch
// CHECK: %[[KEEP:.*]] = memref.alloc() : memref<4xf32>
// CHECK: gpu.launch
// CHECK: memref.alloca() : memref<8xf32>
// CHECK-NOT: memref.alloc()
// CHECK-NOT: memref.dealloc
// CHECK: gpu.terminator
func.func @private_scratch(%a: memref<4x8xf32>, %o: memref<4xf32>) attributes {tcc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %keep = memref.alloc() : memref<4xf32>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %row = memref.alloc() : memref<8xf32>
    %x = memref.load %a[%i, %c0] : memref<4x8xf32>
    memref.store %x, %row[%c0] : memref<8xf32>
    %y = memref.load %row[%c0] : memref<8xf32>
    memref.store %y, %o[%i] : memref<4xf32>
    memref.dealloc %row : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// Functions that are not kernels are left alone.
// CHECK-LABEL: func.func @not_a_kernel
// CHECK: scf.parallel
// CHECK-NOT: gpu.launch
func.func @not_a_kernel(%o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %z, %o[%i] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// Serial work on either side of an existing launch (a row reduction's)
// stays on its side: the fill runs before it, the copy after.
// CHECK-LABEL: func.func @serial_around_launch
// CHECK: gpu.launch
// CHECK: %[[T:.*]] = memref.assume_alignment %arg1
// CHECK: memref.store %{{.*}}, %[[T]][]
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK: arith.constant 2.0
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK: %[[T2:.*]] = memref.assume_alignment %arg1
// CHECK: memref.load %[[T2]][]
// CHECK: gpu.terminator
func.func @serial_around_launch(%o: memref<f32>, %t: memref<f32>) attributes {tcc.kernel} {
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %t[] : memref<f32>
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
             threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %two = arith.constant 2.0 : f32
    memref.store %two, %t[] : memref<f32>
    gpu.terminator
  }
  %v = memref.load %t[] : memref<f32>
  memref.store %v, %o[] : memref<f32>
  return
}

// -----

// A large bf16 loop: each thread takes 8 consecutive innermost iterations
// (16 bytes), cloned op by op so the 8 loads come first, then the 8 stores.
// CHECK-LABEL: func.func @vectorized
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c256{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c128
// CHECK-COUNT-8: memref.load
// CHECK-NOT: memref.load
// CHECK-COUNT-8: memref.store
// CHECK: gpu.terminator
func.func @vectorized(%a: memref<64x4096xbf16>, %o: memref<64x4096xbf16>) attributes {tcc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c4096) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<64x4096xbf16>
    memref.store %x, %o[%i, %j] : memref<64x4096xbf16>
    scf.reduce
  }
  return
}
