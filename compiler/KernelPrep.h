//===- KernelPrep.h - kernel functions as buffers, for every target -*- C++
//-*-===//
//
// The steps every target shares: the kernel functions of a model (tensors in,
// tensors out) are cloned into a module of their own, turned into
// destination-passing functions and lowered through linalg and one-shot
// bufferization to loops-to-be on memrefs. Targets go on from there.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_KERNELPREP_H
#define TCC_COMPILER_KERNELPREP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "mlir/Support/Timing.h"

#include <string>
#include <vector>

namespace tcc {

/// Clones every `tcc.kernel` function of `module` into a new module, in
/// order, each rewritten as `func(inputs..., outputs...)` on memrefs: its
/// buffers are the kernel's operands followed by its results. `names`
/// receives the kernel names. Buffers without elements become unused
/// `memref<1xi8>` arguments.
/// `prepare`, when given, sees each clone first, on tensors.
mlir::OwningOpRef<mlir::ModuleOp> cloneKernelsAsBuffers(
    mlir::ModuleOp module, std::vector<std::string> &names,
    llvm::function_ref<void(mlir::func::FuncOp)> prepare = {});

/// Runs a pass pipeline (textual, anchored on the module) on `module`.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, llvm::StringRef pipeline,
                                llvm::StringRef what,
                                mlir::TimingScope *timing);

/// Lowers the tcc ops of the cloned kernels to linalg and bufferizes them;
/// copies between views become linalg.copy.
mlir::LogicalResult bufferizeKernels(mlir::ModuleOp module,
                                     mlir::TimingScope *timing);

} // namespace tcc

#endif // TCC_COMPILER_KERNELPREP_H
