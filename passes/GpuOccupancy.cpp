//===- GpuOccupancy.cpp - residency requests for generic GPU kernels ------===//
//
// ptxas picks registers per thread to minimise spills, not to maximise the
// blocks a multiprocessor holds. For memory-bound kernels that trade is
// wrong: a few registers over a boundary (32 at 512 threads on sm_90)
// cost a quarter of the loads in flight. `nvvm.minctasm` makes ptxas keep
// the kernel within the registers of the requested residency. Kernels whose
// math lowers to sequences with temporaries (exp, log, tanh) are left to
// ptxas: held to 32 registers they spill, and lose more than they gain.
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

/// Math that lowers to a sequence with temporaries (exp: range reduction
/// around ex2; log, tanh, erf, ...) rather than one instruction. Measured
/// on the H200: softmax's row kernel held at 32 registers spilled 48 bytes
/// and went from 0.173 to 0.215 ms, while layer norm (only rsqrt) went
/// from 0.154 to 0.141 ms. Such kernels keep ptxas's choice.
bool needsTemporaries(Operation *op) {
  if (op->getDialect() != op->getContext()->getLoadedDialect("math"))
    return false;
  return !isa<math::SqrtOp, math::RsqrtOp, math::AbsFOp, math::AbsIOp,
              math::FmaOp, math::CopySignOp, math::FloorOp, math::CeilOp,
              math::TruncOp, math::RoundEvenOp>(op);
}

struct TccGpuOccupancy : mlir::tcc::impl::TccGpuOccupancyBase<TccGpuOccupancy> {
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
      // Blocks of half a multiprocessor's threads or more (1024 on sm_90)
      // would be held to 32 registers for two: a long row's kernel holds 16
      // to 32 values a thread and spilled (RMS norm over rows of 32768 f32:
      // 240 bytes, 2.6x torch.compile's time; docs/performance.md, session
      // 32). One block keeps ptxas's choice.
      if (threads < kMinBlockThreads || 2 * threads >= threadsPerSm)
        continue;
      bool temporaries = func.walk([](Operation *op) {
                               return needsTemporaries(op)
                                          ? WalkResult::interrupt()
                                          : WalkResult::advance();
                             })
                             .wasInterrupted();
      // A row spread over a cluster's blocks holds up to 32 values a thread:
      // held to the full residency's registers it spilled (layer norm over
      // rows of 131072 f32 in blocks of 512: 476 bytes, 2.1x slower;
      // docs/performance.md, session 34). Such kernels ask for half the
      // multiprocessor's threads (64 registers each), as a block of 1024
      // gets; by default not those with exp or log (softmax, cross-entropy):
      // ptxas then takes all 64 where it needs 32 to 54, and cross-entropy
      // over 131072 f16 took 0.101 ms against 0.071 with ptxas's own choice
      // (4 blocks a multiprocessor; session 40).
      if (func.walk(
                  [](NVVM::ClusterArriveOp) { return WalkResult::interrupt(); })
              .wasInterrupted()) {
        if (blocksPerSm == 0 && temporaries)
          continue;
        int64_t blocks = threadsPerSm / 2 / threads;
        // A schedule's residency is taken as given (log-softmax over
        // 131072 f16 ran 0.102 ms with 4 blocks of 512, 0.111 with
        // ptxas's 3; session 43).
        if (blocksPerSm > 0)
          blocks = std::min<int64_t>(threadsPerSm / threads, blocksPerSm);
        func->setAttr(attrName, b.getI32IntegerAttr(int32_t(blocks)));
        continue;
      }
      if (blocksPerSm == 0 && temporaries)
        continue;
      int64_t blocks = threadsPerSm / threads;
      if (blocksPerSm > 0)
        blocks = std::min<int64_t>(blocks, blocksPerSm);
      func->setAttr(attrName, b.getI32IntegerAttr(int32_t(blocks)));
    }
  }
};

} // namespace
