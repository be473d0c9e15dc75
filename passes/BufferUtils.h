//===- BufferUtils.h - facts about bufferized kernels -----------*- C++ -*-===//
#ifndef TCC_PASSES_BUFFERUTILS_H
#define TCC_PASSES_BUFFERUTILS_H

#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::tcc {

/// The allocation or argument a (possibly viewed) buffer comes from.
inline Value rootOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    v = view.getViewSource();
  }
  return v;
}

} // namespace mlir::tcc

#endif // TCC_PASSES_BUFFERUTILS_H
