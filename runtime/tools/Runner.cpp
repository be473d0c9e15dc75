//===- Runner.cpp - the logic of tcc run, bench and inspect ---------------===//
//
// run and bench go through the public C API (tccrt.h), as an application
// would; inspect only needs the bundle reader.
//
//===----------------------------------------------------------------------===//
#include "runtime/tools/Runner.h"

#include "runtime/include/tccrt.h"
#include "runtime/src/Bundle.h"
#include "runtime/src/DType.h"
#include "runtime/src/FileIO.h"
#include "runtime/src/JsonDepth.h"
#include "runtime/src/Npy.h"
#include "runtime/src/OneLine.h"
#include "runtime/src/Random.h"
#include "runtime/tools/Profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace tcc::runner {
namespace {

/// Reports the error line and yields the exit status.
int error(std::ostream &err, const std::string &message) {
  err << "tcc: error: " << oneLine(message) << "\n";
  return 1;
}

/// The target of the bundle's first code object, read from its manifest
/// without validating anything ("host" when there is none or the bytes are
/// no bundle): loading validates, and reports what is wrong.
std::string bundleTarget(const std::vector<uint8_t> &bytes) {
  auto u64 = [&](size_t at) {
    uint64_t v = 0;
    std::memcpy(&v, &bytes[at], 8);
    return v;
  };
  if (bytes.size() < bundle::kHeaderSize)
    return "host";
  uint64_t offset = u64(16), size = u64(24);
  if (offset > bytes.size() || size > bytes.size() - offset)
    return "host";
  auto manifest =
      nlohmann::json::parse(bytes.begin() + (ptrdiff_t)offset,
                            bytes.begin() + (ptrdiff_t)(offset + size), nullptr,
                            /*allow_exceptions=*/false);
  auto code = manifest.find("code");
  if (manifest.is_object() && code != manifest.end() && code->is_array() &&
      !code->empty() && (*code)[0].is_object()) {
    auto target = (*code)[0].find("target");
    if (target != (*code)[0].end() && target->is_string())
      return target->get<std::string>();
  }
  return "host";
}

bool deviceFor(const std::string &target, tccrt_device_kind &kind,
               std::string &why) {
  if (target == "host")
    kind = TCCRT_DEVICE_HOST;
  else if (target.rfind("sm_", 0) == 0)
    kind = TCCRT_DEVICE_CUDA;
  else if (target.rfind("gfx", 0) == 0)
    kind = TCCRT_DEVICE_HIP;
  else {
    why = "unknown target '" + target + "' (expected host, sm_NN or gfxNNN)";
    return false;
  }
  return true;
}

std::vector<int64_t> shapeOf(const tccrt_tensor_info &t) {
  return std::vector<int64_t>(t.shape, t.shape + t.rank);
}

std::string describe(const tccrt_tensor_info &t) {
  return std::string(t.dtype_name) + " " + npy::shapeString(shapeOf(t));
}

/// A context, a loaded model and the device buffers bound to it.
class Session {
public:
  ~Session() {
    for (void *p : allocations)
      tccrt_free(ctx, p);
    tccrt_model_destroy(model);
    tccrt_context_destroy(ctx);
  }

