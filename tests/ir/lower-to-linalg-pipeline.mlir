// The lowered IR goes through the upstream host pipeline to LLVM IR, for
// every op family and the narrow dtypes. Beyond the basic pipeline it needs
// lower-affine (linalg-to-loops and expand-strided-metadata emit
// affine.apply) and convert-math-to-libm (math.erf becomes erff).
// RUN: tcc-opt %s --tcc-lower-to-linalg | mlir-opt --linalg-fuse-elementwise-ops \
// RUN:   --eliminate-empty-tensors \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries=true function-boundary-type-conversion=identity-layout-map" \
// RUN:   --convert-linalg-to-loops --arith-expand="include-bf16=true" --convert-scf-to-cf \
// RUN:   --expand-strided-metadata --lower-affine --finalize-memref-to-llvm \
// RUN:   --convert-math-to-llvm --convert-math-to-libm --convert-arith-to-llvm \
// RUN:   --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-translate --mlir-to-llvmir \
// RUN: | FileCheck %s --implicit-check-not='{{fptrunc .* to bfloat}}' \
// RUN:     --implicit-check-not='{{fpext bfloat}}' --implicit-check-not=memrefCopy

// The implicit checks: bf16 conversions become integer code (arith-expand),
// f8 ones are integer code from the start, so LLVM sees no bfloat
// conversion; and no memref.copy survives bufferization, so the kernels need
// no memrefCopy from MLIR's runner library.

// CHECK-LABEL: define {{.*}} @elementwise(
// CHECK: call float @erff(float
func.func @elementwise(%a: tensor<4x8xbf16>, %b: tensor<8xbf16>, %c: tensor<4x1xi1>) -> tensor<4x8xf8E4M3FN> {
  %0 = tcc.add %a, %b : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16>
  %1 = tcc.gelu %0 : tensor<4x8xbf16>
  %2 = tcc.select %c, %1, %0 : tensor<4x1xi1>, tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  %3 = tcc.cast %2 : tensor<4x8xbf16> -> tensor<4x8xf8E4M3FN>
  return %3 : tensor<4x8xf8E4M3FN>
}

// CHECK-LABEL: define {{.*}} @int_ops(
func.func @int_ops(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<i32>) {
  %0 = tcc.div %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %1 = tcc.pow %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %2 = tcc.index_check %b {bound = 3 : i64} : tensor<4xi32> -> tensor<i32>
  return %0, %1, %2 : tensor<4xi32>, tensor<4xi32>, tensor<i32>
}

