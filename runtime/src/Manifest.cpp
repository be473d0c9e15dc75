//===- Manifest.cpp - validating the manifest schema ----------------------===//
#include "runtime/src/Manifest.h"

#include <cctype>
#include <set>
#include <tuple>
#include <unordered_map>

using nlohmann::json;

namespace tcc::bundle {

std::optional<TargetKind> targetKind(const std::string &target) {
  auto digitsFrom = [&](size_t start, size_t end) {
    if (end <= start)
      return false;
    for (size_t i = start; i < end; ++i)
      if (!std::isdigit((unsigned char)target[i]))
        return false;
    return true;
  };
  if (target == "host")
    return TargetKind::Host;
  if (target.rfind("sm_", 0) == 0) {
    size_t end = target.size();
    if (end > 3 && (target.back() == 'a' || target.back() == 'f'))
      --end;
    if (digitsFrom(3, end))
      return TargetKind::Cuda;
    return std::nullopt;
  }
  if (target.rfind("gfx", 0) == 0 && target.size() > 3) {
    // gfx942, gfx90a, gfx1100: a digit first, then digits or letters.
    if (!std::isdigit((unsigned char)target[3]))
      return std::nullopt;
    for (size_t i = 4; i < target.size(); ++i)
      if (!std::isalnum((unsigned char)target[i]))
        return std::nullopt;
    return TargetKind::Hip;
  }
  return std::nullopt;
}

bool hipArchMatches(const std::string &deviceArch, const std::string &target) {
  return targetKind(target) == TargetKind::Hip &&
         deviceArch.substr(0, deviceArch.find(':')) == target;
}

const char *bufferKindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Input:
    return "input";
  case BufferKind::Output:
    return "output";
  case BufferKind::Param:
    return "param";
  case BufferKind::Temp:
    return "temp";
  case BufferKind::Derived:
    return "derived";
  }
  return "?";
}

const char *swizzleName(TensorMapSwizzle swizzle) {
  switch (swizzle) {
  case TensorMapSwizzle::None:
    return "none";
  case TensorMapSwizzle::B32:
    return "32B";
  case TensorMapSwizzle::B64:
    return "64B";
  case TensorMapSwizzle::B128:
    return "128B";
  }
  return "?";
}

json recipeToJson(const ParamRecipe &recipe, DType dtype) {
  if (recipe.kind == ParamRecipe::Kind::Fill) {
    static const char digits[] = "0123456789abcdef";
    std::string bits = "0x";
    for (size_t i = 2 * dtypeSize(dtype); i-- > 0;)
      bits += digits[(recipe.fillBits >> (4 * i)) & 15];
    return {{"fill", bits}};
  }
  bool normal = recipe.kind == ParamRecipe::Kind::Normal;
  // JSON numbers: nlohmann writes the shortest text that reads back as the
  // same double.
  return {{"random", normal ? "normal" : "uniform"},
          {normal ? "mean" : "low", recipe.a},
          {normal ? "std" : "high", recipe.b},
          {"seed", recipe.seed}};
}

namespace {

/// Field access that records the first problem as "manifest: POINTER: what".
/// Every getter returns false once an error is set, so callers chain them
/// with && and stop at the first failure.
class Reader {
public:
  explicit Reader(std::string &error) : error(error) {}

  bool fail(const std::string &ptr, const std::string &msg) {
    if (error.empty())
      error =
          "manifest: " + (ptr.empty() ? std::string("/") : ptr) + ": " + msg;
    return false;
  }

  /// The member `key` of object `obj` (at `ptr`), or nullptr (an error
  /// unless `optional`).
  const json *member(const json &obj, const std::string &ptr, const char *key,
                     bool optional = false) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (!optional)
        fail(ptr, std::string("missing field \"") + key + "\"");
      return nullptr;
    }
    return &*it;
  }

  bool object(const json &v, const std::string &ptr) {
    return v.is_object() || fail(ptr, "expected an object");
  }

  bool array(const json &obj, const std::string &ptr, const char *key,
             const json *&out, bool optional = false) {
    out = member(obj, ptr, key, optional);
    if (!out)
      return error.empty();
    return out->is_array() || fail(ptr + "/" + key, "expected an array");
  }

  bool string(const json &obj, const std::string &ptr, const char *key,
              std::string &out, bool optional = false, bool nonEmpty = false) {
    const json *v = member(obj, ptr, key, optional);
    if (!v)
      return error.empty();
    if (!v->is_string())
      return fail(ptr + "/" + key, "expected a string");
    out = v->get<std::string>();
    if (nonEmpty && out.empty())
      return fail(ptr + "/" + key, "must not be empty");
    return true;
  }

  /// A non-negative integer no larger than `max`.
  bool unsignedInt(const json &v, const std::string &ptr, uint64_t max,
                   uint64_t &out) {
    if (!v.is_number_integer())
      return fail(ptr, "expected a non-negative integer");
    if (v.is_number_unsigned()) {
      out = v.get<uint64_t>();
    } else {
      int64_t s = v.get<int64_t>();
      if (s < 0)
        return fail(ptr, "expected a non-negative integer, got " +
                             std::to_string(s));
      out = (uint64_t)s;
    }
    if (out > max)
      return fail(ptr, std::to_string(out) + " is too large (limit " +
                           std::to_string(max) + ")");
    return true;
  }

  bool unsignedField(const json &obj, const std::string &ptr, const char *key,
                     uint64_t max, uint64_t &out) {
    const json *v = member(obj, ptr, key);
    return v && unsignedInt(*v, ptr + "/" + key, max, out);
  }

private:
  std::string &error;
};

class Validator {
public:
  Validator(const json &root, const std::map<std::string, size_t> &blobSizes,
            ModelDesc &desc, std::string &error)
      : root(root), blobSizes(blobSizes), desc(desc), r(error) {}

