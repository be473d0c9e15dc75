// RUN: tcc-opt %s --split-input-file --tcc-gpu-row-fusion | FileCheck %s

// Softmax over rows of 64 f32: one launch of one block, 4 threads a row
// (4 rows), each holding four 16-byte vectors of its row. The row is loaded
// once; the max, the exponentials and the sum stay in registers; the
// result is stored once. A row fits in a warp: shuffles, no shared memory,
// no barrier, and the kernel-local buffers are gone.
// CHECK-LABEL: func.func @softmax_rows
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c16
// CHECK-NOT: workgroup
// CHECK: %[[X:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1]]
// CHECK-COUNT-4: vector.load %[[X]][{{.*}}] {alignment = 16 : i64} : memref<256xf32>, vector<4xf32>
// CHECK-NOT: vector.load
// CHECK: arith.maximumf
// CHECK: gpu.shuffle xor
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: gpu.shuffle xor
// The division by the row's sum: one reciprocal, then products.
// CHECK: %[[R:.*]] = arith.divf %cst{{[_0-9]*}}, %{{.*}} : f32
// CHECK-NOT: arith.divf
// CHECK-COUNT-16: arith.mulf %{{.*}}, %[[R]] : f32
// CHECK-NOT: gpu.barrier
// CHECK: %[[Y:.*]] = memref.collapse_shape %arg1 {{\[\[}}0, 1]]
// CHECK-COUNT-4: vector.store {{.*}}, %[[Y]][{{.*}}] {alignment = 16 : i64}
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

// Rows of 4096 f32: a block of 256 threads a row, 16 values each; the
// warps' partial max and sum meet in shared memory (one buffer each, one
// barrier each).
// CHECK-LABEL: func.func @long_rows
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK-SAME: workgroup(%[[P:.*]] : memref<8xf32, #gpu.address_space<workgroup>>, %[[Q:.*]] : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-4: vector.load
// CHECK: arith.maximumf
// CHECK: memref.store {{.*}}, %[[P]]
// CHECK: gpu.barrier
// CHECK: math.exp
// CHECK: memref.store {{.*}}, %[[Q]]
// CHECK: gpu.barrier
// CHECK: arith.divf
// CHECK-COUNT-4: vector.store
func.func @long_rows(%x: memref<2x4096xf32>, %y: memref<2x4096xf32>) attributes {tcc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<2xf32>
  linalg.fill ins(%ninf : f32) outs(%m : memref<2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<2x4096xf32>) outs(%m : memref<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  }
  %e = memref.alloc() : memref<2x4096xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<2x4096xf32>, memref<2xf32>) outs(%e : memref<2x4096xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %x2 = math.exp %d : f32
    linalg.yield %x2 : f32
  }
  %s = memref.alloc() : memref<2xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%e : memref<2x4096xf32>) outs(%s : memref<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : memref<2x4096xf32>, memref<2xf32>) outs(%y : memref<2x4096xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }
  return
}

// -----

// A weight shared by every row (gamma) is read at the row positions; rows
// of 5 (odd: one value at a time) get two threads each (short rows: at
// most 4 values a thread), positions t, t + 2 and t + 4 (the last past the
// row for the second thread: its load and store guarded); the row sums are
// stored by the row's first thread.
// CHECK-LABEL: func.func @scaled_sum
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c6
// CHECK-COUNT-3: vector.load %arg1[{{.*}}] {alignment = 4 : i64} : memref<5xf32>, vector<1xf32>
// CHECK-COUNT-2: vector.store
// CHECK: scf.if
// CHECK: vector.store
// CHECK: scf.if
// CHECK-NEXT: memref.store {{.*}}, %arg3[
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

// -----

// Work on per-row values inside a position's body (the sum, widened) is
// done once, not at every position; the division by it is a product with
// its reciprocal.
// CHECK-LABEL: func.func @hoisted_divisor
// CHECK: gpu.launch
// CHECK: %[[W:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK-NOT: arith.extf %{{.*}} : f16 to f32
// CHECK: %[[R:.*]] = arith.divf %cst{{[_0-9]*}}, %[[W]] : f32
// CHECK-NOT: arith.divf
// CHECK-COUNT-8: arith.mulf %{{.*}}, %[[R]] : f32
func.func @hoisted_divisor(%x: memref<2x8xf32>, %y: memref<2x8xf32>) attributes {tcc.kernel} {
  %zero = arith.constant 0.0 : f16
  %s = memref.alloc() : memref<2xf16>
  linalg.fill ins(%zero : f16) outs(%s : memref<2xf16>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<2x8xf32>) outs(%s : memref<2xf16>) {
  ^bb0(%a: f32, %acc: f16):
    %h = arith.truncf %a : f32 to f16
    %r = arith.addf %h, %acc : f16
    linalg.yield %r : f16
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<2x8xf32>, memref<2xf16>) outs(%y : memref<2x8xf32>) {
  ^bb0(%a: f32, %b: f16, %o: f32):
    %w = arith.extf %b : f16 to f32
    %q = arith.divf %a, %w : f32
    linalg.yield %q : f32
  }
  return
}

