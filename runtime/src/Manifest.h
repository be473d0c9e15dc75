//===- Manifest.h - the typed view of a bundle manifest -------*- C++ -*-===//
//
// The manifest schema (versions 1 to 6) is the contract between the compiler
// and the runtime; docs/bundle-format.md specifies it. parseModelDesc checks
// every field, reference and size, so the backends work from these structs and
// never from raw JSON.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_MANIFEST_H
#define TCC_RUNTIME_MANIFEST_H

#include "runtime/src/DType.h"
#include "runtime/src/ParamRecipe.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tcc::bundle {

/// Derived (manifest version 3): a runtime-owned buffer that the init
/// launches write once at load and the run's launches read, like a param.
enum class BufferKind { Input, Output, Param, Temp, Derived };
const char *bufferKindName(BufferKind kind);

/// One buffer of the memory plan.
struct BufferDesc {
  uint32_t id = 0; ///< The id the manifest gives it (used in messages).
  BufferKind kind = BufferKind::Temp;
  uint64_t bytes = 0;
  uint64_t offset = 0; ///< Temps only: offset in the arena, 64-byte aligned.
};

/// An input, output or param tensor. `buffer` is an index into
/// ModelDesc::buffers (not the manifest's id).
struct TensorDesc {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  size_t buffer = 0;
  uint64_t bytes = 0;
  /// Params only: the blob holding the initial bytes, or (manifest version
  /// 2) the recipe the runtime computes them from at load.
  std::string blob;
  std::optional<ParamRecipe> recipe;
};

/// A 4-byte i32 buffer that counts run-time errors; non-zero fails the run.
struct StatusDesc {
  size_t buffer = 0; ///< Index into ModelDesc::buffers.
  std::string message;
};

/// The device family that runs a code target.
enum class TargetKind { Host, Cuda, Hip };

/// Classifies a code target name: "host"; "sm_NN" with an optional "a" or "f"
/// suffix (CUDA, e.g. "sm_90a"); "gfxNNN..." (HIP, e.g. "gfx942",
/// "gfx90a"). std::nullopt for anything else.
std::optional<TargetKind> targetKind(const std::string &target);

/// Whether code for the HIP target `target` ("gfx942") runs on a device whose
/// gcnArchName is `deviceArch` ("gfx942:sramecc+:xnack-"): the name before
/// the first ':' must be the target. Code built without feature settings
/// runs with either setting of sramecc and xnack, so those are not compared.
bool hipArchMatches(const std::string &deviceArch, const std::string &target);

struct KernelDesc {
  std::string name;
  std::string symbol;
  std::string kind;             ///< Informational ("reduce_sum", ...).
  std::vector<std::string> ops; ///< Informational: the tcc ops it fuses.
  size_t code = 0;              ///< Index into ModelDesc::code.
  uint32_t sharedBytes = 0;     ///< GPU only: dynamic shared memory a block.
  /// CUDA only: the kernel waits for the previous kernel's grid before it
  /// touches memory (griddepcontrol.wait), so it may be launched while that
  /// kernel still runs (programmatic dependent launch).
  bool gridDependency = false;
  /// CUDA only: blocks of a thread-block cluster in x, y and z (1, 1, 1:
  /// none); every launch's grid is a multiple of it.
  std::array<uint32_t, 3> cluster{1, 1, 1};
};

/// A code object for one target: a host .so, PTX, a HSACO...
struct CodeDesc {
  std::string target;
  TargetKind kind = TargetKind::Host;
  std::string blob;
  /// "so" (host), "ptx" (CUDA) or "hsaco" (HIP): the only format of each.
  std::string format;
  /// Host only, optional: the CPU the code was compiled for (informational)
  /// and the x86 features it may use, which the runtime checks before
  /// loading (runtime/src/CpuFeatures.h). Empty in older bundles.
  std::string cpu;
  std::vector<std::string> cpuFeatures;
};

/// GPU launch limits the manifest is checked against: CUDA's for every
/// device since compute capability 3.0. A device may allow fewer threads for
/// a kernel (registers, shared memory); the backend checks that at load.
constexpr uint32_t kMaxBlockThreads = 1024;
constexpr uint32_t kMaxBlockDim[3] = {1024, 1024, 64};
constexpr uint32_t kMaxGridDim[3] = {0x7fffffff, 65535, 65535};
/// Kernel parameters are limited to 4 KiB on every CUDA driver and on HIP:
/// 512 pointers. A tensor map takes 128 bytes of it, 16 pointers' worth.
constexpr size_t kMaxGpuKernelArgs = 512;

/// Manifest version 4: a CUDA tensor map (a TMA descriptor, CUtensorMap) that
/// a launch passes by value, after its buffer pointers. The runtime encodes
/// it at launch from the buffer's current address: element strides 1, no
/// interleave, L2 promotion 256B, out-of-bounds elements read as zeros.
constexpr size_t kMaxTensorMaps = 8;    ///< A launch's maps.
constexpr size_t kMaxTensorMapRank = 5; ///< CUDA's limit.
constexpr size_t kTensorMapBytes = 128; ///< sizeof(CUtensorMap).
constexpr size_t kTensorMapAlign = 64;  ///< Its alignment as a parameter.
enum class TensorMapSwizzle { None, B32, B64, B128 };
const char *swizzleName(TensorMapSwizzle swizzle);

