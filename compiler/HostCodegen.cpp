//===- HostCodegen.cpp - kernels for the host target ----------------------===//
//
// Kernel functions (tensors in, tensors out) are turned into destination-
// passing functions on memrefs, lowered through linalg and bufferization to
// the LLVM dialect, wrapped in the runtime's uniform entry point, compiled by
// LLVM's X86 backend and linked into a shared object by ld.lld.
//
//===----------------------------------------------------------------------===//
#include "compiler/HostCodegen.h"
#include "compiler/LLVMUtils.h"

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
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

/// Rewrites `func(tensors...) -> tensors` into
/// `func(tensors..., memref outs...)` that writes each result into its out
/// buffer. Inputs are marked read-only so no kernel writes a user's buffer.
/// Buffers without elements become unused `memref<1xi8>` arguments: LLVM's
/// bare-pointer convention refuses memrefs with a zero dimension, and there
/// is nothing to read or write in them.
void toDestinationStyle(func::FuncOp func) {
  Block &entry = func.getBody().front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  OpBuilder b(ret);
  auto placeholder = MemRefType::get({1}, b.getI8Type());
  OpBuilder atStart = OpBuilder::atBlockBegin(&entry);
  for (BlockArgument arg : entry.getArguments()) {
    auto tensorTy = dyn_cast<RankedTensorType>(arg.getType());
    if (!tensorTy)
      continue;
    if (tensorTy.getNumElements() == 0) {
      Value empty = tensor::EmptyOp::create(
          atStart, arg.getLoc(), tensorTy.getShape(),
          tensorTy.getElementType());
      arg.replaceAllUsesWith(empty);
      arg.setType(placeholder);
      continue;
    }
    func.setArgAttr(arg.getArgNumber(), "bufferization.writable",
                    b.getBoolAttr(false));
  }
  for (Value result : ret.getOperands()) {
    auto tensorTy = cast<RankedTensorType>(result.getType());
    unsigned index = func.getNumArguments();
    if (tensorTy.getNumElements() == 0) {
      (void)func.insertArgument(index, placeholder, DictionaryAttr(),
                                result.getLoc());
      continue;
    }
    auto memrefTy =
        MemRefType::get(tensorTy.getShape(), tensorTy.getElementType());
    (void)func.insertArgument(index, memrefTy, DictionaryAttr(),
                              result.getLoc());
    bufferization::MaterializeInDestinationOp::create(
        b, result.getLoc(), TypeRange{}, result, func.getArgument(index),
        /*restrict=*/true, /*writable=*/true);
  }
  func::ReturnOp::create(b, ret.getLoc());
  ret.erase();
  SmallVector<Type> argTypes;
  for (BlockArgument arg : entry.getArguments())
    argTypes.push_back(arg.getType());
  func.setFunctionType(
      FunctionType::get(func.getContext(), argTypes, TypeRange{}));
}

/// The passes from tcc on tensors to the LLVM dialect, on the host module.
const char *kHostPipeline =
    "func.func(tcc-lower-to-linalg, canonicalize, cse,"
    " linalg-fuse-elementwise-ops, canonicalize),"
    "eliminate-empty-tensors,"
    "one-shot-bufferize{bufferize-function-boundaries=1"
    " function-boundary-type-conversion=identity-layout-map},"
    "canonicalize";

/// After bufferization: copies are linalg.copy by then (see
/// copiesToLinalg), so everything becomes loops.
const char *kHostPartitionPipeline = "func.func(tcc-partition-grid)";

const char *kHostLoweringPipeline =
    "buffer-deallocation-pipeline,"
    "func.func(convert-linalg-to-loops),"
    "lower-affine, convert-scf-to-cf,"
    "func.func(arith-expand{include-bf16=1}),"
    "expand-strided-metadata, lower-affine,"
    "finalize-memref-to-llvm,"
    "convert-math-to-llvm, convert-math-to-libm,"
    "convert-arith-to-llvm, convert-index-to-llvm,"
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
    "convert-cf-to-llvm,"
    "reconcile-unrealized-casts";

/// memref.copy between strided views lowers to a call into MLIR's C runner
/// library, which a bundle cannot carry; as linalg.copy it becomes loops
/// (and LLVM turns contiguous ones back into memcpy).
void copiesToLinalg(ModuleOp module) {
  module.walk([](memref::CopyOp copy) {
    OpBuilder b(copy);
    linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                           copy.getTarget());
    copy.erase();
  });
}

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

LogicalResult tcc::compileHostKernels(ModuleOp module,
                                      const HostOptions &options,
                                      HostArtifact &artifact) {
  MLIRContext *ctx = module.getContext();
  OwningOpRef<ModuleOp> host = ModuleOp::create(module.getLoc());
  SmallVector<std::string> names;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr("tcc.kernel"))
      continue;
    auto clone = cast<func::FuncOp>(func->clone());
    clone.setPublic();
    host->push_back(clone);
    toDestinationStyle(clone);
    names.push_back(func.getSymName().str());
  }

  std::string error;
  llvm::raw_string_ostream errorStream(error);
  llvm::StringMap<int64_t> grids;
  for (const char *pipeline :
       {kHostPipeline, kHostPartitionPipeline, kHostLoweringPipeline}) {
    PassManager pm(ctx, ModuleOp::getOperationName());
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    TimingScope scope;
    if (options.timing) {
      scope = options.timing->nest("host code generation");
      pm.enableTiming(scope);
    }
    if (failed(parsePassPipeline(pipeline, pm, errorStream)))
      return module.emitError("bad host pipeline: ") << error;
    if (failed(pm.run(*host)))
      return failure();
    if (pipeline == kHostPipeline)
      copiesToLinalg(*host);
    if (pipeline == kHostPartitionPipeline)
      for (auto func : host->getOps<func::FuncOp>())
        if (auto grid = func->getAttrOfType<IntegerAttr>("tcc.grid"))
          grids[func.getSymName()] = grid.getInt();
  }
  for (const std::string &name : names)
    if (failed(addEntryPoint(*host, name)))
      return failure();

  TimingScope llvmScope;
  if (options.timing)
    llvmScope = options.timing->nest("LLVM: O3, x86-64 code, ld.lld");
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*host, llvmContext, "tcc_host");
  if (!llvmModule)
    return module.emitError("translation of host kernels to LLVM IR failed");
  if (failed(compileAndLinkHostModule(
          *llvmModule, options.cpu, options.optLevel, artifact.sharedObject,
          artifact.llvmIR, artifact.assembly, error)))
    return module.emitError(error);
  for (const std::string &name : names)
    artifact.kernels.push_back({name, grids.lookup(name)});
  return success();
}
