//===- GpuTensorMapArgs.cpp - TMA descriptors as grid-constant params -----===//
//
// A tensor map (CUtensorMap, 128 bytes) must reach cp.async.bulk.tensor as
// the generic address of a kernel parameter, a global or a constant. The
// parameter is the cheapest: the driver copies it at launch (and a CUDA
// graph records it), so the runtime needs no device memory for the maps and
// no copy ordered before the launch. The template marks the arguments; the
// conversion to the LLVM dialect cannot carry the attributes itself (it
// drops llvm.byval from gpu.func arguments), so they are set here, by
// tcc::gpu::passTensorMapsByValue (which the template generators of
// tests/gpu also call).
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/Passes.h"

#include "compiler/gpu/TemplateUtils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUTENSORMAPARGS
#include "compiler/gpu/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

struct TccGpuTensorMapArgs
    : mlir::tcc::impl::TccGpuTensorMapArgsBase<TccGpuTensorMapArgs> {
  void runOnOperation() override {
    if (failed(::tcc::gpu::passTensorMapsByValue(getOperation())))
      signalPassFailure();
  }
};

} // namespace
