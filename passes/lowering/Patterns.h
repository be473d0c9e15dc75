//===- Patterns.h - tcc to linalg patterns by op family ---------*- C++ -*-===//
//
// Each family of tcc ops has its own file of OpRewritePatterns; the
// tcc-lower-to-linalg pass collects them all. Every pattern replaces one tcc op
// by linalg, tensor, arith, math and scf ops on tensors.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_PASSES_LOWERING_PATTERNS_H
#define TCC_PASSES_LOWERING_PATTERNS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::tcc {

/// Unary, binary, comparison, logical, select, cast, clamp, gelu and the
/// sources (constant, iota).
void populateElementwiseLoweringPatterns(RewritePatternSet &patterns);
/// reduce_sum/max/min/mean, argmax/argmin and index_check.
void populateReductionLoweringPatterns(RewritePatternSet &patterns);
/// topk.
void populateTopKLoweringPatterns(RewritePatternSet &patterns);
/// matmul.
void populateContractionLoweringPatterns(RewritePatternSet &patterns);
/// reshape, transpose, broadcast_to, concat, slice and pad.
void populateShapeLoweringPatterns(RewritePatternSet &patterns);
/// gather and take_along_axis.
void populateGatherLoweringPatterns(RewritePatternSet &patterns);
/// conv2d, conv_transpose2d, max/avg/global-avg pooling and batch_norm.
void populateConvPoolLoweringPatterns(RewritePatternSet &patterns);

/// All of the above.
void populateTccToLinalgPatterns(RewritePatternSet &patterns);

} // namespace mlir::tcc

#endif // TCC_PASSES_LOWERING_PATTERNS_H