struct TensorMapDesc {
  size_t buffer = 0; ///< Index into ModelDesc::buffers.
  DType dtype = DType::F32;
  /// Elements, innermost first (CUDA's globalDim), each in [1, 2^32].
  std::vector<uint64_t> dims;
  /// Bytes between consecutive indices of dims 1..rank-1 (CUDA's
  /// globalStrides): rank - 1 entries, multiples of 16.
  std::vector<uint64_t> strides;
  std::vector<uint32_t> box; ///< The tile a copy moves, rank entries.
  TensorMapSwizzle swizzle = TensorMapSwizzle::None;
  /// Version 6: where the mapped tensor starts in the buffer, in bytes (a
  /// multiple of 16): a view of part of it, such as Q, K or V cut from a
  /// packed QKV projection.
  uint64_t offset = 0;
  /// Version 5: an im2col map (cuTensorMapEncodeIm2col) instead of a tiled
  /// one; `box` is then empty. A copy moves `pixels` pixels of `channels`
  /// channels each, walking the box between the corners (rank - 2 offsets
  /// each, innermost first) by `elementStrides` (rank entries).
  bool im2col = false;
  uint32_t channels = 0, pixels = 0;
  std::vector<int32_t> lower, upper;
  std::vector<uint32_t> elementStrides;
};

struct LaunchDesc {
  enum class Kind { Kernel, Copy };
  Kind kind = Kind::Kernel;
  // Kernel launches.
  size_t kernel = 0;        ///< Index into ModelDesc::kernels.
  std::vector<size_t> args; ///< Indices into ModelDesc::buffers.
  /// Positions in `args` of the buffers the launch may write, ascending
  /// ("writes", optional): without it every argument may be written. Only
  /// the order of a CUDA graph's launches depends on it (LaunchOrder.h).
  std::vector<size_t> writes;
  bool writesListed = false;
  /// Optional ("write_slices"): a written argument of which the launch
  /// writes only bytes [k·stride + offset, k·stride + offset + bytes) of
  /// each period k (its channels of a concat's buffer).
  struct WriteSlice {
    size_t arg = 0;
    uint64_t offset = 0, bytes = 0, stride = 0;
  };
  std::vector<WriteSlice> writeSlices;
  int64_t grid = 0;         ///< Host: independent work items, >= 0.
  bool gpu = false;         ///< The kernel's code is for a GPU target.
  /// GPU: blocks in x, y, z and threads a block in x, y, z (each >= 1).
  std::array<uint32_t, 3> gridDims{1, 1, 1}, blockDims{1, 1, 1};
  /// CUDA only (version 4): parameters after the buffer pointers.
  std::vector<TensorMapDesc> tensorMaps;
  // Copies (indices into ModelDesc::buffers).
  size_t src = 0, dst = 0;
  uint64_t bytes = 0;
};

struct ModelDesc {
  std::string model;
  std::vector<std::string> targets;
  std::vector<TensorDesc> inputs, outputs, params;
  std::vector<StatusDesc> status;
  std::vector<BufferDesc> buffers;
  uint64_t arenaBytes = 0;
  std::vector<KernelDesc> kernels;
  std::vector<CodeDesc> code;
  std::vector<LaunchDesc> launches;
  /// Version 3: run once at load, after the params are filled, on params,
  /// derived buffers and temps only; they write the derived buffers.
  std::vector<LaunchDesc> initLaunches;
};

/// Largest tensor, buffer, arena or copy the manifest may declare (2^48
/// bytes): far above any device, far below where size arithmetic overflows.
constexpr uint64_t kMaxBytes = uint64_t(1) << 48;
constexpr size_t kMaxRank = 32;

/// The manifest versions this runtime reads: 1; 2, which adds params stored
/// as a recipe ("init") instead of a blob; 3, which adds the init launches
/// and derived buffers; 4, which adds tensor maps to CUDA launches. A
/// compiler writes 2, 3 or 4 only when a bundle uses what they add, so that
/// older runtimes refuse it by its version rather than by a missing blob, by
/// running without the init or by launching without the maps.
constexpr uint64_t kManifestVersion = 6;

/// A param's recipe in the manifest (docs/bundle-format.md):
/// {"fill": "0x3c00"} (the element's bits) or {"random": "normal", "mean",
/// "std", "seed"} or {"random": "uniform", "low", "high", "seed"}.
nlohmann::json recipeToJson(const ParamRecipe &recipe, DType dtype);

/// Validates `manifest` against the schema (versions 1 to 6); `blobSizes` are
/// the bundle's blobs (name -> size) that params and code refer to. On failure
/// returns false with a one-line `error` naming the JSON pointer.
bool parseModelDesc(const nlohmann::json &manifest,
                    const std::map<std::string, size_t> &blobSizes,
                    ModelDesc &out, std::string &error);

} // namespace tcc::bundle

#endif // TCC_RUNTIME_MANIFEST_H
