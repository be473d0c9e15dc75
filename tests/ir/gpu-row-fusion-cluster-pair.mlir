// RUN: tcc-opt %s --tcc-gpu-row-fusion="max-cluster=8" | FileCheck %s

// Which (max, sum) reductions over a row's cluster combine in one round:
// those whose sum's terms are exp(k·(max - v))·h, v what the max reduced
// at the same position, k < 0 (k > 0 under a min), whatever is written
// around the exponential.

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>

// A scaled score, masked by a select on the position (from linalg.index)
// and cast: exp(0.5·x - 0.5·max) pairs with k = -0.5. Each block sums
// against its own max, its first thread leaves the (max, sum) pair in the
// two slots, and after one cluster barrier every thread folds the blocks'
// pairs, each sum scaled by exp(-0.5·(m - m_b)); a block whose max is -inf
// (no value of the row) counts 0, or, in a row without a value, its own sum
// against -inf (what the unpaired code sums there). The log reads that sum
// and the row's max. One round before the last barrier. The kernel writes
// no rows: every thread folds the 8 pairs in rank order (a kernel that
// writes rows folds them by butterflies instead, @in_place).
// CHECK-LABEL: func.func @scaled_masked
// CHECK: gpu.launch clusters({{.*}}) workgroup({{%.*}} : memref<8xf32, #gpu.address_space<workgroup>>, {{%.*}} : memref<8xf32, #gpu.address_space<workgroup>>, [[SLOT0:%.*]] : memref<1xf32, #gpu.address_space<workgroup>>, [[SLOT1:%.*]] : memref<1xf32, #gpu.address_space<workgroup>>)
// CHECK: gpu.barrier
// CHECK-COUNT-6: arith.maximumf
// CHECK: [[OWN:%.*]] = arith.maximumf
// CHECK-NOT: arith.maximumf
// CHECK: arith.mulf [[OWN]], %cst
// CHECK: math.exp
// CHECK: gpu.barrier
// CHECK-NOT: nvvm.cluster.arrive
// CHECK: memref.store [[OWN]], [[SLOT0]]
// CHECK-NEXT: memref.store {{%.*}}, [[SLOT1]]
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: memref.extract_aligned_pointer_as_index [[SLOT0]]
// CHECK-COUNT-8: mapa.shared::cluster.u32
// CHECK: memref.extract_aligned_pointer_as_index [[SLOT1]]
// CHECK: [[S0:%.*]] = arith.bitcast
// CHECK-COUNT-7: mapa.shared::cluster.u32
// CHECK: arith.maximumf %cst{{.*}}, [[M0:%.*]] : f32
// CHECK-COUNT-6: arith.maximumf
// CHECK-NEXT: [[MAX:%.*]] = arith.maximumf
// CHECK: [[ROWEMPTY:%.*]] = arith.cmpf oeq, [[MAX]], %cst
// CHECK-NEXT: [[K:%.*]] = arith.constant -5.000000e-01 : f32
// CHECK-NEXT: [[D:%.*]] = arith.subf [[MAX]], [[M0]]
// CHECK-NEXT: [[E:%.*]] = arith.mulf [[K]], [[D]]
// CHECK-NEXT: [[F:%.*]] = math.exp [[E]]
// CHECK-NEXT: [[EMPTY0:%.*]] = arith.cmpf oeq, [[M0]], %cst
// CHECK-NEXT: [[OWNSUM:%.*]] = arith.select [[ROWEMPTY]], [[S0]], %cst
// CHECK-NEXT: [[SCALED:%.*]] = arith.mulf [[S0]], [[F]]
// CHECK-NEXT: arith.select [[EMPTY0]], [[OWNSUM]], [[SCALED]]
// CHECK-COUNT-7: math.exp
// CHECK: [[SUM:%.*]] = arith.addf {{%.*}}, {{%.*}} : f32
// CHECK: [[ROWMAX:%.*]] = arith.maximumf %cst{{.*}}, [[MAX]]
// CHECK: [[S:%.*]] = arith.addf %cst{{.*}}, [[SUM]] : f32
// CHECK-NEXT: [[LOG:%.*]] = math.log [[S]]
// CHECK-NEXT: arith.addf [[ROWMAX]], [[LOG]]
// CHECK-NOT: mapa.shared::cluster.u32
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: gpu.terminator
func.func @scaled_masked(%arg0: memref<3x50000xf32>, %arg1: memref<3x1xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%ninf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%zero : f32) outs(%alloc_2 : memref<3xf32>)
  %s = memref.expand_shape %alloc_2 [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %m : memref<3x50000xf32>, memref<3x1xf32>) outs(%s : memref<3x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %i = linalg.index 1 : index
    %c = arith.constant 40000 : index
    %keep = arith.cmpi ult, %i, %c : index
    %a = arith.mulf %in, %half : f32
    %b = arith.mulf %mx, %half : f32
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %t = arith.truncf %e : f32 to f16
    %w = arith.extf %t : f16 to f32
    %v = arith.select %keep, %w, %zero : f32
    %r = arith.addf %out, %v : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %s : memref<3x1xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%mx: f32, %sum: f32, %out: f32):
    %l = math.log %sum : f32
    %r = arith.addf %mx, %l : f32
    linalg.yield %r : f32
  }
  return
}

