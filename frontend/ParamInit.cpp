//===- ParamInit.cpp - parameter initialisers -----------------------------===//
//
// Turns a param's `init` into its bytes: a safetensors tensor, a literal, a
// fill value, or the documented random recipe (docs/model-format.md): one
// SplitMix64 generator per param seeded with `seed`, one draw per element in
// row-major order, computed in f64 and rounded to the dtype. Fills and random
// params also keep their recipe (runtime/src/ParamRecipe.h), which the bundle
// may store instead of the bytes.
//
//===----------------------------------------------------------------------===//
#include "frontend/Importer.h"
#include "runtime/src/ParamRecipe.h"

#include <cstring>
#include <filesystem>

namespace tcc {

namespace {
std::string bytesText(uint64_t n) {
  if (n >= (uint64_t(1) << 30) && n % (uint64_t(1) << 30) == 0)
    return std::to_string(n >> 30) + " GiB";
  if (n >= (uint64_t(1) << 20) && n % (uint64_t(1) << 20) == 0)
    return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}
} // namespace

bool Importer::materialise(const Json &init, const std::string &pointer,
                           const Decl &d, ParamData &out) {
  out.name = d.name;
  out.dtype = d.dtype;
  out.shape = d.shape;
  static const char *kinds[] = {"file", "value", "fill", "random"};
  if (!init.is_object()) {
    diag.error(pointer, "expected an initialiser object ({\"file\": ...}, "
                        "{\"value\": ...}, {\"fill\": ...} or {\"random\": "
                        "...}), got " +
                            jsonTypeName(init));
    return false;
  }
  const char *kind = nullptr;
  for (const char *k : kinds) {
    if (!init.contains(k))
      continue;
    if (kind) {
      diag.error(pointerAppend(pointer, k),
                 std::string("an initialiser has one of \"file\", \"value\", "
                             "\"fill\" and \"random\"; this one also has \"") +
                     kind + "\"");
      return false;
    }
    kind = k;
  }
  if (!kind) {
    std::vector<std::string> all = {"file", "value", "fill", "random"};
    checkKeys(init, pointer, all, "an initialiser", diag);
    diag.error(pointer, "an initialiser needs one of \"file\", \"value\", "
                        "\"fill\" or \"random\"");
    return false;
  }

  std::string k = kind;
  std::vector<std::string> keys;
  if (k == "file")
    keys = {"file", "tensor"};
  else if (k == "value")
    keys = {"value"};
  else if (k == "fill")
    keys = {"fill"};
  else if (init["random"] == "normal")
    keys = {"random", "mean", "std", "seed"};
  else if (init["random"] == "uniform")
    keys = {"random", "low", "high", "seed"};
  else
    keys = {"random", "mean", "std", "low", "high", "seed"};
  if (!checkKeys(init, pointer, keys, ("a \"" + k + "\" initialiser").c_str(),
                 diag))
    return false;

  // Every initialiser materialises numel * size bytes (numel <= 2^40 keeps
  // this product far from overflow).
  uint64_t numel = (uint64_t)numElements(d.shape);
  uint64_t bytes = numel * dtypeSize(d.dtype);
  if (bytes > limits.maxParamBytes ||
      paramBytes + bytes > limits.maxParamBytes) {
    diag.error(d.pointer + "/shape",
               "param \"" + d.name + "\" needs " + std::to_string(bytes) +
                   " bytes, which takes all params over the " +
                   bytesText(limits.maxParamBytes) + " limit");
    return false;
  }

  if (k == "file") {
    if (!readFileInit(init, pointer, d, out))
      return false;
    paramBytes += out.bytes.size();
    return true;
  }

  size_t esize = dtypeSize(d.dtype);
  auto encode = [&](const Scalar &s, uint8_t *dst) {
    if (isFloat(d.dtype))
      encodeScalar(d.dtype, s.f, dst);
    else
      encodeInteger(d.dtype, s.i, dst);
  };

  if (k == "value") {
    const Json &v = init["value"];
    std::string vp = pointer + "/value";
    if (!v.is_array()) {
      diag.error(vp, "expected a flat list of " + std::to_string(numel) +
                         " numbers, got " + jsonTypeName(v));
      return false;
    }
    if (v.size() != numel) {
      diag.error(vp, "shape " + shapeToString(d.shape) + " holds " +
                         std::to_string(numel) + " values, the list has " +
                         std::to_string(v.size()));
      return false;
    }
    out.bytes.resize(bytes);
    for (size_t i = 0; i < numel; ++i) {
      std::optional<Scalar> s =
          readScalar(v[i], d.dtype, pointerAppend(vp, i), diag);
      if (!s)
        return false;
      encode(*s, out.bytes.mutableData() + i * esize);
    }
    paramBytes += bytes;
    return true;
  }

  // Fills and random params keep their recipe (a bundle may store it
  // instead of the bytes); the bytes come from the generator the runtime
  // uses too, so that both give the same ones.
  std::optional<ParamRecipe> r = readRecipe(init, pointer, d.dtype, diag);
  if (!r)
    return false;
  out.recipe = *r;
  if (!limits.deferRecipes)
    out.materialise();
  paramBytes += bytes;
  return true;
}

std::optional<ParamRecipe> readRecipe(const Json &init,
                                      const std::string &pointer, DType dtype,
                                      Diagnostics &diag) {
  if (!init.is_object()) {
    diag.error(pointer, "expected a recipe object ({\"fill\": ...} or "
                        "{\"random\": ...}), got " +
                            jsonTypeName(init));
    return std::nullopt;
  }
  bool fill = init.contains("fill");
  if (fill == init.contains("random")) {
    diag.error(pointer, fill ? "a recipe has one of \"fill\" and \"random\", "
                               "this one has both"
                             : "a recipe needs \"fill\" or \"random\"");
    return std::nullopt;
  }
  std::vector<std::string> keys;
  if (fill)
    keys = {"fill"};
  else if (init["random"] == "normal")
    keys = {"random", "mean", "std", "seed"};
  else if (init["random"] == "uniform")
    keys = {"random", "low", "high", "seed"};
  else
    keys = {"random", "mean", "std", "low", "high", "seed"};
  if (!checkKeys(init, pointer, keys,
                 fill ? "a \"fill\" initialiser" : "a \"random\" initialiser",
                 diag))
    return std::nullopt;

  if (fill) {
    std::optional<Scalar> s =
        readScalar(init["fill"], dtype, pointer + "/fill", diag);
    if (!s)
      return std::nullopt;
    uint8_t one[8] = {};
    if (isFloat(dtype))
      encodeScalar(dtype, s->f, one);
    else
      encodeInteger(dtype, s->i, one);
    ParamRecipe r;
    r.kind = ParamRecipe::Kind::Fill;
    for (size_t i = 0; i < dtypeSize(dtype); ++i)
      r.fillBits |= uint64_t(one[i]) << (8 * i);
    return r;
  }

  std::optional<std::string> dist =
      readString(init["random"], pointer + "/random", diag);
  if (!dist)
    return std::nullopt;
  if (*dist != "normal" && *dist != "uniform") {
    diag.error(pointer + "/random",
               "random must be \"normal\" or \"uniform\", got \"" + *dist +
                   "\"");
    return std::nullopt;
  }
  if (!isFloat(dtype)) {
    diag.error(pointer + "/random", std::string("random initialisers need a "
                                                "float dtype; the param is ") +
                                        dtypeName(dtype));
    return std::nullopt;
  }
  auto number = [&](const char *key, double dflt) -> std::optional<double> {
    if (!init.contains(key))
      return dflt;
    return readNumber(init[key], pointer + "/" + key, diag);
  };
  uint64_t seed = 0;
  if (init.contains("seed")) {
    const Json &s = init["seed"];
    if (s.is_number_unsigned()) {
      seed = s.get<uint64_t>();
    } else {
      diag.error(pointer + "/seed",
                 "seed must be an integer in [0, 2^64), got " +
                     (s.is_number() ? s.dump() : jsonTypeName(s)));
      return std::nullopt;
    }
  }
  bool normal = *dist == "normal";
  std::optional<double> a = number(normal ? "mean" : "low", 0.0);
  std::optional<double> b = number(normal ? "std" : "high", 1.0);
  if (!a || !b)
    return std::nullopt;
  if (normal && *b < 0) {
    diag.error(pointer + "/std", "std must be >= 0");
    return std::nullopt;
  }
  if (!normal && *b < *a) {
    diag.error(pointer + "/high", "high must be >= low");
    return std::nullopt;
  }
  ParamRecipe r;
  r.kind = normal ? ParamRecipe::Kind::Normal : ParamRecipe::Kind::Uniform;
  r.a = *a;
  r.b = *b;
  r.seed = seed;
  return r;
}

bool Importer::readFileInit(const Json &init, const std::string &pointer,
                            const Decl &d, ParamData &out) {
  if (!init.contains("tensor")) {
    diag.error(pointer, "a \"file\" initialiser needs \"tensor\": the name "
                        "of the tensor in the file");
    return false;
  }
  std::optional<std::string> file =
      readString(init["file"], pointer + "/file", diag);
  std::optional<std::string> tensor =
      readString(init["tensor"], pointer + "/tensor", diag);
  if (!file || !tensor)
    return false;
  if (file->empty()) {
    diag.error(pointer + "/file", "empty file name");
    return false;
  }
  namespace fs = std::filesystem;
  fs::path path(*file);
  if (path.is_relative())
    path = fs::path(baseDir) / path;
  std::string key = path.lexically_normal().string();

  // Each file's header is read and checked once per import.
  auto it = files.find(key);
  if (it == files.end()) {
    std::string error;
    std::optional<SafetensorsFile> f = SafetensorsFile::open(key, error);
    it = files.emplace(key, std::move(f)).first;
    if (!it->second)
      fileErrors[key] = error;
  }
  if (!it->second) {
    diag.error(pointer + "/file", *file + ": " + fileErrors[key]);
    return false;
  }
  const SafetensorsFile &f = *it->second;
  const SafetensorsFile::Entry *e = f.find(*tensor);
  if (!e) {
    std::string hint = closestMatch(*tensor, f.names());
    diag.error(pointer + "/tensor",
               "no tensor \"" + *tensor + "\" in " + *file +
                   (hint.empty() ? "" : "; did you mean \"" + hint + "\"?"));
    return false;
  }
  std::optional<DType> t = dtypeFromSafetensors(e->dtype);
  if (!t || *t != d.dtype) {
    diag.error(pointer + "/tensor",
               "tensor \"" + *tensor + "\" in " + *file + " has dtype " +
                   e->dtype + ", the param is declared " + dtypeName(d.dtype) +
                   " (dtypes must match exactly)");
    return false;
  }
  if (e->shape != d.shape) {
    diag.error(pointer + "/tensor",
               "tensor \"" + *tensor + "\" in " + *file + " has shape " +
                   shapeToString(e->shape) + ", the param is declared " +
                   shapeToString(d.shape));
    return false;
  }
  std::string error;
  if (!f.map(*e, out.bytes, error)) {
    diag.error(pointer + "/file", *file + ": " + error);
    return false;
  }
  if (d.dtype == DType::Bool) {
    for (size_t i = 0; i < out.bytes.size(); ++i)
      if (out.bytes[i] > 1) {
        diag.error(pointer + "/tensor", "tensor \"" + *tensor + "\" in " +
                                            *file + " is BOOL but holds byte " +
                                            std::to_string(out.bytes[i]) +
                                            " at element " + std::to_string(i));
        return false;
      }
  }
  return true;
}

} // namespace tcc
