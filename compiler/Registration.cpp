//===- Registration.cpp - dialects and passes tcc uses --------------------===//
#include "compiler/Registration.h"
#include "ir/TccDialect.h"
#include "passes/Passes.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void tcc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::tcc::TccDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
}

void tcc::registerAllPasses() {
  mlir::registerAllPasses();
  mlir::tcc::registerTccPasses();
}
