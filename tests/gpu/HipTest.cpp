//===- HipTest.cpp - libtccrt's HIP backend through the C API -------------===//
//
//   tcc-hip-tests --hsaco-dir DIR [Catch2 arguments]
//
// "[hip]" cases load bundles over the HSACO that make_hsaco.py made from
// kernels.mlir (DIR/kernels-CHIP.hsaco, one per architecture), run them on
// HIP device 0 with the architecture it accepts and compare with references
// computed here on the host from fresh random inputs. Where no HIP runtime
// or device is found they are skipped: the program exits with 77 (ctest's
// SKIP_RETURN_CODE) after checking that the runtime said why. "[hip-schema]"
// cases need no GPU: the manifest rules of HIP bundles, the architecture
// match, the errors without a device and the runner's choice of device.
//
//===----------------------------------------------------------------------===//
#define CATCH_CONFIG_RUNNER
#include "runtime/include/tccrt.h"
#include "runtime/tools/Runner.h"
#include "tests/gpu/GpuModels.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <tuple>

using namespace tcc;
using namespace tcc::gputest;

namespace {

std::string gChip;  // the architecture device 0 accepts ("gfx942")
std::string gCode;  // the HSACO of kernels.mlir for it
uint64_t gSeed = 0; // of this process's random inputs

/// `manifest` (one of GpuModels.h's, written for sm_90 over PTX) retargeted
/// to the HIP architecture `chip` over HSACO.
json forHip(json manifest, const std::string &chip) {
  manifest["targets"] = {chip};
  manifest["code"] = {
      {{"target", chip}, {"blob", "kernels.hsaco"}, {"format", "hsaco"}}};
  for (json &k : manifest["kernels"])
    k["code"] = "kernels.hsaco";
  return manifest;
}

std::vector<uint8_t> hipBundle(const json &manifest, const std::string &code) {
  bundle::BundleWriter w;
  w.addBlob("kernels.hsaco", std::vector<uint8_t>(code.begin(), code.end()));
  if (!manifest["params"].empty())
    w.addBlob("param.w", floatBytes(paramW()));
  w.setManifest(manifest);
  return w.serialize();
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

void show(const std::string &message) {
  std::cout << "  message: " << message << "\n";
}

/// A HIP context on device 0 and the memory allocated through it.
struct Hip {
  Hip() {
    REQUIRE(tccrt_context_create(TCCRT_DEVICE_HIP, 0, &ctx) == TCCRT_OK);
  }
  ~Hip() {
    for (tccrt_model *m : models)
      tccrt_model_destroy(m);
    tccrt_context_destroy(ctx); // frees what tccrt_malloc gave
  }
  std::string error() const { return tccrt_context_last_error(ctx); }

  tccrt_status tryLoad(const std::vector<uint8_t> &bytes) {
    tccrt_model *m = nullptr;
    tccrt_status s =
        tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &m);
    if (m)
      models.push_back(m);
    return s;
  }
  tccrt_model *load(const json &manifest) {
    INFO(error());
    REQUIRE(tryLoad(hipBundle(forHip(manifest, gChip), gCode)) == TCCRT_OK);
    return models.back();
  }
  /// Loading fails with `expect`; returns the one-line message.
  std::string loadError(const json &manifest, const std::string &code,
                        tccrt_status expect) {
    CHECK(tryLoad(hipBundle(manifest, code)) == expect);
    std::string e = error();
    CHECK(e.find('\n') == std::string::npos);
    show(e);
    return e;
  }
  void *alloc(size_t bytes) {
    void *p = nullptr;
    REQUIRE(tccrt_malloc(ctx, bytes, &p) == TCCRT_OK);
    REQUIRE(p != nullptr);
    return p;
  }
  template <typename T> void put(void *p, const std::vector<T> &v) {
    REQUIRE(tccrt_copy_to_device(ctx, p, v.data(), v.size() * sizeof(T)) ==
            TCCRT_OK);
  }
  template <typename T> void *upload(const std::vector<T> &v) {
    void *p = alloc(v.size() * sizeof(T));
    put(p, v);
    return p;
  }
  template <typename T> std::vector<T> fetch(const void *p, size_t n) {
    std::vector<T> v(n);
    REQUIRE(tccrt_copy_to_host(ctx, v.data(), p, n * sizeof(T)) == TCCRT_OK);
    return v;
  }

  tccrt_context *ctx = nullptr;
  std::vector<tccrt_model *> models;
};

std::vector<float> randomFloats(SplitMix64 &rng, size_t n, double lo = -1,
                                double hi = 1) {
  std::vector<float> v(n);
  for (float &x : v)
    x = (float)rng.uniform(lo, hi);
  return v;
}

/// The chain model's inputs, its device buffers and host references.
struct Chain {
  Chain(Hip &hip, tccrt_model *model) : hip(hip), model(model) {
    a = hip.alloc(kN * 4);
    b = hip.alloc(kN * 4);
    m = hip.alloc(kBatch * kRows * kCols * 4);
    x = hip.alloc(kSumBlocks * kSumBlock * 4);
    y = hip.alloc(kN * 4);
    z = hip.alloc(kN * 4);
    mt = hip.alloc(kBatch * kRows * kCols * 4);
    s = hip.alloc(kSumBlocks * 4);
    const size_t mat = kBatch * kRows * kCols * 4;
    for (auto [name, p, bytes] :
         {std::tuple<const char *, void *, size_t>{"a", a, kN * 4},
          {"b", b, kN * 4},
          {"m", m, mat},
          {"x", x, kSumBlocks * kSumBlock * 4}})
      REQUIRE(tccrt_model_bind_input_by_name(model, name, p, bytes) ==
              TCCRT_OK);
    for (auto [name, p, bytes] :
         {std::tuple<const char *, void *, size_t>{"y", y, kN * 4},
          {"z", z, kN * 4},
          {"mt", mt, mat},
          {"s", s, kSumBlocks * 4}})
      REQUIRE(tccrt_model_bind_output_by_name(model, name, p, bytes) ==
              TCCRT_OK);
  }
  /// New random inputs, uploaded into the bound buffers.
  void fill(SplitMix64 &rng) {
    ha = randomFloats(rng, kN);
    hb = randomFloats(rng, kN);
    hm = randomFloats(rng, kBatch * kRows * kCols, -100, 100);
    hx = randomFloats(rng, kSumBlocks * kSumBlock);
    hip.put(a, ha);
    hip.put(b, hb);
    hip.put(m, hm);
    hip.put(x, hx);
  }
  /// Compares every output with the host's reference.
  void check() {
    std::vector<float> w = paramW();
    auto gy = hip.fetch<float>(y, kN), gz = hip.fetch<float>(z, kN);
    size_t bad = 0;
    for (int64_t i = 0; i < kN; ++i) {
      // One f32 rounding per op on both sides (AMD GPUs round f32 adds and
      // multiplies to nearest even as the host does): identical results.
      float sum = ha[i] + hb[i];
      bad += gz[i] != sum || gy[i] != sum * w[i];
    }
    CHECK(bad == 0);
    auto gmt = hip.fetch<float>(mt, kBatch * kRows * kCols);
    bad = 0;
    for (int64_t n = 0; n < kBatch; ++n)
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t c = 0; c < kCols; ++c)
          bad += gmt[(n * kCols + c) * kRows + r] !=
                 hm[(n * kRows + r) * kCols + c];
    CHECK(bad == 0);
    // An f32 tree sum of 256 terms is within log2(256) * 2^-24 * sum|x_i|
    // of the exact sum; 1e-6 * sum|x_i| bounds that.
    auto gs = hip.fetch<float>(s, kSumBlocks);
    for (int64_t blk = 0; blk < kSumBlocks; ++blk) {
      double exact = 0, magnitude = 0;
      for (int64_t i = 0; i < kSumBlock; ++i) {
        exact += hx[blk * kSumBlock + i];
        magnitude += std::fabs(hx[blk * kSumBlock + i]);
      }
      INFO("block " << blk);
      CHECK(std::fabs(gs[blk] - exact) <= 1e-6 * magnitude);
    }
  }

