//===- TransposeKernel.h - a batched matrix transpose on the GPU -*- C++ -*-===//
//
// Builds `gpu.func @name(%src, %dst) kernel` with dst[b][c][r] = src[b][r][c]:
// 32x32 tiles staged through shared memory (one padding column, so that the
// column reads hit 32 distinct banks), reads and writes coalesced. The tf32
// GEMM uses it to give its template B stored [N][K], which that template
// reads with ldmatrix (docs/performance.md: 0.62x cuBLAS against 0.47x
// with B [K][N]).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_GPU_TRANSPOSEKERNEL_H
#define TCC_COMPILER_GPU_TRANSPOSEKERNEL_H

#include "compiler/gpu/MatmulKernel.h"

namespace tcc::gpu {

/// Appends the kernel transposing `batch` matrices of rows x cols elements
/// of `elemType` (32 bits or narrower; memrefs [batch, rows, cols] and
/// [batch, cols, rows]) to `module`.
KernelLaunch buildTransposeKernel(mlir::OpBuilder &b,
                                  mlir::gpu::GPUModuleOp module,
                                  llvm::StringRef name, int64_t batch,
                                  int64_t rows, int64_t cols,
                                  mlir::Type elemType);

} // namespace tcc::gpu

#endif // TCC_COMPILER_GPU_TRANSPOSEKERNEL_H
