//===- Pipeline.cpp - from an imported model to a bundle ------------------===//
#include "compiler/Pipeline.h"
#include "compiler/BundleBuilder.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

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
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  pm.addNestedPass<func::FuncOp>(tcc::createTccFormGroups());
  pm.addPass(tcc::createTccOutlineGroups());
  if (failed(pm.run(module)))
    return failure();
  llvm::raw_string_ostream os(output.mlir);
  module.print(os);

  HostArtifact host;
  if (failed(compileHostKernels(module, options.host, host)))
    return failure();
  output.llvmIR = std::move(host.llvmIR);
  output.assembly = std::move(host.assembly);
  return buildBundle(module, model.params, host, output.bundle);
}
