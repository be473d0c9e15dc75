//===- Safetensors.cpp - checked reading of safetensors files -------------===//
#include "frontend/Safetensors.h"
#include "frontend/Json.h"

#include "llvm/Support/MemoryBuffer.h"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace tcc {

namespace {

struct StDType {
  const char *name;
  unsigned size;
  std::optional<DType> dtype;
};

// Every dtype of the safetensors format with a fixed byte size; the ones
// the model format lacks can sit in a file as long as no param reads them.
const StDType kStDTypes[] = {
    {"F64", 8, DType::F64},        {"F32", 4, DType::F32},
    {"F16", 2, DType::F16},        {"BF16", 2, DType::BF16},
    {"F8_E4M3", 1, DType::F8E4M3}, {"F8_E5M2", 1, DType::F8E5M2},
    {"I8", 1, DType::I8},          {"I32", 4, DType::I32},
    {"I64", 8, DType::I64},        {"BOOL", 1, DType::Bool},
    {"U8", 1, std::nullopt},       {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt},      {"U32", 4, std::nullopt},
    {"U64", 8, std::nullopt},
};

const StDType *lookupStDType(const std::string &name) {
  for (const StDType &d : kStDTypes)
    if (name == d.name)
      return &d;
  return nullptr;
}

uint64_t readLE64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

/// Reads one header entry; returns "" or the problem.
std::string checkEntry(const Json &v, const std::string &ptr, uint64_t dataSize,
                       SafetensorsFile::Entry &e) {
  if (!v.is_object())
    return ptr + ": expected an object, got " + jsonTypeName(v);
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it.key() != "dtype" && it.key() != "shape" &&
        it.key() != "data_offsets")
      return pointerAppend(ptr, it.key()) + ": unknown key";
  for (const char *k : {"dtype", "shape", "data_offsets"})
    if (!v.contains(k))
      return ptr + ": missing \"" + k + "\"";
  const Json &dt = v["dtype"], &shape = v["shape"], &offs = v["data_offsets"];
  if (!dt.is_string())
    return ptr + "/dtype: expected a string";
  e.dtype = dt.get<std::string>();
  if (!shape.is_array() || shape.size() > 64)
    return ptr + "/shape: expected a list of at most 64 sizes";
  // Element count in 128 bits: a lying shape must not wrap around to a
  // count that happens to match the byte range.
  unsigned __int128 numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].is_number_unsigned() && !shape[i].is_number_integer())
      return pointerAppend(ptr + "/shape", i) + ": expected an integer";
    if (shape[i].is_number_integer() && !shape[i].is_number_unsigned() &&
        shape[i].get<int64_t>() < 0)
      return pointerAppend(ptr + "/shape", i) + ": negative size";
    uint64_t d = shape[i].get<uint64_t>();
    if (d > (uint64_t)INT64_MAX)
      return pointerAppend(ptr + "/shape", i) + ": size out of range";
    e.shape.push_back((int64_t)d);
    numel *= d;
    if (numel > (unsigned __int128)dataSize && numel != 0) {
      // Cannot fit in the data section: the size check below fails, but
      // keep the product bounded so it cannot overflow 128 bits.
      numel = (unsigned __int128)dataSize + 1;
    }
  }
  if (!offs.is_array() || offs.size() != 2 || !offs[0].is_number_unsigned() ||
      !offs[1].is_number_unsigned())
    return ptr + "/data_offsets: expected [begin, end] as two non-negative "
                 "integers";
  e.begin = offs[0].get<uint64_t>();
  e.end = offs[1].get<uint64_t>();
  if (e.begin > e.end || e.end > dataSize)
    return ptr + "/data_offsets: [" + std::to_string(e.begin) + ", " +
           std::to_string(e.end) + "] is not within the " +
           std::to_string(dataSize) + "-byte data section";
  if (const StDType *d = lookupStDType(e.dtype)) {
    unsigned __int128 want = numel * d->size;
    if (want != (unsigned __int128)(e.end - e.begin))
      return ptr + ": data_offsets span " + std::to_string(e.end - e.begin) +
             " bytes, but a " + e.dtype + " tensor of this shape needs " +
             (numel > dataSize ? std::string("more than the data section")
                               : std::to_string((uint64_t)want));
  }
  return "";
}

} // namespace

