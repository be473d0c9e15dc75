//===- Manifest.h - the typed view of a bundle manifest -------*- C++ -*-===//
//
// The manifest schema (version 1) is the contract between the compiler and the
// runtime; docs/bundle-format.md specifies it. parseModelDesc checks every
// field, reference and size, so the backends work from these structs and never
// from raw JSON.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_MANIFEST_H
#define TCC_RUNTIME_MANIFEST_H

#include "runtime/src/DType.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tcc::bundle {

enum class BufferKind { Input, Output, Param, Temp };
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
  std::string blob; ///< Params only: the blob holding the initial bytes.
};

/// A 4-byte i32 buffer that counts run-time errors; non-zero fails the run.
struct StatusDesc {
  size_t buffer = 0; ///< Index into ModelDesc::buffers.
  std::string message;
};

struct KernelDesc {
  std::string name;
  std::string symbol;
  std::string kind;             ///< Informational ("reduce_sum", ...).
  std::vector<std::string> ops; ///< Informational: the tcc ops it fuses.
  size_t code = 0;              ///< Index into ModelDesc::code.
};

/// A code object for one target: a host .so, PTX, a HSACO...
struct CodeDesc {
  std::string target;
  std::string blob;
};

struct LaunchDesc {
  enum class Kind { Kernel, Copy };
  Kind kind = Kind::Kernel;
  // Kernel launches.
  size_t kernel = 0;        ///< Index into ModelDesc::kernels.
  std::vector<size_t> args; ///< Indices into ModelDesc::buffers.
  int64_t grid = 0;         ///< Independent work items, >= 0.
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
};

/// Largest tensor, buffer, arena or copy the manifest may declare (2^48
/// bytes): far above any device, far below where size arithmetic overflows.
constexpr uint64_t kMaxBytes = uint64_t(1) << 48;
constexpr size_t kMaxRank = 32;

/// Validates `manifest` against the version-1 schema; `blobSizes` are the
/// bundle's blobs (name -> size) that params and code refer to. On failure
/// returns false with a one-line `error` naming the JSON pointer.
bool parseModelDesc(const nlohmann::json &manifest,
                    const std::map<std::string, size_t> &blobSizes,
                    ModelDesc &out, std::string &error);

} // namespace tcc::bundle

#endif // TCC_RUNTIME_MANIFEST_H
