// RUN: tcc-opt %s --split-input-file --tcc-lower-to-linalg --mlir-print-local-scope | FileCheck %s

// gather: a generic over the result reads the index, wraps a negative one,
// clamps it into [0, n) and extracts from the data.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[D:.*]]: tensor<10x4xf32>, %[[I:.*]]: tensor<2x3xi32>)
// CHECK-NOT: tcc.
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[I]] : tensor<2x3xi32>)
// CHECK: ^bb0(%[[IN:.*]]: i32, %{{.*}}: f32):
// CHECK: %[[COL:.*]] = linalg.index 2 : index
// CHECK: %[[X:.*]] = arith.extsi %[[IN]] : i32 to i64
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: %[[N:.*]] = arith.constant 10 : i64
// CHECK: %[[W:.*]] = arith.addi %[[X]], %[[N]] : i64
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[X]], %[[ZERO]] : i64
// CHECK: %[[Y:.*]] = arith.select %[[NEG]], %[[W]], %[[X]] : i64
// CHECK: %[[LO:.*]] = arith.maxsi %[[Y]], %[[ZERO]] : i64
// CHECK: %[[LAST:.*]] = arith.constant 9 : i64
// CHECK: %[[C:.*]] = arith.minsi %[[LO]], %[[LAST]] : i64
// CHECK: %[[IDX:.*]] = arith.index_cast %[[C]] : i64 to index
// CHECK: %[[E:.*]] = tensor.extract %[[D]][%[[IDX]], %[[COL]]] : tensor<10x4xf32>
// CHECK: linalg.yield %[[E]] : f32
func.func @gather(%d: tensor<10x4xf32>, %i: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
  %0 = tcc.gather %d, %i {axis = 0 : i64} : tensor<10x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// A scalar index along a middle axis.
// CHECK-LABEL: func.func @gather_scalar_index
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK: %[[A:.*]] = linalg.index 0 : index
// CHECK: %[[B:.*]] = linalg.index 1 : index
// CHECK: %[[IDX:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: tensor.extract %{{.*}}[%[[A]], %[[IDX]], %[[B]]] : tensor<3x6x2xf16>
func.func @gather_scalar_index(%d: tensor<3x6x2xf16>, %i: tensor<i64>) -> tensor<3x2xf16> {
  %0 = tcc.gather %d, %i {axis = 1 : i64} : tensor<3x6x2xf16>, tensor<i64> -> tensor<3x2xf16>
  return %0 : tensor<3x2xf16>
}

// -----

// take_along_axis replaces the axis coordinate by the (normalised) index.
// CHECK-LABEL: func.func @take_along_axis
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK: %[[ROW:.*]] = linalg.index 0 : index
// CHECK: arith.constant 5 : i64
// CHECK: arith.constant 4 : i64
// CHECK: %[[IDX:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: tensor.extract %{{.*}}[%[[ROW]], %[[IDX]]] : tensor<4x5xf16>
func.func @take_along_axis(%d: tensor<4x5xf16>, %i: tensor<4x7xi64>) -> tensor<4x7xf16> {
  %0 = tcc.take_along_axis %d, %i {axis = 1 : i64} : tensor<4x5xf16>, tensor<4x7xi64> -> tensor<4x7xf16>
  return %0 : tensor<4x7xf16>
}

// -----

// An empty axis has nothing to read: zeros (index_check fails the run).
// CHECK-LABEL: func.func @gather_empty_axis
// CHECK-NOT: tensor.extract
// CHECK: %[[Z:.*]] = arith.constant 0 : i32
// CHECK: linalg.fill ins(%[[Z]] : i32) outs(%{{.*}} : tensor<3x5xi32>)
func.func @gather_empty_axis(%d: tensor<0x5xi32>, %i: tensor<3xi32>) -> tensor<3x5xi32> {
  %0 = tcc.gather %d, %i {axis = 0 : i64} : tensor<0x5xi32>, tensor<3xi32> -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}
