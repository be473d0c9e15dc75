// RUN: tcc-opt %s --canonicalize | FileCheck %s

// A mask expanded to the scores' shape (PyTorch's expand) is read where it
// is by the select (NumPy broadcasting within the op): no full-size copy.
// CHECK-LABEL: func.func @expanded_mask
// CHECK-NOT: tcc.broadcast_to
// CHECK: tcc.select %{{.*}}, %arg1, %{{.*}} : tensor<2x1x1x8xi1>, tensor<2x3x8x8xf32>, tensor<f32> -> tensor<2x3x8x8xf32>
func.func @expanded_mask(%m: tensor<2x8xi1>, %s: tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32> {
  %r = tcc.reshape %m : tensor<2x8xi1> -> tensor<2x1x1x8xi1>
  %b = tcc.broadcast_to %r : tensor<2x1x1x8xi1> -> tensor<2x3x8x8xi1>
  %n = tcc.constant {value = 0xFF800000 : f32} : tensor<f32>
  %y = tcc.select %b, %s, %n : tensor<2x3x8x8xi1>, tensor<2x3x8x8xf32>, tensor<f32> -> tensor<2x3x8x8xf32>
  return %y : tensor<2x3x8x8xf32>
}

// Document ids broadcast both ways ([8, 1] and [8]): the comparison's own
// broadcasting gives [8, 8] from the inputs.
// CHECK-LABEL: func.func @both
// CHECK-NEXT: tcc.equal %arg0, %arg1 : tensor<8x1xi32>, tensor<8xi32> -> tensor<8x8xi1>
// CHECK-NEXT: return
func.func @both(%q: tensor<8x1xi32>, %k: tensor<8xi32>) -> tensor<8x8xi1> {
  %a = tcc.broadcast_to %q : tensor<8x1xi32> -> tensor<8x8xi32>
  %b = tcc.broadcast_to %k : tensor<8xi32> -> tensor<8x8xi32>
  %e = tcc.equal %a, %b : tensor<8x8xi32>, tensor<8x8xi32> -> tensor<8x8xi1>
  return %e : tensor<8x8xi1>
}

// A unary op's shape is its operand's: the broadcast stays.
// CHECK-LABEL: func.func @unary
// CHECK: tcc.broadcast_to
// CHECK: tcc.neg
func.func @unary(%x: tensor<8xf32>) -> tensor<4x8xf32> {
  %b = tcc.broadcast_to %x : tensor<8xf32> -> tensor<4x8xf32>
  %n = tcc.neg %b : tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
