//===- ConvLayout.h - which convolutions go channels last -------*- C++ -*-===//
//
// Shared by tcc-conv-layout and tcc-fold-batch-norm, and meant for the GPU
// code generation too: the one predicate that says whether a convolution runs
// on tensor cores (and so is laid out NHWC under --conv-layout=auto). The
// reshape helpers serve tcc-batch-reshapes too.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_CONVLAYOUT_H
#define TCC_PASSES_CONVLAYOUT_H

#include "ir/TccOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tcc {

/// Whether a convolution with elements of type `elt` runs on tensor cores on
/// a target that has them: f16 and bf16; f32 only where tf32 is allowed
/// (--allow-tf32; it rounds the inputs to 10 mantissa bits).
bool convUsesTensorCores(Type elt, bool allowTf32);

/// An inference batch norm as y = x * mul + add per channel, computed on the
/// params in `compute` (f32 for narrow floats, so f16 params do not lose the
/// rsqrt's precision): mul = scale * rsqrt(var + eps), add = bias - mean *
/// mul, both [C] of `compute`.
struct BatchNormCoefficients {
  Value mul, add;
  Type compute;
};
BatchNormCoefficients batchNormCoefficients(PatternRewriter &rewriter,
                                            BatchNormOp op);

/// `v` converted to element type `elt` (tcc.cast), or `v` when it has it.
Value castElements(PatternRewriter &rewriter, Location loc, Value v, Type elt);
/// `v` reshaped to `shape` (tcc.reshape), or `v` when it has it.
Value reshapeTo(PatternRewriter &rewriter, Location loc, Value v,
                ArrayRef<int64_t> shape);
/// reshape(reshape(x)) -> reshape(x), or x where the shapes match
/// (tcc-batch-reshapes, tcc-conv-layout).
void addReshapeFolds(RewritePatternSet &patterns);

} // namespace mlir::tcc

#endif // TCC_PASSES_CONVLAYOUT_H
