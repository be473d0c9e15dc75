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

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUOCCUPANCY
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// Kernels with fewer threads a block get their residency from the block
/// count limit already, and small blocks rarely need many registers.
constexpr int64_t kMinBlockThreads = 256;

/// A multiprocessor's 32-bit registers (sm_50 to sm_90).
constexpr int64_t kRegistersPerSm = 65536;
/// Registers a generic kernel needs beside the values it loads (indices,
/// addresses, the arithmetic's temporaries): layer norm over rows of 4096
/// f32 (16 values a thread, in 16-byte loads) fits 32 without spills.
constexpr int64_t kTempRegisters = 16;

/// 32-bit registers of the values a thread loads from global memory in
/// straight-line code (loops reuse theirs), which a row kernel holds while
/// its block reduces them: a vector load its bits (16-bit values share a
/// register), a scalar load two (ptxas, sm_90, held to 32 registers: layer
/// norm's 15-16 values a thread in scalar loads, rows of 4097-12289 not a
/// multiple of 4, spilled 36-44 bytes, the same 16 in four 16-byte loads
/// none), and one more under a guard (a row's tail: its predicate). RMS
/// norm with its weight (16 more values in vector loads) spilled 4-8 bytes.
int64_t loadedRegisters(gpu::GPUFuncOp func) {
  int64_t regs = 0;
  func.walk([&](Operation *op) {
    Value base;
    Type type;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      base = load.getMemRef();
      type = load.getType();
    } else if (auto load = dyn_cast<vector::LoadOp>(op)) {
      base = load.getBase();
      type = load.getType();
    } else {
      return;
    }
    auto memory = dyn_cast<MemRefType>(base.getType());
    if (!memory || memory.getMemorySpace() || op->getParentOfType<scf::ForOp>())
      return;
    auto vector = dyn_cast<VectorType>(type);
    bool scalar = !vector || vector.getNumElements() == 1;
    Type elem = getElementTypeOrSelf(type);
    int64_t bits = elem.isIntOrFloat() && vector
                       ? elem.getIntOrFloatBitWidth() * vector.getNumElements()
                       : 64;
    regs += (scalar ? 2 : (bits + 31) / 32) +
            (isa<scf::IfOp>(op->getParentOp()) ? 1 : 0);
  });
  return regs;
}

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
      // The full residency only where the loaded values fit its registers
      // (whole multiples of 8, as ptxas allocates them); else ptxas's own
      // choice, as for temporaries.
      int64_t regs = kRegistersPerSm / (blocks * threads) / 8 * 8;
      if (blocksPerSm == 0 &&
          loadedRegisters(func) + kTempRegisters > std::min<int64_t>(regs, 255))
        continue;
      if (blocksPerSm > 0)
        blocks = std::min<int64_t>(blocks, blocksPerSm);
      func->setAttr(attrName, b.getI32IntegerAttr(int32_t(blocks)));
    }
  }
};

} // namespace