std::optional<DType> dtypeFromSafetensors(const std::string &name) {
  const StDType *d = lookupStDType(name);
  return d ? d->dtype : std::nullopt;
}

std::optional<SafetensorsFile> SafetensorsFile::open(const std::string &path,
                                                     std::string &error) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    error = std::filesystem::exists(path, ec) ? "not a regular file"
                                              : "no such file";
    return std::nullopt;
  }
  uint64_t fileSize = std::filesystem::file_size(path, ec);
  if (ec) {
    error = "cannot read: " + ec.message();
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open for reading";
    return std::nullopt;
  }
  if (fileSize < 8) {
    error = "only " + std::to_string(fileSize) +
            " bytes: too short for a safetensors header";
    return std::nullopt;
  }
  unsigned char sizeBytes[8];
  if (!in.read((char *)sizeBytes, 8)) {
    error = "cannot read the header size";
    return std::nullopt;
  }
  uint64_t n = readLE64(sizeBytes);
  if (n > fileSize - 8 || n > kMaxSafetensorsHeader) {
    error =
        "header size " + std::to_string(n) + " exceeds " +
        (n > fileSize - 8 ? "the file (" + std::to_string(fileSize) + " bytes)"
                          : "the 100 MiB limit");
    return std::nullopt;
  }
  std::string header(n, '\0');
  if (n && !in.read(header.data(), (std::streamsize)n)) {
    error = "cannot read the header";
    return std::nullopt;
  }

  std::vector<std::string> msgs;
  Diagnostics diag("header", msgs, 1);
  std::optional<Json> root = parseJson(header, diag);
  if (!root) {
    error = msgs.empty() ? "header is not valid JSON" : msgs[0];
    return std::nullopt;
  }
  if (!root->is_object()) {
    error = "header: expected a JSON object, got " + jsonTypeName(*root);
    return std::nullopt;
  }

  SafetensorsFile f;
  f.path = path;
  f.dataStart = 8 + n;
  uint64_t dataSize = fileSize - 8 - n;
  for (auto it = root->begin(); it != root->end(); ++it) {
    std::string ptr = pointerAppend("", it.key());
    if (it.key() == "__metadata__") {
      if (!it->is_object()) {
        error = "header: " + ptr + ": expected an object";
        return std::nullopt;
      }
      for (auto m = it->begin(); m != it->end(); ++m)
        if (!m->is_string()) {
          error = "header: " + pointerAppend(ptr, m.key()) +
                  ": metadata values must be strings";
          return std::nullopt;
        }
      continue;
    }
    Entry e;
    std::string problem = checkEntry(*it, ptr, dataSize, e);
    if (!problem.empty()) {
      error = "header: " + problem;
      return std::nullopt;
    }
    f.entries.emplace(it.key(), std::move(e));
  }
  return f;
}

const SafetensorsFile::Entry *
SafetensorsFile::find(const std::string &name) const {
  auto it = entries.find(name);
  return it == entries.end() ? nullptr : &it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto &e : entries)
    out.push_back(e.first);
  return out;
}

bool SafetensorsFile::map(const Entry &entry, ParamBytes &out,
                          std::string &error) const {
  if (!mapping) {
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf) {
      error = "cannot read: " + buf.getError().message();
      return false;
    }
    mappedStart = (const uint8_t *)(*buf)->getBufferStart();
    mappedSize = (*buf)->getBufferSize();
    mapping = std::shared_ptr<const llvm::MemoryBuffer>(std::move(*buf));
  }
  uint64_t size = entry.end - entry.begin;
  if (dataStart + entry.end > mappedSize) {
    // The file shrank since its header was checked.
    error = "cannot read " + std::to_string(size) + " bytes of tensor data";
    return false;
  }
  out.setView(mapping, mappedStart + dataStart + entry.begin, size);
  return true;
}

} // namespace tcc