// The sum of squares about the max reads it outside an exponential: a
// round for each reduction.
// CHECK-LABEL: func.func @squares
// CHECK: gpu.launch clusters
// CHECK-COUNT-3: nvvm.cluster.arrive
// CHECK-NOT: nvvm.cluster.arrive
// CHECK: return
func.func @squares(%arg0: memref<3x50000xf32>, %arg1: memref<3x1xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%ninf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.fill ins(%zero : f32) outs(%arg1 : memref<3x1xf32>)
  linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %m : memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %q = arith.mulf %d, %d : f32
    %r = arith.addf %out, %q : f32
    linalg.yield %r : f32
  }
  return
}

// exp(x - min) under a min grows as the min falls (k = -1 with a min): no
// pairing; exp(min - x) (k = 1) pairs (the pair's round and the last).
// CHECK-LABEL: func.func @min_wrong_sign
// CHECK-COUNT-3: nvvm.cluster.arrive
// CHECK-NOT: nvvm.cluster.arrive
// CHECK: return
// CHECK-LABEL: func.func @min_right_sign
// CHECK-COUNT-2: nvvm.cluster.arrive
// CHECK-NOT: nvvm.cluster.arrive
// CHECK: return
func.func @min_wrong_sign(%arg0: memref<3x50000xf32>, %arg1: memref<3x1xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %inf = arith.constant 0x7F800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%inf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.minimumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.fill ins(%zero : f32) outs(%arg1 : memref<3x1xf32>)
  linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %m : memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %out, %e : f32
    linalg.yield %r : f32
  }
  return
}
func.func @min_right_sign(%arg0: memref<3x50000xf32>, %arg1: memref<3x1xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %inf = arith.constant 0x7F800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%inf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.minimumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.fill ins(%zero : f32) outs(%arg1 : memref<3x1xf32>)
  linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %m : memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %mx, %in : f32
    %e = math.exp %d : f32
    %r = arith.addf %out, %e : f32
    linalg.yield %r : f32
  }
  return
}