// CHECK-LABEL: define {{.*}} @reductions(
func.func @reductions(%a: tensor<4x8xf8E5M2>) -> (tensor<4xf8E5M2>, tensor<8xf8E5M2>, tensor<4x1xi64>) {
  %0 = tcc.reduce_mean %a {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf8E5M2> -> tensor<4xf8E5M2>
  %1 = tcc.reduce_max %a {axes = array<i64: 0>, keepdims = false} : tensor<4x8xf8E5M2> -> tensor<8xf8E5M2>
  %2 = tcc.argmax %a {axis = 1 : i64, keepdims = true} : tensor<4x8xf8E5M2> -> tensor<4x1xi64>
  return %0, %1, %2 : tensor<4xf8E5M2>, tensor<8xf8E5M2>, tensor<4x1xi64>
}

// CHECK-LABEL: define {{.*}} @topk(
func.func @topk(%x: tensor<5x9xf16>) -> (tensor<5x3xf16>, tensor<5x3xi64>) {
  %v, %i = tcc.topk %x {k = 3 : i64, axis = 1 : i64, largest = false} : tensor<5x9xf16> -> tensor<5x3xf16>, tensor<5x3xi64>
  return %v, %i : tensor<5x3xf16>, tensor<5x3xi64>
}

// CHECK-LABEL: define {{.*}} @matmul(
func.func @matmul(%a: tensor<2x3x4xbf16>, %b: tensor<5x4xbf16>) -> tensor<2x3x5xbf16> {
  %0 = tcc.matmul %a, %b {transpose_b = true} : tensor<2x3x4xbf16>, tensor<5x4xbf16> -> tensor<2x3x5xbf16>
  return %0 : tensor<2x3x5xbf16>
}

// CHECK-LABEL: define {{.*}} @shapes(
func.func @shapes(%a: tensor<2x3x4xf32>, %b: tensor<2x3x2xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x3xf32>, tensor<4x6xf32>) {
  %0 = tcc.transpose %a {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = tcc.slice %a {starts = array<i64: 1, 2, 3>, steps = array<i64: -1, -1, -1>} : tensor<2x3x4xf32> -> tensor<2x3x3xf32>
  %2 = tcc.concat %a, %b {axis = 2 : i64} : tensor<2x3x4xf32>, tensor<2x3x2xf32> -> tensor<2x3x6xf32>
  %3 = tcc.reshape %2 : tensor<2x3x6xf32> -> tensor<6x6xf32>
  %4 = tcc.slice %3 {starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : tensor<6x6xf32> -> tensor<4x6xf32>
  return %0, %1, %4 : tensor<4x2x3xf32>, tensor<2x3x3xf32>, tensor<4x6xf32>
}

// CHECK-LABEL: define {{.*}} @gathers(
func.func @gathers(%d: tensor<10x4xf16>, %i: tensor<2x3xi32>, %j: tensor<10x2xi64>) -> (tensor<2x3x4xf16>, tensor<10x2xf16>) {
  %0 = tcc.gather %d, %i {axis = 0 : i64} : tensor<10x4xf16>, tensor<2x3xi32> -> tensor<2x3x4xf16>
  %1 = tcc.take_along_axis %d, %j {axis = 1 : i64} : tensor<10x4xf16>, tensor<10x2xi64> -> tensor<10x2xf16>
  return %0, %1 : tensor<2x3x4xf16>, tensor<10x2xf16>
}

// CHECK-LABEL: define {{.*}} @convs(
func.func @convs(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>, %wt: tensor<4x1x3x3xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x2x8x8xf32>) {
  %0 = tcc.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>, tensor<4xf32> -> tensor<1x4x4x4xf32>
  %1 = tcc.conv_transpose2d %0, %wt {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, groups = 2 : i64} : tensor<1x4x4x4xf32>, tensor<4x1x3x3xf32> -> tensor<1x2x8x8xf32>
  return %0, %1 : tensor<1x4x4x4xf32>, tensor<1x2x8x8xf32>
}

// CHECK-LABEL: define {{.*}} @pools(
func.func @pools(%x: tensor<1x2x7x8xf16>, %s: tensor<2xf16>) -> (tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16>, tensor<1x2x1x1xf16>, tensor<1x2x7x8xf16>) {
  %0 = tcc.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = false} : tensor<1x2x7x8xf16> -> tensor<1x2x4x4xf16>
  %1 = tcc.avg_pool2d %x {kernel = array<i64: 3, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>, ceil_mode = true, count_include_pad = true} : tensor<1x2x7x8xf16> -> tensor<1x2x4x4xf16>
  %2 = tcc.global_avg_pool2d %x : tensor<1x2x7x8xf16> -> tensor<1x2x1x1xf16>
  %3 = tcc.batch_norm %x, %s, %s, %s, %s {eps = 1.0e-5 : f64} : (tensor<1x2x7x8xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> tensor<1x2x7x8xf16>
  return %0, %1, %2, %3 : tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16>, tensor<1x2x1x1xf16>, tensor<1x2x7x8xf16>
}

// CHECK-LABEL: define {{.*}} @sources(
func.func @sources() -> (tensor<2x3xf8E5M2>, tensor<4x5xbf16>, tensor<3xi1>) {
  %0 = tcc.constant {value = -0.75 : f8E5M2} : tensor<2x3xf8E5M2>
  %1 = tcc.iota {axis = 0 : i64} : tensor<4x5xbf16>
  %2 = tcc.constant {value = true} : tensor<3xi1>
  return %0, %1, %2 : tensor<2x3xf8E5M2>, tensor<4x5xbf16>, tensor<3xi1>
}
