//===- HostCodegen.h - kernels for the host target ----------------*- C++
//-*-===//
#ifndef TCC_COMPILER_HOSTCODEGEN_H
#define TCC_COMPILER_HOSTCODEGEN_H

#include "compiler/Artifact.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "mlir/Support/Timing.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc {

struct HostOptions {
  /// LLVM CPU name; a portable baseline by default, so that a bundle runs on
  /// any x86-64 machine of the last decade. Resolved by resolveHostCpu
  /// (LLVMUtils.h): never "native" here.
  std::string cpu = "x86-64-v2";
  /// LLVM feature string beside it ("+avx2,-avx512f,..."; --cpu native).
  std::string cpuFeatures;
  unsigned optLevel = 3;
  /// Keep the optimised LLVM IR and the assembly text (--emit llvm/asm):
  /// the assembly costs a second run of the code generator.
  bool emitText = true;
  /// Where pass timings go (--mlir-timing); may be null.
  mlir::TimingScope *timing = nullptr;
};

/// Compiles every function marked `tcc.kernel` in `module` (left unchanged)
/// into one shared object. Each kernel `k` is exported with the C signature
/// `void k(void **args, int64_t begin, int64_t end)`, its arguments being the
/// kernel function's operands followed by its results, as buffers.
mlir::LogicalResult compileHostKernels(mlir::ModuleOp module,
                                       const HostOptions &options,
                                       CodeArtifact &artifact);

} // namespace tcc

#endif // TCC_COMPILER_HOSTCODEGEN_H