  bool run() {
    return r.object(root, "") && header() && buffers() &&
           tensors("inputs", BufferKind::Input, desc.inputs) &&
           tensors("outputs", BufferKind::Output, desc.outputs) &&
           tensors("params", BufferKind::Param, desc.params) &&
           everyUserBufferUsed() && status() && code() && kernels() &&
           launches() && initLaunches();
  }

private:
  bool header() {
    uint64_t version;
    if (!r.unsignedField(root, "", "format_version", UINT32_MAX, version))
      return false;
    if (version < 1 || version > kManifestVersion)
      return r.fail("/format_version",
                    "unsupported manifest version " + std::to_string(version) +
                        " (this runtime reads versions 1 to " +
                        std::to_string(kManifestVersion) + ")");
    manifestVersion = version;
    const json *targets;
    if (!r.string(root, "", "model", desc.model) ||
        !r.array(root, "", "targets", targets))
      return false;
    for (size_t i = 0; i < targets->size(); ++i) {
      const json &t = (*targets)[i];
      if (!t.is_string() || t.get<std::string>().empty())
        return r.fail("/targets/" + std::to_string(i),
                      "expected a non-empty string");
      desc.targets.push_back(t.get<std::string>());
    }
    return r.unsignedField(root, "", "arena_bytes", kMaxBytes, desc.arenaBytes);
  }

  bool buffers() {
    const json *list;
    if (!r.array(root, "", "buffers", list))
      return false;
    for (size_t i = 0; i < list->size(); ++i) {
      std::string ptr = "/buffers/" + std::to_string(i);
      const json &b = (*list)[i];
      BufferDesc d;
      uint64_t id;
      std::string kind;
      if (!r.object(b, ptr) || !r.unsignedField(b, ptr, "id", UINT32_MAX, id) ||
          !r.string(b, ptr, "kind", kind) ||
          !r.unsignedField(b, ptr, "bytes", kMaxBytes, d.bytes))
        return false;
      d.id = (uint32_t)id;
      if (kind == "input")
        d.kind = BufferKind::Input;
      else if (kind == "output")
        d.kind = BufferKind::Output;
      else if (kind == "param")
        d.kind = BufferKind::Param;
      else if (kind == "temp")
        d.kind = BufferKind::Temp;
      else if (kind == "derived" && manifestVersion >= 3)
        d.kind = BufferKind::Derived;
      else
        return r.fail(
            ptr + "/kind",
            "unknown buffer kind \"" + kind +
                "\" (expected input, output, param" +
                (manifestVersion >= 3 ? ", temp or derived)" : " or temp)"));
      const json *offset = r.member(b, ptr, "offset", /*optional=*/true);
      if (d.kind == BufferKind::Temp) {
        if (!offset)
          return r.fail(ptr, "missing field \"offset\" (temps live in the "
                             "arena)");
        if (!r.unsignedInt(*offset, ptr + "/offset", kMaxBytes, d.offset))
          return false;
        if (d.offset % 64 != 0)
          return r.fail(ptr + "/offset", "arena offset " +
                                             std::to_string(d.offset) +
                                             " is not a multiple of 64");
        // Both terms are below 2^48: the sum cannot overflow.
        if (d.offset + d.bytes > desc.arenaBytes)
          return r.fail(ptr, "temp at offset " + std::to_string(d.offset) +
                                 " with " + std::to_string(d.bytes) +
                                 " bytes ends past arena_bytes " +
                                 std::to_string(desc.arenaBytes));
      } else if (offset) {
        return r.fail(ptr + "/offset", "only temp buffers have an offset");
      }
      if (!idToIndex.emplace(d.id, desc.buffers.size()).second)
        return r.fail(ptr + "/id", "duplicate buffer id " + std::to_string(id));
      desc.buffers.push_back(d);
    }
    users.assign(desc.buffers.size(), 0);
    return true;
  }

  /// Resolves the buffer id at `v` to an index into desc.buffers.
  bool bufferRef(const json &v, const std::string &ptr, size_t &index) {
    uint64_t id;
    if (!r.unsignedInt(v, ptr, UINT32_MAX, id))
      return false;
    auto it = idToIndex.find((uint32_t)id);
    if (it == idToIndex.end())
      return r.fail(ptr, "buffer id " + std::to_string(id) +
                             " is not in the buffer table");
    index = it->second;
    return true;
  }

  /// Element count times dtype size, refusing overflow and absurd sizes.
  bool tensorBytes(const TensorDesc &t, const std::string &ptr,
                   uint64_t &bytes) {
    uint64_t n = dtypeSize(t.dtype);
    for (int64_t d : t.shape) {
      if (d != 0 && n > kMaxBytes / (uint64_t)d)
        return r.fail(ptr, "tensor is larger than the limit of " +
                               std::to_string(kMaxBytes) + " bytes");
      n *= (uint64_t)d;
    }
    bytes = n;
    return true;
  }