  Hip &hip;
  tccrt_model *model;
  void *a, *b, *m, *x, *y, *z, *mt, *s;
  std::vector<float> ha, hb, hm, hx;
};

/// A fresh directory, removed with its contents at the end of the test.
struct TempDir {
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/tcc-hip-XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

} // namespace

//===----------------------------------------------------------------------===//
// On a HIP device
//===----------------------------------------------------------------------===//

TEST_CASE("HIP: a chain of kernels, a param, a temp and a copy", "[hip]") {
  Hip hip;
  tccrt_model *model = hip.load(chainModel());
  Chain chain(hip, model);
  SplitMix64 rng(gSeed);
  // Runs again on new inputs in the same buffers: nothing may stick.
  for (int round = 0; round < 3; ++round) {
    chain.fill(rng);
    INFO("round " << round << ": " << hip.error());
    REQUIRE(tccrt_model_run(model) == TCCRT_OK);
    chain.check();
  }
  // A second load of the bundle has its own arena and params.
  tccrt_model *other = hip.load(chainModel());
  Chain second(hip, other);
  second.fill(rng);
  chain.fill(rng);
  REQUIRE(tccrt_model_run(other) == TCCRT_OK);
  REQUIRE(tccrt_model_run(model) == TCCRT_OK);
  second.check();
  chain.check();
}

