// RUN: tcc-opt %s --split-input-file --tcc-lower-to-linalg --mlir-print-local-scope | FileCheck %s

// f16 computes in f32 and rounds once; the rank-1 operand broadcasts through
// its indexing map, nothing is materialised.
// CHECK-LABEL: func.func @add_f16_broadcast
// CHECK-NOT: tcc.
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
// CHECK: ^bb0(%[[A:.*]]: f16, %[[B:.*]]: f16, %{{.*}}: f16):
// CHECK: %[[X:.*]] = arith.extf %[[A]] : f16 to f32
// CHECK: %[[Y:.*]] = arith.extf %[[B]] : f16 to f32
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK: %[[R:.*]] = arith.truncf %[[S]] : f32 to f16
// CHECK: linalg.yield %[[R]] : f16
func.func @add_f16_broadcast(%a: tensor<4x8xf16>, %b: tensor<8xf16>) -> tensor<4x8xf16> {
  %0 = tcc.add %a, %b : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

// Size-1 dimensions that broadcast read index 0.
// CHECK-LABEL: func.func @mul_size1_broadcast
// CHECK: indexing_maps = [affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
func.func @mul_size1_broadcast(%a: tensor<4x1xf32>, %b: tensor<1x8xf32>) -> tensor<4x8xf32> {
  %0 = tcc.mul %a, %b : tensor<4x1xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// maximum, relu and clamp propagate NaN: maximumf/minimumf, never maxnumf.
// CHECK-LABEL: func.func @nan_propagation
// CHECK-NOT: maxnumf
// CHECK-NOT: minnumf
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.maximumf %{{.*}}, %[[ZERO]] : f32
// CHECK: %[[LO:.*]] = arith.constant -1.000000e+00 : f32
// CHECK: %[[M:.*]] = arith.maximumf %{{.*}}, %[[LO]] : f32
// CHECK: %[[HI:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: arith.minimumf %[[M]], %[[HI]] : f32
func.func @nan_propagation(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = tcc.maximum %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = tcc.relu %a : tensor<4xf32>
  %2 = tcc.clamp %a {min = -1.0 : f64, max = 1.0 : f64} : tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Integer division never traps: x / 0 and INT_MIN / -1 divide by 1 instead,
// and x / 0 then selects 0.
// CHECK-LABEL: func.func @int_div
// CHECK: ^bb0(%[[X:.*]]: i32, %[[Y:.*]]: i32, %{{.*}}: i32):
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[MIN:.*]] = arith.constant -2147483648 : i32
// CHECK-DAG: %[[BYZERO:.*]] = arith.cmpi eq, %[[Y]], %[[ZERO]] : i32
// CHECK-DAG: %[[ISMIN:.*]] = arith.cmpi eq, %[[X]], %[[MIN]] : i32
// CHECK: %[[BAD:.*]] = arith.ori %[[BYZERO]], %{{.*}} : i1
// CHECK: %[[D:.*]] = arith.select %[[BAD]], %[[ONE]], %[[Y]] : i32
// CHECK: %[[Q:.*]] = arith.divsi %[[X]], %[[D]] : i32
// CHECK: arith.select %[[BYZERO]], %[[ZERO]], %[[Q]] : i32
func.func @int_div(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = tcc.div %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Integer pow: square-and-multiply in an scf.while; negative exponents are
// handled outside the loop.
// CHECK-LABEL: func.func @int_pow
// CHECK: linalg.generic
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : i64
// CHECK: %[[LOOP:.*]]:3 = scf.while
// CHECK: arith.muli
// CHECK: arith.shrui
// CHECK: arith.select %[[NEG]], %{{.*}}, %[[LOOP]]#0 : i64
func.func @int_pow(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = tcc.pow %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// Float to int: out-of-range inputs never reach fptosi (which would be
// poison); they saturate, and NaN (false in every ordered compare) gives 0.
// CHECK-LABEL: func.func @cast_f32_to_i8
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: i8):
// CHECK-DAG: %[[HI:.*]] = arith.constant 1.280000e+02 : f32
// CHECK-DAG: %[[LO:.*]] = arith.constant -1.280000e+02 : f32
// CHECK-DAG: %[[BIG:.*]] = arith.cmpf oge, %[[X]], %[[HI]] : f32
// CHECK-DAG: %[[SMALL:.*]] = arith.cmpf olt, %[[X]], %[[LO]] : f32
// CHECK: %[[SAFE:.*]] = arith.select %{{.*}}, %[[X]], %{{.*}} : f32
// CHECK: %[[I:.*]] = arith.fptosi %[[SAFE]] : f32 to i8
// CHECK: %[[MAX:.*]] = arith.constant 127 : i8
// CHECK: %[[R1:.*]] = arith.select %[[BIG]], %[[MAX]], %[[I]] : i8
// CHECK: %[[MIN:.*]] = arith.constant -128 : i8
// CHECK: arith.select %[[SMALL]], %[[MIN]], %[[R1]] : i8
func.func @cast_f32_to_i8(%a: tensor<4xf32>) -> tensor<4xi8> {
  %0 = tcc.cast %a : tensor<4xf32> -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// f8 conversions are integer code: no arith.extf/truncf on f8 types, which
// neither the LLVM nor the GPU lowering handles. The encoder rounds the
// subnormal range with roundeven and saturates to 448 (code 126).
// CHECK-LABEL: func.func @cast_f32_to_f8
// CHECK-NOT: arith.truncf
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: math.roundeven %{{.*}} : f32
// CHECK: %[[MAX:.*]] = arith.constant 126 : i32
// CHECK: arith.cmpi ugt, %{{.*}}, %{{.*}} : i32
// CHECK: %[[CODE:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK: %[[R:.*]] = arith.bitcast %[[CODE]] : i8 to f8E4M3FN
// CHECK: linalg.yield %[[R]] : f8E4M3FN
func.func @cast_f32_to_f8(%a: tensor<4xf32>) -> tensor<4xf8E4M3FN> {
  %0 = tcc.cast %a : tensor<4xf32> -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

// f8 arithmetic: decode to f32, compute, encode.
// CHECK-LABEL: func.func @exp_f8
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: arith.bitcast %{{.*}} : f8E5M2 to i8
// CHECK: %[[X:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: math.exp %[[X]] : f32
// CHECK: arith.bitcast %{{.*}} : i8 to f8E5M2
func.func @exp_f8(%a: tensor<4xf8E5M2>) -> tensor<4xf8E5M2> {
  %0 = tcc.exp %a : tensor<4xf8E5M2>
  return %0 : tensor<4xf8E5M2>
}

// -----

// not_equal is true on NaN (une), the others are ordered; bools compare as
// unsigned (false < true).
// CHECK-LABEL: func.func @compare
// CHECK: arith.cmpf une, %{{.*}}, %{{.*}} : f32
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : i1
func.func @compare(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xi1>, %d: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = tcc.not_equal %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %1 = tcc.less %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
  %2 = tcc.less %c, %d : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// select moves stored values: no conversion of bf16.
// CHECK-LABEL: func.func @select
// CHECK: indexing_maps = [affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK: ^bb0(%[[C:.*]]: i1, %[[A:.*]]: bf16, %[[B:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[R:.*]] = arith.select %[[C]], %[[A]], %[[B]] : bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
func.func @select(%c: tensor<4x1xi1>, %a: tensor<4x8xbf16>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %0 = tcc.select %c, %a, %b : tensor<4x1xi1>, tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

// gelu: exact with erf, or the tanh approximation.
// CHECK-LABEL: func.func @gelu
// CHECK: %[[S:.*]] = arith.constant 0.707106769 : f32
// CHECK: %[[XS:.*]] = arith.mulf %{{.*}}, %[[S]] : f32
// CHECK: math.erf %[[XS]] : f32
// CHECK: arith.constant 4.471500e-02 : f32
// CHECK: arith.constant 0.797884583 : f32
// CHECK: math.tanh
func.func @gelu(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = tcc.gelu %a : tensor<4xf32>
  %1 = tcc.gelu %a {tanh_approx = true} : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// constant is a fill of a scalar (never a dense tensor constant); iota
// converts linalg.index.
// CHECK-LABEL: func.func @sources
// CHECK: %[[C:.*]] = arith.constant 4.480000e+02 : f8E4M3FN
// CHECK: linalg.fill ins(%[[C]] : f8E4M3FN) outs(%{{.*}} : tensor<2x3xf8E4M3FN>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : tensor<2x3xi32>)
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: %[[I64:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK: arith.trunci %[[I64]] : i64 to i32
func.func @sources() -> (tensor<2x3xf8E4M3FN>, tensor<2x3xi32>) {
  %0 = tcc.constant {value = 448.0 : f8E4M3FN} : tensor<2x3xf8E4M3FN>
  %1 = tcc.iota {axis = 1 : i64} : tensor<2x3xi32>
  return %0, %1 : tensor<2x3xf8E4M3FN>, tensor<2x3xi32>
}

// -----

// A cast to the same type is the operand itself.
// CHECK-LABEL: func.func @cast_identity
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[A]]
func.func @cast_identity(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tcc.cast %a : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
