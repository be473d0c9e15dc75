//===- Bundle.cpp - the tcc bundle file: writer and validating reader -----===//
#include "runtime/src/Bundle.h"
#include "runtime/src/FileIO.h"
#include "runtime/src/JsonDepth.h"
#include "runtime/src/OneLine.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using nlohmann::json;

namespace tcc::bundle {

uint64_t fnv1a64(const uint8_t *data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

// Header field offsets (docs/bundle-format.md).
constexpr size_t kVersionAt = 8, kFlagsAt = 12, kManifestOffsetAt = 16,
                 kManifestSizeAt = 24, kManifestHashAt = 32, kFileSizeAt = 40,
                 kReservedAt = 48, kHeaderHashAt = 56;

void putLE(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t getLE(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

size_t alignUp(size_t v) {
  return (v + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
}

std::string hex64(uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4)
    s[i] = digits[v & 15];
  return s;
}

bool parseHex64(const std::string &s, uint64_t &out) {
  if (s.size() != 16)
    return false;
  out = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                   : -1;
    if (d < 0)
      return false;
    out = out << 4 | (uint64_t)d;
  }
  return true;
}

std::string str(uint64_t v) { return std::to_string(v); }

} // namespace

//===----------------------------------------------------------------------===//
// BundleWriter
//===----------------------------------------------------------------------===//

std::string BundleWriter::uniqueName(const std::string &name) {
  std::string unique = name;
  for (int n = 2; blobIndex.count(unique); ++n)
    unique = name + "#" + std::to_string(n);
  blobIndex[unique] = blobs.size();
  return unique;
}

std::string BundleWriter::addBlob(const std::string &name,
                                  std::vector<uint8_t> bytes) {
  Blob b;
  b.name = uniqueName(name);
  b.size = bytes.size();
  b.owned = std::move(bytes);
  blobs.push_back(std::move(b));
  return blobs.back().name;
}

std::string BundleWriter::addBlobView(const std::string &name,
                                      const uint8_t *data, size_t size) {
  Blob b;
  b.name = uniqueName(name);
  b.view = data;
  b.size = size;
  blobs.push_back(std::move(b));
  return blobs.back().name;
}

void BundleWriter::setManifest(json manifest) {
  manifestJson = std::move(manifest);
}

BundleWriter::Layout BundleWriter::layout() const {
  json manifest = manifestJson.is_object() ? manifestJson : json::object();
  if (!manifest.contains("format_version"))
    manifest["format_version"] = kFormatVersion;

  // Blobs first, each 64-byte aligned, then the manifest that lists them.
  Layout l;
  json table = json::array();
  size_t end = kHeaderSize;
  for (const Blob &b : blobs) {
    size_t offset = alignUp(end);
    l.offsets.push_back(offset);
    table.push_back({{"name", b.name},
                     {"offset", offset},
                     {"size", b.size},
                     {"fnv1a64", hex64(fnv1a64(b.data(), b.size))}});
    end = offset + b.size;
  }
  manifest["blobs"] = std::move(table);
  // Names come from user models; never let a stray byte throw here.
  l.manifest = manifest.dump(-1, ' ', false, json::error_handler_t::replace);
  l.manifestOffset = alignUp(end);

  uint8_t *h = l.header;
  std::memset(h, 0, kHeaderSize);
  std::memcpy(h, kMagic, sizeof(kMagic));
  putLE(h + kVersionAt, kFormatVersion, 4);
  putLE(h + kFlagsAt, 0, 4);
  putLE(h + kManifestOffsetAt, l.manifestOffset, 8);
  putLE(h + kManifestSizeAt, l.manifest.size(), 8);
  putLE(h + kManifestHashAt,
        fnv1a64((const uint8_t *)l.manifest.data(), l.manifest.size()), 8);
  putLE(h + kFileSizeAt, l.manifestOffset + l.manifest.size(), 8);
  putLE(h + kReservedAt, 0, 8);
  putLE(h + kHeaderHashAt, fnv1a64(h, kHeaderHashAt), 8);
  return l;
}

std::vector<uint8_t> BundleWriter::serialize() const {
  Layout l = layout();
  std::vector<uint8_t> out(l.manifestOffset + l.manifest.size(), 0);
  std::copy(l.header, l.header + kHeaderSize, out.begin());
  for (size_t i = 0; i < blobs.size(); ++i)
    std::copy(blobs[i].data(), blobs[i].data() + blobs[i].size,
              out.begin() + l.offsets[i]);
  std::copy(l.manifest.begin(), l.manifest.end(),
            out.begin() + l.manifestOffset);
  return out;
}

bool BundleWriter::streamToFile(const std::string &path,
                                std::string &error) const {
  Layout l = layout();
  return io::writeFileAtomicallyWith(path, error, [&](int fd) {
    static const uint8_t zeros[kBlobAlignment] = {};
    size_t at = 0;
    auto padTo = [&](size_t offset) {
      bool ok = io::writeAll(fd, zeros, offset - at);
      at = offset;
      return ok;
    };
    if (!io::writeAll(fd, l.header, kHeaderSize))
      return false;
    at = kHeaderSize;
    for (size_t i = 0; i < blobs.size(); ++i) {
      if (!padTo(l.offsets[i]) || !io::writeAll(fd, blobs[i].data(), blobs[i].size))
        return false;
      at += blobs[i].size;
    }
    return padTo(l.manifestOffset) &&
           io::writeAll(fd, (const uint8_t *)l.manifest.data(), l.manifest.size());
  });
}

bool BundleWriter::writeFile(const std::string &path,
                             std::string &error) const {
  std::vector<uint8_t> bytes = serialize();
  std::string why;
  if (!Bundle::parse(bytes, why)) {
    error = "refusing to write an invalid bundle: " + why;
    return false;
  }
  return io::writeFileAtomically(path, bytes.data(), bytes.size(), error);
}

//===----------------------------------------------------------------------===//
// Bundle
//===----------------------------------------------------------------------===//

namespace {

/// What the header says about the file.
struct Header {
  uint64_t manifestOffset = 0, manifestSize = 0, manifestHash = 0;
};

/// Checks the header (`have` bytes at `h`, the first of a `size`-byte file)
/// and the ranges it states, before anything else of the file is read.
bool checkHeader(const uint8_t *h, size_t have, uint64_t size, Header &out,
                 std::string &error) {
  auto fail = [&](const std::string &msg) {
    error = msg;
    return false;
  };
  size_t magicLen = std::min(have, sizeof(kMagic));
  if (magicLen && std::memcmp(h, kMagic, magicLen) != 0)
    return fail("not a tcc bundle (bad magic)");
  if (size < kHeaderSize || have < kHeaderSize)
    return fail("truncated bundle: " + str(size) +
                " bytes, the header alone "
                "has " +
                str(kHeaderSize));
  uint32_t version = (uint32_t)getLE(h + kVersionAt, 4);
  if (version != kFormatVersion)
    return fail("unsupported bundle format version " + str(version) +
                " (this runtime reads version " + str(kFormatVersion) + ")");
  if (getLE(h + kHeaderHashAt, 8) != fnv1a64(h, kHeaderHashAt))
    return fail("corrupted bundle: header checksum mismatch");
  uint32_t flags = (uint32_t)getLE(h + kFlagsAt, 4);
  if (flags != 0 || getLE(h + kReservedAt, 8) != 0)
    return fail("unsupported bundle: unknown flags 0x" + hex64(flags));
  uint64_t fileSize = getLE(h + kFileSizeAt, 8);
  if (size < fileSize)
    return fail("truncated bundle: " + str(size) + " bytes, the header says " +
                str(fileSize));
  if (size > fileSize)
    return fail("corrupted bundle: " + str(size - fileSize) +
                " unexpected bytes after the declared end at " + str(fileSize));

  // The manifest ends the file.
  uint64_t mOffset = getLE(h + kManifestOffsetAt, 8);
  uint64_t mSize = getLE(h + kManifestSizeAt, 8);
  if (mOffset < kHeaderSize || mOffset % kBlobAlignment != 0 ||
      mOffset > size || mSize != size - mOffset)
    return fail("corrupted bundle: manifest range (offset " + str(mOffset) +
                ", " + str(mSize) + " bytes) does not end the " + str(size) +
                "-byte file");
  out.manifestOffset = mOffset;
  out.manifestSize = mSize;
  out.manifestHash = getLE(h + kManifestHashAt, 8);
  return true;
}

/// One entry of the blob table.
struct Range {
  uint64_t offset, size, hash;
  std::string name;
};

/// Checks the manifest text (its checksum, JSON, and the blob table against
/// the blob area [64, manifestOffset)) without looking at the blobs; the
/// table comes back sorted by offset.
bool checkManifest(const uint8_t *text, const Header &header,
                   nlohmann::json &manifest, std::vector<Range> &ranges,
                   std::map<std::string, size_t> &blobSizes,
                   std::string &error) {
  auto fail = [&](const std::string &msg) {
    error = msg;
    return false;
  };
  const uint64_t mOffset = header.manifestOffset, mSize = header.manifestSize;
  if (header.manifestHash != fnv1a64(text, mSize))
    return fail("corrupted bundle: manifest checksum mismatch");
  if (findNestingBeyond(std::string_view((const char *)text, mSize),
                        kMaxManifestDepth) != std::string_view::npos)
    return fail("invalid bundle: manifest nests deeper than " +
                str(kMaxManifestDepth) + " levels");
  manifest = json::parse(text, text + mSize, nullptr,
                         /*allow_exceptions=*/false);
  if (manifest.is_discarded())
    return fail("invalid bundle: manifest is not valid JSON");
  if (!manifest.is_object())
    return fail("invalid bundle: manifest: /: expected an object");

  // The blob table: aligned, inside [header, manifest), no overlaps.
  auto bad = [&](const std::string &ptr, const std::string &msg) {
    return fail("invalid bundle: manifest: " + ptr + ": " + msg);
  };
  auto table = manifest.find("blobs");
  if (table == manifest.end())
    return bad("/", "missing field \"blobs\"");
  if (!table->is_array())
    return bad("/blobs", "expected an array");
  for (size_t i = 0; i < table->size(); ++i) {
    std::string ptr = "/blobs/" + str(i);
    const json &e = (*table)[i];
    if (!e.is_object())
      return bad(ptr, "expected an object");
    for (const char *key : {"name", "offset", "size", "fnv1a64"})
      if (!e.contains(key))
        return bad(ptr, std::string("missing field \"") + key + "\"");
    if (!e["name"].is_string() || e["name"].get<std::string>().empty())
      return bad(ptr + "/name", "expected a non-empty string");
    for (const char *key : {"offset", "size"})
      if (!e[key].is_number_unsigned())
        return bad(ptr + "/" + key, "expected a non-negative integer");
    uint64_t hash;
    if (!e["fnv1a64"].is_string() ||
        !parseHex64(e["fnv1a64"].get<std::string>(), hash))
      return bad(ptr + "/fnv1a64", "expected 16 lowercase hex digits");
    Range r{e["offset"].get<uint64_t>(), e["size"].get<uint64_t>(), hash,
            e["name"].get<std::string>()};
    if (r.offset % kBlobAlignment != 0)
      return bad(ptr + "/offset",
                 "blob offset " + str(r.offset) + " is not a multiple of 64");
    // Written as two comparisons so that huge values cannot wrap around.
    if (r.offset < kHeaderSize || r.offset > mOffset ||
        r.size > mOffset - r.offset)
      return bad(ptr, "blob \"" + r.name + "\" (offset " + str(r.offset) +
                          ", " + str(r.size) +
                          " bytes) lies outside the blob area [64, " +
                          str(mOffset) + ")");
    if (!blobSizes.emplace(r.name, (size_t)r.size).second)
      return bad(ptr + "/name", "duplicate blob name \"" + r.name + "\"");
    ranges.push_back(std::move(r));
  }
  // An empty blob (a param with no elements) shares its offset with the
  // blob after it: empty ones first, so that only real overlaps count.
  std::sort(ranges.begin(), ranges.end(), [](const Range &a, const Range &b) {
    return a.offset != b.offset ? a.offset < b.offset : a.size < b.size;
  });
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].offset < ranges[i - 1].offset + ranges[i - 1].size)
      return fail("invalid bundle: blobs \"" + ranges[i - 1].name +
                  "\" and \"" + ranges[i].name + "\" overlap");
  return true;
}

} // namespace