  bool tensors(const char *key, BufferKind kind, std::vector<TensorDesc> &out) {
    const json *list;
    if (!r.array(root, "", key, list))
      return false;
    std::set<std::string> names;
    for (size_t i = 0; i < list->size(); ++i) {
      std::string ptr = std::string("/") + key + "/" + std::to_string(i);
      const json &e = (*list)[i];
      TensorDesc t;
      std::string dtype;
      const json *shape, *buffer;
      if (!r.object(e, ptr) || !r.string(e, ptr, "name", t.name, false, true) ||
          !r.string(e, ptr, "dtype", dtype) ||
          !r.array(e, ptr, "shape", shape) ||
          !(buffer = r.member(e, ptr, "buffer")))
        return false;
      // Outputs may repeat a name: the model format lets a tensor be listed
      // twice. Inputs and params are declarations and must be unique.
      if (kind != BufferKind::Output && !names.insert(t.name).second)
        return r.fail(ptr + "/name", "duplicate name \"" + t.name + "\"");
      auto dt = parseDType(dtype);
      if (!dt)
        return r.fail(ptr + "/dtype", "unknown dtype \"" + dtype + "\"");
      t.dtype = *dt;
      if (shape->size() > kMaxRank)
        return r.fail(ptr + "/shape", "rank " + std::to_string(shape->size()) +
                                          " exceeds the limit of " +
                                          std::to_string(kMaxRank));
      for (size_t d = 0; d < shape->size(); ++d) {
        uint64_t dim;
        if (!r.unsignedInt((*shape)[d], ptr + "/shape/" + std::to_string(d),
                           kMaxBytes, dim))
          return false;
        t.shape.push_back((int64_t)dim);
      }
      if (!tensorBytes(t, ptr + "/shape", t.bytes) ||
          !bufferRef(*buffer, ptr + "/buffer", t.buffer))
        return false;
      const BufferDesc &b = desc.buffers[t.buffer];
      if (b.kind != kind)
        return r.fail(ptr + "/buffer", "buffer " + std::to_string(b.id) +
                                           " is a " + bufferKindName(b.kind) +
                                           " buffer, expected " +
                                           bufferKindName(kind));
      if (b.bytes != t.bytes)
        return r.fail(ptr + "/buffer", "buffer " + std::to_string(b.id) +
                                           " has " + std::to_string(b.bytes) +
                                           " bytes but the tensor " + "needs " +
                                           std::to_string(t.bytes));
      if (users[t.buffer]++)
        return r.fail(ptr + "/buffer", "buffer " + std::to_string(b.id) +
                                           " is already used by another " +
                                           bufferKindName(kind));
      // Version 1 has no recipes: an "init" there is an unknown key.
      const json *init = manifestVersion >= 2
                             ? r.member(e, ptr, "init", /*optional=*/true)
                             : nullptr;
      if (kind == BufferKind::Param && init) {
        if (r.member(e, ptr, "blob", /*optional=*/true))
          return r.fail(ptr, "a param has \"blob\" or \"init\", not both");
        ParamRecipe recipe;
        if (!readRecipe(*init, ptr + "/init", t.dtype, recipe))
          return false;
        t.recipe = recipe;
      } else if (kind == BufferKind::Param) {
        if (!r.string(e, ptr, "blob", t.blob))
          return false;
        auto it = blobSizes.find(t.blob);
        if (it == blobSizes.end())
          return r.fail(ptr + "/blob", "no blob named \"" + t.blob + "\"");
        if (it->second != t.bytes)
          return r.fail(ptr + "/blob", "blob \"" + t.blob + "\" has " +
                                           std::to_string(it->second) +
                                           " bytes, the param " + "needs " +
                                           std::to_string(t.bytes));
      }
      out.push_back(std::move(t));
    }
    return true;
  }

  /// A param's recipe (docs/bundle-format.md). Every field is required: the
  /// model format's defaults are the compiler's business.
  bool readRecipe(const json &v, const std::string &ptr, DType dtype,
                  ParamRecipe &out) {
    if (!r.object(v, ptr))
      return false;
    bool fill = v.contains("fill"), random = v.contains("random");
    if (fill && random)
      return r.fail(ptr, "a recipe has \"fill\" or \"random\", not both");
    if (!fill && !random)
      return r.fail(ptr, "unknown param recipe (this runtime knows "
                         "{\"fill\": ...} and {\"random\": \"normal\" or "
                         "\"uniform\", ...})");
    if (fill) {
      std::string bits;
      if (!r.string(v, ptr, "fill", bits))
        return false;
      size_t digits = 2 * dtypeSize(dtype);
      bool hex = bits.size() == 2 + digits && bits.compare(0, 2, "0x") == 0;
      for (size_t i = 2; hex && i < bits.size(); ++i)
        hex = std::isxdigit((unsigned char)bits[i]);
      if (!hex)
        return r.fail(ptr + "/fill", "expected the element's bits as \"0x\" "
                                     "and " +
                                         std::to_string(digits) +
                                         " hex digits for " + dtypeName(dtype));
      out.kind = ParamRecipe::Kind::Fill;
      out.fillBits = std::stoull(bits.substr(2), nullptr, 16);
    } else {
      std::string dist;
      if (!r.string(v, ptr, "random", dist))
        return false;
      if (dist != "normal" && dist != "uniform")
        return r.fail(ptr + "/random",
                      "unknown random distribution \"" + dist +
                          "\" (this runtime knows normal and uniform)");
      bool normal = dist == "normal";
      out.kind =
          normal ? ParamRecipe::Kind::Normal : ParamRecipe::Kind::Uniform;
      const char *keys[2] = {normal ? "mean" : "low", normal ? "std" : "high"};
      double *vals[2] = {&out.a, &out.b};
      for (int i = 0; i < 2; ++i) {
        const json *x = r.member(v, ptr, keys[i]);
        if (!x)
          return false;
        if (!x->is_number())
          return r.fail(ptr + "/" + keys[i], "expected a number");
        *vals[i] = x->get<double>();
      }
      if (!r.unsignedField(v, ptr, "seed", UINT64_MAX, out.seed))
        return false;
    }
    const char *problem = recipeProblem(out, dtype);
    if (*problem)
      return r.fail(ptr, std::string(problem) + " (the param is " +
                             dtypeName(dtype) + ")");
    return true;
  }

  /// A user or param buffer nobody declares could never be bound or filled.
  bool everyUserBufferUsed() {
    for (size_t i = 0; i < desc.buffers.size(); ++i)
      if (desc.buffers[i].kind != BufferKind::Temp &&
          desc.buffers[i].kind != BufferKind::Derived && !users[i])
        return r.fail(
            "/buffers/" + std::to_string(i),
            std::string("no ") + bufferKindName(desc.buffers[i].kind) +
                " refers to buffer " + std::to_string(desc.buffers[i].id));
    return true;
  }

