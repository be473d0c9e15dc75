// RUN: tcc-opt %s --split-input-file --tcc-lower-to-linalg --mlir-print-local-scope | FileCheck %s

// Batch dimensions broadcast (a's size-1 batch reads index 0, b's missing
// leading one is dropped) and transpose_b swaps b's map; f16 accumulates in
// f32, which is the result type here, so no epilogue follows.
// CHECK-LABEL: func.func @matmul_broadcast_transpose
// CHECK-NOT: tcc.
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x5x3x6xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x1x3x4xf16>, tensor<5x6x4xf16>) outs(%[[INIT]] : tensor<2x5x3x6xf32>)
// CHECK: ^bb0(%[[A:.*]]: f16, %[[B:.*]]: f16, %[[ACC:.*]]: f32):
// CHECK: %[[X:.*]] = arith.extf %[[A]] : f16 to f32
// CHECK: %[[Y:.*]] = arith.extf %[[B]] : f16 to f32
// CHECK: %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK: arith.addf %[[ACC]], %[[P]] : f32
// CHECK: return %[[R]]
func.func @matmul_broadcast_transpose(%a: tensor<2x1x3x4xf16>, %b: tensor<5x6x4xf16>) -> tensor<2x5x3x6xf32> {
  %0 = tcc.matmul %a, %b {transpose_b = true} : tensor<2x1x3x4xf16>, tensor<5x6x4xf16> -> tensor<2x5x3x6xf32>
  return %0 : tensor<2x5x3x6xf32>
}

// -----

// i8 x i8 -> i32 accumulates in i32; transpose_a swaps a's map.
// CHECK-LABEL: func.func @matmul_i8_to_i32
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.muli %{{.*}}, %{{.*}} : i32
// CHECK: arith.addi %{{.*}}, %{{.*}} : i32
func.func @matmul_i8_to_i32(%a: tensor<4x3xi8>, %b: tensor<4x5xi8>) -> tensor<3x5xi32> {
  %0 = tcc.matmul %a, %b {transpose_a = true} : tensor<4x3xi8>, tensor<4x5xi8> -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}

// -----

// A bf16 result: accumulate in f32, then one rounding epilogue.
// CHECK-LABEL: func.func @matmul_bf16
// CHECK: %[[ACC:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<3x5xf32>)
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: linalg.generic {{.*}} ins(%[[ACC]] : tensor<3x5xf32>) outs(%{{.*}} : tensor<3x5xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @matmul_bf16(%a: tensor<3x4xbf16>, %b: tensor<4x5xbf16>) -> tensor<3x5xbf16> {
  %0 = tcc.matmul %a, %b : tensor<3x4xbf16>, tensor<4x5xbf16> -> tensor<3x5xbf16>
  return %0 : tensor<3x5xbf16>
}
