// RUN: tcc-opt %s --pass-pipeline='builtin.module(gpu.module(tcc-gpu-align-globals))' | FileCheck %s

// Workgroup arrays of any size get 16 bytes; an alignment already at 16 or
// above stays, one below it is raised; constants too.
// CHECK-LABEL: gpu.module @m
// CHECK: llvm.mlir.global internal @partials_a() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<10 x f32>
// CHECK: llvm.mlir.global internal @partials_b() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<3 x f32>
// CHECK: llvm.mlir.global internal @wide() {addr_space = 3 : i32, alignment = 128 : i64} : !llvm.array<64 x f32>
// CHECK: llvm.mlir.global internal @low() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<6 x f32>
// CHECK: llvm.mlir.global internal constant @table(dense<1.000000e+00> : tensor<5xf32>) {addr_space = 0 : i32, alignment = 16 : i64} : !llvm.array<5 x f32>
gpu.module @m {
  llvm.mlir.global internal @partials_a() {addr_space = 3 : i32} : !llvm.array<10 x f32>
  llvm.mlir.global internal @partials_b() {addr_space = 3 : i32} : !llvm.array<3 x f32>
  llvm.mlir.global internal @wide() {addr_space = 3 : i32, alignment = 128 : i64} : !llvm.array<64 x f32>
  llvm.mlir.global internal @low() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<6 x f32>
  llvm.mlir.global internal constant @table(dense<1.0> : tensor<5xf32>) : !llvm.array<5 x f32>
}
