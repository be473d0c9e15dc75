//===- HostCheckedAlloc.cpp - scratch allocation failures as errors -------===//
//
// Host kernels get their scratch buffers from malloc (memref.alloc lowered
// by finalize-memref-to-llvm), which returns null when the machine cannot
// give the bytes: an iota of 2^33 i64 summed, or a broadcast to [8, 2^30]
// reduced, then wrote through null and killed the user's process. Here each
// such call is checked: on null the kernel records the size it asked for in
// the code object's `tcc_scratch_failure` (the largest failed request) and
// returns at once; the runtime reads that symbol after every launch and
// fails the run with the figure. The scratch of the failed launch that was
// already allocated is not freed on that path (an error path, once).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCHOSTCHECKEDALLOC
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kFailureSymbol = "tcc_scratch_failure";

/// The size operand of an allocation call, or null if `call` is none.
Value allocationSize(LLVM::CallOp call) {
  std::optional<StringRef> callee = call.getCallee();
  if (!callee)
    return {};
  if (*callee == "malloc" && call.getArgOperands().size() == 1)
    return call.getArgOperands()[0];
  if (*callee == "aligned_alloc" && call.getArgOperands().size() == 2)
    return call.getArgOperands()[1];
  return {};
}

struct TccHostCheckedAlloc
    : mlir::tcc::impl::TccHostCheckedAllocBase<TccHostCheckedAlloc> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<LLVM::CallOp> calls;
    module.walk([&](LLVM::CallOp call) {
      if (allocationSize(call))
        calls.push_back(call);
    });
    if (calls.empty())
      return;
    MLIRContext *ctx = &getContext();
    auto i64 = IntegerType::get(ctx, 64);
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    if (!module.lookupSymbol(kFailureSymbol))
      LLVM::GlobalOp::create(b, module.getLoc(), i64, /*isConstant=*/false,
                             LLVM::Linkage::External, kFailureSymbol,
                             b.getI64IntegerAttr(0), /*alignment=*/8);
    for (LLVM::CallOp call : calls) {
      auto func = call->getParentOfType<LLVM::LLVMFuncOp>();
      if (!func ||
          !isa<LLVM::LLVMVoidType>(func.getFunctionType().getReturnType())) {
        call.emitError("scratch allocation outside a kernel body that "
                       "returns nothing: its failure cannot be reported");
        return signalPassFailure();
      }
      Location loc = call.getLoc();
      Block *before = call->getBlock();
      Block *after = before->splitBlock(call->getNextNode());
      Block *failed = b.createBlock(after);
      b.setInsertionPointToEnd(before);
      Value null = LLVM::ZeroOp::create(b, loc, ptr);
      Value isNull = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq,
                                          call.getResult(), null);
      // Failure is the rare path: branch weights keep the loop code first.
      LLVM::CondBrOp::create(b, loc, isNull, failed, ValueRange{}, after,
                             ValueRange{}, std::make_pair(1u, 1000000u));
      b.setInsertionPointToEnd(failed);
      Value flag = LLVM::AddressOfOp::create(b, loc, ptr, kFailureSymbol);
      LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::umax, flag,
                                allocationSize(call),
                                LLVM::AtomicOrdering::monotonic);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
    }
  }
};

} // namespace
