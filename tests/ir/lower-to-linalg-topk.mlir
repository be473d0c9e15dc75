// RUN: tcc-opt %s --split-input-file --tcc-lower-to-linalg --mlir-print-local-scope | FileCheck %s

// k rounds of selection in an scf.for that carries only the picked indices:
// round j reads round j-1's pick back (at max(j - 1, 0)), reduces each row
// to the best element ranked after it, and stores its index at column j with
// an in-place elementwise update (no insert_slice, which would bufferize to
// a copy). The values are read back from the input at the picked indices.
// CHECK-LABEL: func.func @topk_f16
// CHECK-SAME: (%[[X:.*]]: tensor<5x9xf16>)
// CHECK-NOT: tcc.
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: %[[PICKS0:.*]] = linalg.fill ins(%[[ZERO]] : i64) outs(%{{.*}} : tensor<5x3xi64>)
// CHECK: %[[PICKS:.*]] = scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[P:.*]] = %[[PICKS0]]) -> (tensor<5x3xi64>)
// CHECK: %[[R:.*]]:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<5x9xf16>) outs(%{{.*}}, %{{.*}} : tensor<5xf32>, tensor<5xi64>)
// CHECK: %[[PREV:.*]] = tensor.extract %[[P]][%{{.*}}, %{{.*}}] : tensor<5x3xi64>
// CHECK: tensor.extract %[[X]][%{{.*}}, %{{.*}}] : tensor<5x9xf16>
// CHECK: arith.cmpf uno
// CHECK: arith.cmpf ogt
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, i64
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%[[R]]#1 : tensor<5xi64>) outs(%[[P]] : tensor<5x3xi64>)
// CHECK: ^bb0(%[[NEW:.*]]: i64, %[[OLD:.*]]: i64):
// CHECK: %[[COL:.*]] = linalg.index 1 : index
// CHECK: %[[HERE:.*]] = arith.cmpi eq, %[[COL]], %[[J]] : index
// CHECK: arith.select %[[HERE]], %[[NEW]], %[[OLD]] : i64
// CHECK: scf.yield %[[S]] : tensor<5x3xi64>
// CHECK: %[[V:.*]] = linalg.generic {{.*}} ins(%[[PICKS]] : tensor<5x3xi64>) outs(%{{.*}} : tensor<5x3xf16>)
// CHECK: tensor.extract %[[X]][%{{.*}}, %{{.*}}] : tensor<5x9xf16>
// CHECK: return %[[V]], %[[PICKS]]
func.func @topk_f16(%x: tensor<5x9xf16>) -> (tensor<5x3xf16>, tensor<5x3xi64>) {
  %v, %i = tcc.topk %x {k = 3 : i64, axis = 1 : i64, largest = true} : tensor<5x9xf16> -> tensor<5x3xf16>, tensor<5x3xi64>
  return %v, %i : tensor<5x3xf16>, tensor<5x3xi64>
}

// -----

// Smallest along a leading axis of integers.
// CHECK-LABEL: func.func @topk_min_axis0
// CHECK: scf.for
// CHECK: iterator_types = ["reduction", "parallel"]
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<4xi64>) outs(%{{.*}} : tensor<2x4xi64>)
// CHECK: linalg.index 0 : index
func.func @topk_min_axis0(%x: tensor<6x4xi32>) -> (tensor<2x4xi32>, tensor<2x4xi64>) {
  %v, %i = tcc.topk %x {k = 2 : i64, axis = 0 : i64, largest = false} : tensor<6x4xi32> -> tensor<2x4xi32>, tensor<2x4xi64>
  return %v, %i : tensor<2x4xi32>, tensor<2x4xi64>
}