// Ops between the reductions run a second time against the row's max from
// what their outputs held before the first: a centring written in place
// (c = x, then c = c - m) is x - m after the pair, not (x - m_b) - m. The
// kernel writes rows: lane l of each warp reads rank l % 8's pair (one
// load a slot), and butterflies over 8 lanes fold the maxes, then the
// scaled sums (one exponential a lane).
// CHECK-LABEL: func.func @in_place
// CHECK: [[X0:%.*]] = vector.extract {{%.*}}[0] : f32 from vector<4xf32>
// CHECK: nvvm.cluster.wait
// CHECK-NEXT: arith.constant 8 : index
// CHECK-NEXT: arith.remui
// CHECK: mapa.shared::cluster.u32
// CHECK: mapa.shared::cluster.u32
// CHECK-NOT: mapa.shared::cluster.u32
// CHECK: gpu.shuffle xor {{.*}}, %c4
// CHECK: gpu.shuffle xor {{.*}}, %c2
// CHECK: gpu.shuffle xor {{.*}}, %c1
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: gpu.shuffle xor {{.*}}, %c4
// CHECK: gpu.shuffle xor {{.*}}, %c2
// CHECK: gpu.shuffle xor {{.*}}, %c1
// CHECK: [[ROWMAX:%.*]] = arith.maximumf
// CHECK-NEXT: arith.subf [[X0]], [[ROWMAX]]
func.func @in_place(%arg0: memref<3x50000xf32>, %arg1: memref<3x50000xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<3x50000xf32>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : memref<3x50000xf32>) outs(%c : memref<3x50000xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.fill ins(%ninf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.generic {indexing_maps = [#map2, #map], iterator_types = ["parallel", "parallel"]} ins(%m : memref<3x1xf32>) outs(%c : memref<3x50000xf32>) {
  ^bb0(%mx: f32, %out: f32):
    %d = arith.subf %out, %mx : f32
    linalg.yield %d : f32
  }
  %e = memref.alloc() {alignment = 64 : i64} : memref<3x50000xf32>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%c : memref<3x50000xf32>) outs(%e : memref<3x50000xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = math.exp %in : f32
    linalg.yield %x : f32
  }
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%zero : f32) outs(%alloc_2 : memref<3xf32>)
  %s = memref.expand_shape %alloc_2 [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%e : memref<3x50000xf32>) outs(%s : memref<3x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %out, %in : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%c, %s : memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x50000xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %l = math.log %sum : f32
    %r = arith.subf %in, %l : f32
    linalg.yield %r : f32
  }
  return
}

// The sum's initial value written between the reductions from the max
// (S = m, then S += sum exp(x - m)) is the row's max, read after the ops
// between run again.
// CHECK-LABEL: func.func @initial_from_max
// CHECK: nvvm.cluster.wait
// CHECK-COUNT-8: math.exp
// CHECK: [[SUM:%.*]] = arith.addf {{%.*}}, {{%.*}} : f32
// CHECK-NEXT: [[ROWMAX:%.*]] = arith.maximumf
// CHECK-NEXT: arith.addf [[ROWMAX]], [[SUM]]
func.func @initial_from_max(%arg0: memref<3x50000xf32>, %arg1: memref<3x1xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %ninf = arith.constant 0xFF800000 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%ninf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%m : memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%mx: f32, %out: f32):
    linalg.yield %mx : f32
  }
  linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %m : memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %out, %e : f32
    linalg.yield %r : f32
  }
  return
}

// A division by a constant (which the pass emits as a product with 1/c)
// keeps the form: exp((x - m) / 4) pairs with k = -0.25.
// CHECK-LABEL: func.func @divided
// CHECK: nvvm.cluster.arrive
// CHECK: %[[K:.*]] = arith.constant -2.500000e-01 : f32
// CHECK: arith.mulf %[[K]],
// CHECK: nvvm.cluster.arrive
// CHECK-NOT: nvvm.cluster.arrive
// CHECK: return
func.func @divided(%arg0: memref<3x50000xf32>, %arg1: memref<3x1xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %four = arith.constant 4.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%ninf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.fill ins(%zero : f32) outs(%arg1 : memref<3x1xf32>)
  linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0, %m : memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %q = arith.divf %d, %four : f32
    %e = math.exp %q : f32
    %r = arith.addf %out, %e : f32
    linalg.yield %r : f32
  }
  return
}

// The exponent reads another value than the max reduced (max over x, sum
// of exp(y - m)): against a block's own max its terms are not bounded by 1
// and a block whose x are all -inf would hold terms of y: no pairing.
// CHECK-LABEL: func.func @other_value
// CHECK-COUNT-3: nvvm.cluster.arrive
// CHECK-NOT: nvvm.cluster.arrive
// CHECK: return
func.func @other_value(%arg0: memref<3x50000xf32>, %y: memref<3x50000xf32>, %arg1: memref<3x1xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%ninf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.fill ins(%zero : f32) outs(%arg1 : memref<3x1xf32>)
  linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%y, %m : memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %out, %e : f32
    linalg.yield %r : f32
  }
  return
}