TEST_CASE("HIP: status counters become run errors, with and without graphs",
          "[hip]") {
  Hip hip;
  tccrt_model *model = hip.load(gatherModel());
  SplitMix64 rng(gSeed + 1);
  std::vector<float> data = randomFloats(rng, kData);
  std::vector<int32_t> idx(kIndices);
  for (int32_t &i : idx)
    i = (int32_t)(rng.next() % kData);
  void *dData = hip.upload(data), *dIdx = hip.upload(idx);
  void *dOut = hip.alloc(kIndices * 4);
  REQUIRE(tccrt_model_bind_input(model, 0, dData, kData * 4) == TCCRT_OK);
  REQUIRE(tccrt_model_bind_input(model, 1, dIdx, kIndices * 4) == TCCRT_OK);
  REQUIRE(tccrt_model_bind_output(model, 0, dOut, kIndices * 4) == TCCRT_OK);
  auto expectGathered = [&] {
    auto out = hip.fetch<float>(dOut, kIndices);
    size_t bad = 0;
    for (int64_t i = 0; i < kIndices; ++i)
      bad += out[i] != (idx[i] >= 0 && idx[i] < kData ? data[idx[i]] : 0.f);
    CHECK(bad == 0);
  };
  for (const char *mode : {"0", "1"}) {
    INFO("cuda_graph " << mode << ": " << hip.error());
    REQUIRE(tccrt_model_set_option(model, "cuda_graph", mode) == TCCRT_OK);
    REQUIRE(tccrt_model_run(model) == TCCRT_OK);
    expectGathered();
    idx[123] = (int32_t)kData; // one past the end
    idx[700] = -5;
    hip.put(dIdx, idx);
    CHECK(tccrt_model_run(model) == TCCRT_ERROR_RUN_FAILED);
    CHECK(hip.error() == kGatherMessage);
    expectGathered(); // the kernel still wrote every in-range element
    // The counter is zeroed before each run: a good run succeeds again.
    idx[123] = 1;
    idx[700] = 2;
    hip.put(dIdx, idx);
    CHECK(tccrt_model_run(model) == TCCRT_OK);
    expectGathered();
  }
}

TEST_CASE("HIP graphs replay the launches and follow rebinding", "[hip]") {
  Hip hip;
  tccrt_model *model = hip.load(chainModel());
  Chain chain(hip, model);
  SplitMix64 rng(gSeed + 2);
  REQUIRE(tccrt_model_set_option(model, "cuda_graph", "1") == TCCRT_OK);
  for (int round = 0; round < 3; ++round) {
    chain.fill(rng); // the graph reads the buffers' new contents
    INFO("round " << round << ": " << hip.error());
    REQUIRE(tccrt_model_run(model) == TCCRT_OK);
    chain.check();
  }
  // Rebinding y: the next run records a new graph writing the new buffer,
  // and the old buffer keeps the old result.
  std::vector<float> oldY = hip.fetch<float>(chain.y, kN);
  void *oldBuffer = chain.y;
  chain.y = hip.alloc(kN * 4);
  REQUIRE(tccrt_model_bind_output_by_name(model, "y", chain.y, kN * 4) ==
          TCCRT_OK);
  chain.fill(rng);
  REQUIRE(tccrt_model_run(model) == TCCRT_OK);
  chain.check();
  CHECK(hip.fetch<float>(oldBuffer, kN) == oldY);
}