  /// Loads the bundle on the device of `target` (the bundle's own when
  /// empty; `target` is set to the one used).
  bool open(const std::vector<uint8_t> &bundle, const std::string &displayName,
            std::string &target, bool cudaGraph, bool serialLaunches,
            bool graphChain, std::string &why) {
    if (target.empty())
      target = bundleTarget(bundle);
    tccrt_device_kind kind;
    if (!deviceFor(target, kind, why))
      return false;
    if (tccrt_context_create(kind, 0, &ctx) != TCCRT_OK) {
      why = tccrt_last_error();
      return false;
    }
    if (tccrt_model_load_memory(ctx, bundle.data(), bundle.size(), &model) !=
        TCCRT_OK) {
      why = displayName + ": " + tccrt_context_last_error(ctx);
      return false;
    }
    if (cudaGraph &&
        !check(tccrt_model_set_option(model, "cuda_graph", "1"), why))
      return false;
    if (serialLaunches &&
        !check(tccrt_model_set_option(model, "grid_dependency", "0"), why))
      return false;
    if (graphChain &&
        !check(tccrt_model_set_option(model, "graph_concurrency", "0"), why))
      return false;
    size_t n;
    tccrt_model_num_inputs(model, &n);
    inputs.resize(n);
    for (size_t i = 0; i < n; ++i)
      tccrt_model_input_info(model, i, &inputs[i]);
    tccrt_model_num_outputs(model, &n);
    outputs.resize(n);
    for (size_t i = 0; i < n; ++i)
      tccrt_model_output_info(model, i, &outputs[i]);
    return true;
  }

  /// Copies `bytes` to the device and binds them to input `i`.
  bool bindInput(size_t i, const std::vector<uint8_t> &bytes,
                 std::string &why) {
    void *p = allocate(bytes.size(), why);
    if (!p ||
        !check(tccrt_copy_to_device(ctx, p, bytes.data(), bytes.size()), why) ||
        !check(tccrt_model_bind_input(model, i, p, bytes.size()), why))
      return false;
    return true;
  }

  bool bindOutputs(std::string &why) {
    outputMemory.clear();
    for (size_t i = 0; i < outputs.size(); ++i) {
      void *p = allocate(outputs[i].bytes, why);
      if (!p ||
          !check(tccrt_model_bind_output(model, i, p, outputs[i].bytes), why))
        return false;
      outputMemory.push_back(p);
    }
    return true;
  }

  bool run(std::string &why) { return check(tccrt_model_run(model), why); }

  bool timeRuns(std::vector<double> &ms, std::string &why) {
    return check(tccrt_model_time_runs(model, ms.size(), ms.data()), why);
  }

  bool fetchOutput(size_t i, std::vector<uint8_t> &bytes, std::string &why) {
    bytes.resize(outputs[i].bytes);
    return check(
        tccrt_copy_to_host(ctx, bytes.data(), outputMemory[i], bytes.size()),
        why);
  }

  tccrt_model *model = nullptr;
  std::vector<tccrt_tensor_info> inputs, outputs;

private:
  bool check(tccrt_status s, std::string &why) {
    if (s == TCCRT_OK)
      return true;
    why = tccrt_context_last_error(ctx);
    return false;
  }
  void *allocate(size_t bytes, std::string &why) {
    void *p = nullptr;
    if (!check(tccrt_malloc(ctx, bytes, &p), why))
      return nullptr;
    allocations.push_back(p);
    return p;
  }

  tccrt_context *ctx = nullptr;
  std::vector<void *> allocations, outputMemory;
};

/// Seeded values for an input nobody gave: floats uniform in [-1, 1) rounded
/// to the dtype, integers uniform in [0, intLimit), bools fair coins. Each
/// input has its own stream, SplitMix64(seed ^ FNV-1a-64(name)), so its
/// values do not depend on the other inputs.
std::vector<uint8_t> randomInput(const tccrt_tensor_info &t, uint64_t seed,
                                 uint64_t intLimit) {
  DType dtype = static_cast<DType>(t.dtype);
  std::string name = t.name;
  uint64_t stream =
      seed ^ bundle::fnv1a64(reinterpret_cast<const uint8_t *>(name.data()),
                             name.size());
  size_t size = dtypeSize(dtype);
  std::vector<uint8_t> bytes(t.bytes);
  size_t count = size ? bytes.size() / size : 0;
  auto fill = [&](size_t begin, size_t end) {
    SplitMix64 rng(stream);
    rng.skip(begin);
    for (size_t i = begin; i < end; ++i) {
      uint8_t *at = &bytes[i * size];
      if (isFloat(dtype))
        encodeScalar(dtype, rng.uniform(-1.0, 1.0), at);
      else if (dtype == DType::Bool)
        *at = (uint8_t)(rng.next() >> 63);
      else
        encodeInteger(dtype, (int64_t)(rng.next() % intLimit), at);
    }
  };
  // Large inputs (decode's K and V reach 10^9 values) are filled by several
  // threads, each jumping to its first element of the one stream.
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  if (count < (size_t(1) << 22) || threads == 1) {
    fill(0, count);
    return bytes;
  }
  threads = std::min(threads, 32u);
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i)
    pool.emplace_back(fill, count * i / threads, count * (i + 1) / threads);
  for (std::thread &th : pool)
    th.join();
  return bytes;
}

