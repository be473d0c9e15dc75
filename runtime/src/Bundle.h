//===- Bundle.h - the tcc bundle file: writer and reader ------*- C++ -*-===//
//
// A bundle is one file holding a compiled model: a fixed header, 64-byte
// aligned blobs (kernel code, weights) and a JSON manifest. The layout is
// specified in docs/bundle-format.md. Reading validates everything (header,
// checksums, blob table and the manifest schema of Manifest.h) before anyone
// sees the contents, so that backends can trust a parsed Bundle.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_BUNDLE_H
#define TCC_RUNTIME_BUNDLE_H

#include "runtime/src/Manifest.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tcc::bundle {

/// The container's constants (docs/bundle-format.md).
constexpr char kMagic[8] = {'T', 'C', 'C', 'B', 'U', 'N', 'D', 'L'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderSize = 64;
constexpr size_t kBlobAlignment = 64;
/// Deeper JSON than this is refused: no compiler writes it, and it keeps
/// recursive consumers of the manifest (dump, inspect) off the stack limit.
constexpr int kMaxManifestDepth = 64;

/// FNV-1a, 64-bit: the checksum of the header, the manifest and every blob.
uint64_t fnv1a64(const uint8_t *data, size_t size);

/// Builds a bundle in memory, or streams it to a file.
class BundleWriter {
public:
  /// Adds a blob and returns the name it is stored under: `name`, or `name`
  /// with a "#N" suffix when that name is already taken.
  std::string addBlob(const std::string &name, std::vector<uint8_t> bytes);
  /// The same without a copy: the `size` bytes at `data` must stay valid
  /// while the writer is used (weights in a mapped file).
  std::string addBlobView(const std::string &name, const uint8_t *data,
                          size_t size);
  /// Sets the manifest. The writer adds the "blobs" table itself (replacing
  /// any) and "format_version" when it is absent.
  void setManifest(nlohmann::json manifest);
  /// The bundle's bytes. Does not validate; writeFile does.
  std::vector<uint8_t> serialize() const;
  /// Serializes, checks the result with Bundle::parse (so the compiler cannot
  /// write a bundle the runtime would refuse) and writes it to `path`.
  bool writeFile(const std::string &path, std::string &error) const;
  /// Writes the bundle serialize() would return to `path` piece by piece,
  /// never holding it whole in memory (weights can be gigabytes). Does not
  /// validate.
  bool streamToFile(const std::string &path, std::string &error) const;

private:
  struct Blob {
    std::string name;
    std::vector<uint8_t> owned;
    const uint8_t *view = nullptr; ///< when not owned
    size_t size = 0;
    const uint8_t *data() const { return view ? view : owned.data(); }
  };
  /// The header, the blobs' offsets and the manifest text of the bundle.
  struct Layout {
    uint8_t header[kHeaderSize];
    std::vector<size_t> offsets;
    size_t manifestOffset;
    std::string manifest;
  };
  Layout layout() const;
  std::string uniqueName(const std::string &name);

  std::vector<Blob> blobs;
  std::map<std::string, size_t> blobIndex;
  nlohmann::json manifestJson = nlohmann::json::object();
};

/// A validated bundle. Owns the file's bytes; blobs point into them.
class Bundle {
public:
  /// Validates the container, the checksums and the manifest schema. On
  /// failure returns nullptr and sets `error` to one line (control
  /// characters of quoted names escaped).
  static std::unique_ptr<Bundle> parse(std::vector<uint8_t> bytes,
                                       std::string &error);
  /// Reads the whole file (a regular file; its size bounds the allocation)
  /// and parses it. Errors name the path.
  static std::unique_ptr<Bundle> readFile(const std::string &path,
                                          std::string &error);
  /// Reads and validates only the header and the manifest (the blob table's
  /// ranges included, not the blobs' checksums), so that inspecting a large
  /// bundle does not read its weights. blob() finds nothing in the result.
  static std::unique_ptr<Bundle> readManifest(const std::string &path,
                                              std::string &error);

  /// The manifest as written, including the "blobs" table.
  const nlohmann::json &manifest() const { return manifestJson; }
  /// The typed, validated view of the manifest.
  const ModelDesc &model() const { return desc; }
  /// The blob's bytes, or {nullptr, 0} when there is no such blob (or the
  /// bundle came from readManifest).
  std::pair<const uint8_t *, size_t> blob(const std::string &name) const;
  /// Size of the whole bundle file.
  uint64_t size() const { return hasBlobs ? bytes.size() : fileSize; }

private:
  Bundle() = default;
  static std::unique_ptr<Bundle> parseBytes(std::vector<uint8_t> bytes,
                                            std::string &error);
  static std::unique_ptr<Bundle> readManifestOf(const std::string &path,
                                                std::string &error);

  std::vector<uint8_t> bytes;
  bool hasBlobs = false; // false: from readManifest, `bytes` is empty
  uint64_t fileSize = 0;
  nlohmann::json manifestJson;
  ModelDesc desc;
  std::map<std::string, std::pair<size_t, size_t>> blobRanges; // offset, size
};

} // namespace tcc::bundle

#endif // TCC_RUNTIME_BUNDLE_H