TEST_CASE("HIP: timing runs with device events", "[hip][timing]") {
  Hip hip;
  tccrt_model *model = hip.load(chainModel());
  Chain chain(hip, model);
  SplitMix64 rng(gSeed + 3);
  for (const char *mode : {"0", "1"}) {
    INFO("cuda_graph " << mode);
    REQUIRE(tccrt_model_set_option(model, "cuda_graph", mode) == TCCRT_OK);
    chain.fill(rng);
    // More runs than one chunk of timestamps (256).
    std::vector<double> ms(300, -1.0);
    INFO(hip.error());
    REQUIRE(tccrt_model_time_runs(model, ms.size(), ms.data()) == TCCRT_OK);
    for (double t : ms) {
      // Five small kernels: above zero, far below a second.
      CHECK(t > 0.0);
      CHECK(t < 1000.0);
    }
    chain.check();
  }
}

TEST_CASE("HIP: profiling every launch with device events", "[hip][timing]") {
  Hip hip;
  tccrt_model *model = hip.load(chainModel());
  Chain chain(hip, model);
  SplitMix64 rng(gSeed + 9);
  size_t numLaunches = 0;
  REQUIRE(tccrt_model_num_launches(model, &numLaunches) == TCCRT_OK);
  REQUIRE(numLaunches > 0);
  // "cuda_graph" is ignored: launches are queued one by one.
  for (const char *mode : {"0", "1"}) {
    INFO("cuda_graph " << mode);
    REQUIRE(tccrt_model_set_option(model, "cuda_graph", mode) == TCCRT_OK);
    chain.fill(rng);
    // More runs than one chunk of events (8192 per chunk).
    const size_t runs = 8192 / (2 * numLaunches + 2) + 20;
    std::vector<double> launchMs(runs * numLaunches, -1.0),
        gapMs(runs * numLaunches, -1.0), runMs(runs, -1.0);
    INFO(hip.error());
    REQUIRE(tccrt_model_profile_runs(model, runs, launchMs.data(), gapMs.data(),
                                     runMs.data()) == TCCRT_OK);
    for (size_t r = 0; r < runs; ++r) {
      double sum = 0;
      for (size_t i = 0; i < numLaunches; ++i) {
        double t = launchMs[r * numLaunches + i];
        CHECK(t >= 0.0);
        CHECK(t < 1000.0);
        CHECK(gapMs[r * numLaunches + i] >= 0.0);
        sum += t + gapMs[r * numLaunches + i];
      }
      // Launches and the gaps before them are disjoint parts of the run.
      CHECK(sum <= runMs[r] + 1e-3);
    }
    chain.check();
  }
}