/// Converts a .npy array to the input's dtype: any float to any float
/// (rounding to nearest even, saturating f8), integers to integers when every
/// value fits. Returns false with `why` for anything else.
bool convertInput(const npy::Array &a, DType to, std::vector<uint8_t> &bytes,
                  std::string &why) {
  size_t inSize = dtypeSize(a.dtype), outSize = dtypeSize(to);
  size_t n = a.data.size() / inSize;
  bytes.assign(n * outSize, 0);
  bool floats = isFloat(a.dtype) && isFloat(to);
  bool ints = !isFloat(a.dtype) && !isFloat(to) && a.dtype != DType::Bool &&
              to != DType::Bool;
  if (!floats && !ints) {
    why = std::string("cannot convert ") + dtypeName(a.dtype) + " to " +
          dtypeName(to);
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    const uint8_t *src = &a.data[i * inSize];
    if (floats) {
      encodeScalar(to, decodeScalar(a.dtype, src), &bytes[i * outSize]);
      continue;
    }
    int64_t v;
    if (a.dtype == DType::I64)
      std::memcpy(&v, src, 8);
    else
      v = (int64_t)decodeScalar(a.dtype, src);
    int64_t lo = to == DType::I8    ? INT8_MIN
                 : to == DType::I32 ? INT32_MIN
                                    : INT64_MIN;
    int64_t hi = to == DType::I8    ? INT8_MAX
                 : to == DType::I32 ? INT32_MAX
                                    : INT64_MAX;
    if (v < lo || v > hi) {
      why = "value " + std::to_string(v) + " at flat index " +
            std::to_string(i) + " does not fit in " + dtypeName(to);
      return false;
    }
    encodeInteger(to, v, &bytes[i * outSize]);
  }
  return true;
}

/// Prepares every input: from its .npy file or random.
bool stageInputs(Session &s, const RunOptions &opt, std::ostream &err,
                 std::string &why) {
  std::map<std::string, std::string> files;
  std::vector<std::pair<std::string, std::string>> given = opt.inputs;
  std::vector<std::string> names;
  for (const tccrt_tensor_info &t : s.inputs)
    names.push_back(t.name);
  for (const std::string &spec : opt.inputSpecs) {
    std::string name, file;
    if (!splitInputSpec(spec, names, name, file, why))
      return false;
    given.emplace_back(name, file);
  }
  for (const auto &spec : given) {
    const std::string &name = spec.first, &file = spec.second;
    auto it = std::find_if(
        s.inputs.begin(), s.inputs.end(),
        [&](const tccrt_tensor_info &t) { return name == t.name; });
    if (it == s.inputs.end()) {
      std::string known;
      for (const tccrt_tensor_info &t : s.inputs)
        known += (known.empty() ? "" : ", ") + std::string(t.name);
      why = "model has no input named '" + name +
            "' (inputs: " + (known.empty() ? "none" : known) + ")";
      return false;
    }
    if (!files.emplace(name, file).second) {
      why = "input '" + name + "' is given twice";
      return false;
    }
  }
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const tccrt_tensor_info &t = s.inputs[i];
    DType dtype = static_cast<DType>(t.dtype);
    std::vector<uint8_t> bytes;
    auto file = files.find(t.name);
    if (file == files.end()) {
      err << "note: input " << t.name << " (" << describe(t)
          << ") not given; using random values (seed " << opt.seed << ")\n";
      bytes = randomInput(t, opt.seed, opt.randomIntLimit);
    } else {
      npy::Array a;
      if (!npy::readFile(file->second, a, why))
        return false;
      if (a.shape != shapeOf(t)) {
        why = "input " + std::string(t.name) + ": " + file->second +
              " has shape " + npy::shapeString(a.shape) +
              ", the model expects " + npy::shapeString(shapeOf(t));
        return false;
      }
      if (a.dtype == dtype) {
        bytes = std::move(a.data);
      } else {
        if (!convertInput(a, dtype, bytes, why)) {
          why =
              "input " + std::string(t.name) + ": " + file->second + ": " + why;
          return false;
        }
        err << "note: converting " << t.name << " from " << dtypeName(a.dtype)
            << " to " << dtypeName(dtype) << "\n";
      }
    }
    if (!s.bindInput(i, bytes, why))
      return false;
  }
  return true;
}

