// RUN: tcc-opt %s --split-input-file --tcc-fuse-elementwise | FileCheck %s
// RUN: tcc-opt %s --split-input-file --tcc-fuse-elementwise="max-ops=2" | FileCheck %s --check-prefix=CAP

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A diamond: the value read twice stays a scalar in one body, and only the
// value returned is a result. Broadcast inputs keep their maps.
// CHECK-LABEL: func.func @diamond
// CHECK: linalg.generic {indexing_maps = [#[[ID:.*]], #[[ROW:.*]], #[[ID]]]
// CHECK-SAME: ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[P:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[A:.*]] = math.exp %[[X]]
// CHECK-NEXT: %[[B:.*]] = arith.addf %[[A]], %[[P]]
// CHECK-NEXT: %[[C:.*]] = arith.mulf %[[A]], %[[B]]
// CHECK-NEXT: linalg.yield %[[C]]
// CHECK-NOT: linalg.generic
// CAP-LABEL: func.func @diamond
// CAP-COUNT-2: linalg.generic
// CAP-NOT: linalg.generic
func.func @diamond(%x: tensor<4x8xf32>, %p: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %p : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %q: f32, %out: f32):
    %0 = arith.addf %in, %q : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %c = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.mulf %in, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// A value used outside the cluster is a result too. A member that reads
