//===- GpuCodegen.h - kernels for NVIDIA and AMD GPUs -------------*- C++
//-*-===//
#ifndef TCC_COMPILER_GPUCODEGEN_H
#define TCC_COMPILER_GPUCODEGEN_H

#include "compiler/Artifact.h"
#include "compiler/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "mlir/Support/Timing.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tcc {

struct GpuOptions {
  /// The GPU (NVIDIA or AMD), parsed from --target (compiler/Target.h).
  TargetDesc target;
  unsigned optLevel = 3;
  /// The CUDA toolkit (for libdevice); searched for when empty.
  std::string cudaPath;
  /// The folder of the ROCm device libraries (ocml.bc ...); searched for when
  /// empty.
  std::string rocmDeviceLibs;
  /// f32 matmuls may use tf32 tensor cores (less precise: only on request).
  bool allowTf32 = false;
  /// A JSON file overriding the schedules the heuristics choose (see
  /// docs/cli.md, --schedule); empty: none.
  std::string scheduleFile;
  /// A tuning records file (compiler/TuningRecords.h); empty: none.
  std::string tuningRecords;
  /// Run kernels of row-wise ops (softmax, norms) as one launch with the
  /// row in registers (tcc-gpu-row-fusion).
  bool rowFusion = true;
  /// Convolutions that only feed a channel concat store into it
  /// (tcc-concat-in-place); the concat launches nothing.
  bool concatInPlace = true;
  /// Convolutions on the wgmma template copy their operands by TMA (an
  /// im2col map for the input) where the shapes allow.
  bool convTma = true;
  /// A matmul's elementwise code after it (scales, bias, activation, cast)
  /// runs in the GEMM template's epilogue, where it is all the rest of the
  /// matmul's kernel (16 random models correct on the H100, session 41).
  bool matmulEpilogues = true;
  /// Compute attention chains (matmul, score changes, softmax, matmul) with
  /// the fused attention template (compiler/gpu/AttentionKernel.cpp).
  bool attention = true;
  /// Width of index arithmetic in kernels: 32 or 64, or 0 to use 32 when
  /// every buffer holds fewer than 2^31 elements.
  unsigned indexBits = 0;
  /// Programmatic dependent launch on sm_90 and later
  /// (tcc-gpu-grid-dependency): "exit" (the next kernel launches when every
  /// block of this one has exited), "early" (as soon as every block has
  /// waited: its blocks then crowd the first multiprocessors to free up, and
  /// U-Net ran 30% slower on the H200) or "off".
  std::string gridDependency = "exit";
  /// Where pass timings go (--mlir-timing); may be null.
  mlir::TimingScope *timing = nullptr;
};

/// A point of a template's schedule space: the template ("wgmma", "mma")
/// and its knobs as a tuning record's schedule holds them.
struct MatmulCandidate {
  std::string templ;
  nlohmann::json schedule;
};

/// Every schedule the templates of `kernel` ("matmul", "conv": a
/// manifest's `tuning_kernel`) take for that tuning signature (as `tcc
/// inspect` shows it) on `target`: wgmma's where it applies, then
/// mma.sync's. Empty, with `error`, for a malformed signature or one no
/// template takes.
std::vector<MatmulCandidate> tuningSpace(const std::string &kernel,
                                         const nlohmann::json &signature,
                                         const TargetDesc &target,
                                         mlir::MLIRContext &context,
                                         std::string &error);

/// Compiles every function marked `tcc.kernel` in `module` (left unchanged)
/// into one code object for the GPU `options.target`: PTX text for NVIDIA,
/// an HSA code object for AMD. Each kernel function becomes one or more
/// device functions, launched in order, whose parameters are buffer
/// pointers only.
mlir::LogicalResult compileGpuKernels(mlir::ModuleOp module,
                                      const GpuOptions &options,
                                      CodeArtifact &artifact);

} // namespace tcc

#endif // TCC_COMPILER_GPUCODEGEN_H