std::string formatValue(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

/// One line: dtype, shape, min/max/mean over the non-NaN values, the NaN
/// count and the first few values.
std::string summary(const tccrt_tensor_info &t,
                    const std::vector<uint8_t> &bytes) {
  DType dtype = static_cast<DType>(t.dtype);
  size_t size = dtypeSize(dtype), n = bytes.size() / size;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  size_t nans = 0;
  std::string first;
  for (size_t i = 0; i < n; ++i) {
    double v = decodeScalar(dtype, &bytes[i * size]);
    if (i < 6)
      first += (i ? ", " : "") + formatValue(v);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::string line = std::string(t.name) + ": " + describe(t);
  if (n > nans)
    line += "  min " + formatValue(lo) + "  max " + formatValue(hi) +
            "  mean " + formatValue(sum / (double)(n - nans));
  line += "  nan " + std::to_string(nans) + "  [" + first +
          (n > 6 ? ", ...]" : "]");
  return line;
}

/// Chooses every output's file and checks, before the model runs, that it
/// can be written: the folder exists (or is created) and is writable, no
/// path is too long, and none is taken by a directory. So a run does not end
/// with some outputs written and the others failing.
bool planOutputs(Session &s, const RunOptions &opt, std::ostream &err,
                 std::vector<std::string> &paths, std::string &why) {
  namespace fs = std::filesystem;
  fs::path dir = opt.outputDir.empty() ? "." : opt.outputDir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    why = "cannot create output directory '" + dir.string() + "'" +
          (ec ? ": " + ec.message() : "");
    return false;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    why = "cannot write to output directory '" + dir.string() +
          "': " + std::strerror(errno);
    return false;
  }
  std::set<std::string> used;
  paths.clear();
  for (const tccrt_tensor_info &t : s.outputs) {
    std::string base = outputFileStem(t.name), stem = base;
    for (int k = 2; used.count(stem); ++k) {
      std::string suffix = "_" + std::to_string(k);
      stem = base.substr(0, kMaxOutputStem - suffix.size()) + suffix;
    }
    used.insert(stem);
    fs::path path = dir / (stem + ".npy");
    if (path.string().size() >= PATH_MAX) {
      why = "output '" + std::string(t.name) + "': the path " +
            path.string().substr(0, 64) + "... is longer than " +
            std::to_string(PATH_MAX - 1) + " bytes";
      return false;
    }
    if (fs::is_directory(path, ec)) {
      why = "output '" + std::string(t.name) + "': " + path.string() +
            " is a directory";
      return false;
    }
    if (stem != t.name)
      err << "note: output '" << oneLine(t.name) << "' is written to "
          << oneLine(path.string()) << "\n";
    paths.push_back(path.string());
  }
  return true;
}

bool writeOutputs(Session &s, const std::vector<std::string> &paths,
                  std::ostream &out, std::ostream &err, std::string &why) {
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    const tccrt_tensor_info &t = s.outputs[i];
    std::vector<uint8_t> bytes;
    if (!s.fetchOutput(i, bytes, why))
      return false;
    out << summary(t, bytes) << "\n";

    // bf16 and f8 have no .npy dtype; every value is exact in f32.
    npy::Array a;
    a.dtype = static_cast<DType>(t.dtype);
    a.shape = shapeOf(t);
    if (npy::isNpyDType(a.dtype)) {
      a.data = std::move(bytes);
    } else {
      size_t size = dtypeSize(a.dtype), n = bytes.size() / size;
      a.data.resize(n * 4);
      for (size_t e = 0; e < n; ++e) {
        float f = (float)decodeScalar(a.dtype, &bytes[e * size]);
        std::memcpy(&a.data[e * 4], &f, 4);
      }
      err << "note: output " << t.name << " is " << t.dtype_name
          << "; writing it as float32 (exact)\n";
      a.dtype = DType::F32;
    }
    if (!npy::writeFile(paths[i], a, why))
      return false;
  }
  return true;
}

