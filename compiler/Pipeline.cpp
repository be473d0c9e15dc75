//===- Pipeline.cpp - from an imported model to a bundle ------------------===//
#include "compiler/Pipeline.h"
#include "compiler/BundleBuilder.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

using mlir::LogicalResult;
using mlir::ModuleOp;

bool tcc::isSupportedTarget(const std::string &target) {
  return target == "host" || isNvidiaTarget(target) || isAmdTarget(target);
}

LogicalResult tcc::compileModel(ImportedModel &model,
                                const CompileOptions &options,
                                CompileOutput &output) {
  ModuleOp module = *model.module;
  if (!isSupportedTarget(options.target))
    return module.emitError("unknown target '")
           << options.target << "' (known: host, sm_NN for NVIDIA GPUs such as sm_80 and "
              "sm_90, gfxNNN for AMD GPUs such as gfx90a and gfx942)";
  mlir::PassManager pm(module.getContext());
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return mlir::failure();
  mlir::TimingScope scope;
  if (options.host.timing) {
    scope = options.host.timing->nest("graph passes");
    pm.enableTiming(scope);
  }
  pm.addNestedPass<mlir::func::FuncOp>(mlir::createCanonicalizerPass());
  pm.addNestedPass<mlir::func::FuncOp>(mlir::createCSEPass());
  // On GPUs a matmul stays a kernel of its own, where the tensor-core
  // template computes it, until chains have fused GPU code of their own.
  mlir::tcc::TccFormChainsOptions chains;
  if (options.target != "host")
    chains.maxMatmulExtent = 0;
  pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createTccFormChains(chains));
  pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createTccFormGroups());
  pm.addPass(mlir::tcc::createTccOutlineGroups());
  if (mlir::failed(pm.run(module)))
    return mlir::failure();
  scope.stop();
  llvm::raw_string_ostream os(output.mlir);
  module.print(os);

  CodeArtifact code;
  if (options.target == "host") {
    if (mlir::failed(compileHostKernels(module, options.host, code)))
      return mlir::failure();
  } else {
    GpuOptions gpu = options.gpu;
    gpu.chip = options.target;
    if (mlir::failed(compileGpuKernels(module, gpu, code)))
      return mlir::failure();
  }
  output.llvmIR = std::move(code.llvmIR);
  output.assembly = std::move(code.assembly);
  return buildBundle(module, model.params, code, output.bundle);
}
