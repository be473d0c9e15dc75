// RUN: tcc-opt %s --split-input-file --tcc-outline-groups | FileCheck %s

// Each group becomes a private kernel function taking its captured values in
// order of first use, and a call in the entry function.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[R:.*]] = call @k0_elementwise(%[[A]], %[[B]])
// CHECK: %[[S:.*]] = call @k1_reduce_sum(%[[R]])
// CHECK: return %[[S]], %[[R]]
// CHECK: func.func private @k0_elementwise(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-SAME: tcc.kernel
// CHECK:   tcc.add
// CHECK:   return
// CHECK: func.func private @k1_reduce_sum
// CHECK:   tcc.reduce_sum
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) attributes {tcc.entry} {
  %0 = tcc.group "elementwise" -> tensor<4x8xf32> {
    %1 = tcc.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    tcc.yield %1 : tensor<4x8xf32>
  }
  %2 = tcc.group "reduce_sum" -> tensor<4xf32> {
    %3 = tcc.reduce_sum %0 {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
    tcc.yield %3 : tensor<4xf32>
  }
  return %2, %0 : tensor<4xf32>, tensor<4x8xf32>
}

// -----

// Functions without tcc.entry are left alone.
// CHECK-LABEL: func.func @other
// CHECK: tcc.group
func.func @other(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tcc.group "elementwise" -> tensor<4xf32> {
    %1 = tcc.neg %a : tensor<4xf32>
    tcc.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