double percentile(const std::vector<double> &sorted, double q) {
  double pos = q * (double)(sorted.size() - 1);
  size_t lo = (size_t)pos;
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - (double)lo);
}

/// The manifest checksum a bundle's header records (bytes 32..39).
uint64_t headerManifestHash(const uint8_t *header) {
  uint64_t v;
  std::memcpy(&v, header + 32, 8);
  return v;
}

/// Reads the profile at `path` and merges it into `manifest`.
bool addProfile(nlohmann::json &manifest, uint64_t manifestHash,
                const std::string &path, std::string &why) {
  std::vector<uint8_t> bytes;
  if (!io::readRegularFile(path, bytes, why))
    return false;
  // A profile nests 4 levels; deep nesting would overflow the parser's stack.
  std::string_view text(reinterpret_cast<const char *>(bytes.data()),
                        bytes.size());
  if (findNestingBeyond(text, 64) != std::string_view::npos) {
    why = path + ": not a tcc profile (JSON nested deeper than 64 levels)";
    return false;
  }
  auto profile = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr,
                                       /*allow_exceptions=*/false);
  if (profile.is_discarded()) {
    why = path + ": not valid JSON";
    return false;
  }
  return mergeProfile(manifest, manifestHash, profile, path, why);
}

/// Turns anything thrown (out of memory, a filesystem error) into the error
/// line: the CLI must never die with an uncaught exception.
template <typename Body> int guarded(std::ostream &err, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return error(err, "out of memory");
  } catch (const std::exception &e) {
    return error(err, e.what());
  }
}

} // namespace

std::string outputFileStem(const std::string &name) {
  std::string stem = name.empty() ? "_" : name;
  for (char &c : stem)
    if (!std::isalnum((unsigned char)c) && c != '.' && c != '_' && c != '-')
      c = '_';
  if (stem[0] == '.')
    stem[0] = '_';
  if (stem.size() > kMaxOutputStem) {
    static const char digits[] = "0123456789abcdef";
    uint64_t h = bundle::fnv1a64(reinterpret_cast<const uint8_t *>(name.data()),
                                 name.size());
    std::string hex(16, '0');
    for (int i = 15; i >= 0; --i, h >>= 4)
      hex[i] = digits[h & 15];
    stem = stem.substr(0, kMaxOutputStem - 17) + "-" + hex;
  }
  return stem;
}

bool splitInputSpec(const std::string &spec,
                    const std::vector<std::string> &inputNames,
                    std::string &name, std::string &file, std::string &why) {
  const std::string *best = nullptr;
  for (const std::string &n : inputNames)
    if (spec.size() > n.size() && spec.compare(0, n.size(), n) == 0 &&
        spec[n.size()] == '=' && (!best || n.size() > best->size()))
      best = &n;
  if (!best) {
    size_t eq = spec.find('=');
    std::string known;
    for (const std::string &n : inputNames)
      known += (known.empty() ? "" : ", ") + n;
    why = eq == std::string::npos
              ? "--input needs NAME=FILE.npy, got '" + spec + "'"
              : "model has no input named '" + spec.substr(0, eq) +
                    "' (inputs: " + (known.empty() ? "none" : known) + ")";
    return false;
  }
  name = *best;
  file = spec.substr(best->size() + 1);
  if (file.empty()) {
    why = "--input " + spec + " names no file";
    return false;
  }
  return true;
}

