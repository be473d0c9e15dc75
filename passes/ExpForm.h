//===- ExpForm.h - shares of a sum scaled by exp of a row value -*- C++ -*-===//
//
// Softmax's sum Σ exp(x - m) depends on the row's max m only through a
// factor: computed with any m', it is the sum with m times exp(m - m').
// Blocks that each sum against their own max can therefore combine their
// (max, sum) pairs in one round, correcting each sum by exp(k·(m - m_b)):
// the chain algebra's Scale rule (ChainAlgebra.h), here read off the scalar
// arithmetic a GPU template emitted for one position, so that any score
// change written around the exponential (a scale, a mask by select, a cast)
// is covered without naming it.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_EXPFORM_H
#define TCC_PASSES_EXPFORM_H

#include "mlir/IR/Value.h"

#include <optional>

namespace mlir::tcc {

/// k when every value of `shares` is exp(k·(r - v))·h, with v the value of
/// `reduced` at the same position (what the max or min r reduced there),
/// h computed without `r` and k a constant other than 0 (the same for all);
/// nullopt where a share reads `r` any other way (through an op with
/// regions, a comparison, a non-constant multiplier of r) or its exponent
/// holds anything else (another value, a constant: the share would then
/// not be bounded by 1 against a block's own max, and could overflow where
/// against the row's it does not).
std::optional<double> commonExpExponent(ArrayRef<Value> shares, Value r,
                                        ArrayRef<Value> reduced);

} // namespace mlir::tcc

#endif // TCC_PASSES_EXPFORM_H
