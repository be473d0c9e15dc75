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
  return target == "host";
}

LogicalResult tcc::compileModel(ImportedModel &model,
                                const CompileOptions &options,
                                CompileOutput &output) {
  ModuleOp module = *model.module;
  if (!isSupportedTarget(options.target))
    return module.emitError("unknown target '")
           << options.target << "' (this build knows: host)";
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
  pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createTccFormGroups());
  pm.addPass(mlir::tcc::createTccOutlineGroups());
  if (mlir::failed(pm.run(module)))
    return mlir::failure();
  scope.stop();
  llvm::raw_string_ostream os(output.mlir);
  module.print(os);

  HostArtifact host;
  if (mlir::failed(compileHostKernels(module, options.host, host)))
    return mlir::failure();
  output.llvmIR = std::move(host.llvmIR);
  output.assembly = std::move(host.assembly);
  return buildBundle(module, model.params, host, output.bundle);
}