  bool status() {
    const json *list;
    if (!r.array(root, "", "status", list, /*optional=*/true))
      return false;
    if (!list)
      return true;
    for (size_t i = 0; i < list->size(); ++i) {
      std::string ptr = "/status/" + std::to_string(i);
      const json &e = (*list)[i];
      StatusDesc s;
      const json *buffer;
      if (!r.object(e, ptr) || !(buffer = r.member(e, ptr, "buffer")) ||
          !bufferRef(*buffer, ptr + "/buffer", s.buffer) ||
          !r.string(e, ptr, "message", s.message))
        return false;
      const BufferDesc &b = desc.buffers[s.buffer];
      if (b.kind != BufferKind::Temp || b.bytes != 4)
        return r.fail(ptr + "/buffer", "status buffer " + std::to_string(b.id) +
                                           " must be a 4-byte temp");
      desc.status.push_back(std::move(s));
    }
    return true;
  }

  bool code() {
    const json *list;
    if (!r.array(root, "", "code", list))
      return false;
    for (size_t i = 0; i < list->size(); ++i) {
      std::string ptr = "/code/" + std::to_string(i);
      const json &e = (*list)[i];
      CodeDesc c;
      if (!r.object(e, ptr) ||
          !r.string(e, ptr, "target", c.target, false, true) ||
          !r.string(e, ptr, "blob", c.blob) ||
          !r.string(e, ptr, "format", c.format, /*optional=*/true))
        return false;
      auto kind = targetKind(c.target);
      if (!kind)
        return r.fail(ptr + "/target", "unknown target \"" + c.target +
                                           "\" (expected host, sm_NN or "
                                           "gfxNNN)");
      c.kind = *kind;
      // One format per device family: the field names it so that a later
      // runtime can add others (cubin, ...) without guessing from the bytes.
      const char *only = c.kind == TargetKind::Host   ? "so"
                         : c.kind == TargetKind::Cuda ? "ptx"
                                                      : "hsaco";
      if (c.format.empty())
        c.format = only;
      else if (c.format != only)
        return r.fail(ptr + "/format", "code format \"" + c.format +
                                           "\" is not supported for target " +
                                           c.target + " (expected \"" + only +
                                           "\")");
      if (!cpuRequirement(e, ptr, c))
        return false;
      if (!blobSizes.count(c.blob))
        return r.fail(ptr + "/blob", "no blob named \"" + c.blob + "\"");
      if (!codeIndex.emplace(c.blob, desc.code.size()).second)
        return r.fail(ptr + "/blob", "blob \"" + c.blob + "\" is listed twice");
      desc.code.push_back(std::move(c));
    }
    return true;
  }

  /// The optional "cpu" and "cpu_features" of host code.
  bool cpuRequirement(const json &e, const std::string &ptr, CodeDesc &c) {
    const json *features;
    if (!r.string(e, ptr, "cpu", c.cpu, /*optional=*/true) ||
        !r.array(e, ptr, "cpu_features", features, /*optional=*/true))
      return false;
    if ((features || !c.cpu.empty()) && c.kind != TargetKind::Host)
      return r.fail(ptr, "cpu and cpu_features are for host code only");
    if (!features)
      return true;
    for (size_t i = 0; i < features->size(); ++i) {
      const json &f = (*features)[i];
      if (!f.is_string() || f.get<std::string>().empty())
        return r.fail(ptr + "/cpu_features/" + std::to_string(i),
                      "expected a feature name");
      c.cpuFeatures.push_back(f.get<std::string>());
    }
    return true;
  }

  bool kernels() {
    const json *list;
    if (!r.array(root, "", "kernels", list))
      return false;
    for (size_t i = 0; i < list->size(); ++i) {
      std::string ptr = "/kernels/" + std::to_string(i);
      const json &e = (*list)[i];
      KernelDesc k;
      std::string code;
      const json *ops;
      if (!r.object(e, ptr) || !r.string(e, ptr, "name", k.name) ||
          !r.string(e, ptr, "symbol", k.symbol, false, true) ||
          !r.string(e, ptr, "kind", k.kind, /*optional=*/true) ||
          !r.array(e, ptr, "ops", ops, /*optional=*/true) ||
          !r.string(e, ptr, "code", code))
        return false;
      for (size_t j = 0; ops && j < ops->size(); ++j) {
        if (!(*ops)[j].is_string())
          return r.fail(ptr + "/ops/" + std::to_string(j), "expected a string");
        k.ops.push_back((*ops)[j].get<std::string>());
      }
      auto it = codeIndex.find(code);
      if (it == codeIndex.end())
        return r.fail(ptr + "/code",
                      "\"" + code + "\" is not a blob of the code table");
      k.code = it->second;
      if (const json *shared = r.member(e, ptr, "shared_bytes", true)) {
        uint64_t bytes;
        if (!r.unsignedInt(*shared, ptr + "/shared_bytes", UINT32_MAX, bytes))
          return false;
        if (desc.code[k.code].kind == TargetKind::Host)
          return r.fail(ptr + "/shared_bytes",
                        "only GPU kernels have shared memory");
        k.sharedBytes = (uint32_t)bytes;
      }
      if (const json *wait = r.member(e, ptr, "grid_dependency", true)) {
        if (!wait->is_boolean())
          return r.fail(ptr + "/grid_dependency", "expected true or false");
        if (desc.code[k.code].kind != TargetKind::Cuda && wait->get<bool>())
          return r.fail(ptr + "/grid_dependency",
                        "only CUDA kernels wait for a grid dependency");
        k.gridDependency = wait->get<bool>();
      }
      if (const json *cluster = r.member(e, ptr, "cluster", true)) {
        std::string at = ptr + "/cluster";
        if (!cluster->is_array() || cluster->size() != 3)
          return r.fail(at, "expected [x, y, z] blocks");
        uint64_t blocks = 1;
        for (size_t j = 0; j < 3; ++j) {
          uint64_t v;
          if (!r.unsignedInt((*cluster)[j], at + "/" + std::to_string(j), 8, v))
            return false;
          if (v == 0)
            return r.fail(at + "/" + std::to_string(j), "must be at least 1");
          k.cluster[j] = (uint32_t)v;
          blocks *= v;
        }
        // CUDA's portable cluster size.
        if (blocks > 8)
          return r.fail(at, "a cluster holds at most 8 blocks");
        if (blocks > 1 && desc.code[k.code].kind != TargetKind::Cuda)
          return r.fail(at, "only CUDA kernels run in clusters");
      }
      desc.kernels.push_back(std::move(k));
    }
    return true;
  }

