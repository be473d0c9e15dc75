//===- tcc-opt.cpp - the tcc dialect and passes for lit tests -------------===//
#include "compiler/Registration.h"
#include "compiler/gpu/Passes.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tcc::registerAllDialects(registry);
  tcc::registerAllPasses();
  mlir::tcc::registerTccGpuPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tcc optimizer driver\n", registry));
}
