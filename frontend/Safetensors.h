//===- Safetensors.h - checked reading of safetensors files -------*- C++
//-*-===//
//
// A safetensors file is an 8-byte little-endian header size N, N bytes of
// JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__":
// {...}}, then the data section. Nothing in the header is trusted: sizes,
// offsets, dtypes and shapes are all checked against the file before a byte
// of data is read, and only the tensors asked for are read.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTEND_SAFETENSORS_H
#define TCC_FRONTEND_SAFETENSORS_H

#include "frontend/ParamBytes.h"
#include "runtime/src/DType.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tcc {

/// Largest header accepted (the reference implementation's limit too).
constexpr uint64_t kMaxSafetensorsHeader = uint64_t(100) << 20;

/// The model-format dtype of a safetensors dtype name ("F32" -> f32), or
/// nullopt for names the format has no dtype for.
std::optional<DType> dtypeFromSafetensors(const std::string &name);

class SafetensorsFile {
public:
  struct Entry {
    std::string dtype; ///< As the file spells it ("F32", "BF16", ...).
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0; ///< Offsets into the data section.
  };

  /// Opens `path` and checks its whole header. On failure returns nullopt
  /// and a one-line reason in `error`.
  static std::optional<SafetensorsFile> open(const std::string &path,
                                             std::string &error);

  /// The entry named `name`, or null.
  const Entry *find(const std::string &name) const;
  /// Tensor names, sorted (for "did you mean" messages).
  std::vector<std::string> names() const;

  /// An entry's bytes (exactly end - begin of them) as a view of the file,
  /// mapped on first use: gigabytes of weights are not copied.
  bool map(const Entry &entry, ParamBytes &out, std::string &error) const;

private:
  std::string path;
  /// The whole file (llvm::MemoryBuffer), once mapped.
  mutable std::shared_ptr<const void> mapping;
  mutable const uint8_t *mappedStart = nullptr;
  mutable uint64_t mappedSize = 0;
  uint64_t dataStart = 0;
  std::map<std::string, Entry> entries;
};

} // namespace tcc

#endif // TCC_FRONTEND_SAFETENSORS_H