  bool launches() {
    const json *list;
    if (!r.array(root, "", "launches", list))
      return false;
    return launchList(*list, "/launches", desc.launches);
  }

  /// Version 3's "init_launches" (optional): they run at load, when no
  /// input or output is bound, so they may only use params, derived
  /// buffers and temps; every derived buffer must be written by one.
  bool initLaunches() {
    const json *list;
    if (!r.array(root, "", "init_launches", list, /*optional=*/true))
      return false;
    if (list && manifestVersion < 3)
      return r.fail("/init_launches", "init launches need manifest version "
                                      "3 (this one is " +
                                          std::to_string(manifestVersion) +
                                          ")");
    if (list && !launchList(*list, "/init_launches", desc.initLaunches))
      return false;
    std::vector<bool> written(desc.buffers.size(), false);
    for (size_t i = 0; i < desc.initLaunches.size(); ++i) {
      const LaunchDesc &l = desc.initLaunches[i];
      std::string ptr = "/init_launches/" + std::to_string(i);
      std::vector<size_t> used = l.args;
      for (const TensorMapDesc &t : l.tensorMaps)
        used.push_back(t.buffer);
      if (l.kind == LaunchDesc::Kind::Copy)
        used = {l.src, l.dst};
      for (size_t b : used) {
        BufferKind k = desc.buffers[b].kind;
        if (k == BufferKind::Input || k == BufferKind::Output)
          return r.fail(ptr, "an init launch cannot use " +
                                 std::string(bufferKindName(k)) + " buffer " +
                                 std::to_string(desc.buffers[b].id) +
                                 " (it runs at load, before any binding)");
        written[b] = true;
      }
    }
    for (size_t i = 0; i < desc.buffers.size(); ++i)
      if (desc.buffers[i].kind == BufferKind::Derived && !written[i])
        return r.fail("/buffers/" + std::to_string(i),
                      "no init launch writes derived buffer " +
                          std::to_string(desc.buffers[i].id));
    return true;
  }

  bool launchList(const json &list, const std::string &at,
                  std::vector<LaunchDesc> &out) {
    for (size_t i = 0; i < list.size(); ++i) {
      std::string ptr = at + "/" + std::to_string(i);
      const json &e = list[i];
      if (!r.object(e, ptr))
        return false;
      const json *kernel = r.member(e, ptr, "kernel", true);
      const json *copy = r.member(e, ptr, "copy", true);
      if (!kernel == !copy)
        return r.fail(ptr, "a launch has exactly one of \"kernel\" and "
                           "\"copy\"");
      LaunchDesc l;
      if (kernel ? !kernelLaunch(e, *kernel, ptr, l)
                 : !copyLaunch(*copy, ptr + "/copy", l, at != "/launches"))
        return false;
      out.push_back(std::move(l));
    }
    return true;
  }

