//===- KernelPrep.cpp - kernel functions as buffers, for every target -----===//
#include "compiler/KernelPrep.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
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
      Value empty =
          tensor::EmptyOp::create(atStart, arg.getLoc(), tensorTy.getShape(),
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

/// Most scalar ops in one fused loop body: LLVM's code generation (the
/// two-address pass) is super-linear in the size of a basic block, and a
/// buffer between two thousand-op loops costs nothing measurable.
constexpr int64_t kMaxFusedOps = 1000;

/// From tcc on tensors to bufferized linalg.
const std::string kLowerPipeline =
    "func.func(tcc-lower-to-linalg, canonicalize, cse, "
    "tcc-fuse-elementwise{max-ops=" +
    std::to_string(kMaxFusedOps) + "})";
const char *kBufferizePipeline =
    "func.func(canonicalize, tcc-private-inits),"
    "eliminate-empty-tensors,"
    "one-shot-bufferize{bufferize-function-boundaries=1"
    " function-boundary-type-conversion=identity-layout-map},"
    "canonicalize";

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

} // namespace

OwningOpRef<ModuleOp>
tcc::cloneKernelsAsBuffers(ModuleOp module, std::vector<std::string> &names,
                           llvm::function_ref<void(func::FuncOp)> prepare) {
  OwningOpRef<ModuleOp> out = ModuleOp::create(module.getLoc());
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr("tcc.kernel"))
      continue;
    auto clone = cast<func::FuncOp>(func->clone());
    clone.setPublic();
    out->push_back(clone);
    if (prepare)
      prepare(clone);
    toDestinationStyle(clone);
    names.push_back(func.getSymName().str());
  }
  return out;
}

LogicalResult tcc::runPipeline(ModuleOp module, StringRef pipeline,
                               StringRef what, TimingScope *timing) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  TimingScope scope;
  if (timing) {
    scope = timing->nest(what);
    pm.enableTiming(scope);
  }
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  if (failed(parsePassPipeline(pipeline, pm, errorStream)))
    return module.emitError("bad ") << what << " pipeline: " << error;
  return pm.run(module);
}

LogicalResult tcc::bufferizeKernels(ModuleOp module, TimingScope *timing) {
  if (failed(runPipeline(module, kLowerPipeline, "lowering to linalg", timing)))
    return failure();
  {
    // Elementwise fusion that never recomputes: the consumer must visit each
    // producer element once (a permutation map), not once per extra loop.
    // tcc-fuse-elementwise has fused the clusters; this makes single-use
    // producers reductions' prologues, within the same size bound.
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      auto producer = fused->get().getDefiningOp<linalg::LinalgOp>();
      auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
      auto bodySize = [](linalg::LinalgOp op) {
        return (int64_t)op.getBlock()->getOperations().size() - 1;
      };
      return producer && producer->hasOneUse() && consumer &&
             consumer.getMatchingIndexingMap(fused).isPermutation() &&
             bodySize(producer) + bodySize(consumer) <= kMaxFusedOps;
    };
    RewritePatternSet patterns(module.getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::GenericOp::getCanonicalizationPatterns(patterns,
                                                   module.getContext());
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    if (failed(applyPatternsGreedily(module, std::move(patterns), config)))
      return failure();
  }
  if (failed(runPipeline(module, kBufferizePipeline, "lowering to buffers",
                         timing)))
    return failure();
  copiesToLinalg(module);
  return success();
}
