//===- Passes.h - passes that consult the GPU templates ---------*- C++ -*-===//
#ifndef TCC_COMPILER_GPU_PASSES_H
#define TCC_COMPILER_GPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace mlir::tcc {

#define GEN_PASS_DECL
#include "compiler/gpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/gpu/Passes.h.inc"

} // namespace mlir::tcc

#endif // TCC_COMPILER_GPU_PASSES_H
