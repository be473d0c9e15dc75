//===- GpuL2Policy.cpp - L2 evict_last loads in memory-bound row kernels --===//
//
// A row kernel reads its row once, reduces it across the block, then writes
// the row out. On the H200 such a kernel ran 3% under the copy's speed until
// its loads carried an L2 evict_last policy (the way Triton's reductions
// load); then it ran at the copy's speed. Neither the LLVM nor the NVVM
// dialect has a load with a cache policy, so the load becomes inline PTX.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tcc {
#define GEN_PASS_DEF_TCCGPUL2POLICY
#include "passes/Passes.h.inc"
} // namespace mlir::tcc

using namespace mlir;

namespace {

/// PTX of one 16-byte load with the policy; the generic address is
/// converted to a global one first, as ld.global requires.
constexpr const char *kLoadAsm =
    "{\n"
    "\t.reg .b64 tcc_ga, tcc_pol;\n"
    "\tcvta.to.global.u64 tcc_ga, $4;\n"
    "\tcreatepolicy.fractional.L2::evict_last.b64 tcc_pol, 1.0;\n"
    "\tld.global.L2::cache_hint.v4.b32 {$0, $1, $2, $3}, [tcc_ga], tcc_pol;\n"
    "}";

/// Whether `addr` is a kernel argument moved by GEPs (and address space
/// casts): a buffer the runtime allocated, so global memory. A generic
/// pointer from anywhere else (a stack slot) must not become ld.global.
bool pointsIntoArgument(Value addr) {
  while (Operation *def = addr.getDefiningOp()) {
    if (auto gep = dyn_cast<LLVM::GEPOp>(def))
      addr = gep.getBase();
    else if (auto cast = dyn_cast<LLVM::AddrSpaceCastOp>(def))
      addr = cast.getArg();
    else
      return false;
  }
  auto arg = dyn_cast<BlockArgument>(addr);
  return arg && isa<LLVM::LLVMFuncOp>(arg.getOwner()->getParentOp()) &&
         arg.getOwner()->isEntryBlock();
}

/// A 16-byte vector load from global or generic memory, aligned to 16
/// bytes (an absent alignment means the vector's own, which is 16), of a
/// kernel argument's buffer.
struct HintRowLoad : OpRewritePattern<LLVM::LoadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LLVM::LoadOp load,
                                PatternRewriter &rewriter) const override {
    auto vecT = dyn_cast<VectorType>(load.getType());
    if (!vecT || vecT.getRank() != 1 || load.getVolatile_() ||
        load.getOrdering() != LLVM::AtomicOrdering::not_atomic)
      return failure();
    Type elemT = vecT.getElementType();
    if (!elemT.isIntOrFloat() ||
        vecT.getNumElements() * elemT.getIntOrFloatBitWidth() != 128)
      return failure();
    if (std::optional<uint64_t> align = load.getAlignment();
        align && *align && *align < 16)
      return failure();
    auto ptrT = cast<LLVM::LLVMPointerType>(load.getAddr().getType());
    if ((ptrT.getAddressSpace() != 0 && ptrT.getAddressSpace() != 1) ||
        !pointsIntoArgument(load.getAddr()))
      return failure();
    Location loc = load.getLoc();
    Value addr = load.getAddr();
    if (ptrT.getAddressSpace() == 1)
      addr = LLVM::AddrSpaceCastOp::create(
          rewriter, loc, LLVM::LLVMPointerType::get(getContext()), addr);
    Type i32 = rewriter.getI32Type();
    Type structT = LLVM::LLVMStructType::getLiteral(getContext(),
                                                    {i32, i32, i32, i32});
    auto asmOp = LLVM::InlineAsmOp::create(
        rewriter, loc, structT, ValueRange{addr},
        rewriter.getStringAttr(kLoadAsm),
        rewriter.getStringAttr("=r,=r,=r,=r,l"), UnitAttr(), UnitAttr(),
        LLVM::TailCallKindAttr(), LLVM::AsmDialectAttr(), ArrayAttr());
    auto wordsT = VectorType::get({4}, i32);
    Value words = LLVM::PoisonOp::create(rewriter, loc, wordsT);
    for (int64_t i = 0; i < 4; ++i) {
      Value w = LLVM::ExtractValueOp::create(rewriter, loc, asmOp.getRes(), i);
      Value at = LLVM::ConstantOp::create(rewriter, loc, i32,
                                          rewriter.getI32IntegerAttr(i));
      words = LLVM::InsertElementOp::create(rewriter, loc, words, w, at);
    }
    rewriter.replaceOpWithNewOp<LLVM::BitcastOp>(load, vecT, words);
    return success();
  }
};

/// The kernels tcc-gpu-occupancy judged memory-bound (it asked for their
/// residency) that reduce across the block.
bool isRowKernel(LLVM::LLVMFuncOp func) {
  if (!func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) ||
      !func->hasAttr(NVVM::NVVMDialect::getMinctasmAttrName()))
    return false;
  return func
      .walk([](Operation *op) {
        return isa<NVVM::Barrier0Op, NVVM::BarrierOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

struct TccGpuL2Policy : mlir::tcc::impl::TccGpuL2PolicyBase<TccGpuL2Policy> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<HintRowLoad>(&getContext());
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Only the loads change: no folding or region simplification of the
    // rest of the kernel.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled)
        .setStrictness(GreedyRewriteStrictness::ExistingOps);
    config.enableFolding(false);
    config.enableConstantCSE(false);
    for (auto func : getOperation().getOps<LLVM::LLVMFuncOp>())
      if (isRowKernel(func) &&
          failed(applyPatternsGreedily(func, frozen, config)))
        return signalPassFailure();
  }
};

} // namespace
