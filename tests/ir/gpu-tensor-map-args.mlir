// RUN: tcc-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(gpu.module(tcc-gpu-tensor-map-args))' | FileCheck %s

// The arguments a template lists in tcc.tensor_maps become 128-byte
// grid-constant parameters; the others and the attribute's absence elsewhere
// are left alone.
// CHECK-LABEL: llvm.func @k(
// CHECK-SAME: %{{.*}}: !llvm.ptr,
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-NOT: tcc.tensor_maps
// CHECK-LABEL: llvm.func @plain(
// CHECK-SAME: %{{.*}}: !llvm.ptr)
gpu.module @m {
  llvm.func @k(%p: !llvm.ptr, %a: !llvm.ptr {llvm.align = 64 : i64}, %b: !llvm.ptr) attributes {nvvm.kernel, tcc.tensor_maps = array<i64: 1, 2>} {
    llvm.return
  }
  llvm.func @plain(%p: !llvm.ptr) attributes {nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{tcc.tensor_maps: argument 1 is not a pointer argument of the kernel}}
  llvm.func @k(%p: !llvm.ptr, %n: i32) attributes {nvvm.kernel, tcc.tensor_maps = array<i64: 1>} {
    llvm.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{tcc.tensor_maps: argument 3 is not a pointer argument of the kernel}}
  llvm.func @k(%p: !llvm.ptr) attributes {nvvm.kernel, tcc.tensor_maps = array<i64: 3>} {
    llvm.return
  }
}
