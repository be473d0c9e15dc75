//===- Target.h - what tcc knows of a code target ------------*- C++ -*-===//
//
// `--target` is parsed once into a TargetDesc: the family, the chip, the
// instructions the kernel templates may use and the limits their schedules
// respect. Code generation asks the description, never the chip's name, so
// that a chip is supported in one table (Target.cpp) and a name tcc cannot
// compile for is refused at option parsing, not deep inside LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_TARGET_H
#define TCC_COMPILER_TARGET_H

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tcc {

enum class TargetArch { Host, Nvidia, Amd };

/// One code target (docs/architecture.md, "Targets").
struct TargetDesc {
  TargetArch arch = TargetArch::Host;
  /// The name LLVM and the bundle know it by: "host", "sm_90a", "gfx942".
  std::string name = "host";
  /// NVIDIA: the compute capability as NN (90 for sm_90 and sm_90a).
  /// AMD: the gfx number as written, in hex digits (0x942, 0x90a).
  unsigned version = 0;

  // Instructions the NVIDIA templates use.
  /// cp.async copies from global to shared memory (sm_80 and later).
  bool cpAsync = false;
  /// ldmatrix and mma.sync with f16, bf16 and tf32 inputs (sm_80 and later:
  /// bf16 and tf32 need sm_80, ldmatrix sm_75).
  bool mmaSync = false;
  /// Hopper's warpgroup MMA, wgmma.mma_async, with mbarriers and setmaxnreg:
  /// the architecture-specific sm_90a only.
  bool wgmma = false;
  /// The tensor memory accelerator (cp.async.bulk.tensor, sm_90 and later).
  bool tma = false;
  /// Loads with an L2 eviction policy (ld.global.L2::cache_hint): PTX 7.4,
  /// which LLVM writes from sm_87 on; measured on sm_90 only, so used there.
  bool l2CacheHints = false;
  /// Programmatic dependent launch (griddepcontrol, sm_90 and later): a
  /// kernel may be launched while the one before it runs, and waits for it
  /// in its first instructions (tcc-gpu-grid-dependency).
  bool gridDependency = false;
  /// Thread block clusters with distributed shared memory (sm_90 and
  /// later): a split-K GEMM sums its splits across the cluster.
  bool clusters = false;

  /// Threads in a warp (NVIDIA) or wavefront (AMD CDNA: 64).
  unsigned warpSize = 32;
  /// Shared (AMD: LDS) memory one block may use, in bytes, with the opt-in
  /// the runtime does for dynamic shared memory.
  int64_t maxSharedPerBlock = 0;
  /// Multiprocessors (AMD: compute units) of the part the chip is known by;
  /// 0 where parts differ too much to name one.
  int64_t multiprocessors = 0;

  bool isHost() const { return arch == TargetArch::Host; }
  bool isNvidia() const { return arch == TargetArch::Nvidia; }
  bool isAmd() const { return arch == TargetArch::Amd; }
  bool isGpu() const { return arch != TargetArch::Host; }
  /// Whether attention chains take the fused templates (--gpu-attention):
  /// NVIDIA's from sm_80 (mma.sync, wgmma, and the f32 SIMT template);
  /// AMD's CDNA chips take the SIMT template alone, for every dtype
  /// (docs/architecture.md, "Attention on AMD targets").
  bool hasAttentionTemplates() const {
    return (isNvidia() && mmaSync) || isAmd();
  }
  /// Whether every attention takes the SIMT template (f32 FMAs), whatever
  /// its dtype: where the target has no tensor-core attention template (no
  /// mma.sync: AMD). Elsewhere only f32 decode shapes and what the
  /// tensor-core templates refuse do (chooseAttentionPlan).
  bool simtAttentionOnly() const { return !mmaSync; }
  /// The multiprocessors the schedule heuristics fill: the known count, or a
  /// typical one for the family.
  int64_t multiprocessorsForHeuristics() const;
  /// How many blocks of `bytes` of shared memory one NVIDIA multiprocessor
  /// holds at once: it has 1 KiB more than a block may opt in to (sm_80:
  /// 164 KiB, sm_86/89: 100, sm_90: 228) and reserves 1 KiB of it for each
  /// block. At least 1 (a block that does not fit is refused elsewhere).
  int64_t blocksByShared(int64_t bytes) const {
    return std::max<int64_t>(1, (maxSharedPerBlock + 1024) / (bytes + 1024));
  }
};

/// Parses a --target name. Unknown, malformed and unsupported names give
/// std::nullopt and a one-line `error` that lists the supported targets.
std::optional<TargetDesc> parseTarget(llvm::StringRef name, std::string &error);

/// The names parseTarget accepts, in order ("host", "sm_80", ...).
const std::vector<std::string> &supportedTargets();

} // namespace tcc

#endif // TCC_COMPILER_TARGET_H
