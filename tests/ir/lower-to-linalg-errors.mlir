// RUN: tcc-opt %s --split-input-file --tcc-lower-to-linalg --verify-diagnostics

// Ops with no lowering fail the pass with one error per outermost op; the
// ops nested inside a tcc.group are lowered but not reported again.
func.func @group_left_over(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{tcc-lower-to-linalg: no lowering for 'tcc.group'}}
  %0 = tcc.group "elementwise" -> tensor<4xf32> {
    %1 = tcc.exp %a : tensor<4xf32>
    tcc.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
