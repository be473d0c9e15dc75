// RUN: tcc-opt %s --split-input-file --tcc-host-checked-alloc | FileCheck %s

// Each malloc of a kernel body is checked: on null the requested size goes
// to the exported tcc_scratch_failure (the largest wins) and the body
// returns; otherwise it goes on where it was.
// CHECK: llvm.mlir.global external @tcc_scratch_failure(0 : i64) {addr_space = 0 : i32, alignment = 8 : i64} : i64
// CHECK-LABEL: llvm.func @body
// CHECK: %[[P:.*]] = llvm.call @malloc(%[[N:.*]]) : (i64) -> !llvm.ptr
// CHECK: %[[Z:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[C:.*]] = llvm.icmp "eq" %[[P]], %[[Z]] : !llvm.ptr
// CHECK: llvm.cond_br %[[C]] weights([1, 1000000]), ^[[FAIL:.*]], ^[[OK:.*]]
// CHECK: ^[[FAIL]]:
// CHECK: %[[F:.*]] = llvm.mlir.addressof @tcc_scratch_failure : !llvm.ptr
// CHECK: llvm.atomicrmw umax %[[F]], %[[N]] monotonic : !llvm.ptr, i64
// CHECK: llvm.return
// CHECK: ^[[OK]]:
// CHECK: llvm.store %{{.*}}, %[[P]]
// CHECK: llvm.call @free(%[[P]])
module {
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @free(!llvm.ptr)
  llvm.func @body(%n: i64) {
    %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    %c = llvm.mlir.constant(1 : i8) : i8
    llvm.store %c, %p : i8, !llvm.ptr
    llvm.call @free(%p) : (!llvm.ptr) -> ()
    llvm.return
  }
}

// -----

// No allocation: no symbol, nothing changed.
// CHECK-NOT: tcc_scratch_failure
// CHECK-LABEL: llvm.func @plain
// CHECK-NEXT: llvm.return
module {
  llvm.func @plain() {
    llvm.return
  }
}
