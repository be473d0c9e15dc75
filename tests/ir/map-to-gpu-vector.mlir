// RUN: tcc-opt %s --split-input-file --tcc-map-to-gpu="block-size=128" | FileCheck %s

// With vector-accesses (the default): a
// thread's run of contiguous, provably aligned accesses is one vector load
// or store.

// A large bf16 loop: each thread takes 8 consecutive innermost iterations
// (16 bytes), their 8 loads one aligned vector load, their 8 stores one
// vector store.
// CHECK-LABEL: func.func @vectorized
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c256{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c128
// CHECK: %[[V:.*]] = vector.load %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<64x4096xbf16>, vector<8xbf16>
// CHECK-NOT: memref.load
// CHECK-COUNT-8: vector.extract %[[V]]
// CHECK: %[[W:.*]] = vector.from_elements
// CHECK: vector.store %[[W]], %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<64x4096xbf16>, vector<8xbf16>
// CHECK-NOT: memref.store
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

// -----

// An operand broadcast along the outer axis (RoPE's cos and sin) is read
// by the innermost variable alone: one vector load too.
// CHECK-LABEL: func.func @broadcast_operand
// CHECK: vector.load %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<64x4096xf16>, vector<8xf16>
// CHECK: vector.load %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<4096xf16>, vector<8xf16>
// CHECK-COUNT-8: arith.mulf
// CHECK: vector.store
func.func @broadcast_operand(%a: memref<64x4096xf16>, %c: memref<4096xf16>, %o: memref<64x4096xf16>) attributes {tcc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c4096) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<64x4096xf16>
    %y = memref.load %c[%j] : memref<4096xf16>
    %p = arith.mulf %x, %y : f16
    memref.store %p, %o[%i, %j] : memref<64x4096xf16>
    scf.reduce
  }
  return
}

// -----

// A concat along the innermost axis split at 2048 (rotate_half's halves;
// a multiple of the 4 f32 iterations a thread takes): the branch is the
// same for the 4, so it stays one scf.if around their clones, and the
// halves' reads at j + 2048 and j - 2048 are vector loads.
// CHECK-LABEL: func.func @concat_uniform
// CHECK: scf.if %{{.*}} -> (f32, f32, f32, f32)
// CHECK: vector.load %{{.*}} : memref<64x4096xf32>, vector<4xf32>
// CHECK: vector.load %{{.*}} : memref<64x4096xf32>, vector<4xf32>
// CHECK-COUNT-4: arith.negf
// CHECK: scf.yield
// CHECK: } else {
// CHECK: vector.load %{{.*}} : memref<64x4096xf32>, vector<4xf32>
// CHECK: scf.yield
// CHECK-NOT: scf.if
// CHECK: vector.store
func.func @concat_uniform(%a: memref<64x4096xf32>, %o: memref<64x4096xf32>) attributes {tcc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c2048 = arith.constant 2048 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c4096) step (%c1, %c1) {
    %low = arith.cmpi slt, %j, %c2048 : index
    %r = scf.if %low -> (f32) {
      %k = affine.apply affine_map<(d0) -> (d0 + 2048)>(%j)
      %x = memref.load %a[%i, %k] : memref<64x4096xf32>
      %y = memref.load %a[%i, %j] : memref<64x4096xf32>
      %n = arith.negf %x : f32
      %s = arith.addf %n, %y : f32
      scf.yield %s : f32
    } else {
      %k = arith.subi %j, %c2048 : index
      %x = memref.load %a[%i, %k] : memref<64x4096xf32>
      scf.yield %x : f32
    }
    memref.store %r, %o[%i, %j] : memref<64x4096xf32>
    scf.reduce
  }
  return
}

// -----

// Split at 2047, the branch differs inside a thread's run: an scf.if per
// iteration, each with its scalar load; a view whose offset (3) is not a
// multiple of the run, and an i1 buffer, are read element by element.
// CHECK-LABEL: func.func @not_vectorized
// CHECK-NOT: vector.load
// CHECK-COUNT-8: scf.if
// CHECK-NOT: vector.load
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<64x4096xf32>, vector<8xf32>
func.func @not_vectorized(%a: memref<64x4096xf32>, %v: memref<64x4096xf32, strided<[4096, 1], offset: 3>>, %m: memref<64x4096xi1>, %o: memref<64x4096xf32>) attributes {tcc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c2047 = arith.constant 2047 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c4096) step (%c1, %c1) {
    %low = arith.cmpi slt, %j, %c2047 : index
    %r = scf.if %low -> (f32) {
      %x = memref.load %a[%i, %j] : memref<64x4096xf32>
      scf.yield %x : f32
    } else {
      scf.yield %zero : f32
    }
    %y = memref.load %v[%i, %j] : memref<64x4096xf32, strided<[4096, 1], offset: 3>>
    %keep = memref.load %m[%i, %j] : memref<64x4096xi1>
    %s = arith.addf %r, %y : f32
    %z = arith.select %keep, %s, %zero : f32
    memref.store %z, %o[%i, %j] : memref<64x4096xf32>
    scf.reduce
  }
  return
}