  bool kernelLaunch(const json &e, const json &kernel, const std::string &ptr,
                    LaunchDesc &l) {
    l.kind = LaunchDesc::Kind::Kernel;
    uint64_t k;
    const json *args;
    if (!r.unsignedInt(kernel, ptr + "/kernel", UINT32_MAX, k) ||
        !r.array(e, ptr, "args", args))
      return false;
    if (k >= desc.kernels.size())
      return r.fail(ptr + "/kernel", "kernel " + std::to_string(k) +
                                         " is out of range (there are " +
                                         std::to_string(desc.kernels.size()) +
                                         ")");
    l.kernel = k;
    const CodeDesc &code = desc.code[desc.kernels[k].code];
    l.gpu = code.kind != TargetKind::Host;
    if (!l.gpu) {
      uint64_t grid;
      if (!r.unsignedField(e, ptr, "grid", uint64_t(1) << 62, grid))
        return false;
      if (e.contains("block"))
        return r.fail(ptr + "/block", "host kernels take no block (their "
                                      "grid is a count of work items)");
      l.grid = (int64_t)grid;
    } else if (!gpuGeometry(e, ptr, code.target, l)) {
      return false;
    }
    for (size_t a = 0; a < args->size(); ++a) {
      size_t index;
      if (!bufferRef((*args)[a], ptr + "/args/" + std::to_string(a), index))
        return false;
      l.args.push_back(index);
    }
    if (const json *maps = r.member(e, ptr, "tensor_maps", true)) {
      if (!tensorMaps(*maps, ptr, code, l))
        return false;
    }
    if (l.gpu) {
      // GPU kernels have a fixed parameter list, one pointer per buffer,
      // then one 128-byte tensor map each.
      size_t slots = l.args.size() +
                     l.tensorMaps.size() * (kTensorMapBytes / sizeof(void *));
      if (slots > kMaxGpuKernelArgs && l.tensorMaps.empty())
        return r.fail(ptr + "/args", std::to_string(l.args.size()) +
                                         " buffers exceed the limit of " +
                                         std::to_string(kMaxGpuKernelArgs) +
                                         " kernel parameters");
      if (slots > kMaxGpuKernelArgs)
        return r.fail(ptr + "/args",
                      std::to_string(l.args.size()) + " buffers and " +
                          std::to_string(l.tensorMaps.size()) +
                          " tensor maps exceed the 4 KiB of kernel "
                          "parameters (" +
                          std::to_string(kMaxGpuKernelArgs) +
                          " pointers, a map counting as 16)");
      auto [it, first] = gpuArgCount.emplace(
          k, std::make_pair(l.args.size(), l.tensorMaps.size()));
      if (!first && it->second.first != l.args.size())
        return r.fail(ptr + "/args",
                      "kernel " + std::to_string(k) + " is launched with " +
                          std::to_string(it->second.first) +
                          " buffers before and " +
                          std::to_string(l.args.size()) + " here");
      if (!first && it->second.second != l.tensorMaps.size())
        return r.fail(ptr + "/tensor_maps",
                      "kernel " + std::to_string(k) + " is launched with " +
                          std::to_string(it->second.second) +
                          " tensor maps before and " +
                          std::to_string(l.tensorMaps.size()) + " here");
    }
    if (const json *writes = r.member(e, ptr, "writes", true)) {
      if (!writes->is_array())
        return r.fail(ptr + "/writes", "expected an array");
      for (size_t w = 0; w < writes->size(); ++w) {
        std::string at = ptr + "/writes/" + std::to_string(w);
        uint64_t pos;
        if (!r.unsignedInt((*writes)[w], at, UINT32_MAX, pos))
          return false;
        if (pos >= l.args.size())
          return r.fail(at, "argument " + std::to_string(pos) +
                                " is out of range (the launch passes " +
                                std::to_string(l.args.size()) + ")");
        if (!l.writes.empty() && pos <= l.writes.back())
          return r.fail(at, "the written arguments must be ascending, "
                            "each once");
        l.writes.push_back(pos);
      }
      l.writesListed = true;
    }
    if (const json *slices = r.member(e, ptr, "write_slices", true)) {
      if (!slices->is_array())
        return r.fail(ptr + "/write_slices", "expected an array");
      for (size_t i = 0; i < slices->size(); ++i) {
        std::string at = ptr + "/write_slices/" + std::to_string(i);
        const json &w = (*slices)[i];
        LaunchDesc::WriteSlice ws;
        uint64_t arg;
        if (!r.object(w, at) ||
            !r.unsignedField(w, at, "arg", UINT32_MAX, arg) ||
            !r.unsignedField(w, at, "offset", kMaxBytes, ws.offset) ||
            !r.unsignedField(w, at, "bytes", kMaxBytes, ws.bytes) ||
            !r.unsignedField(w, at, "stride", kMaxBytes, ws.stride))
          return false;
        ws.arg = arg;
        if (!l.writesListed ||
            !std::binary_search(l.writes.begin(), l.writes.end(), ws.arg))
          return r.fail(at + "/arg", "argument " + std::to_string(ws.arg) +
                                         " is not among the launch's writes");
        uint64_t size = desc.buffers[l.args[ws.arg]].bytes;
        if (ws.stride == 0 || ws.offset + ws.bytes > ws.stride ||
            size % ws.stride != 0)
          return r.fail(
              at, "a slice of " + std::to_string(ws.bytes) + " bytes at " +
                      std::to_string(ws.offset) + " every " +
                      std::to_string(ws.stride) + " does not tile buffer " +
                      std::to_string(desc.buffers[l.args[ws.arg]].id) + " (" +
                      std::to_string(size) + " bytes)");
        for (const LaunchDesc::WriteSlice &other : l.writeSlices)
          if (other.arg == ws.arg)
            return r.fail(at + "/arg", "argument " + std::to_string(ws.arg) +
                                           " has two slices");
        l.writeSlices.push_back(ws);
      }
    }
    return true;
  }

  /// Version 4's "tensor_maps" of a CUDA launch (docs/bundle-format.md):
  /// every limit cuTensorMapEncodeTiled checks is checked here, so that
  /// encoding at launch fails only for what loading cannot see (the
  /// address).
  bool tensorMaps(const json &maps, const std::string &launchPtr,
                  const CodeDesc &code, LaunchDesc &l) {
    std::string ptr = launchPtr + "/tensor_maps";
    if (manifestVersion < 4)
      return r.fail(ptr, "tensor maps need manifest version 4 (this one is " +
                             std::to_string(manifestVersion) + ")");
    if (code.kind != TargetKind::Cuda)
      return r.fail(ptr, "only CUDA kernels take tensor maps (this launch's "
                         "kernel has code for " +
                             code.target + ")");
    if (!maps.is_array())
      return r.fail(ptr, "expected an array");
    if (maps.size() > kMaxTensorMaps)
      return r.fail(ptr, std::to_string(maps.size()) +
                             " tensor maps exceed the limit of " +
                             std::to_string(kMaxTensorMaps) + " a launch");
    for (size_t i = 0; i < maps.size(); ++i) {
      TensorMapDesc t;
      if (!tensorMap(maps[i], ptr + "/" + std::to_string(i), t))
        return false;
      l.tensorMaps.push_back(std::move(t));
    }
    return true;
  }

  /// An im2col map's fields, with the limits cuTensorMapEncodeIm2col
  /// checks: rank 3 to 5; rank - 2 corner offsets each, in [-32768, 32767]
  /// (rank 3), [-128, 127] (rank 4) or [-16, 15] (rank 5); at most 256
  /// channels and 1024 pixels a copy; element strides in [1, 8].
  bool im2colFields(const json &e, const std::string &ptr, size_t rank,
                    TensorMapDesc &t) {
    const json *lower, *upper, *strides;
    uint64_t channels, pixels;
    if (!r.object(e, ptr) ||
        !r.unsignedField(e, ptr, "channels", 256, channels) ||
        !r.unsignedField(e, ptr, "pixels", 1024, pixels) ||
        !r.array(e, ptr, "lower", lower) || !r.array(e, ptr, "upper", upper) ||
        !r.array(e, ptr, "element_strides", strides))
      return false;
    if (rank < 3 || rank > 5)
      return r.fail(ptr, "an im2col map has rank 3 to 5, not " +
                             std::to_string(rank));
    if (channels == 0 || pixels == 0)
      return r.fail(ptr, "channels and pixels are at least 1");
    t.im2col = true;
    t.channels = (uint32_t)channels;
    t.pixels = (uint32_t)pixels;
    int64_t limit = rank == 3 ? 32768 : rank == 4 ? 128 : 16;
    for (auto [key, arr, out] : {std::tuple("lower", lower, &t.lower),
                                 std::tuple("upper", upper, &t.upper)}) {
      std::string at = ptr + "/" + key;
      if (arr->size() != rank - 2)
        return r.fail(at, "expected " + std::to_string(rank - 2) +
                              " offsets, got " + std::to_string(arr->size()));
      for (size_t d = 0; d < arr->size(); ++d) {
        const json &v = (*arr)[d];
        std::string vp = at + "/" + std::to_string(d);
        if (!v.is_number_integer())
          return r.fail(vp, "expected an integer");
        int64_t x = v.get<int64_t>();
        if (x < -limit || x >= limit)
          return r.fail(vp, std::to_string(x) + " is outside [" +
                                std::to_string(-limit) + ", " +
                                std::to_string(limit - 1) + "]");
        out->push_back((int32_t)x);
      }
    }
    return positiveDims(*strides, ptr + "/element_strides", rank, 8,
                        "element strides", "an element stride",
                        t.elementStrides);
  }