std::unique_ptr<Bundle> Bundle::parse(std::vector<uint8_t> bytes,
                                      std::string &error) {
  auto b = parseBytes(std::move(bytes), error);
  if (!b)
    error = oneLine(error);
  return b;
}

std::unique_ptr<Bundle> Bundle::parseBytes(std::vector<uint8_t> bytes,
                                           std::string &error) {
  const size_t size = bytes.size();
  const uint8_t *p = bytes.data();
  auto fail = [&](const std::string &msg) {
    error = msg;
    return nullptr;
  };
  Header header;
  json manifest;
  std::vector<Range> ranges;
  std::map<std::string, size_t> blobSizes;
  if (!checkHeader(p, std::min(size, kHeaderSize), size, header, error) ||
      !checkManifest(p + header.manifestOffset, header, manifest, ranges,
                     blobSizes, error))
    return nullptr;
  // Every blob's checksum; padding must be zero: with the checksums, every
  // byte is then checked.
  uint64_t pos = kHeaderSize;
  for (size_t i = 0; i <= ranges.size(); ++i) {
    uint64_t next =
        i < ranges.size() ? ranges[i].offset : header.manifestOffset;
    for (uint64_t j = pos; j < next; ++j)
      if (p[j] != 0)
        return fail("corrupted bundle: non-zero padding at byte " + str(j));
    if (i == ranges.size())
      break;
    const Range &r = ranges[i];
    if (fnv1a64(p + r.offset, r.size) != r.hash)
      return fail("corrupted bundle: blob \"" + r.name +
                  "\" checksum mismatch");
    pos = r.offset + r.size;
  }

  std::unique_ptr<Bundle> b(new Bundle());
  std::string why;
  if (!parseModelDesc(manifest, blobSizes, b->desc, why))
    return fail("invalid bundle: " + why);
  for (const Range &r : ranges)
    b->blobRanges[r.name] = {r.offset, r.size};
  b->manifestJson = std::move(manifest);
  b->bytes = std::move(bytes);
  b->hasBlobs = true;
  error.clear();
  return b;
}

