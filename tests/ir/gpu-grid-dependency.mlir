// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(tcc-gpu-grid-dependency))' | FileCheck %s
// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(tcc-gpu-grid-dependency{early-trigger=1}))' | FileCheck %s --check-prefix=EARLY

// A kernel waits for its predecessor's grid before its first load, after its
// allocas (which must stay first to remain static); with early-trigger it
// then lets the next kernel launch.
// CHECK-LABEL: llvm.func @k
// CHECK-SAME: tcc.grid_dependency
// CHECK-NEXT: llvm.mlir.constant
// CHECK-NEXT: llvm.alloca
// CHECK-NEXT: llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
// CHECK-NOT: launch_dependents
// CHECK-NEXT: llvm.load
// EARLY-LABEL: llvm.func @k
// EARLY: llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
// EARLY-NEXT: llvm.inline_asm has_side_effects "griddepcontrol.launch_dependents;", "~{memory}"
// EARLY-NEXT: llvm.load
gpu.module @m {
  llvm.func @k(%x: !llvm.ptr, %y: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %s = llvm.alloca %c1 x f32 : (i64) -> !llvm.ptr
    %a = llvm.load %x : !llvm.ptr -> f32
    llvm.store %a, %y : f32, !llvm.ptr
    llvm.return
  }
}

// -----

// Left alone: a device function that is not a kernel, a declaration, and a
// kernel already marked (no second wait).
// CHECK-LABEL: llvm.func @helper
// CHECK-NOT: griddepcontrol
// CHECK-LABEL: llvm.func @marked
// CHECK-COUNT-1: griddepcontrol.wait
// CHECK-NOT: griddepcontrol
gpu.module @m {
  llvm.func @helper(%x: !llvm.ptr) {
    %a = llvm.load %x : !llvm.ptr -> f32
    llvm.store %a, %x : f32, !llvm.ptr
    llvm.return
  }
  llvm.func @decl(!llvm.ptr) attributes {gpu.kernel}
  llvm.func @marked(%x: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel, tcc.grid_dependency} {
    llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}" : () -> ()
    %a = llvm.load %x : !llvm.ptr -> f32
    llvm.store %a, %x : f32, !llvm.ptr
    llvm.return
  }
}
