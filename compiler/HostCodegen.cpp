//===- HostCodegen.cpp - kernels for the host target ----------------------===//
//
// Kernel functions (tensors in, tensors out) are turned into destination-
// passing functions on memrefs, lowered through linalg and bufferization to
// the LLVM dialect, wrapped in the runtime's uniform entry point, compiled by
// LLVM's X86 backend and linked into a shared object by ld.lld.
//
//===----------------------------------------------------------------------===//
#include "compiler/HostCodegen.h"
#include "compiler/KernelPrep.h"
#include "compiler/LLVMUtils.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

/// After bufferization: copies are linalg.copy by then (see
/// copiesToLinalg), so everything becomes loops.
/// A region kernel's tile loop (tcc-host-region-tiles) is its grid.
const char *kHostPartitionPipeline =
    "func.func(tcc-partition-grid, tcc-host-region-grid)";

const char *kHostLoweringPipeline =
    "buffer-deallocation-pipeline,"
    "func.func(convert-linalg-to-loops, tcc-promote-accumulators),"
    "lower-affine, convert-scf-to-cf,"
    "func.func(arith-expand{include-bf16=1}),"
    "expand-strided-metadata, lower-affine,"
    "finalize-memref-to-llvm,"
    "convert-math-to-llvm, convert-math-to-libm,"
    "convert-arith-to-llvm, convert-index-to-llvm,"
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
    "convert-cf-to-llvm,"
    "reconcile-unrealized-casts,"
    "tcc-host-checked-alloc";

/// Adds `void name(void **args, i64 begin, i64 end)` calling the lowered
/// kernel body `(buffers..., begin, end)` (see tcc-partition-grid), which
/// becomes internal so LLVM inlines it.
LogicalResult addEntryPoint(ModuleOp module, StringRef name) {
  auto body = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!body)
    return module.emitError("lowered kernel ") << name << " is missing";
  std::string bodyName = (name + ".body").str();
  body.setSymName(bodyName);
  body.setLinkage(LLVM::Linkage::Internal);

  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto ptrTy = LLVM::LLVMPointerType::get(ctx);
  auto i64Ty = IntegerType::get(ctx, 64);
  auto fnTy = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                          {ptrTy, i64Ty, i64Ty});
  auto entry = LLVM::LLVMFuncOp::create(b, body.getLoc(), name, fnTy);
  Block *block = entry.addEntryBlock(b);
  b.setInsertionPointToStart(block);
  SmallVector<Value> args;
  unsigned numBuffers = body.getNumArguments() - 2;
  for (unsigned i = 0; i < numBuffers; ++i) {
    Type argTy = body.getArgument(i).getType();
    if (!isa<LLVM::LLVMPointerType>(argTy))
      return body.emitError("kernel argument ")
             << i << " is not a buffer pointer: " << argTy;
    Value slot = LLVM::GEPOp::create(b, body.getLoc(), ptrTy, ptrTy,
                                     block->getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{(int32_t)i});
    args.push_back(LLVM::LoadOp::create(b, body.getLoc(), ptrTy, slot));
  }
  args.push_back(block->getArgument(1));
  args.push_back(block->getArgument(2));
  LLVM::CallOp::create(b, body.getLoc(), body, args);
  LLVM::ReturnOp::create(b, body.getLoc(), ValueRange{});
  return success();
}

} // namespace

// `::tcc`: passes/Passes.h's mlir::tcc is visible here too.
LogicalResult(::tcc::compileHostKernels)(ModuleOp module,
                                         const ::tcc::HostOptions &options,
                                         ::tcc::CodeArtifact &artifact) {
  std::vector<std::string> names;
  // Region groups (kind "region") compute tile by tile: tiled and fused on
  // tensors before the shared lowering.
  LogicalResult tiled = success();
  OwningOpRef<ModuleOp> host =
      cloneKernelsAsBuffers(module, names, [&](func::FuncOp func) {
        auto kind = func->getAttrOfType<StringAttr>("tcc.kind");
        if (!kind || kind.getValue() != "region" || failed(tiled))
          return;
        PassManager pm(func.getContext(), func::FuncOp::getOperationName());
        pm.addPass(mlir::tcc::createTccHostRegionTiles());
        tiled = pm.run(func);
      });
  if (failed(tiled))
    return failure();
  // Reshapes (tcc-view-kernels) launch nothing: their results alias their
  // arguments' buffers.
  llvm::StringSet<> views;
  for (auto func : llvm::make_early_inc_range(host->getOps<func::FuncOp>()))
    if (func->hasAttr("tcc.view")) {
      views.insert(func.getSymName());
      func.erase();
    }
  if (failed(bufferizeKernels(*host, options.timing)))
    return failure();
  llvm::StringMap<unsigned> numBuffers;
  for (auto func : host->getOps<func::FuncOp>())
    numBuffers[func.getSymName()] = func.getNumArguments();
  if (failed(runPipeline(*host, kHostPartitionPipeline, "host code generation",
                         options.timing)))
    return failure();
  llvm::StringMap<int64_t> grids;
  for (auto func : host->getOps<func::FuncOp>())
    if (auto grid = func->getAttrOfType<IntegerAttr>("tcc.grid"))
      grids[func.getSymName()] = grid.getInt();
  if (failed(runPipeline(*host, kHostLoweringPipeline, "host code generation",
                         options.timing)))
    return failure();
  for (const std::string &name : names)
    if (!views.contains(name) && failed(addEntryPoint(*host, name)))
      return failure();

  TimingScope llvmScope;
  if (options.timing)
    llvmScope = options.timing->nest("LLVM: O3, x86-64 code, ld.lld");
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*host, llvmContext, "tcc_host");
  if (!llvmModule)
    return module.emitError("translation of host kernels to LLVM IR failed");
  std::string error;
  if (failed(compileAndLinkHostModule(
          *llvmModule, options.cpu, options.cpuFeatures, options.optLevel,
          artifact.code, options.emitText ? &artifact.llvmIR : nullptr,
          options.emitText ? &artifact.assembly : nullptr,
          artifact.cpuFeatures, error)))
    return module.emitError(error);
  artifact.cpu = options.cpu;
  artifact.target = "host";
  artifact.format = "so";
  for (const std::string &name : names) {
    KernelPlan plan;
    plan.name = name;
    if (!views.contains(name)) {
      DeviceLaunch launch;
      launch.symbol = name;
      launch.grid[0] = grids.lookup(name);
      for (unsigned a = 0; a < numBuffers.lookup(name); ++a)
        launch.args.push_back(a);
      plan.launches.push_back(std::move(launch));
    }
    artifact.kernels.push_back(std::move(plan));
  }
  return success();
}
