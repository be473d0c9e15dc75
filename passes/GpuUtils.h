//===- GpuUtils.h - building blocks of GPU code generation ------*- C++ -*-===//
//
// Index arithmetic and warp-level combination shared by the passes that
// write gpu.launch bodies.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_GPUUTILS_H
#define TCC_PASSES_GPUUTILS_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"

namespace mlir::tcc::gpuutil {

constexpr int64_t kWarp = 32;

Value cIndex(OpBuilder &b, Location loc, int64_t v);

/// The indices of `linear` in a row-major box of `sizes`.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ArrayRef<int64_t> sizes);

/// The indices `map` gives for the loop indices `ivs`.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ArrayRef<Value> ivs);

/// `v` from lane (lane ^ offset) of the warp, for any int or float up to 64
/// bits.
Value shuffleXor(OpBuilder &b, Location loc, Value v, int64_t offset);

/// A new op of the combiner's kind (a binary arith op) on `lhs` and `rhs`.
Value combine(OpBuilder &b, Operation *combiner, Value lhs, Value rhs);

/// The float `v` extended or truncated to the float type `t`.
Value castFloat(OpBuilder &b, Location loc, Value v, Type t);

/// Combines `v` across the 32 lanes of each warp: every lane ends with the
/// warp's value.
Value warpReduce(OpBuilder &b, Location loc, Operation *combiner, Value v);

} // namespace mlir::tcc::gpuutil

#endif // TCC_PASSES_GPUUTILS_H
