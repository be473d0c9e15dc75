// RUN: tcc-opt %s --canonicalize | FileCheck %s

// A cast back to the type of an exact cast's input is that input (f16 to
// f32 and back, an integer widened and narrowed back); a cast that rounds
// first (f32 to f16 and back) stays.
// CHECK-LABEL: func.func @round_trips
// CHECK-NEXT: %[[R:.*]] = tcc.cast %arg1 : tensor<4xf32> -> tensor<4xf16>
// CHECK-NEXT: %[[B:.*]] = tcc.cast %[[R]] : tensor<4xf16> -> tensor<4xf32>
// CHECK-NEXT: return %arg0, %[[B]], %arg2
func.func @round_trips(%h: tensor<4xf16>, %f: tensor<4xf32>, %i: tensor<4xi8>) -> (tensor<4xf16>, tensor<4xf32>, tensor<4xi8>) {
  %a = tcc.cast %h : tensor<4xf16> -> tensor<4xf32>
  %b = tcc.cast %a : tensor<4xf32> -> tensor<4xf16>
  %c = tcc.cast %f : tensor<4xf32> -> tensor<4xf16>
  %d = tcc.cast %c : tensor<4xf16> -> tensor<4xf32>
  %e = tcc.cast %i : tensor<4xi8> -> tensor<4xi32>
  %g = tcc.cast %e : tensor<4xi32> -> tensor<4xi8>
  return %b, %d, %g : tensor<4xf16>, tensor<4xf32>, tensor<4xi8>
}

// bf16 does not hold every f16 (its significand is shorter): kept.
// CHECK-LABEL: func.func @not_exact
// CHECK-NEXT: tcc.cast
// CHECK-NEXT: tcc.cast
func.func @not_exact(%h: tensor<4xf16>) -> tensor<4xf16> {
  %a = tcc.cast %h : tensor<4xf16> -> tensor<4xbf16>
  %b = tcc.cast %a : tensor<4xbf16> -> tensor<4xf16>
  return %b : tensor<4xf16>
}
