//===- GpuAlignGlobals.cpp - explicit alignment on device globals ---------===//
//
// LLVM assumes that a global it defines with no alignment of its own sits
// at the data layout's *preferred* alignment, which is 16 bytes for any
// object larger than 16 bytes, and merges neighbouring loads into 16-byte
// vector loads on that belief. The NVPTX printer, however, places such a
// global at its element type's alignment (`.shared .align 4` for floats).
// Two per-warp partial arrays of 10 floats each then put the second at byte
// 40, and its `ld.shared.v4` faulted with CUDA_ERROR_MISALIGNED_ADDRESS (a
// row kernel of 320 threads: log-softmax over 5003 classes). Giving every
// device global an explicit alignment makes what LLVM assumes and what it
// emits the same thing.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUALIGNGLOBALS
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// The alignment LLVM's DataLayout::getPreferredAlign gives an unaligned
/// global larger than 128 bits; smaller ones keep their type's.
constexpr uint64_t kAlign = 16;

struct TccGpuAlignGlobals
    : mlir::tcc::impl::TccGpuAlignGlobalsBase<TccGpuAlignGlobals> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::GlobalOp global) {
      std::optional<uint64_t> align = global.getAlignment();
      if (!align || *align < kAlign)
        global.setAlignment(kAlign);
    });
  }
};

} // namespace