// The sum accumulates into a buffer of the model (no fill in the kernel):
// its initial value is read before the cluster's barrier, after which the
// row's first block may already have stored the result there.
// CHECK-LABEL: func.func @global_initial
// CHECK: memref.load {{%.*}}[{{%.*}}] : memref<3xf32>
// CHECK: nvvm.cluster.arrive
// CHECK: memref.store {{%.*}}, {{%.*}}[{{%.*}}] : memref<3xf32>
func.func @global_initial(%x: memref<3x50000xf32>, %S: memref<3x1xf32>, %y: memref<3x50000xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %ninf = arith.constant 0xFF800000 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%ninf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<3x50000xf32>, memref<3x1xf32>) outs(%S : memref<3x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %out, %e : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#map, #map2, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %m, %S : memref<3x50000xf32>, memref<3x1xf32>, memref<3x1xf32>) outs(%y : memref<3x50000xf32>) {
  ^bb0(%in: f32, %mx: f32, %s: f32, %out: f32):
    %l = math.log %s : f32
    %a = arith.subf %in, %mx : f32
    %r = arith.subf %a, %l : f32
    linalg.yield %r : f32
  }
  return
}

// Terms matched one to one: exp(x·x + x·x - m) against a max of x·x + z
// is not k·(m - v) (each clone of x·x must not match the one term): no
// pairing.
// CHECK-LABEL: func.func @duplicate_terms
// CHECK-COUNT-3: nvvm.cluster.arrive
// CHECK-NOT: nvvm.cluster.arrive
// CHECK: return
func.func @duplicate_terms(%x: memref<3x50000xf32>, %z: memref<3x50000xf32>, %arg1: memref<3x1xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%ninf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x, %z : memref<3x50000xf32>, memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %iz: f32, %out: f32):
    %p = arith.mulf %in, %in : f32
    %v = arith.addf %p, %iz : f32
    %0 = arith.maximumf %out, %v : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.fill ins(%zero : f32) outs(%arg1 : memref<3x1xf32>)
  linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %p = arith.mulf %in, %in : f32
    %q = arith.mulf %in, %in : f32
    %s = arith.addf %p, %q : f32
    %d = arith.subf %s, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %out, %e : f32
    linalg.yield %r : f32
  }
  return
}

// A product of exponentials whose exponents cancel (exp(x - m)·exp(z - m)
// ·exp(m - z)) is not paired: a factor may overflow against a block's max.
// CHECK-LABEL: func.func @product_of_exps
// CHECK-COUNT-3: nvvm.cluster.arrive
// CHECK-NOT: nvvm.cluster.arrive
// CHECK: return
func.func @product_of_exps(%x: memref<3x50000xf32>, %z: memref<3x50000xf32>, %arg1: memref<3x1xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%ninf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x, %z : memref<3x50000xf32>, memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %iz: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.fill ins(%zero : f32) outs(%arg1 : memref<3x1xf32>)
  linalg.generic {indexing_maps = [#map, #map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%x, %z, %m : memref<3x50000xf32>, memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%in: f32, %iz: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    %d2 = arith.subf %iz, %mx : f32
    %e2 = math.exp %d2 : f32
    %d3 = arith.subf %mx, %iz : f32
    %e3 = math.exp %d3 : f32
    %p1 = arith.mulf %e, %e2 : f32
    %p2 = arith.mulf %p1, %e3 : f32
    %r = arith.addf %out, %p2 : f32
    linalg.yield %r : f32
  }
  return
}

// bf16(x) is not x: rounded up it may exceed the max of x. No pairing.
// CHECK-LABEL: func.func @truncated_leaf
// CHECK-COUNT-3: nvvm.cluster.arrive
// CHECK-NOT: nvvm.cluster.arrive
// CHECK: return
func.func @truncated_leaf(%x: memref<3x50000xf32>, %arg1: memref<3x1xf32>) attributes {tcc.kernel, tcc.kind = "chain"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  linalg.fill ins(%ninf : f32) outs(%alloc : memref<3xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : memref<3x50000xf32>) outs(%alloc : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %m = memref.expand_shape %alloc [[0, 1]] output_shape [3, 1] : memref<3xf32> into memref<3x1xf32>
  linalg.fill ins(%zero : f32) outs(%arg1 : memref<3x1xf32>)
  linalg.generic {indexing_maps = [#map, #map2, #map2], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<3x50000xf32>, memref<3x1xf32>) outs(%arg1 : memref<3x1xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %t = arith.truncf %in : f32 to bf16
    %w = arith.extf %t : bf16 to f32
    %d = arith.subf %w, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %out, %e : f32
    linalg.yield %r : f32
  }
  return
}
