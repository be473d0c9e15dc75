//===- Artifact.h - what code generation hands to the bundle -------*- C++
//-*-===//
#ifndef TCC_COMPILER_ARTIFACT_H
#define TCC_COMPILER_ARTIFACT_H

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace tcc {

/// One launch of a device function. On the host, only grid[0] is used: the
/// runtime splits [0, grid[0]) over threads.
struct DeviceLaunch {
  std::string symbol;
  std::array<int64_t, 3> grid{1, 1, 1};
  std::array<int64_t, 3> block{1, 1, 1};
  int64_t sharedBytes = 0;
  /// Blocks of a thread-block cluster in x, y and z (1, 1, 1: none).
  std::array<int64_t, 3> cluster{1, 1, 1};
  /// The buffers passed, in order: i < numBuffers is the kernel function's
  /// buffer i (operands, then results); i >= numBuffers is scratch buffer
  /// i - numBuffers of the kernel.
  std::vector<int> args;
  /// TMA descriptors passed after the buffers (manifest `tensor_maps`),
  /// each over the buffer `arg` (numbered as `args`).
  struct TensorMap {
    int arg = 0;
    std::string dtype;
    std::vector<int64_t> dims, strides, box;
    std::string swizzle;
    /// An im2col map (manifest version 5): box empty, these set.
    bool im2col = false;
    int64_t channels = 0, pixels = 0;
    std::vector<int64_t> lower, upper, elementStrides;
    /// Bytes into the buffer where the map starts (manifest version 6).
    int64_t offset = 0;
  };
  std::vector<TensorMap> tensorMaps;
  /// A template kernel's template and schedule (JSON text), for `tcc
  /// inspect`; empty for generic kernels. `tuned`: the schedule came from a
  /// tuning record.
  std::string templateName, scheduleJson;
  bool tuned = false;
  /// A template kernel's family in tuning records ("matmul", "conv") and
  /// its signature there (JSON text); empty where it has none.
  std::string tuningKernel, signatureJson;
};

/// How one kernel function of the model runs: launches in order, with
/// scratch buffers that live for the kernel only.
struct KernelPlan {
  std::string name;
  std::vector<DeviceLaunch> launches;
  std::vector<uint64_t> scratchBytes;
};

/// The code of every kernel of a model for one target.
struct CodeArtifact {
  std::string target; ///< "host", "sm_90", "gfx942", ...
  std::string format; ///< "so", "ptx", "hsaco"
  std::vector<uint8_t> code;
  /// Host code: the CPU it was compiled for and the x86 features it may use
  /// that the runtime checks (runtime/src/CpuFeatures.h).
  std::string cpu;
  std::vector<std::string> cpuFeatures;
  std::string llvmIR;              ///< optimised LLVM IR, for --emit llvm
  std::string assembly;            ///< assembly or PTX, for --emit asm
  std::vector<KernelPlan> kernels; ///< in the order of the kernel functions
  /// CUDA: the kernels (launch symbols) that wait for their predecessor's
  /// grid before touching memory, so may be launched while it runs.
  std::set<std::string> waitingKernels;
};

} // namespace tcc

#endif // TCC_COMPILER_ARTIFACT_H