int runBundle(std::vector<uint8_t> bundle, const std::string &displayName,
              const RunOptions &options, std::ostream &out, std::ostream &err) {
  return guarded(err, [&] {
    Session s;
    std::string why, target = options.target;
    if (!s.open(bundle, displayName, target, options.cudaGraph,
                options.serialLaunches, options.graphChain, why))
      return error(err, why);
    bundle = {}; // the runtime has its own copy of what it needs
    std::vector<std::string> paths;
    if (!planOutputs(s, options, err, paths, why) ||
        !stageInputs(s, options, err, why) || !s.bindOutputs(why) ||
        !s.run(why) || !writeOutputs(s, paths, out, err, why))
      return error(err, why);
    return 0;
  });
}

int benchBundle(std::vector<uint8_t> bundle, const std::string &displayName,
                const BenchOptions &options, std::ostream &out,
                std::ostream &err) {
  return guarded(err, [&] {
    if (options.warmup < 0)
      return error(err, "--warmup must be >= 0");
    if (options.iters < 1)
      return error(err, "--iters must be >= 1");
    Session s;
    std::string why, target = options.target;
    if (!s.open(bundle, displayName, target, options.cudaGraph,
                options.serialLaunches, options.graphChain, why))
      return error(err, why);
    // What identifies the bundle in a profile (the header's manifest
    // checksum; the bundle loaded, so it has a header).
    uint64_t manifestHash = headerManifestHash(bundle.data());
    bundle = {};
    // Seed 0, no files: every input random. The manifest does not say
    // which integer inputs are indices nor their range, and a model that
    // gathers over an axis shorter than 10 would fail on run's [0, 10):
    // integers are 0, the one index valid for every non-empty axis.
    RunOptions random;
    random.randomIntLimit = 1;
    random.inputSpecs = options.inputSpecs;
    std::ostringstream notes;
    if (!stageInputs(s, random, notes, why) || !s.bindOutputs(why))
      return error(err, why);
    for (int i = 0; i < options.warmup; ++i)
      if (!s.run(why))
        return error(err, why);
    std::vector<double> ms((size_t)options.iters);
    if (!s.timeRuns(ms, why))
      return error(err, why);
    std::sort(ms.begin(), ms.end());
    const char *order = "";
    tccrt_model_graph_order(s.model, &order);
    std::string graphOrder = order;
    const char *name = nullptr;
    tccrt_model_name(s.model, &name);
    bool onHost = target == "host";
    if (!options.profilePath.empty() && options.cudaGraph)
      err << "note: --profile launches kernel by kernel; --cuda-graph applies "
             "to the timed runs only\n";
    nlohmann::json figures = {
        {"model", name},
        {"bundle", displayName},
        {"target", target},
        {"timer", onHost ? "host clock" : "device events"},
        {"cuda_graph", options.cudaGraph},
        {"grid_dependency", !options.serialLaunches},
        {"graph_order", graphOrder},
        {"warmup", options.warmup},
        {"iters", options.iters},
        {"median_ms", percentile(ms, 0.5)},
        {"min_ms", ms.front()},
        {"max_ms", ms.back()},
        {"p10_ms", percentile(ms, 0.1)},
        {"p90_ms", percentile(ms, 0.9)}};
    out << name << " on " << target << ": " << options.iters << " runs after "
        << options.warmup << " warm-up"
        << (onHost ? ""
            : options.cudaGraph
                ? (target.rfind("gfx", 0) == 0 ? " (device events, HIP graph)"
                                               : " (device events, CUDA graph)")
                : " (device events)")
        << "\n";
    if (!graphOrder.empty())
      out << "  graph: " << graphOrder << "\n";
    for (const char *key : {"median", "min", "max", "p10", "p90"}) {
      char line[64];
      std::snprintf(line, sizeof(line), "  %-6s %10.4f ms\n", key,
                    figures[std::string(key) + "_ms"].get<double>());
      out << line;
    }
    if (!options.jsonPath.empty()) {
      std::string text = figures.dump(2) + "\n";
      if (!io::writeFileAtomically(options.jsonPath, text.data(), text.size(),
                                   why))
        return error(err, why);
    }
    if (options.profilePath.empty())
      return 0;
    nlohmann::json profile = {
        {"format", kProfileFormat},
        {"version", kProfileVersion},
        {"model", name},
        {"bundle", displayName},
        {"manifest_fnv1a64", hex64(manifestHash)},
        {"target", target},
        {"timer", onHost ? "host clock" : "device events"},
        {"graph", false},
        {"note",
         onHost ? "each launch runs to completion, timed with the steady "
                  "clock; gap_us is the runtime's time between launches"
                : "launched one by one (no graph), a device event before and "
                  "after each: per-launch times exclude graph launch gaps and "
                  "the device's waits for the host (gap_us), but include the "
                  "host's time to queue a launch where the device waited"},
        {"warmup", options.warmup},
        {"iters", options.iters},
        {"bench", figures}};
    if (!profileModel(s.model, (uint64_t)options.iters, profile, why))
      return error(err, why);
    std::string text = profile.dump(2) + "\n";
    if (!io::writeFileAtomically(options.profilePath, text.data(), text.size(),
                                 why))
      return error(err, why);
    char line[160];
    std::snprintf(line, sizeof(line),
                  "  profile: %zu launches, %.4f ms a run (sum of launches "
                  "%.4f ms)\n",
                  profile["launches"].size(),
                  profile["run"]["mean_us"].get<double>() / 1000,
                  profile["launch_total_us"].get<double>() / 1000);
    out << line;
    return 0;
  });
}