// -----

// A bf16 row sum that the lowering accumulates in f64, over rows of 4096
// (a block of 256 threads): the shares, the tree, the shuffles and the
// warps' shared slots are f32; the row's total is widened once and added to
// the f64 accumulator.
// CHECK-LABEL: func.func @narrowed_sum
// CHECK: gpu.launch
// CHECK-SAME: workgroup(%{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: arith.addf {{.*}} : f64
// CHECK: gpu.shuffle xor %{{.*}} : f32
// CHECK: gpu.barrier
// CHECK: %[[T:.*]] = arith.extf %{{.*}} : f32 to f64
// CHECK: arith.addf %{{.*}}, %[[T]] : f64
// CHECK-NOT: arith.addf {{.*}} : f64
// CHECK: return
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @narrowed_sum(%x: memref<8x4096xbf16>, %y: memref<8xf64>) attributes {tcc.kernel} {
  %zero = arith.constant 0.0 : f64
  linalg.fill ins(%zero : f64) outs(%y : memref<8xf64>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x4096xbf16>) outs(%y : memref<8xf64>) {
  ^bb0(%a: bf16, %acc: f64):
    %w = arith.extf %a : bf16 to f64
    %r = arith.addf %w, %acc : f64
    linalg.yield %r : f64
  }
  return
}

// -----

// Scores scaled per head ([1, H, 1, 1] slopes) plus a padding mask
// [B, 1, 1, S], then softmax, over rows (b, h, l): the row index is taken
// apart over (2, 3, 4); the slope is one load at h, the mask a row of
// vectors at b * 64 (a multiple of the length: its vectors stay aligned).
// One launch; the broadcast operands are read once each.
// CHECK-LABEL: func.func @broadcast_reads
// CHECK: gpu.launch
// CHECK: %[[X:.*]] = memref.collapse_shape %arg0
// CHECK-COUNT-4: vector.load %[[X]]
// CHECK: %[[H0:.*]] = arith.divui %[[ROW:.*]], %c4
// CHECK: %[[H:.*]] = arith.remui %[[H0]], %c3
// CHECK: %[[S:.*]] = memref.collapse_shape %arg2 {{.*}} into memref<3xf32>
// CHECK: memref.load %[[S]][%[[H]]]
// CHECK: %[[B:.*]] = arith.divui %{{.*}}, %c3
// CHECK: %[[BS:.*]] = arith.muli %[[B]], %c64
// CHECK: %[[M:.*]] = memref.collapse_shape %arg1 {{.*}} into memref<128xf32>
// CHECK: %[[AT:.*]] = arith.addi %[[BS]], %{{.*}}
// CHECK: vector.load %[[M]][%[[AT]]] {alignment = 16 : i64}
// CHECK-COUNT-3: vector.load %[[M]]
// CHECK-NOT: vector.load %[[M]]
// CHECK-NOT: memref.load %[[S]]
// CHECK-NOT: linalg.
// CHECK: return
#rows = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>
#head = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
func.func @broadcast_reads(%x: memref<2x3x4x64xf32>, %mask: memref<2x1x1x64xf32>, %slope: memref<1x3x1x1xf32>, %y: memref<2x3x4x64xf32>) attributes {tcc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %z = memref.alloc() : memref<2x3x4x64xf32>
  linalg.generic {indexing_maps = [#rows, #head, #mask, #rows], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %slope, %mask : memref<2x3x4x64xf32>, memref<1x3x1x1xf32>, memref<2x1x1x64xf32>) outs(%z : memref<2x3x4x64xf32>) {
  ^bb0(%a: f32, %s: f32, %k: f32, %o: f32):
    %p = arith.mulf %a, %s : f32
    %q = arith.addf %p, %k : f32
    linalg.yield %q : f32
  }
  %m = memref.alloc() : memref<2x3x4xf32>
  linalg.fill ins(%ninf : f32) outs(%m : memref<2x3x4xf32>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%z : memref<2x3x4x64xf32>) outs(%m : memref<2x3x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  }
  %e = memref.alloc() : memref<2x3x4x64xf32>
  linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%z, %m : memref<2x3x4x64xf32>, memref<2x3x4xf32>) outs(%e : memref<2x3x4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %x2 = math.exp %d : f32
    linalg.yield %x2 : f32
  }
  %s = memref.alloc() : memref<2x3x4xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<2x3x4xf32>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%e : memref<2x3x4x64xf32>) outs(%s : memref<2x3x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%e, %s : memref<2x3x4x64xf32>, memref<2x3x4xf32>) outs(%y : memref<2x3x4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.divf %a, %b : f32
    linalg.yield %q : f32
  }
  return
}
