// RUN: tcc-opt %s --split-input-file --verify-diagnostics

// The verifiers of tcc.planned_matmul and #tcc.precision_plan.

// The codes must be the output's tile grid: 100 x 70 in tiles of 64 x 64
// is 2 x 2.
func.func @grid(%a: tensor<100x64xf32>, %b: tensor<64x70xf32>, %codes: tensor<2x3xi8>) -> tensor<100x70xf32> {
  // expected-error @+1 {{codes should be the tile grid [2, 2], not [2, 3]}}
  %c = tcc.planned_matmul %a, %b, %codes {plan = #tcc.precision_plan<tile = [64, 64], precisions = [bf16]>} : tensor<100x64xf32>, tensor<64x70xf32>, tensor<2x3xi8> -> tensor<100x70xf32>
  return %c : tensor<100x70xf32>
}

// -----

func.func @precision(%a: tensor<100x64xf32>, %b: tensor<64x70xf32>, %codes: tensor<2x2xi8>) -> tensor<100x70xf32> {
  // expected-error @+1 {{precision 'f64' is not one of f32, bf16, f16, f8E4M3FN, f8E5M2, i8}}
  %c = tcc.planned_matmul %a, %b, %codes {plan = #tcc.precision_plan<tile = [64, 64], precisions = [f64]>} : tensor<100x64xf32>, tensor<64x70xf32>, tensor<2x2xi8> -> tensor<100x70xf32>
  return %c : tensor<100x70xf32>
}

// -----

func.func @twice(%a: tensor<100x64xf32>, %b: tensor<64x70xf32>, %codes: tensor<2x2xi8>) -> tensor<100x70xf32> {
  // expected-error @+1 {{precision 'bf16' is named twice}}
  %c = tcc.planned_matmul %a, %b, %codes {plan = #tcc.precision_plan<tile = [64, 64], precisions = [bf16, f16, bf16]>} : tensor<100x64xf32>, tensor<64x70xf32>, tensor<2x2xi8> -> tensor<100x70xf32>
  return %c : tensor<100x70xf32>
}

// -----

func.func @tile(%a: tensor<100x64xf32>, %b: tensor<64x70xf32>, %codes: tensor<2x2xi8>) -> tensor<100x70xf32> {
  // expected-error @+1 {{a precision plan's tiles must be at least 1 x 1}}
  %c = tcc.planned_matmul %a, %b, %codes {plan = #tcc.precision_plan<tile = [0, 64], precisions = [bf16]>} : tensor<100x64xf32>, tensor<64x70xf32>, tensor<2x2xi8> -> tensor<100x70xf32>
  return %c : tensor<100x70xf32>
}

// -----

// The result keeps the operands' element type.
func.func @dtype(%a: tensor<100x64xbf16>, %b: tensor<64x70xbf16>, %codes: tensor<2x2xi8>) -> tensor<100x70xf32> {
  // expected-error @+1 {{the result's element type is not the operands'}}
  %c = tcc.planned_matmul %a, %b, %codes {plan = #tcc.precision_plan<tile = [64, 64], precisions = [bf16]>} : tensor<100x64xbf16>, tensor<64x70xbf16>, tensor<2x2xi8> -> tensor<100x70xf32>
  return %c : tensor<100x70xf32>
}

// -----

func.func @tile_grid(%a: tensor<256x64xbf16>, %b: tensor<200x64xbf16>, %codes: tensor<2x1xi8>) -> tensor<256x200xf32> {
  // expected-error @+1 {{codes should be the tile grid [2, 2], not [2, 1]}}
  %c = tcc.tile_matmul %a, %b, %codes {code = 0 : i64, tile_m = 128 : i64, tile_n = 128 : i64, transpose_b = true} : tensor<256x64xbf16>, tensor<200x64xbf16>, tensor<2x1xi8> -> tensor<256x200xf32>
  return %c : tensor<256x200xf32>
}

// -----

func.func @tile_scale(%a: tensor<256x64xbf16>, %b: tensor<200x64xbf16>, %codes: tensor<2x2xi8>, %s: tensor<1x256xf32>) -> tensor<256x200xf32> {
  // expected-error @+1 {{row_scale should be [M, 1]}}
  %c = tcc.tile_matmul %a, %b, %codes row_scale %s {code = 0 : i64, tile_m = 128 : i64, tile_n = 128 : i64, transpose_b = true} : tensor<256x64xbf16>, tensor<200x64xbf16>, tensor<2x2xi8>, tensor<1x256xf32> -> tensor<256x200xf32>
  return %c : tensor<256x200xf32>
}
