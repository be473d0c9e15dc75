// RUN: tcc-opt %s --split-input-file --tcc-gpu-row-fusion | FileCheck %s

// Softmax over rows of 64: one launch, a block per row of 32 threads, each
// taking 4 neighbouring f32 at a time (16 bytes); the max, the exponentials
// and the sum are kept in shared memory; the ops run in order with a barrier
// after each.
// CHECK-LABEL: func.func @softmax_rows
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c32
// CHECK-SAME: workgroup(%[[M:.*]] : memref<1xf32, #gpu.address_space<workgroup>>, %[[E:.*]] : memref<64xf32, #gpu.address_space<workgroup>>, %[[S:.*]] : memref<1xf32, #gpu.address_space<workgroup>>
// CHECK: memref.store {{.*}}, %[[M]]
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} step %c128
// CHECK-COUNT-4: memref.load %arg0
// CHECK-COUNT-4: arith.maximumf
// CHECK: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: memref.store {{.*}}, %[[M]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: memref.load %[[M]]
// CHECK: math.exp
// CHECK: memref.store {{.*}}, %[[E]]
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.load %[[E]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: arith.divf
// CHECK: memref.store {{.*}}, %arg1
// CHECK: gpu.barrier
// CHECK-NOT: linalg.
// CHECK: return
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @softmax_rows(%x: memref<4x64xf32>, %y: memref<4x64xf32>) attributes {tcc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<4xf32>
  linalg.fill ins(%ninf : f32) outs(%m : memref<4xf32>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x64xf32>) outs(%m : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  }
  %e = memref.alloc() : memref<4x64xf32>
  linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<4x64xf32>, memref<4xf32>) outs(%e : memref<4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %x2 = math.exp %d : f32
    linalg.yield %x2 : f32
  }
  %s = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<4xf32>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : memref<4x64xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : memref<4x64xf32>, memref<4xf32>) outs(%y : memref<4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }
  return
}

// -----

// A weight shared by every row (gamma) is read in place; rows of 5 get a
// warp.
// CHECK-LABEL: func.func @scaled_sum
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c32
// CHECK: memref.load %arg1[
// CHECK-NOT: linalg.
// CHECK: return
func.func @scaled_sum(%x: memref<3x5xf32>, %g: memref<5xf32>, %o: memref<3x5xf32>, %t: memref<3xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %g : memref<3x5xf32>, memref<5xf32>) outs(%o : memref<3x5xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%o : memref<3x5xf32>) outs(%t : memref<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A kernel-local buffer read across rows (a column of the first op's output)
// would need other blocks' work: the kernel is left alone.
// CHECK-LABEL: func.func @across_rows
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
func.func @across_rows(%x: memref<4x4xf32>, %t: memref<4xf32>) attributes {tcc.kernel} {
  %e = memref.alloc() : memref<4x4xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x4xf32>) outs(%e : memref<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%e : memref<4x4xf32>) outs(%t : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A single reduction with nothing else is left to tcc-gpu-row-reductions.
// CHECK-LABEL: func.func @lone_reduction
// CHECK-NOT: gpu.launch
func.func @lone_reduction(%x: memref<4x64xf32>, %t: memref<4xf32>) attributes {tcc.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x64xf32>) outs(%t : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}
