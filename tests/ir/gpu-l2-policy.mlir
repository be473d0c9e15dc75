// RUN: tcc-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(tcc-gpu-l2-policy))' | FileCheck %s

// A row kernel (a residency request and a barrier): its 16-byte loads carry
// the L2 evict_last policy, whatever their element type; the store and the
// narrower load stay as they were.
// CHECK-LABEL: llvm.func @rows
// CHECK: llvm.inline_asm "{{.*}}createpolicy.fractional.L2::evict_last.b64{{.*}}ld.global.L2::cache_hint.v4.b32{{.*}}", "=r,=r,=r,=r,l" %{{.*}} : (!llvm.ptr) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK: llvm.bitcast %{{.*}} : vector<4xi32> to vector<8xbf16>
// CHECK: llvm.inline_asm
// CHECK: llvm.bitcast %{{.*}} : vector<4xi32> to vector<4xf32>
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<2xf32>
// CHECK-NOT: llvm.load
// CHECK: llvm.store
gpu.module @m {
  llvm.func @rows(%x: !llvm.ptr, %y: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel, nvvm.minctasm = 4 : i32} {
    %a = llvm.load %x {alignment = 16 : i64} : !llvm.ptr -> vector<8xbf16>
    %b = llvm.load %x : !llvm.ptr -> vector<4xf32>
    %c = llvm.load %x {alignment = 8 : i64} : !llvm.ptr -> vector<2xf32>
    nvvm.barrier0
    llvm.store %a, %y {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr
    llvm.store %b, %y {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr
    llvm.store %c, %y {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr
    llvm.return
  }
}

// -----

// Left alone: a kernel without a residency request, one without a barrier
// (elementwise), a load aligned below 16 bytes, and a load from a stack
// slot. Taken: a global-space load (cast to generic for cvta) and a load at
// an offset into an argument.
// CHECK-LABEL: llvm.func @no_request
// CHECK-NOT: inline_asm
// CHECK: llvm.load
// CHECK-LABEL: llvm.func @no_barrier
// CHECK-NOT: inline_asm
// CHECK: llvm.load
// CHECK-LABEL: llvm.func @misaligned
// CHECK-NOT: inline_asm
// CHECK: llvm.load
// CHECK-LABEL: llvm.func @global_space
// CHECK: llvm.addrspacecast %{{.*}} : !llvm.ptr<1> to !llvm.ptr
// CHECK: llvm.inline_asm
// CHECK-LABEL: llvm.func @stack
// CHECK-NOT: inline_asm
// CHECK: llvm.load
// CHECK-LABEL: llvm.func @offset
// CHECK: llvm.getelementptr
// CHECK: llvm.inline_asm
gpu.module @m {
  llvm.func @no_request(%x: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
    %a = llvm.load %x {alignment = 16 : i64} : !llvm.ptr -> vector<8xbf16>
    nvvm.barrier0
    llvm.store %a, %x {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr
    llvm.return
  }
  llvm.func @no_barrier(%x: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel, nvvm.minctasm = 8 : i32} {
    %a = llvm.load %x {alignment = 16 : i64} : !llvm.ptr -> vector<8xbf16>
    llvm.store %a, %x {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr
    llvm.return
  }
  llvm.func @misaligned(%x: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel, nvvm.minctasm = 4 : i32} {
    %a = llvm.load %x {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
    nvvm.barrier0
    llvm.store %a, %x {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
    llvm.return
  }
  llvm.func @global_space(%x: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel, nvvm.minctasm = 4 : i32} {
    %a = llvm.load %x {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xi32>
    nvvm.barrier0
    llvm.store %a, %x {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<1>
    llvm.return
  }
  llvm.func @stack(%x: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel, nvvm.minctasm = 4 : i32} {
    %n = llvm.mlir.constant(4 : i64) : i64
    %slot = llvm.alloca %n x f32 {alignment = 16 : i64} : (i64) -> !llvm.ptr
    %a = llvm.load %slot {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
    nvvm.barrier0
    llvm.store %a, %x {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr
    llvm.return
  }
  llvm.func @offset(%x: !llvm.ptr, %i: i64) attributes {gpu.kernel, nvvm.kernel, nvvm.minctasm = 4 : i32} {
    %p = llvm.getelementptr %x[%i] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
    %a = llvm.load %p {alignment = 16 : i64} : !llvm.ptr -> vector<8xbf16>
    nvvm.barrier0
    llvm.store %a, %x {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr
    llvm.return
  }
}
