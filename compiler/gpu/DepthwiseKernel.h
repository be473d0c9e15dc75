//===- DepthwiseKernel.h - channels-last depthwise convolution -*- C++ -*-===//
//
// A depthwise convolution (tcc.conv2d {nhwc} with groups = C = O: each
// channel convolved with its own KH x KW filter) has no reduction over
// channels, so no GEMM: it is memory-bound, and the generic mapping spends
// four launches on it (a padded copy, an f32 accumulator's fill, the taps,
// the rounding). This template is one launch: a thread per output pixel and
// group of channels (8 16-bit or 4 f32: one 16-byte vector), a block up to
// 32 groups side by side, whose weights it first stages tap-major in shared
// memory (one vector load a tap), the window's taps read with bounds checks
// in place of padding, the sums in f32 registers, then bias, clamp and the
// rounding before one vector store.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_DEPTHWISEKERNEL_H
#define TCC_COMPILER_GPU_DEPTHWISEKERNEL_H

#include "compiler/gpu/ConvKernel.h"

#include <optional>

namespace tcc::gpu {

/// A ConvProblem with groups = c = o: input [n, h, w, c], weight
/// [c, kh, kw, 1], optional bias [c], output [n, outH(), outW(), c] (the
/// residual and allowTf32 fields are not used: no residual; f32 is f32).
/// `relu` or the clamp bounds apply after the bias: max(x, clampMin),
/// min(x, clampMax).
struct DepthwiseProblem : ConvProblem {
  std::optional<double> clampMin, clampMax;
};

/// Whether buildDepthwiseKernel handles `p`; when not, `why` says why.
bool depthwiseKernelSupports(const DepthwiseProblem &p, std::string &why);

/// Appends `gpu.func @name(%input, %weight, [%bias,] %out) kernel` (1-D
/// input, weight [c, kh*kw], bias [c], 1-D output; 16-byte aligned).
KernelLaunch buildDepthwiseKernel(mlir::OpBuilder &b,
                                  mlir::gpu::GPUModuleOp module,
                                  llvm::StringRef name,
                                  const DepthwiseProblem &p);

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_DEPTHWISEKERNEL_H