// the cluster transposed joins in the cluster's iteration space: its inputs
// and result are read and written through the transpose, its loop index is
// renamed.
// CHECK-LABEL: func.func @escaping_and_transposed
// CHECK: %[[F:.*]]:2 = linalg.generic {indexing_maps = [#[[ID:.*]], #[[TR:.*]], #[[ID]], #[[TR]]]
// CHECK-SAME: ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8x4xf32>)
// CHECK: math.exp
// CHECK: linalg.index 1
// CHECK: linalg.yield
// CHECK: return %[[F]]#0, %[[F]]#1
// CAP-LABEL: func.func @escaping_and_transposed
func.func @escaping_and_transposed(%x: tensor<4x8xf32>, %y: tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %et = tensor.empty() : tensor<8x4xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [#tr, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %y : tensor<4x8xf32>, tensor<8x4xf32>) outs(%et : tensor<8x4xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %0 = arith.addf %in, %in2 : f32
    %1 = arith.addf %0, %f : f32
    linalg.yield %1 : f32
  } -> tensor<8x4xf32>
  return %a, %b : tensor<4x8xf32>, tensor<8x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>

// A reduction reads the cluster: the cluster ends there. The generic whose
// only use is the reduction stays out (pairwise fusion makes it the
// reduction's prologue), and the epilogue after the reduction starts a new
// cluster, placed after it.
// CHECK-LABEL: func.func @reduction_closes
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%[[A]] :
// CHECK: arith.mulf
// CHECK: %[[R:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[B]] :
// CHECK: %[[D:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[R]] :
// CHECK: return %[[D]]
func.func @reduction_closes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %z = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%b : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %in, %acc : f32
    linalg.yield %0 : f32
  } -> tensor<4xf32>
  %d = linalg.generic {indexing_maps = [#id, #red, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %r : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %0 = arith.divf %in, %s : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A value read by an op outside the cluster (here a reshape) ends the
// cluster: what comes after cannot join it, since the fused op must come
// before the reshape.
// CHECK-LABEL: func.func @outside_reader
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: tensor.collapse_shape %[[A]]
// CHECK: linalg.generic {{.*}} ins(%[[A]] :
func.func @outside_reader(%x: tensor<4x8xf32>) -> (tensor<32xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %s = tensor.collapse_shape %a [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.tanh %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  return %s, %b : tensor<32xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#hi = affine_map<(d0, d1) -> (d0, d1 + 4)>

// RoPE's rotate_half as tcc-lower-to-linalg writes it: the negated upper
// half (a generic), concatenated with the lower half by a generic that
// extracts its elements, then x * c + rot * s. The concat recomputes the
// negation at its element and reads only the argument: one loop.
// CHECK-LABEL: func.func @rotate_half
// CHECK: linalg.generic
// CHECK-SAME: ins(%arg0, %arg1, %arg2 :
// CHECK: scf.if
// CHECK: tensor.extract %arg0
// CHECK: arith.negf
// CHECK: tensor.extract %arg0
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @rotate_half(%x: tensor<2x8xf32>, %c: tensor<2x8xf32>, %s: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %c4 = arith.constant 4 : index
  %h = tensor.empty() : tensor<2x4xf32>
  %neg = linalg.generic {indexing_maps = [#hi, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x8xf32>) outs(%h : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x8xf32>
  %rot = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<2x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %lo = arith.cmpi slt, %j, %c4 : index
    %v = scf.if %lo -> (f32) {
      %a = tensor.extract %neg[%i, %j] : tensor<2x4xf32>
      scf.yield %a : f32
    } else {
      %k = arith.subi %j, %c4 : index
      %b = tensor.extract %x[%i, %k] : tensor<2x8xf32>
      scf.yield %b : f32
    }
    linalg.yield %v : f32
  } -> tensor<2x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %c, %rot, %s : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %r: f32, %t: f32, %out: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.mulf %r, %t : f32
    %2 = arith.addf %0, %1 : f32
    linalg.yield %2 : f32
  } -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// A causal mask built [L, L] from loop indices, read through a broadcast by
// the select over scores [B, L, L]: recomputed in the select (from a clone,
// since a reduction reads the mask too, element for element, and keeps
// reading it).
// CHECK-LABEL: func.func @broadcast_index_mask
// CHECK: %[[KEEP:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<5x5xi1>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%arg0 : tensor<3x5x5xf32>)
// CHECK: linalg.index 1
// CHECK: linalg.index 2
// CHECK: arith.cmpi sge
// CHECK: arith.select
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[KEEP]] : tensor<5x5xi1>)
#m2 = affine_map<(d0, d1) -> (d0, d1)>
#b3 = affine_map<(d0, d1, d2) -> (d1, d2)>
#i3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r2 = affine_map<(d0, d1) -> (d0)>
func.func @broadcast_index_mask(%s: tensor<3x5x5xf32>) -> (tensor<3x5x5xf32>, tensor<5xi32>) {
  %e2 = tensor.empty() : tensor<5x5xi1>
  %keep = linalg.generic {indexing_maps = [#m2], iterator_types = ["parallel", "parallel"]}
      outs(%e2 : tensor<5x5xi1>) {
  ^bb0(%out: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c = arith.cmpi sge, %i, %j : index
    linalg.yield %c : i1
  } -> tensor<5x5xi1>
  %ninf = arith.constant 0xFF800000 : f32
  %e3 = tensor.empty() : tensor<3x5x5xf32>
  %m = linalg.generic {indexing_maps = [#b3, #i3, #i3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%keep, %s : tensor<5x5xi1>, tensor<3x5x5xf32>) outs(%e3 : tensor<3x5x5xf32>) {
  ^bb0(%k: i1, %x: f32, %out: f32):
    %y = arith.select %k, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<3x5x5xf32>
  %z = arith.constant 0 : i32
  %e1 = tensor.empty() : tensor<5xi32>
  %f = linalg.fill ins(%z : i32) outs(%e1 : tensor<5xi32>) -> tensor<5xi32>
  %n = linalg.generic {indexing_maps = [#m2, #r2], iterator_types = ["parallel", "reduction"]}
      ins(%keep : tensor<5x5xi1>) outs(%f : tensor<5xi32>) {
  ^bb0(%k: i1, %acc: i32):
    %one = arith.extui %k : i1 to i32
    %sum = arith.addi %acc, %one : i32
    linalg.yield %sum : i32
  } -> tensor<5xi32>
  return %m, %n : tensor<3x5x5xf32>, tensor<5xi32>
}