  /// `rank` integers in [1, max] of the array `a` at `ptr`, appended to
  /// `out` (a tensor map's box dims or im2col element strides).
  bool positiveDims(const json &a, const std::string &ptr, size_t rank,
                    uint64_t max, const std::string &plural,
                    const std::string &one, std::vector<uint32_t> &out) {
    if (a.size() != rank)
      return r.fail(ptr, "expected " + std::to_string(rank) + " " + plural +
                             " (one per dim), got " + std::to_string(a.size()));
    for (size_t d = 0; d < rank; ++d) {
      uint64_t v;
      std::string at = ptr + "/" + std::to_string(d);
      if (!r.unsignedInt(a[d], at, max, v))
        return false;
      if (v == 0)
        return r.fail(at, one + " is at least 1");
      out.push_back((uint32_t)v);
    }
    return true;
  }

  bool tensorMap(const json &e, const std::string &ptr, TensorMapDesc &t) {
    const json *buffer, *dims, *strides, *box = nullptr;
    std::string dtype, swizzle;
    if (!r.object(e, ptr) || !(buffer = r.member(e, ptr, "buffer")) ||
        !bufferRef(*buffer, ptr + "/buffer", t.buffer) ||
        !r.string(e, ptr, "dtype", dtype) || !r.array(e, ptr, "dims", dims) ||
        !r.array(e, ptr, "strides", strides) ||
        !r.string(e, ptr, "swizzle", swizzle))
      return false;
    // An im2col map (version 5) has "im2col" in place of "box".
    const json *im2col = r.member(e, ptr, "im2col", true);
    if (im2col && manifestVersion < 5)
      return r.fail(ptr + "/im2col", "im2col tensor maps need manifest "
                                     "version 5 (this one is " +
                                         std::to_string(manifestVersion) + ")");
    if (im2col && e.contains("box"))
      return r.fail(ptr + "/box", "an im2col map has no box");
    if (!im2col && !r.array(e, ptr, "box", box))
      return false;
    // Version 6: the map starts `offset` bytes into its buffer.
    if (e.contains("offset")) {
      if (manifestVersion < 6)
        return r.fail(ptr + "/offset",
                      "tensor map offsets need manifest version 6 (this one "
                      "is " +
                          std::to_string(manifestVersion) + ")");
      if (!r.unsignedField(e, ptr, "offset", kMaxBytes, t.offset))
        return false;
      if (t.offset % 16 != 0)
        return r.fail(ptr + "/offset", "offset " + std::to_string(t.offset) +
                                           " is not a multiple of 16 bytes");
    }
    // Every dtype of the format has 1, 2, 4 or 8 bytes, which TMA moves (the
    // 1-byte ones as bytes); the zeros it fills in read as 0 in each.
    auto dt = parseDType(dtype);
    if (!dt)
      return r.fail(ptr + "/dtype", "unknown dtype \"" + dtype + "\"");
    t.dtype = *dt;
    uint64_t elem = dtypeSize(t.dtype);
    size_t rank = dims->size();
    if (rank < 1 || rank > kMaxTensorMapRank)
      return r.fail(ptr + "/dims", "rank " + std::to_string(rank) +
                                       " is outside [1, " +
                                       std::to_string(kMaxTensorMapRank) + "]");
    for (size_t d = 0; d < rank; ++d) {
      uint64_t v;
      std::string at = ptr + "/dims/" + std::to_string(d);
      if (!r.unsignedInt((*dims)[d], at, uint64_t(1) << 32, v))
        return false;
      if (v == 0)
        return r.fail(at, "a tensor map's dims are at least 1");
      t.dims.push_back(v);
    }
    if (strides->size() != rank - 1)
      return r.fail(ptr + "/strides",
                    "expected " + std::to_string(rank - 1) +
                        " strides (bytes, for dims 1 to rank - 1), got " +
                        std::to_string(strides->size()));
    for (size_t d = 0; d + 1 < rank; ++d) {
      uint64_t v;
      std::string at = ptr + "/strides/" + std::to_string(d);
      if (!r.unsignedInt((*strides)[d], at, (uint64_t(1) << 40) - 1, v))
        return false;
      if (v % 16 != 0)
        return r.fail(at, "stride " + std::to_string(v) +
                              " is not a multiple of 16 bytes");
      t.strides.push_back(v);
    }
    std::string rowPtr = ptr + (im2col ? "/im2col/channels" : "/box/0");
    if (im2col) {
      if (!im2colFields(*im2col, ptr + "/im2col", rank, t))
        return false;
    } else if (!positiveDims(*box, ptr + "/box", rank, 256, "box dims",
                             "a box dim", t.box)) {
      return false;
    }
    uint64_t rowBytes = (im2col ? t.channels : t.box[0]) * elem;
    if (rowBytes % 16 != 0)
      return r.fail(rowPtr, "the box's inner dim has " +
                                std::to_string(rowBytes) +
                                " bytes, not a multiple of 16");
    uint64_t swizzleBytes = 0;
    if (swizzle == "none")
      t.swizzle = TensorMapSwizzle::None;
    else if (swizzle == "32B")
      t.swizzle = TensorMapSwizzle::B32, swizzleBytes = 32;
    else if (swizzle == "64B")
      t.swizzle = TensorMapSwizzle::B64, swizzleBytes = 64;
    else if (swizzle == "128B")
      t.swizzle = TensorMapSwizzle::B128, swizzleBytes = 128;
    else
      return r.fail(ptr + "/swizzle", "unknown swizzle \"" + swizzle +
                                          "\" (expected none, 32B, 64B or "
                                          "128B)");
    if (swizzleBytes && rowBytes > swizzleBytes)
      return r.fail(rowPtr, "the box's inner dim has " +
                                std::to_string(rowBytes) +
                                " bytes, more than the " + swizzle +
                                " swizzle's " + std::to_string(swizzleBytes));
    // The last byte the map can reach, bounded by kMaxBytes at every step
    // (dims < 2^33 and strides < 2^40 would overflow a plain product).
    const BufferDesc &b = desc.buffers[t.buffer];
    uint64_t reach = t.offset + t.dims[0] * elem; // < 2^41
    for (size_t d = 1; d < rank && reach <= kMaxBytes; ++d) {
      uint64_t n = t.dims[d] - 1, s = t.strides[d - 1];
      if (s && n > (kMaxBytes - reach) / s)
        reach = kMaxBytes + 1;
      else
        reach += n * s;
    }
    if (reach > b.bytes)
      return r.fail(ptr, "the map reaches " +
                             (reach > kMaxBytes
                                  ? "beyond " + std::to_string(kMaxBytes)
                                  : std::to_string(reach)) +
                             " bytes into buffer " + std::to_string(b.id) +
                             ", which has " + std::to_string(b.bytes));
    return true;
  }