int inspectBundleFile(const std::string &path, std::ostream &out,
                      std::ostream &err, const std::string &profilePath) {
  return guarded(err, [&] {
    std::string why;
    auto b = bundle::Bundle::readManifest(path, why);
    if (!b)
      return error(err, why);
    nlohmann::json manifest = b->manifest();
    if (!profilePath.empty()) {
      // readManifest checked the header: read its manifest checksum.
      uint8_t header[bundle::kHeaderSize];
      uint64_t size;
      int fd = io::openRegularFile(path, size, why);
      if (fd < 0)
        return error(err, why);
      bool ok = io::readAt(fd, 0, header, sizeof(header), path, why);
      ::close(fd);
      if (!ok ||
          !addProfile(manifest, headerManifestHash(header), profilePath, why))
        return error(err, why);
    }
    out << manifest.dump(2, ' ', false,
                         nlohmann::json::error_handler_t::replace)
        << "\n";
    return 0;
  });
}

int inspectBundle(std::vector<uint8_t> bundle, const std::string &displayName,
                  std::ostream &out, std::ostream &err,
                  const std::string &profilePath) {
  return guarded(err, [&] {
    std::string why;
    uint64_t hash = bundle.size() >= bundle::kHeaderSize
                        ? headerManifestHash(bundle.data())
                        : 0;
    auto b = bundle::Bundle::parse(std::move(bundle), why);
    if (!b)
      return error(err, displayName + ": " + why);
    nlohmann::json manifest = b->manifest();
    if (!profilePath.empty() && !addProfile(manifest, hash, profilePath, why))
      return error(err, why);
    out << manifest.dump(2, ' ', false,
                         nlohmann::json::error_handler_t::replace)
        << "\n";
    return 0;
  });
}

} // namespace tcc::runner