TEST_CASE("HIP: device memory, copies and their checks", "[hip]") {
  Hip hip;
  SplitMix64 rng(gSeed + 4);
  std::vector<uint8_t> bytes(1000003); // an odd size, through a round trip
  for (uint8_t &b : bytes)
    b = (uint8_t)rng.next();
  void *p = hip.upload(bytes);
  CHECK(hip.fetch<uint8_t>(p, bytes.size()) == bytes);
  std::vector<uint8_t> part(1000);
  REQUIRE(tccrt_copy_to_host(hip.ctx, part.data(),
                             static_cast<uint8_t *>(p) + 5000,
                             1000) == TCCRT_OK);
  CHECK(std::equal(part.begin(), part.end(), bytes.begin() + 5000));

  void *empty = nullptr;
  REQUIRE(tccrt_malloc(hip.ctx, 0, &empty) == TCCRT_OK);
  CHECK(empty != nullptr);
  CHECK(tccrt_free(hip.ctx, empty) == TCCRT_OK);

  std::vector<uint8_t> host(64);
  CHECK(tccrt_copy_to_device(hip.ctx, host.data(), bytes.data(), 64) ==
        TCCRT_ERROR_DEVICE);
  CHECK(hip.error().find("destination is not HIP device memory (use "
                         "tccrt_malloc or hipMalloc on HIP device 0 (") == 0);
  show(hip.error());
  CHECK(tccrt_copy_to_host(hip.ctx, part.data(), host.data(), 64) ==
        TCCRT_ERROR_DEVICE);
  CHECK(hip.error().find("source is not HIP device memory") == 0);
  void *small = hip.alloc(4096);
  CHECK(tccrt_copy_to_device(hip.ctx, static_cast<uint8_t *>(small) + 2048,
                             bytes.data(), 4096) == TCCRT_ERROR_DEVICE);
  CHECK(hip.error() == "destination of 4096 bytes runs past the end of its "
                       "allocation (2048 bytes left)");

  void *huge = nullptr;
  CHECK(tccrt_malloc(hip.ctx, size_t(1) << 50, &huge) ==
        TCCRT_ERROR_OUT_OF_MEMORY);
  CHECK(hip.error().find("cannot allocate 1125899906842624 bytes on HIP "
                         "device 0 (") == 0);
  show(hip.error());
  CHECK(huge == nullptr);

  // Binding checks the same way.
  tccrt_model *model = hip.load(gatherModel());
  std::vector<float> hostData(kData);
  CHECK(tccrt_model_bind_input(model, 0, hostData.data(), kData * 4) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(hip.error().find("input 'data': buffer is not HIP device memory") == 0);
  void *out = hip.alloc(kIndices * 4);
  CHECK(tccrt_model_bind_output(model, 0, static_cast<uint8_t *>(out) + 64,
                                kIndices * 4) == TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(hip.error() == "output 'out': buffer of 3108 bytes runs past the end "
                       "of its allocation (3044 bytes left)");
}

TEST_CASE("HIP: load errors name the code object, the kernel and the reason",
          "[hip]") {
  Hip hip;
  json gather = forHip(gatherModel(), gChip);
  // Not an ELF file; an ELF file for another machine (x86-64).
  CHECK(
      hip.loadError(gather, "not a code object", TCCRT_ERROR_INVALID_BUNDLE) ==
      "code object 'kernels.hsaco' is not an AMD GPU code object (HSACO: an "
      "ELF file for amdgcn-amd-amdhsa)");
  std::string x86 = gCode;
  x86[18] = 62;
  x86[19] = 0;
  CHECK(hip.loadError(gather, x86, TCCRT_ERROR_INVALID_BUNDLE) ==
        "code object 'kernels.hsaco' is not an AMD GPU code object (HSACO: an "
        "ELF file for amdgcn-amd-amdhsa)");

  json missing = gather;
  missing["kernels"][0]["symbol"] = "no_such_kernel";
  CHECK(hip.loadError(missing, gCode, TCCRT_ERROR_INVALID_BUNDLE) ==
        "kernel symbol 'no_such_kernel' not found in code object "
        "'kernels.hsaco'");

  // Code for another architecture is refused before it is loaded.
  std::string other = gChip == "gfx942" ? "gfx90a" : "gfx942";
  std::string e = hip.loadError(forHip(gatherModel(), other), gCode,
                                TCCRT_ERROR_UNAVAILABLE);
  CHECK(e.find("bundle was compiled for " + other +
               " but this context runs HIP device 0 (") == 0);
  CHECK(contains(e, ", " + gChip));
  CHECK(contains(e, "(kernel 'gather_f32' has code for " + other + ")"));

  // Shared memory beyond the device's, a block beyond the kernel's limit
  // (mlir-opt's kernels allow 256 threads), threads beyond 2^32 in x.
  e = hip.loadError(forHip(chainModel(1u << 20), gChip), gCode,
                    TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(e.find("kernel 'block_sum_f32' needs ") == 0);
  CHECK(contains(e, "(1048576 dynamic, "));
  CHECK(contains(e, "but HIP device 0 ("));
  json wide = gather;
  wide["launches"][0]["block"] = {512, 1, 1};
  wide["launches"][0]["grid"] = {2, 1, 1};
  e = hip.loadError(wide, gCode, TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(e.find("kernel 'gather_f32' runs at most 256 threads a block on HIP "
               "device 0 (") == 0);
  CHECK(contains(e, "but a launch asks for 512"));
  json huge = gather;
  huge["launches"][0]["grid"] = {0x7fffffff, 1, 1};
  CHECK(hip.loadError(huge, gCode, TCCRT_ERROR_INVALID_BUNDLE) ==
        "kernel 'gather_f32': a launch runs 549755813632 threads in x but AMD "
        "GPUs run at most 4294967295 a dimension");
  CHECK(hip.models.empty());
}

TEST_CASE("HIP contexts: device indices", "[hip]") {
  tccrt_context *ctx = nullptr;
  CHECK(tccrt_context_create(TCCRT_DEVICE_HIP, 4096, &ctx) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(tccrt_last_error())
            .find("HIP device 4096 does not exist (this machine has ") == 0);
  CHECK(tccrt_context_create(TCCRT_DEVICE_HIP, -1, &ctx) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(ctx == nullptr);
}

TEST_CASE("tcc run and bench pick the HIP device from the bundle", "[hip]") {
  auto bytes = hipBundle(forHip(gatherModel(), gChip), gCode);
  TempDir dir;
  for (bool graph : {false, true}) {
    runner::RunOptions opt;
    opt.cudaGraph = graph;
    opt.outputDir = dir.path;
    std::ostringstream out, err;
    INFO(err.str());
    REQUIRE(runner::runBundle(bytes, "g.tccb", opt, out, err) == 0);
    CHECK(out.str().find("out: f32 (777,)") == 0);
  }
  for (bool graph : {false, true}) {
    runner::BenchOptions bench;
    bench.warmup = 1;
    bench.iters = 5;
    bench.cudaGraph = graph;
    std::ostringstream out, err;
    INFO(err.str());
    REQUIRE(runner::benchBundle(bytes, "g.tccb", bench, out, err) == 0);
    CHECK(out.str().find("gpu_gather on " + gChip + ": 5 runs after 1 " +
                         "warm-up (device events" +
                         (graph ? ", HIP graph)\n" : ")\n")) == 0);
  }
}

//===----------------------------------------------------------------------===//
// Anywhere: HIP manifests, architecture names and the errors without a GPU
//===----------------------------------------------------------------------===//

TEST_CASE("HIP manifests give the typed view", "[hip-schema]") {
  std::string err;
  auto b = bundle::Bundle::parse(
      hipBundle(forHip(chainModel(2048), "gfx942"), "x"), err);
  INFO(err);
  REQUIRE(b);
  const bundle::ModelDesc &d = b->model();
  REQUIRE(d.code.size() == 1);
  CHECK(d.code[0].kind == bundle::TargetKind::Hip);
  CHECK(d.code[0].format == "hsaco");
  CHECK(d.targets == std::vector<std::string>{"gfx942"});
  CHECK(d.kernels[3].sharedBytes == 2048);
  REQUIRE(d.launches.size() == 5);
  CHECK(d.launches[0].gpu);
  CHECK(d.launches[3].gridDims == std::array<uint32_t, 3>{5, 9, 3});
  CHECK(d.launches[3].blockDims == std::array<uint32_t, 3>{32, 8, 1});

  // The format defaults to hsaco; ptx is refused for gfx and hsaco for sm.
  const std::string P = "invalid bundle: manifest: ";
  json m = forHip(gatherModel(), "gfx90a");
  m["code"][0].erase("format");
  auto b2 = bundle::Bundle::parse(hipBundle(m, "x"), err);
  REQUIRE(b2);
  CHECK(b2->model().code[0].format == "hsaco");
  m["code"][0]["format"] = "ptx";
  CHECK(!bundle::Bundle::parse(hipBundle(m, "x"), err));
  CHECK(err == P + "/code/0/format: code format \"ptx\" is not supported for "
                   "target gfx90a (expected \"hsaco\")");
  m["code"][0] = {
      {"target", "sm_90"}, {"blob", "kernels.hsaco"}, {"format", "hsaco"}};
  CHECK(!bundle::Bundle::parse(hipBundle(m, "x"), err));
  CHECK(err == P + "/code/0/format: code format \"hsaco\" is not supported "
                   "for target sm_90 (expected \"ptx\")");
  // GPU launch rules hold for gfx targets too.
  m = forHip(gatherModel(), "gfx1100");
  m["launches"][0]["grid"] = 4;
  CHECK(!bundle::Bundle::parse(hipBundle(m, "x"), err));
  CHECK(err == P + "/launches/0/grid: expected [x, y, z] (3 integers) for a "
                   "gfx1100 kernel");
}

TEST_CASE("HIP architectures match by name, features aside", "[hip-schema]") {
  using bundle::hipArchMatches;
  CHECK(hipArchMatches("gfx942:sramecc+:xnack-", "gfx942"));
  CHECK(hipArchMatches("gfx90a:sramecc+:xnack+", "gfx90a"));
  CHECK(hipArchMatches("gfx1100", "gfx1100"));
  CHECK(!hipArchMatches("gfx942:sramecc+:xnack-", "gfx94"));
  CHECK(!hipArchMatches("gfx942:sramecc+:xnack-", "gfx9420"));
  CHECK(!hipArchMatches("gfx90a", "gfx908"));
  CHECK(!hipArchMatches("gfx1100", "gfx1101"));
  CHECK(!hipArchMatches("", ""));
  CHECK(!hipArchMatches("sm_90", "sm_90"));
  CHECK(!hipArchMatches("gfx942", "host"));
}

TEST_CASE("HIP contexts without a HIP GPU say why", "[hip-schema]") {
  tccrt_context *ctx = nullptr;
  tccrt_status s = tccrt_context_create(TCCRT_DEVICE_HIP, 0, &ctx);
  std::string why = tccrt_last_error();
  show(why);
  if (s == TCCRT_OK) { // a machine with an AMD GPU
    tccrt_context_destroy(ctx);
    return;
  }
  CHECK(s == TCCRT_ERROR_UNAVAILABLE);
  CHECK(ctx == nullptr);
  CHECK(why.find('\n') == std::string::npos);
  const std::string prefix = "HIP devices are not available: ";
  REQUIRE(why.rfind(prefix, 0) == 0);
  std::string reason = why.substr(prefix.size());
  bool known = false;
  for (const char *r :
       {"no HIP runtime (libamdhip64.so not found)", "no HIP device",
        "this libtccrt was built without HIP support",
        "the HIP runtime is too old", "the HIP runtime lacks "})
    known |= reason.rfind(r, 0) == 0;
  CHECK(known);
  // The same answer every time (the runtime is probed once), also for a bad
  // index, which cannot be checked without a device.
  CHECK(tccrt_context_create(TCCRT_DEVICE_HIP, 7, &ctx) ==
        TCCRT_ERROR_UNAVAILABLE);
  CHECK(std::string(tccrt_last_error()) == why);
}

TEST_CASE("the runner sends gfx bundles to HIP", "[hip-schema]") {
  json m = forHip(gatherModel(), "gfx942");
  auto bytes = hipBundle(m, "x");
  std::ostringstream out, err;
  CHECK(runner::runBundle(bytes, "m.tccb", runner::RunOptions(), out, err) ==
        1);
  std::string e = err.str();
  show(e);
  // Without a HIP GPU the context fails; with one, "x" is no HSACO or the
  // device is not a gfx942. Either way the bundle went to HIP.
  CHECK((e.find("tcc: error: HIP devices are not available: ") == 0 ||
         e.find("tcc: error: m.tccb: code object 'kernels.hsaco' is not an "
                "AMD GPU code object") == 0 ||
         e.find("tcc: error: m.tccb: bundle was compiled for gfx942 but this "
                "context runs HIP device 0") == 0));

  // cuda_graph on the host names both GPU kinds.
  tccrt_context *ctx = nullptr;
  REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
  json copy = {{"format_version", 1},      {"model", "copy"},
               {"targets", json::array()}, {"params", json::array()},
               {"kernels", json::array()}, {"code", json::array()},
               {"arena_bytes", 0}};
  copy["inputs"] = {tensor("x", "f32", {5}, 0)};
  copy["outputs"] = {tensor("y", "f32", {5}, 1)};
  copy["buffers"] = {buffer(0, "input", 20), buffer(1, "output", 20)};
  copy["launches"] = {{{"copy", {{"src", 0}, {"dst", 1}, {"bytes", 20}}}}};
  auto host = hipBundle(copy, "x");
  tccrt_model *model = nullptr;
  REQUIRE(tccrt_model_load_memory(ctx, host.data(), host.size(), &model) ==
          TCCRT_OK);
  CHECK(tccrt_model_set_option(model, "cuda_graph", "1") ==
        TCCRT_ERROR_UNAVAILABLE);
  e = tccrt_context_last_error(ctx);
  CHECK(
      e.find("option cuda_graph needs a CUDA context, this one runs host (") ==
      0);
  CHECK(contains(e, "(or a HIP context, where it records a HIP graph)"));
  tccrt_model_destroy(model);
  tccrt_context_destroy(ctx);
}

//===----------------------------------------------------------------------===//
// main: --hsaco-dir, the architecture, and the skip where there is no GPU
//===----------------------------------------------------------------------===//

namespace {

/// Picks, from DIR/kernels-CHIP.hsaco, the code that device 0 accepts (the
/// gather model loads with it); false with `why` if there is none.
bool pickCode(const std::string &dir, std::string &why) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto &e : std::filesystem::directory_iterator(dir, ec))
    files.push_back(e.path());
  if (ec || files.empty()) {
    why = "no HSACO in '" + dir + "' (make_hsaco.py makes them)";
    return false;
  }
  std::sort(files.begin(), files.end());
  tccrt_context *ctx = nullptr;
  if (tccrt_context_create(TCCRT_DEVICE_HIP, 0, &ctx) != TCCRT_OK) {
    why = tccrt_last_error();
    return false;
  }
  std::string tried;
  for (const auto &f : files) {
    std::string name = f.filename().string();
    if (name.rfind("kernels-", 0) != 0 || f.extension() != ".hsaco")
      continue;
    std::string chip = name.substr(8, name.size() - 8 - 6), code;
    if (!readText(f.string(), code))
      continue;
    auto bytes = hipBundle(forHip(gatherModel(), chip), code);
    tccrt_model *m = nullptr;
    if (tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &m) ==
        TCCRT_OK) {
      tccrt_model_destroy(m);
      tccrt_context_destroy(ctx);
      gChip = chip;
      gCode = code;
      return true;
    }
    tried += (tried.empty() ? "" : "; ") + chip + ": " +
             tccrt_context_last_error(ctx);
  }
  tccrt_context_destroy(ctx);
  why = "no HSACO in '" + dir + "' runs on HIP device 0 (add its " +
        "architecture to TCC_HIP_TEST_CHIPS): " + tried;
  return false;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<char *> args;
  std::string dir;
  bool hipCases = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--hsaco-dir" && i + 1 < argc) {
      dir = argv[++i];
      continue;
    }
    hipCases |= a.find("[hip]") != std::string::npos;
    args.push_back(argv[i]);
  }
  if (hipCases) {
    tccrt_context *ctx = nullptr;
    tccrt_status s = tccrt_context_create(TCCRT_DEVICE_HIP, 0, &ctx);
    std::string why = tccrt_last_error();
    if (s == TCCRT_ERROR_UNAVAILABLE) {
      // Only the documented reasons may skip.
      const std::string prefix = "HIP devices are not available: ";
      if (why.rfind(prefix, 0) != 0) {
        std::cerr << "unexpected message for a missing GPU: " << why << "\n";
        return 1;
      }
      std::cout << "SKIPPED: " << why << "\n";
      return 77;
    }
    if (s != TCCRT_OK) {
      std::cerr << "cannot create a HIP context: " << why << "\n";
      return 1;
    }
    tccrt_context_destroy(ctx);
    if (dir.empty() || !pickCode(dir, why)) {
      std::cerr << "the [hip] cases need --hsaco-dir DIR with HSACO of "
                   "tests/gpu/kernels.mlir: "
                << why << "\n";
      return 1;
    }
    std::cout << "running the kernels built for " << gChip << "\n";
  }
  const char *seed = std::getenv("TCC_GPU_TEST_SEED");
  gSeed = seed ? std::strtoull(seed, nullptr, 10) : std::random_device{}();
  std::cout << "random inputs from seed " << gSeed
            << " (TCC_GPU_TEST_SEED repeats it)\n";
  return Catch::Session().run((int)args.size(), args.data());
}
