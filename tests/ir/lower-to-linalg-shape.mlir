// RUN: tcc-opt %s --split-input-file --tcc-lower-to-linalg --mlir-print-local-scope | FileCheck %s

// Reshapes are views: one collapse or expand when the shapes nest, else
// through 1-D; rank 0 <-> all-ones needs no reassociation groups.
// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x4xf32>, %[[S:.*]]: tensor<f32>, %[[C:.*]]: tensor<4x6xf32>)
// CHECK-NOT: tcc.
// CHECK: %[[R0:.*]] = tensor.collapse_shape %[[A]] {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: %[[R1:.*]] = tensor.expand_shape %[[S]] [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK: %[[F:.*]] = tensor.collapse_shape %[[C]] {{\[\[}}0, 1]] : tensor<4x6xf32> into tensor<24xf32>
// CHECK: %[[R2:.*]] = tensor.expand_shape %[[F]] {{\[\[}}0, 1]] output_shape [3, 8] : tensor<24xf32> into tensor<3x8xf32>
// CHECK: return %[[R0]], %[[R1]], %[[R2]]
func.func @reshape(%a: tensor<2x3x4xf32>, %s: tensor<f32>, %c: tensor<4x6xf32>) -> (tensor<6x4xf32>, tensor<1x1xf32>, tensor<3x8xf32>) {
  %0 = tcc.reshape %a : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = tcc.reshape %s : tensor<f32> -> tensor<1x1xf32>
  %2 = tcc.reshape %c : tensor<4x6xf32> -> tensor<3x8xf32>
  return %0, %1, %2 : tensor<6x4xf32>, tensor<1x1xf32>, tensor<3x8xf32>
}

// -----

// CHECK-LABEL: func.func @transpose
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<4x2x3xf32>) permutation = [2, 0, 1]
func.func @transpose(%a: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = tcc.transpose %a {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-NEXT: ^bb0(%[[IN:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT: linalg.yield %[[IN]] : i8
func.func @broadcast_to(%a: tensor<3x1xi8>) -> tensor<2x3x4xi8> {
  %0 = tcc.broadcast_to %a : tensor<3x1xi8> -> tensor<2x3x4xi8>
  return %0 : tensor<2x3x4xi8>
}

// -----

// One generic over the result; nested scf.if on the axis index pick the
// input (empty inputs are skipped), so each element loads once. No
// insert_slice: it would bufferize to a memref.copy.
// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x0xf32>, %[[C:.*]]: tensor<2x4xf32>, %[[D:.*]]: tensor<2x1xf32>)
// CHECK-NOT: insert_slice
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : tensor<2x8xf32>)
// CHECK: %[[ROW:.*]] = linalg.index 0 : index
// CHECK: %[[COL:.*]] = linalg.index 1 : index
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[IN0:.*]] = arith.cmpi slt, %[[COL]], %[[C3]] : index
// CHECK: scf.if %[[IN0]] -> (f32) {
// CHECK: tensor.extract %[[A]][%[[ROW]], %{{.*}}] : tensor<2x3xf32>
// CHECK: } else {
// CHECK: %[[J:.*]] = arith.subi %[[COL]], %{{.*}} : index
// CHECK: %[[C7:.*]] = arith.constant 7 : index
// CHECK: %[[IN1:.*]] = arith.cmpi slt, %[[COL]], %[[C7]] : index
// CHECK: scf.if %[[IN1]] -> (f32) {
// CHECK: tensor.extract %[[C]][%[[ROW]], %[[J]]] : tensor<2x4xf32>
// CHECK: } else {
// CHECK: tensor.extract %[[D]][%[[ROW]], %{{.*}}] : tensor<2x1xf32>
// CHECK-NOT: %[[B]]
// CHECK: linalg.yield
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x0xf32>, %c: tensor<2x4xf32>, %d: tensor<2x1xf32>) -> tensor<2x8xf32> {
  %0 = tcc.concat %a, %b, %c, %d {axis = 1 : i64} : tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x4xf32>, tensor<2x1xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Any step is an affine map start + step * i.
// CHECK-LABEL: func.func @slice
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 * -2 + 5, d1 * 2 + 1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<6x7xf32>) outs(%{{.*}} : tensor<3x3xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + 1, d1 * 3)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<6x7xf32>) outs(%{{.*}} : tensor<4x3xf32>)
func.func @slice(%a: tensor<6x7xf32>) -> (tensor<3x3xf32>, tensor<4x3xf32>) {
  %0 = tcc.slice %a {starts = array<i64: 5, 1>, steps = array<i64: -2, 2>} : tensor<6x7xf32> -> tensor<3x3xf32>
  %1 = tcc.slice %a {starts = array<i64: 1, 0>, steps = array<i64: 1, 3>} : tensor<6x7xf32> -> tensor<4x3xf32>
  return %0, %1 : tensor<3x3xf32>, tensor<4x3xf32>
}

// -----

// Start 0 and step 1 on a shortened axis would be a plain d0 in the map,
// from which linalg takes the loop bound: such slices read with
// tensor.extract at start + step * i instead.
// CHECK-LABEL: func.func @slice_prefix
// CHECK-SAME: (%[[X:.*]]: tensor<9x5xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : tensor<4x3xf32>)
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[R:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[C:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: tensor.extract %[[X]][%[[R]], %[[C]]] : tensor<9x5xf32>
func.func @slice_prefix(%a: tensor<9x5xf32>) -> tensor<4x3xf32> {
  %0 = tcc.slice %a {starts = array<i64: 0, 4>, steps = array<i64: 1, -2>} : tensor<9x5xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A generic over the result: inside, read the input at i - pad_begin
// (clamped, so that even the unused read stays in bounds); outside, the pad
// value, which converts like a cast: 1000 saturates to f8e4m3's 448.
// CHECK-LABEL: func.func @pad
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf8E4M3FN>)
// CHECK: %[[V:.*]] = arith.constant 4.480000e+02 : f8E4M3FN
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : tensor<5x7xf8E4M3FN>)
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[T:.*]] = arith.subi %[[I]], %[[ONE]] : index
// CHECK: arith.cmpi sge, %[[T]], %{{.*}} : index
// CHECK: arith.cmpi sle, %[[T]], %{{.*}} : index
// CHECK: %[[LO:.*]] = arith.maxsi %[[T]], %{{.*}} : index
// CHECK: %[[Q:.*]] = arith.minsi %[[LO]], %{{.*}} : index
// CHECK: %[[E:.*]] = tensor.extract %[[X]][%[[Q]], %{{.*}}] : tensor<2x3xf8E4M3FN>
// CHECK-NEXT: arith.select %{{.*}}, %[[E]], %[[V]] : f8E4M3FN
func.func @pad(%a: tensor<2x3xf8E4M3FN>) -> tensor<5x7xf8E4M3FN> {
  %0 = tcc.pad %a {pads = array<i64: 1, 0, 2, 4>, value = 1000.0 : f64} : tensor<2x3xf8E4M3FN> -> tensor<5x7xf8E4M3FN>
  return %0 : tensor<5x7xf8E4M3FN>
}
