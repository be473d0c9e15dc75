//===- GpuGridDependency.cpp - programmatic dependent launch on sm_90 -----===//
//
// In a CUDA graph of many small kernels (a CNN at batch 1), each kernel
// boundary costs about 2 us of launch and block scheduling that the
// kernels' work does not hide. From sm_90 a kernel may be launched while
// its predecessor still runs, provided it executes griddepcontrol.wait
// before it touches memory the predecessor writes; the runtime then
// launches it with programmatic stream serialization.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUGRIDDEPENDENCY
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// Emits `text` as a side-effecting inline PTX statement that clobbers
/// memory, so that no load or store moves across it.
void emitBarrierAsm(OpBuilder &b, Location loc, StringRef text) {
  LLVM::InlineAsmOp::create(
      b, loc, TypeRange(), ValueRange(), b.getStringAttr(text),
      b.getStringAttr("~{memory}"), b.getUnitAttr(), UnitAttr(),
      LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(), ArrayAttr());
}

struct TccGpuGridDependency
    : mlir::tcc::impl::TccGpuGridDependencyBase<TccGpuGridDependency> {
  using TccGpuGridDependencyBase::TccGpuGridDependencyBase;

  void runOnOperation() override {
    constexpr StringLiteral kMark = "tcc.grid_dependency";
    for (auto func : getOperation().getOps<LLVM::LLVMFuncOp>()) {
      if (func.isExternal() || !func->hasAttr("gpu.kernel") ||
          func->hasAttr(kMark))
        continue;
      // Allocas stay first: only entry-block allocas are static.
      Block &entry = func.getBody().front();
      auto it = entry.begin();
      while (isa<LLVM::AllocaOp, LLVM::ConstantOp>(*it))
        ++it;
      OpBuilder b(&entry, it);
      emitBarrierAsm(b, func.getLoc(), "griddepcontrol.wait;");
      if (earlyTrigger)
        emitBarrierAsm(b, func.getLoc(), "griddepcontrol.launch_dependents;");
      func->setAttr(kMark, UnitAttr::get(&getContext()));
    }
  }
};

} // namespace