  /// "grid": [gx, gy, gz] blocks and "block": [bx, by, bz] threads.
  bool gpuGeometry(const json &e, const std::string &ptr,
                   const std::string &target, LaunchDesc &l) {
    static const char *axes[3] = {"x", "y", "z"};
    for (int which = 0; which < 2; ++which) {
      const char *key = which ? "block" : "grid";
      const json *dims = r.member(e, ptr, key);
      if (!dims)
        return false;
      std::string at = ptr + "/" + key;
      if (!dims->is_array() || dims->size() != 3)
        return r.fail(at, std::string("expected [x, y, z] (3 integers) for "
                                      "a ") +
                              target + " kernel");
      const uint32_t *limits = which ? kMaxBlockDim : kMaxGridDim;
      auto &out = which ? l.blockDims : l.gridDims;
      for (int d = 0; d < 3; ++d) {
        uint64_t v;
        std::string dimPtr = at + "/" + std::to_string(d);
        if (!r.unsignedInt((*dims)[d], dimPtr, UINT32_MAX, v))
          return false;
        if (v == 0)
          return r.fail(dimPtr, std::string(key) + "." + axes[d] +
                                    " must be at least 1");
        if (v > limits[d])
          return r.fail(dimPtr, std::string(key) + "." + axes[d] + " " +
                                    std::to_string(v) + " exceeds " +
                                    std::to_string(limits[d]));
        out[d] = (uint32_t)v;
      }
    }
    uint64_t threads =
        (uint64_t)l.blockDims[0] * l.blockDims[1] * l.blockDims[2];
    if (threads > kMaxBlockThreads)
      return r.fail(ptr + "/block", "a block of " + std::to_string(threads) +
                                        " threads exceeds " +
                                        std::to_string(kMaxBlockThreads));
    return true;
  }

  /// Only init launches (`init`) may copy into a derived buffer.
  bool copyLaunch(const json &copy, const std::string &ptr, LaunchDesc &l,
                  bool init) {
    l.kind = LaunchDesc::Kind::Copy;
    const json *src, *dst;
    if (!r.object(copy, ptr) || !(src = r.member(copy, ptr, "src")) ||
        !(dst = r.member(copy, ptr, "dst")) ||
        !bufferRef(*src, ptr + "/src", l.src) ||
        !bufferRef(*dst, ptr + "/dst", l.dst) ||
        !r.unsignedField(copy, ptr, "bytes", kMaxBytes, l.bytes))
      return false;
    const BufferDesc &s = desc.buffers[l.src], &d = desc.buffers[l.dst];
    if (d.kind == BufferKind::Input || d.kind == BufferKind::Param ||
        (d.kind == BufferKind::Derived && !init))
      return r.fail(ptr + "/dst", std::string("cannot copy into ") +
                                      bufferKindName(d.kind) + " buffer " +
                                      std::to_string(d.id));
    if (l.bytes > s.bytes || l.bytes > d.bytes)
      return r.fail(ptr + "/bytes",
                    "copy of " + std::to_string(l.bytes) +
                        " bytes exceeds buffer " +
                        std::to_string(l.bytes > s.bytes ? s.id : d.id));
    return true;
  }

  const json &root;
  uint64_t manifestVersion = 1;
  const std::map<std::string, size_t> &blobSizes;
  ModelDesc &desc;
  Reader r;
  std::unordered_map<uint32_t, size_t> idToIndex;
  std::unordered_map<std::string, size_t> codeIndex;
  std::vector<unsigned> users; // declarations per buffer index
  /// Kernel -> the buffers and tensor maps of its launches.
  std::unordered_map<uint64_t, std::pair<size_t, size_t>> gpuArgCount;
};

} // namespace

bool parseModelDesc(const json &manifest,
                    const std::map<std::string, size_t> &blobSizes,
                    ModelDesc &out, std::string &error) {
  error.clear();
  out = ModelDesc();
  if (Validator(manifest, blobSizes, out, error).run())
    return true;
  out = ModelDesc();
  return false;
}

} // namespace tcc::bundle