std::unique_ptr<Bundle> Bundle::readFile(const std::string &path,
                                         std::string &error) {
  std::vector<uint8_t> bytes;
  if (!io::readRegularFile(path, bytes, error))
    return nullptr;
  std::string why;
  auto b = parse(std::move(bytes), why);
  if (!b)
    error = path + ": " + why;
  return b;
}

std::unique_ptr<Bundle> Bundle::readManifest(const std::string &path,
                                             std::string &error) {
  auto b = readManifestOf(path, error);
  if (!b)
    error = oneLine(error);
  return b;
}

std::unique_ptr<Bundle> Bundle::readManifestOf(const std::string &path,
                                               std::string &error) {
  uint64_t size;
  int fd = io::openRegularFile(path, size, error);
  if (fd < 0)
    return nullptr;
  auto fail = [&](const std::string &msg) {
    ::close(fd);
    error = path + ": " + msg;
    return nullptr;
  };
  uint8_t h[kHeaderSize];
  size_t have = (size_t)std::min<uint64_t>(size, kHeaderSize);
  Header header;
  std::string why;
  if (!io::readAt(fd, 0, h, have, path, error)) {
    ::close(fd);
    return nullptr;
  }
  if (!checkHeader(h, have, size, header, why))
    return fail(why);
  // The manifest is bounded by the file's size, which the header matched.
  std::vector<uint8_t> text((size_t)header.manifestSize);
  if (!io::readAt(fd, header.manifestOffset, text.data(), text.size(), path,
                  error)) {
    ::close(fd);
    return nullptr;
  }
  ::close(fd);
  json manifest;
  std::vector<Range> ranges;
  std::map<std::string, size_t> blobSizes;
  if (!checkManifest(text.data(), header, manifest, ranges, blobSizes, why))
    return fail(why);
  std::unique_ptr<Bundle> b(new Bundle());
  if (!parseModelDesc(manifest, blobSizes, b->desc, why))
    return fail("invalid bundle: " + why);
  b->manifestJson = std::move(manifest);
  b->fileSize = size;
  error.clear();
  return b;
}

std::pair<const uint8_t *, size_t> Bundle::blob(const std::string &name) const {
  auto it = blobRanges.find(name);
  if (!hasBlobs || it == blobRanges.end())
    return {nullptr, 0};
  return {bytes.data() + it->second.first, it->second.second};
}

} // namespace tcc::bundle
