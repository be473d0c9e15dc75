//===- GpuOccupancy.cpp - residency requests for generic GPU kernels ------===//
//
// ptxas picks registers per thread to minimise spills, not to maximise the
// blocks a multiprocessor holds. For memory-bound kernels that trade is
// wrong: a few registers over a boundary (32 at 512 threads on sm_90)
// cost a quarter of the loads in flight. `nvvm.minctasm` makes ptxas keep
// the kernel within the registers of the requested residency.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUOCCUPANCY
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// Kernels with fewer threads a block get their residency from the block
/// count limit already, and small blocks rarely need many registers.
constexpr int64_t kMinBlockThreads = 256;

struct TccGpuOccupancy
    : mlir::tcc::impl::TccGpuOccupancyBase<TccGpuOccupancy> {
  using TccGpuOccupancyBase::TccGpuOccupancyBase;

  void runOnOperation() override {
    if (blocksPerSm < 0)
      return;
    StringRef attrName = NVVM::NVVMDialect::getMinctasmAttrName();
    Builder b(&getContext());
    for (auto func : getOperation().getOps<gpu::GPUFuncOp>()) {
      std::optional<ArrayRef<int32_t>> known = func.getKnownBlockSize();
      if (!func.isKernel() || !known || func->hasAttr(attrName))
        continue;
      int64_t threads = 1;
      for (int32_t d : *known)
        threads *= d;
      if (threads < kMinBlockThreads || threads > threadsPerSm)
        continue;
      int64_t blocks = threadsPerSm / threads;
      if (blocksPerSm > 0)
        blocks = std::min<int64_t>(blocks, blocksPerSm);
      func->setAttr(attrName, b.getI32IntegerAttr(int32_t(blocks)));
    }
  }
};

} // namespace
