//===- MatmulBundle.h - the GEMM generators' bundles ------------*- C++ -*-===//
//
// tcc-matmul-gen and tcc-wgmma-gen write each kernel they build as a bundle
// that `tcc run`/`tcc bench` load on the GPU, and describe it on stdout for
// check_gemm.py; this is that part, shared.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_GPU_MATMULBUNDLE_H
#define TCC_TESTS_GPU_MATMULBUNDLE_H

#include "compiler/gpu/MatmulKernel.h"

#include "mlir/IR/Types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::gen {

/// One matmul kernel as the GEMM checker sees it: A and B read from buffers
/// 0 and 1, C written to buffer 2, each [batch, rows, cols].
struct MatmulBundle {
  std::string name, chip;
  mlir::Type aType, bType, cType;
  std::vector<int64_t> aShape, bShape, cShape;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool aBatched = true, bBatched = true, transA = false, transB = false,
       tf32 = false;
  std::vector<int64_t> schedule;
};

/// "bf16", "f16" or "f32".
std::string typeName(mlir::Type t);

/// A tensor of a one-kernel bundle.
struct BundleTensor {
  std::string name;
  mlir::Type type;
  std::vector<int64_t> shape;
};

/// Writes OUTDIR/NAME.tccb: the PTX `ptx` as kernel `name` (of `kind`, made
/// of `op`), launched once as `launch` says over buffers inputs...,
/// output in that order; dies when the bundle cannot be written.
///
/// With `reduce` (a split-K GEMM): the kernel writes a temp of
/// `workspaceBytes` instead, and kernel NAME_splitk, launched as `reduce`
/// says over (temp, the inputs from index `epilogueFrom` on, output), makes
/// the output.
void writeKernelBundle(const std::string &outDir, const std::string &name,
                       const std::string &chip, const std::string &kind,
                       const std::string &op,
                       const std::vector<BundleTensor> &inputs,
                       const BundleTensor &output, const std::string &ptx,
                       const tcc::gpu::KernelLaunch &launch,
                       const tcc::gpu::KernelLaunch *reduce = nullptr,
                       int64_t workspaceBytes = 0, int epilogueFrom = 0);

/// Writes OUTDIR/NAME.tccb (the PTX `ptx` as the kernel `name`, launched as
/// `launch` says) and prints the case's description as one JSON line on
/// stdout; dies when the bundle cannot be written.
void writeMatmulBundle(const std::string &outDir, const MatmulBundle &mb,
                       const std::string &ptx,
                       const tcc::gpu::KernelLaunch &launch);

} // namespace tcc::gen

#endif // TCC_TESTS_GPU_MATMULBUNDLE_H
