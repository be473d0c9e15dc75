// RUN: tcc-opt %s --canonicalize | FileCheck %s

// x + neg(y), either way round, is x - y (exact in every dtype): the form
// the softmax and attention matches read (exp(s + neg(max s))).
// CHECK-LABEL: func.func @add_of_neg
// CHECK-NEXT: %[[A:.*]] = tcc.sub %arg0, %arg1 : tensor<4x8xf16>, tensor<4x1xf16> -> tensor<4x8xf16>
// CHECK-NEXT: %[[B:.*]] = tcc.sub %arg0, %arg1 : tensor<4x8xf16>, tensor<4x1xf16> -> tensor<4x8xf16>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @add_of_neg(%x: tensor<4x8xf16>, %m: tensor<4x1xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  %n = tcc.neg %m : tensor<4x1xf16>
  %a = tcc.add %x, %n : tensor<4x8xf16>, tensor<4x1xf16> -> tensor<4x8xf16>
  %b = tcc.add %n, %x : tensor<4x1xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  return %a, %b : tensor<4x8xf16>, tensor<4x8xf16>
}

// A product or quotient by the constant 1 is its operand where the constant
// broadcasts nothing; 1 / x, x * 2 and a 1 that widens x stay.
// CHECK-LABEL: func.func @times_one
// CHECK-DAG: %[[R:.*]] = tcc.div %{{.*}}, %arg0
// CHECK-DAG: %[[T:.*]] = tcc.mul %arg0, %{{.*}} : tensor<4xbf16>, tensor<bf16>
// CHECK-DAG: %[[W:.*]] = tcc.mul %arg2, %{{.*}} : tensor<4xi32>, tensor<2x4xi32>
// CHECK: return %arg0, %arg0, %arg0, %arg2, %[[R]], %[[T]], %[[W]]
func.func @times_one(%x: tensor<4xbf16>, %y: tensor<4xbf16>, %i: tensor<4xi32>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xi32>, tensor<4xbf16>, tensor<4xbf16>, tensor<2x4xi32>) {
  %one = tcc.constant {value = 1.000000e+00 : bf16} : tensor<bf16>
  %two = tcc.constant {value = 2.000000e+00 : bf16} : tensor<bf16>
  %ione = tcc.constant {value = 1 : i32} : tensor<i32>
  %iones = tcc.constant {value = 1 : i32} : tensor<2x4xi32>
  %a = tcc.mul %x, %one : tensor<4xbf16>, tensor<bf16> -> tensor<4xbf16>
  %b = tcc.mul %one, %x : tensor<bf16>, tensor<4xbf16> -> tensor<4xbf16>
  %c = tcc.div %x, %one : tensor<4xbf16>, tensor<bf16> -> tensor<4xbf16>
  %d = tcc.mul %i, %ione : tensor<4xi32>, tensor<i32> -> tensor<4xi32>
  %e = tcc.div %one, %x : tensor<bf16>, tensor<4xbf16> -> tensor<4xbf16>
  %f = tcc.mul %x, %two : tensor<4xbf16>, tensor<bf16> -> tensor<4xbf16>
  %g = tcc.mul %i, %iones : tensor<4xi32>, tensor<2x4xi32> -> tensor<2x4xi32>
  return %a, %b, %c, %d, %e, %f, %g : tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xi32>, tensor<4xbf16>, tensor<4xbf16>, tensor<2x4xi32>
}
