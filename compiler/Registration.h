//===- Registration.h - dialects and passes tcc uses --------------*- C++
//-*-===//
#ifndef TCC_COMPILER_REGISTRATION_H
#define TCC_COMPILER_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace tcc {
/// The tcc dialect, every upstream dialect the pipelines produce, their
/// external models (bufferization, tiling) and the LLVM IR translations.
void registerAllDialects(mlir::DialectRegistry &registry);
/// tcc's own passes and the upstream ones tcc-opt's lit tests use.
void registerAllPasses();
} // namespace tcc

#endif // TCC_COMPILER_REGISTRATION_H
