// RUN: tcc-opt %s --split-input-file --tcc-lower-to-linalg --mlir-print-local-scope | FileCheck %s

// f16 sums accumulate in f64 (a sequential f32 sum loses precision on long
// rows) and round once after the reduction; keepdims restores the unit
// dimensions with an expand_shape.
// CHECK-LABEL: func.func @sum_f16_keepdims
// CHECK-NOT: tcc.
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f64) outs(%{{.*}} : tensor<4xf64>)
// CHECK: %[[ACC:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0)>], iterator_types = ["parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<4x8x3xf16>) outs(%[[INIT]] : tensor<4xf64>)
// CHECK: ^bb0(%[[IN:.*]]: f16, %[[OUT:.*]]: f64):
// CHECK: %[[X:.*]] = arith.extf %[[IN]] : f16 to f32
// CHECK: %[[W:.*]] = arith.extf %[[X]] : f32 to f64
// CHECK: arith.addf %[[OUT]], %[[W]] : f64
// CHECK: %[[E:.*]] = tensor.expand_shape %[[ACC]] {{\[\[}}0, 1, 2]] output_shape [4, 1, 1] : tensor<4xf64> into tensor<4x1x1xf64>
// CHECK: linalg.generic {{.*}} ins(%[[E]] : tensor<4x1x1xf64>) outs(%{{.*}} : tensor<4x1x1xf16>)
// CHECK: arith.truncf %{{.*}} : f64 to f16
func.func @sum_f16_keepdims(%a: tensor<4x8x3xf16>) -> tensor<4x1x1xf16> {
  %0 = tcc.reduce_sum %a {axes = array<i64: 1, 2>, keepdims = true} : tensor<4x8x3xf16> -> tensor<4x1x1xf16>
  return %0 : tensor<4x1x1xf16>
}

// -----

// reduce_max starts at -inf and propagates NaN.
// CHECK-LABEL: func.func @max_f32
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEGINF]] : f32)
// CHECK: iterator_types = ["reduction", "parallel"]
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
func.func @max_f32(%a: tensor<4x8xf32>) -> tensor<8xf32> {
  %0 = tcc.reduce_max %a {axes = array<i64: 0>, keepdims = false} : tensor<4x8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// reduce_min of integers starts at INT_MAX.
// CHECK-LABEL: func.func @min_i32
// CHECK: %[[MAX:.*]] = arith.constant 2147483647 : i32
// CHECK: linalg.fill ins(%[[MAX]] : i32)
// CHECK: arith.minsi %{{.*}}, %{{.*}} : i32
func.func @min_i32(%a: tensor<4x8xi32>) -> tensor<4xi32> {
  %0 = tcc.reduce_min %a {axes = array<i64: 1>, keepdims = false} : tensor<4x8xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// reduce_mean: sum in f64, divide by the count in f64, round once to bf16
// (integer code from the f64 bits).
// CHECK-LABEL: func.func @mean_bf16
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%{{.*}} : tensor<4x8xbf16>) outs(%{{.*}} : tensor<f64>)
// CHECK: linalg.generic {{.*}} ins(%[[SUM]] : tensor<f64>) outs(%{{.*}} : tensor<bf16>)
// CHECK: %[[N:.*]] = arith.constant 3.200000e+01 : f64
// CHECK: %[[M:.*]] = arith.divf %{{.*}}, %[[N]] : f64
// CHECK: arith.bitcast %[[M]] : f64 to i64
func.func @mean_bf16(%a: tensor<4x8xbf16>) -> tensor<bf16> {
  %0 = tcc.reduce_mean %a {axes = array<i64: 0, 1>, keepdims = false} : tensor<4x8xbf16> -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

// Integer sums wrap in their own type (the same result as any wider
// accumulator truncated).
// CHECK-LABEL: func.func @sum_i8
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4xi8>)
// CHECK: arith.addi %{{.*}}, %{{.*}} : i8
// CHECK-NOT: linalg.generic
func.func @sum_i8(%a: tensor<4x8xi8>) -> tensor<4xi8> {
  %0 = tcc.reduce_sum %a {axes = array<i64: 1>, keepdims = false} : tensor<4x8xi8> -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// argmax reduces (value, index) pairs in one generic; NaN wins, ties keep
// the lower index.
// CHECK-LABEL: func.func @argmax
// CHECK: %[[R:.*]]:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
// CHECK: ^bb0(%[[X:.*]]: f32, %[[BEST:.*]]: f32, %[[IDX:.*]]: i64):
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: %[[I64:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK: %[[LOWER:.*]] = arith.cmpi slt, %[[I64]], %[[IDX]] : i64
// CHECK: %[[XNAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK: arith.cmpf ogt, %[[X]], %[[BEST]] : f32
// CHECK: %[[BETTER:.*]] = arith.select %[[XNAN]], %{{.*}}, %{{.*}} : i1
// CHECK: %[[V:.*]] = arith.select %[[BETTER]], %[[X]], %[[BEST]] : f32
// CHECK: %[[J:.*]] = arith.select %[[BETTER]], %[[I64]], %[[IDX]] : i64
// CHECK: linalg.yield %[[V]], %[[J]] : f32, i64
// CHECK: tensor.expand_shape %[[R]]#1 {{\[\[}}0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
func.func @argmax(%a: tensor<4x8xf32>) -> tensor<4x1xi64> {
  %0 = tcc.argmax %a {axis = 1 : i64, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xi64>
  return %0 : tensor<4x1xi64>
}

// -----

// argmin of integers: strict less-than, ties by index.
// CHECK-LABEL: func.func @argmin_i8
// CHECK: %[[MAX:.*]] = arith.constant 127 : i8
// CHECK: linalg.fill ins(%[[MAX]] : i8)
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i8
func.func @argmin_i8(%a: tensor<4x8xi8>) -> tensor<8xi64> {
  %0 = tcc.argmin %a {axis = 0 : i64, keepdims = false} : tensor<4x8xi8> -> tensor<8xi64>
  return %0 : tensor<8xi64>
}

// -----

// index_check counts indices outside [-bound, bound), compared in i64.
// CHECK-LABEL: func.func @index_check
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%{{.*}} : tensor<3x5xi32>) outs(%{{.*}} : tensor<i32>)
// CHECK: %[[X:.*]] = arith.extsi %{{.*}} : i32 to i64
// CHECK-DAG: %[[HI:.*]] = arith.constant 7 : i64
// CHECK-DAG: %[[LO:.*]] = arith.constant -7 : i64
// CHECK-DAG: arith.cmpi sge, %[[X]], %[[HI]] : i64
// CHECK-DAG: arith.cmpi slt, %[[X]], %[[LO]] : i64
// CHECK: %[[ONE:.*]] = arith.extui %{{.*}} : i1 to i32
// CHECK: arith.addi %{{.*}}, %[[ONE]] : i32
func.func @index_check(%a: tensor<3x5xi32>) -> tensor<i32> {
  %0 = tcc.index_check %a {bound = 7 : i64} : tensor<3x5xi32> -> tensor<i32>
  return %0 : tensor<i32>
}
