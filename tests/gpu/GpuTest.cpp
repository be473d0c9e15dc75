//===- GpuTest.cpp - libtccrt's CUDA backend through the C API ------------===//
//
//   tcc-gpu-tests --ptx KERNELS.ptx [Catch2 arguments]
//
// "[cuda]" cases load bundles over PTX that mlir-opt made from kernels.mlir,
// run them on CUDA device 0 and compare with references computed here on the
// host from fresh random inputs. Where no driver or device is found they are
// skipped: the program exits with 77 (ctest's SKIP_RETURN_CODE) after checking
// that the runtime said why. "[gpu-schema]" cases need no GPU: the manifest
// rules of GPU bundles, the runner's choice of device and the new API on the
// host.
//
//===----------------------------------------------------------------------===//
#define CATCH_CONFIG_RUNNER
#include "runtime/include/tccrt.h"
#include "runtime/tools/Runner.h"
#include "tests/gpu/GpuModels.h"
#include "tests/unit/JsonPointers.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>

using namespace tcc;
using namespace tcc::gputest;

namespace {

std::string gPtx;   // the PTX text of kernels.mlir
uint64_t gSeed = 0; // of this process's random inputs

/// A CUDA context on device 0 and the memory allocated through it.
struct Cuda {
  Cuda() {
    REQUIRE(tccrt_context_create(TCCRT_DEVICE_CUDA, 0, &ctx) == TCCRT_OK);
  }
  ~Cuda() {
    for (tccrt_model *m : models)
      tccrt_model_destroy(m);
    tccrt_context_destroy(ctx); // frees what tccrt_malloc gave
  }
  std::string error() const { return tccrt_context_last_error(ctx); }

  tccrt_model *load(const std::vector<uint8_t> &bytes) {
    tccrt_model *m = nullptr;
    INFO(error());
    REQUIRE(tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &m) ==
            TCCRT_OK);
    models.push_back(m);
    return m;
  }
  tccrt_status tryLoad(const std::vector<uint8_t> &bytes) {
    tccrt_model *m = nullptr;
    tccrt_status s =
        tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &m);
    if (m)
      models.push_back(m);
    return s;
  }
  void *alloc(size_t bytes) {
    void *p = nullptr;
    REQUIRE(tccrt_malloc(ctx, bytes, &p) == TCCRT_OK);
    REQUIRE(p != nullptr);
    return p;
  }
  template <typename T> void *upload(const std::vector<T> &v) {
    void *p = alloc(v.size() * sizeof(T));
    REQUIRE(tccrt_copy_to_device(ctx, p, v.data(), v.size() * sizeof(T)) ==
            TCCRT_OK);
    return p;
  }
  template <typename T> void put(void *p, const std::vector<T> &v) {
    REQUIRE(tccrt_copy_to_device(ctx, p, v.data(), v.size() * sizeof(T)) ==
            TCCRT_OK);
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
  Chain(Cuda &cuda, tccrt_model *model) : cuda(cuda), model(model) {
    a = cuda.alloc(kN * 4);
    b = cuda.alloc(kN * 4);
    m = cuda.alloc(kBatch * kRows * kCols * 4);
    x = cuda.alloc(kSumBlocks * kSumBlock * 4);
    y = cuda.alloc(kN * 4);
    z = cuda.alloc(kN * 4);
    mt = cuda.alloc(kBatch * kRows * kCols * 4);
    s = cuda.alloc(kSumBlocks * 4);
    bindAll();
  }
  void bindAll() {
    REQUIRE(tccrt_model_bind_input_by_name(model, "a", a, kN * 4) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_input_by_name(model, "b", b, kN * 4) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_input_by_name(
                model, "m", m, kBatch * kRows * kCols * 4) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_input_by_name(
                model, "x", x, kSumBlocks * kSumBlock * 4) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_output_by_name(model, "y", y, kN * 4) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_output_by_name(model, "z", z, kN * 4) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_output_by_name(
                model, "mt", mt, kBatch * kRows * kCols * 4) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_output_by_name(model, "s", s, kSumBlocks * 4) ==
            TCCRT_OK);
  }
  /// New random inputs, uploaded into the bound buffers.
  void fill(SplitMix64 &rng) {
    ha = randomFloats(rng, kN);
    hb = randomFloats(rng, kN);
    hm = randomFloats(rng, kBatch * kRows * kCols, -100, 100);
    hx = randomFloats(rng, kSumBlocks * kSumBlock);
    cuda.put(a, ha);
    cuda.put(b, hb);
    cuda.put(m, hm);
    cuda.put(x, hx);
  }
  /// Compares every output with the host's reference.
  void check() {
    std::vector<float> w = paramW();
    auto gy = cuda.fetch<float>(y, kN), gz = cuda.fetch<float>(z, kN);
    size_t bad = 0;
    for (int64_t i = 0; i < kN; ++i) {
      // One f32 rounding per op on both sides: the results are identical.
      float sum = ha[i] + hb[i];
      bad += gz[i] != sum || gy[i] != sum * w[i];
    }
    CHECK(bad == 0);
    auto gmt = cuda.fetch<float>(mt, kBatch * kRows * kCols);
    bad = 0;
    for (int64_t n = 0; n < kBatch; ++n)
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t c = 0; c < kCols; ++c)
          bad += gmt[(n * kCols + c) * kRows + r] !=
                 hm[(n * kRows + r) * kCols + c];
    CHECK(bad == 0);
    // An f32 tree sum of 256 terms is within log2(256) * 2^-24 * sum|x_i|
    // of the exact sum; 1e-6 * sum|x_i| bounds that.
    auto gs = cuda.fetch<float>(s, kSumBlocks);
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

  Cuda &cuda;
  tccrt_model *model;
  void *a, *b, *m, *x, *y, *z, *mt, *s;
  std::vector<float> ha, hb, hm, hx;
};

/// Shows an error message in the log (with -s), for whoever reads it.
void show(const std::string &message) {
  std::cout << "  message: " << message << "\n";
}

std::string loadError(Cuda &cuda, const json &manifest, const std::string &ptx,
                      tccrt_status expect) {
  CHECK(cuda.tryLoad(makeBundle(manifest, ptx)) == expect);
  std::string e = cuda.error();
  CHECK(e.find('\n') == std::string::npos);
  show(e);
  return e;
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

/// A fresh directory, removed with its contents at the end of the test.
struct TempDir {
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/tcc-gpu-XXXXXX";
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
// On a CUDA device
//===----------------------------------------------------------------------===//

TEST_CASE("a chain of kernels, a param, a temp and a copy", "[cuda]") {
  Cuda cuda;
  tccrt_model *model = cuda.load(makeBundle(chainModel(), gPtx));
  Chain chain(cuda, model);
  SplitMix64 rng(gSeed);
  // Runs again on new inputs in the same buffers: nothing may stick.
  for (int round = 0; round < 3; ++round) {
    chain.fill(rng);
    INFO("round " << round << ": " << cuda.error());
    REQUIRE(tccrt_model_run(model) == TCCRT_OK);
    chain.check();
  }
}

TEST_CASE("the arena, params and the model are independent per load",
          "[cuda]") {
  // Two loads of one bundle on one context, run alternately.
  Cuda cuda;
  auto bytes = makeBundle(chainModel(), gPtx);
  tccrt_model *m1 = cuda.load(bytes), *m2 = cuda.load(bytes);
  Chain c1(cuda, m1), c2(cuda, m2);
  SplitMix64 rng(gSeed + 1);
  c1.fill(rng);
  c2.fill(rng);
  REQUIRE(tccrt_model_run(m2) == TCCRT_OK);
  REQUIRE(tccrt_model_run(m1) == TCCRT_OK);
  c1.check();
  c2.check();
  CHECK(tccrt_context_destroy(cuda.ctx) == TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(cuda.error() == "context still has 2 model(s); destroy them first");
}

TEST_CASE("status counters become run errors", "[cuda]") {
  Cuda cuda;
  tccrt_model *model = cuda.load(makeBundle(gatherModel(), gPtx));
  SplitMix64 rng(gSeed + 2);
  std::vector<float> data = randomFloats(rng, kData);
  std::vector<int32_t> idx(kIndices);
  for (int32_t &i : idx)
    i = (int32_t)(rng.next() % kData);
  void *dData = cuda.upload(data), *dIdx = cuda.upload(idx);
  void *dOut = cuda.alloc(kIndices * 4);
  REQUIRE(tccrt_model_bind_input(model, 0, dData, kData * 4) == TCCRT_OK);
  REQUIRE(tccrt_model_bind_input(model, 1, dIdx, kIndices * 4) == TCCRT_OK);
  REQUIRE(tccrt_model_bind_output(model, 0, dOut, kIndices * 4) == TCCRT_OK);

  auto expectGathered = [&] {
    auto out = cuda.fetch<float>(dOut, kIndices);
    size_t bad = 0;
    for (int64_t i = 0; i < kIndices; ++i)
      bad += out[i] != (idx[i] >= 0 && idx[i] < kData ? data[idx[i]] : 0.f);
    CHECK(bad == 0);
  };
  for (const char *mode : {"0", "1"}) {
    INFO("cuda_graph " << mode);
    REQUIRE(tccrt_model_set_option(model, "cuda_graph", mode) == TCCRT_OK);
    REQUIRE(tccrt_model_run(model) == TCCRT_OK);
    expectGathered();
    idx[123] = (int32_t)kData; // one past the end
    idx[700] = -5;
    cuda.put(dIdx, idx);
    CHECK(tccrt_model_run(model) == TCCRT_ERROR_RUN_FAILED);
    CHECK(cuda.error() == kGatherMessage);
    CHECK(std::string(tccrt_last_error()) == kGatherMessage);
    expectGathered(); // the kernel still wrote every in-range element
    // The counter is zeroed before each run: a good run succeeds again.
    idx[123] = 1;
    idx[700] = 2;
    cuda.put(dIdx, idx);
    CHECK(tccrt_model_run(model) == TCCRT_OK);
    expectGathered();
  }
}

TEST_CASE("CUDA graphs replay the launches and follow rebinding", "[cuda]") {
  Cuda cuda;
  tccrt_model *model = cuda.load(makeBundle(chainModel(), gPtx));
  Chain chain(cuda, model);
  SplitMix64 rng(gSeed + 3);
  REQUIRE(tccrt_model_set_option(model, "cuda_graph", "1") == TCCRT_OK);
  for (int round = 0; round < 3; ++round) {
    chain.fill(rng); // the graph reads the buffers' new contents
    INFO("round " << round << ": " << cuda.error());
    REQUIRE(tccrt_model_run(model) == TCCRT_OK);
    chain.check();
  }
  // Rebinding y: the next run records a new graph writing the new buffer,
  // and the old buffer keeps the old result.
  std::vector<float> oldY = cuda.fetch<float>(chain.y, kN);
  void *oldBuffer = chain.y;
  chain.y = cuda.alloc(kN * 4);
  REQUIRE(tccrt_model_bind_output_by_name(model, "y", chain.y, kN * 4) ==
          TCCRT_OK);
  chain.fill(rng);
  REQUIRE(tccrt_model_run(model) == TCCRT_OK);
  chain.check();
  CHECK(cuda.fetch<float>(oldBuffer, kN) == oldY);
  // Back to launching kernel by kernel.
  REQUIRE(tccrt_model_set_option(model, "cuda_graph", "0") == TCCRT_OK);
  chain.fill(rng);
  REQUIRE(tccrt_model_run(model) == TCCRT_OK);
  chain.check();

  CHECK(tccrt_model_set_option(model, "cuda_graph", "yes") ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(cuda.error() == "option cuda_graph takes \"0\" or \"1\", not \"yes\"");
}

TEST_CASE("a CUDA graph orders launches by the memory they share", "[cuda]") {
  Cuda cuda;
  tccrt_model *model = cuda.load(makeBundle(chainModel(), gPtx));
  Chain chain(cuda, model);
  SplitMix64 rng(gSeed + 9);
  auto order = [&] {
    const char *o = nullptr;
    REQUIRE(tccrt_model_graph_order(model, &o) == TCCRT_OK);
    return std::string(o);
  };
  CHECK(order() == ""); // nothing recorded yet
  REQUIRE(tccrt_model_set_option(model, "cuda_graph", "1") == TCCRT_OK);
  // Hand-derived: the multiply and the copy wait for the add (its temp);
  // the transpose and the sums share nothing with anything.
  for (const char *concurrent : {"1", "0", "1"}) {
    INFO("graph_concurrency " << concurrent);
    REQUIRE(tccrt_model_set_option(model, "graph_concurrency", concurrent) ==
            TCCRT_OK);
    for (int round = 0; round < 2; ++round) {
      chain.fill(rng);
      REQUIRE(tccrt_model_run(model) == TCCRT_OK);
      chain.check();
    }
    CHECK(order() == (concurrent[0] == '1'
                          ? "concurrent: 2 edges among 5 pieces of work"
                          : "chain"));
  }
  // Binding y over z's memory: the multiply and the copy now write the same
  // bytes, so the copy (queued later) must wait for the multiply.
  REQUIRE(tccrt_model_bind_output_by_name(model, "y", chain.z, kN * 4) ==
          TCCRT_OK);
  chain.fill(rng);
  REQUIRE(tccrt_model_run(model) == TCCRT_OK);
  CHECK(order() == "concurrent: 2 edges among 5 pieces of work");
  std::vector<float> z = cuda.fetch<float>(chain.z, kN);
  size_t bad = 0;
  for (int64_t i = 0; i < kN; ++i)
    bad += z[i] != chain.ha[i] + chain.hb[i];
  CHECK(bad == 0);
  CHECK(tccrt_model_set_option(model, "graph_concurrency", "2") ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(cuda.error() ==
        "option graph_concurrency takes \"0\" or \"1\", not \"2\"");
}

/// tmaModel()'s y for input x: each box at its place, zeros where it hangs
/// over x's edges.
std::vector<float> tmaReference(const std::vector<float> &x) {
  const int64_t rows = kMapGrid[1] * kMapBox[1],
                cols = kMapGrid[0] * kMapBox[0];
  std::vector<float> y(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] =
          r < kMapRows && c < kMapCols ? x[r * kMapCols + c] : 0.0f;
  return y;
}

TEST_CASE("tensor maps: TMA boxes with zero fill, following rebinding",
          "[cuda]") {
  Cuda cuda;
  tccrt_model *model = cuda.load(makeBundle(tmaModel(), gPtx));
  const size_t inN = kMapRows * kMapCols,
               outN = kMapGrid[0] * kMapBox[0] * kMapGrid[1] * kMapBox[1];
  SplitMix64 rng(gSeed + 5);
  std::vector<float> ha = randomFloats(rng, inN), hb = randomFloats(rng, inN);
  void *xa = cuda.upload(ha), *xb = cuda.upload(hb), *y = cuda.alloc(outN * 4);
  REQUIRE(tccrt_model_bind_output_by_name(model, "y", y, outN * 4) == TCCRT_OK);
  int round = 0;
  auto runOn = [&](void *x, const std::vector<float> &hx) {
    INFO("round " << round++);
    REQUIRE(tccrt_model_bind_input_by_name(model, "x", x, inN * 4) == TCCRT_OK);
    // NaN everywhere first: the zeros past the edges must come from TMA.
    cuda.put(y, std::vector<float>(outN, std::nanf("")));
    INFO(cuda.error());
    REQUIRE(tccrt_model_run(model) == TCCRT_OK);
    std::vector<float> got = cuda.fetch<float>(y, outN),
                       want = tmaReference(hx);
    size_t bad = 0;
    for (size_t i = 0; i < outN; ++i)
      bad += !(got[i] == want[i]);
    CHECK(bad == 0);
  };
  runOn(xa, ha);
  runOn(xb, hb); // the map is encoded again for the new address
  runOn(xa, ha);
  // A graph records the map's bytes; rebinding records a new one.
  REQUIRE(tccrt_model_set_option(model, "cuda_graph", "1") == TCCRT_OK);
  runOn(xb, hb);
  runOn(xb, hb);
  runOn(xa, ha);
}

TEST_CASE("timing runs with device events", "[cuda][timing]") {
  Cuda cuda;
  tccrt_model *model = cuda.load(makeBundle(chainModel(), gPtx));
  Chain chain(cuda, model);
  SplitMix64 rng(gSeed + 4);
  for (const char *mode : {"0", "1"}) {
    INFO("cuda_graph " << mode);
    REQUIRE(tccrt_model_set_option(model, "cuda_graph", mode) == TCCRT_OK);
    chain.fill(rng);
    // More runs than one chunk of timestamps (256).
    std::vector<double> ms(300, -1.0);
    INFO(cuda.error());
    REQUIRE(tccrt_model_time_runs(model, ms.size(), ms.data()) == TCCRT_OK);
    for (double t : ms) {
      // Five small kernels: well above zero, far below a second.
      CHECK(t > 0.0);
      CHECK(t < 1000.0);
    }
    chain.check();
  }
  CHECK(tccrt_model_time_runs(model, 0, nullptr) == TCCRT_OK);
  CHECK(tccrt_model_time_runs(model, 3, nullptr) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("profiling every launch with device events", "[cuda][timing]") {
  Cuda cuda;
  tccrt_model *model = cuda.load(makeBundle(chainModel(), gPtx));
  Chain chain(cuda, model);
  SplitMix64 rng(gSeed + 9);
  size_t numLaunches = 0;
  REQUIRE(tccrt_model_num_launches(model, &numLaunches) == TCCRT_OK);
  REQUIRE(numLaunches == 5);
  tccrt_launch_info info;
  REQUIRE(tccrt_model_launch_info(model, 3, &info) == TCCRT_OK);
  CHECK(std::string(info.kernel) == "transpose_f32");
  CHECK(info.gpu == 1);
  CHECK(info.block[0] == 32);
  CHECK(info.block[1] == 8);
  REQUIRE(tccrt_model_launch_info(model, 2, &info) == TCCRT_OK);
  CHECK(info.kernel == nullptr); // the copy
  // "cuda_graph" is ignored: launches are queued one by one.
  for (const char *mode : {"0", "1"}) {
    INFO("cuda_graph " << mode);
    REQUIRE(tccrt_model_set_option(model, "cuda_graph", mode) == TCCRT_OK);
    chain.fill(rng);
    // More runs than one chunk of events (8192 / (2 * 5 + 2) = 682 runs).
    const size_t runs = 700;
    std::vector<double> launchMs(runs * numLaunches, -1.0),
        gapMs(runs * numLaunches, -1.0), runMs(runs, -1.0);
    INFO(cuda.error());
    REQUIRE(tccrt_model_profile_runs(model, runs, launchMs.data(), gapMs.data(),
                                     runMs.data()) == TCCRT_OK);
    for (size_t r = 0; r < runs; ++r) {
      double sum = 0;
      for (size_t i = 0; i < numLaunches; ++i) {
        double t = launchMs[r * numLaunches + i];
        // Small kernels: above zero (the copy, launch 2, may be below the
        // events' resolution), far below a second.
        CHECK(t >= 0.0);
        if (i != 2)
          CHECK(t > 0.0);
        CHECK(t < 1000.0);
        CHECK(gapMs[r * numLaunches + i] >= 0.0);
        sum += t + gapMs[r * numLaunches + i];
      }
      // Events are ordered on the stream: the launches and the gaps before
      // them are disjoint parts of the run (events resolve ~0.5 us).
      CHECK(sum <= runMs[r] + 1e-3);
    }
    chain.check();
  }
  CHECK(tccrt_model_profile_runs(model, 0, nullptr, nullptr, nullptr) ==
        TCCRT_OK);
  CHECK(tccrt_model_profile_runs(model, 2, nullptr, nullptr, nullptr) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("large dynamic shared memory is opted into", "[cuda]") {
  // Above 48 KiB a kernel must raise its limit (cuFuncSetAttribute); the
  // launch would fail otherwise.
  Cuda cuda;
  tccrt_model *model = cuda.load(makeBundle(chainModel(150000), gPtx));
  Chain chain(cuda, model);
  SplitMix64 rng(gSeed + 5);
  chain.fill(rng);
  INFO(cuda.error());
  REQUIRE(tccrt_model_run(model) == TCCRT_OK);
  chain.check();

  std::string e =
      loadError(cuda, chainModel(1u << 20), gPtx, TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(e.find("kernel 'block_sum_f32' needs 1048577 bytes of shared "
               "memory a block (1048576 dynamic, 1 static) but CUDA device "
               "0 (") == 0);
}

TEST_CASE("device memory: allocation, copies and their checks", "[cuda]") {
  Cuda cuda;
  SplitMix64 rng(gSeed + 6);
  // An odd size, through a round trip.
  std::vector<uint8_t> bytes(1000003);
  for (uint8_t &b : bytes)
    b = (uint8_t)rng.next();
  void *p = cuda.upload(bytes);
  CHECK(cuda.fetch<uint8_t>(p, bytes.size()) == bytes);
  // Part of an allocation, at an offset.
  std::vector<uint8_t> part(1000);
  REQUIRE(tccrt_copy_to_host(cuda.ctx, part.data(),
                             static_cast<uint8_t *>(p) + 5000,
                             1000) == TCCRT_OK);
  CHECK(std::equal(part.begin(), part.end(), bytes.begin() + 5000));

  void *empty = nullptr;
  REQUIRE(tccrt_malloc(cuda.ctx, 0, &empty) == TCCRT_OK);
  CHECK(empty != nullptr);
  CHECK(tccrt_copy_to_device(cuda.ctx, empty, bytes.data(), 0) == TCCRT_OK);
  CHECK(tccrt_free(cuda.ctx, empty) == TCCRT_OK);

  // Host memory where device memory belongs, and ranges past the end.
  std::vector<uint8_t> host(64);
  CHECK(tccrt_copy_to_device(cuda.ctx, host.data(), bytes.data(), 64) ==
        TCCRT_ERROR_DEVICE);
  CHECK(cuda.error().find("destination is not CUDA device memory") == 0);
  show(cuda.error());
  CHECK(tccrt_copy_to_host(cuda.ctx, part.data(), host.data(), 64) ==
        TCCRT_ERROR_DEVICE);
  CHECK(cuda.error().find("source is not CUDA device memory") == 0);
  show(cuda.error());
  void *small = cuda.alloc(4096);
  CHECK(tccrt_copy_to_device(cuda.ctx, static_cast<uint8_t *>(small) + 2048,
                             bytes.data(), 4096) == TCCRT_ERROR_DEVICE);
  CHECK(cuda.error() == "destination of 4096 bytes runs past the end of its "
                        "allocation (2048 bytes left)");
  CHECK(tccrt_free(cuda.ctx, host.data()) == TCCRT_ERROR_INVALID_ARGUMENT);

  void *huge = nullptr;
  CHECK(tccrt_malloc(cuda.ctx, size_t(1) << 50, &huge) ==
        TCCRT_ERROR_OUT_OF_MEMORY);
  CHECK(cuda.error().find("cannot allocate 1125899906842624 bytes on CUDA "
                          "device 0") == 0);
  show(cuda.error());
  CHECK(huge == nullptr);
}

TEST_CASE("binding checks that buffers are device memory", "[cuda]") {
  Cuda cuda;
  tccrt_model *model = cuda.load(makeBundle(gatherModel(), gPtx));
  std::vector<float> host(kData);
  CHECK(tccrt_model_bind_input(model, 0, host.data(), kData * 4) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(cuda.error().find("input 'data': buffer is not CUDA device memory") ==
        0);
  show(cuda.error());
  void *small = cuda.alloc(kIndices * 4);
  CHECK(tccrt_model_bind_output(model, 0, static_cast<uint8_t *>(small) + 64,
                                kIndices * 4) == TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(cuda.error() == "output 'out': buffer of 3108 bytes runs past the end "
                        "of its allocation (3044 bytes left)");
  CHECK(tccrt_model_run(model) == TCCRT_ERROR_UNBOUND);
}

TEST_CASE("load errors name the code object, the kernel and the reason",
          "[cuda]") {
  Cuda cuda;
  // A PTX syntax error: the driver's JIT log is in the message.
  std::string bad = gPtx;
  size_t at = bad.find("add.rn.f32");
  REQUIRE(at != std::string::npos);
  bad.replace(at, 10, "add.zz.f32");
  std::string e =
      loadError(cuda, chainModel(), bad, TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(e.find("cannot load PTX 'kernels.ptx': cuModuleLoadDataEx: "
               "CUDA_ERROR_INVALID_PTX") == 0);
  CHECK(contains(e, "ptxas"));
  CHECK(contains(e, "zz"));

  e = loadError(cuda, chainModel(),
                std::string("\x7f"
                            "ELF\x02\x01\x01",
                            7) +
                    std::string(100, '\0') + "junk",
                TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(e == "code object 'kernels.ptx' is not PTX text");

  json missing = gatherModel();
  missing["kernels"][0]["symbol"] = "no_such_kernel";
  CHECK(loadError(cuda, missing, gPtx, TCCRT_ERROR_INVALID_BUNDLE) ==
        "kernel symbol 'no_such_kernel' not found in code object "
        "'kernels.ptx'");

  // Fewer buffers than the kernel's parameters.
  json few = gatherModel();
  few["launches"][0]["args"] = {0, 1, 2};
  CHECK(loadError(cuda, few, gPtx, TCCRT_ERROR_INVALID_BUNDLE) ==
        "kernel 'gather_f32' takes 4 parameters but its launches pass 3 "
        "buffers");

  // Tensor maps where the kernel has pointers, and the reverse.
  json noMap = tmaModel();
  noMap["launches"][0].erase("tensor_maps");
  CHECK(loadError(cuda, noMap, gPtx, TCCRT_ERROR_INVALID_BUNDLE) ==
        "kernel 'tma_tile_f32' takes 2 parameters but its launches pass 1 "
        "buffers");
  noMap["launches"][0]["args"] = {1, 0};
  CHECK(loadError(cuda, noMap, gPtx, TCCRT_ERROR_INVALID_BUNDLE) ==
        "kernel 'tma_tile_f32': parameter 1 has 128 bytes but its launches "
        "pass an 8-byte buffer pointer there (2 pointers, then 0 tensor "
        "maps)");
  json mapped = gatherModel();
  mapped["format_version"] = 4;
  mapped["launches"][0]["args"] = {0, 1, 2};
  mapped["launches"][0]["tensor_maps"] =
      tmaModel()["launches"][0]["tensor_maps"];
  mapped["launches"][0]["tensor_maps"][0]["dims"] = {kData};
  mapped["launches"][0]["tensor_maps"][0]["strides"] = json::array();
  mapped["launches"][0]["tensor_maps"][0]["box"] = {16};
  CHECK(loadError(cuda, mapped, gPtx, TCCRT_ERROR_INVALID_BUNDLE) ==
        "kernel 'gather_f32': parameter 3 has 8 bytes but its launches pass "
        "a 128-byte tensor map there (3 pointers, then 1 tensor maps)");

  // Code for a newer device, or for another exact architecture.
  json newer = gatherModel();
  newer["code"][0]["target"] = "sm_120";
  e = loadError(cuda, newer, gPtx, TCCRT_ERROR_UNAVAILABLE);
  CHECK(e.find("bundle was compiled for sm_90 but this context runs CUDA "
               "device 0 (") == 0);
  CHECK(contains(e, "(kernel 'gather_f32' has code for sm_120)"));

  // A host bundle on a CUDA context.
  json host = gatherModel();
  host["code"] = {{{"target", "host"}, {"blob", "kernels.ptx"}}};
  host["launches"] = {{{"kernel", 0}, {"args", {0, 1, 2, 3}}, {"grid", 1}}};
  e = loadError(cuda, host, gPtx, TCCRT_ERROR_UNAVAILABLE);
  CHECK(contains(e, "(kernel 'gather_f32' has code for host)"));

  CHECK(cuda.models.empty());
}

TEST_CASE("CUDA contexts: devices and their names", "[cuda]") {
  tccrt_context *ctx = nullptr;
  CHECK(tccrt_context_create(TCCRT_DEVICE_CUDA, 4096, &ctx) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(tccrt_last_error())
            .find("CUDA device 4096 does not "
                  "exist (this machine has ") == 0);
  show(tccrt_last_error());
  CHECK(tccrt_context_create(TCCRT_DEVICE_CUDA, -1, &ctx) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(ctx == nullptr);
  // The device's own architecture-specific target runs: sm_90a on an H100 or
  // H200. Where device 0 is something else the load says so.
  Cuda cuda;
  json exact = gatherModel();
  exact["code"][0]["target"] = "sm_90a";
  tccrt_status s = cuda.tryLoad(makeBundle(exact, gPtx));
  INFO(cuda.error());
  CHECK((s == TCCRT_OK ||
         (s == TCCRT_ERROR_UNAVAILABLE && contains(cuda.error(), "sm_90a"))));
}

TEST_CASE("tcc run and bench pick the CUDA device from the bundle", "[cuda]") {
  // The runner's own path (tcc run): inputs staged to device memory from
  // seeded random values, outputs copied back and summarised.
  auto bytes = makeBundle(gatherModel(), gPtx);
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
  runner::BenchOptions bench;
  bench.warmup = 1;
  bench.iters = 5;
  std::ostringstream out, err;
  REQUIRE(runner::benchBundle(bytes, "g.tccb", bench, out, err) == 0);
  CHECK(out.str().find("gpu_gather on sm_90: 5 runs after 1 warm-up (device "
                       "events)\n") == 0);
}

//===----------------------------------------------------------------------===//
// Anywhere: the manifest rules of GPU bundles and the API on the host
//===----------------------------------------------------------------------===//

namespace {

/// The error of parsing `manifest` over the test PTX, "" if it parses.
std::string parseError(const json &manifest) {
  std::string err;
  auto b =
      bundle::Bundle::parse(makeBundle(manifest, "// no PTX needed\n"), err);
  CHECK(err.find('\n') == std::string::npos);
  CHECK((b != nullptr) == err.empty());
  return err;
}

} // namespace

TEST_CASE("GPU manifests give the typed view", "[gpu-schema]") {
  std::string err;
  auto b = bundle::Bundle::parse(makeBundle(chainModel(2048), "x"), err);
  INFO(err);
  REQUIRE(b);
  const bundle::ModelDesc &d = b->model();
  REQUIRE(d.code.size() == 1);
  CHECK(d.code[0].kind == bundle::TargetKind::Cuda);
  CHECK(d.code[0].format == "ptx");
  CHECK(d.kernels[3].sharedBytes == 2048);
  CHECK(d.kernels[0].sharedBytes == 0);
  REQUIRE(d.launches.size() == 5);
  CHECK(d.launches[0].gpu);
  CHECK(d.launches[0].gridDims == std::array<uint32_t, 3>{17, 1, 1});
  CHECK(d.launches[0].blockDims == std::array<uint32_t, 3>{256, 1, 1});
  CHECK(d.launches[3].gridDims == std::array<uint32_t, 3>{5, 9, 3});
  CHECK(d.launches[3].blockDims == std::array<uint32_t, 3>{32, 8, 1});
  CHECK(!d.launches[2].gpu); // the copy
  // The format is optional and defaults by target.
  json m = gatherModel();
  auto b2 = bundle::Bundle::parse(makeBundle(m, "x"), err);
  REQUIRE(b2);
  CHECK(b2->model().code[0].format == "ptx");
}

TEST_CASE("GPU manifest rules, each with its message", "[gpu-schema]") {
  const std::string P = "invalid bundle: manifest: ";
  struct Case {
    std::function<void(json &)> mutate;
    std::string expect;
  };
  std::vector<Case> cases = {
      {[](json &m) { m["launches"][0]["grid"] = 17; },
       P + "/launches/0/grid: expected [x, y, z] (3 integers) for a sm_90 "
           "kernel"},
      {[](json &m) {
         m["launches"][0]["grid"] = {17, 1};
       },
       P + "/launches/0/grid: expected [x, y, z] (3 integers) for a sm_90 "
           "kernel"},
      {[](json &m) { m["launches"][0].erase("block"); },
       P + "/launches/0: missing field \"block\""},
      {[](json &m) {
         m["launches"][0]["grid"] = {17, 0, 1};
       },
       P + "/launches/0/grid/1: grid.y must be at least 1"},
      {[](json &m) {
         m["launches"][0]["grid"] = {17, 1, -1};
       },
       P + "/launches/0/grid/2: expected a non-negative integer, got -1"},
      {[](json &m) {
         m["launches"][0]["grid"] = {17, 65536, 1};
       },
       P + "/launches/0/grid/1: grid.y 65536 exceeds 65535"},
      {[](json &m) {
         m["launches"][0]["grid"] = {17, 1, 65536};
       },
       P + "/launches/0/grid/2: grid.z 65536 exceeds 65535"},
      {[](json &m) {
         m["launches"][0]["grid"] = {2147483648u, 1, 1};
       },
       P + "/launches/0/grid/0: grid.x 2147483648 exceeds 2147483647"},
      {[](json &m) {
         m["launches"][0]["grid"] = {1ull << 40, 1, 1};
       },
       P + "/launches/0/grid/0: 1099511627776 is too large (limit "
           "4294967295)"},
      {[](json &m) {
         m["launches"][0]["block"] = {1025, 1, 1};
       },
       P + "/launches/0/block/0: block.x 1025 exceeds 1024"},
      {[](json &m) {
         m["launches"][0]["block"] = {1, 1, 65};
       },
       P + "/launches/0/block/2: block.z 65 exceeds 64"},
      {[](json &m) {
         m["launches"][0]["block"] = {256, 8, 1};
       },
       P + "/launches/0/block: a block of 2048 threads exceeds 1024"},
      {[](json &m) {
         m["launches"][0]["block"] = {0, 1, 1};
       },
       P + "/launches/0/block/0: block.x must be at least 1"},
      {[](json &m) {
         m["launches"][0]["block"] = {"256", 1, 1};
       },
       P + "/launches/0/block/0: expected a non-negative integer"},
      {[](json &m) {
         m["launches"][1]["args"] = {3, 2};
         m["launches"][1]["writes"] = {1};
       },
       ""}, // another kernel: its own count
      {[](json &m) {
         m["launches"].push_back(m["launches"][0]);
         m["launches"][5]["args"] = {0, 1};
       },
       P + "/launches/5/args: kernel 0 is launched with 3 buffers before "
           "and 2 here"},
      {[](json &m) { m["launches"][0]["args"] = std::vector<int>(513, 0); },
       P + "/launches/0/args: 513 buffers exceed the limit of 512 kernel "
           "parameters"},
      {[](json &m) { m["kernels"][0]["shared_bytes"] = -1; },
       P + "/kernels/0/shared_bytes: expected a non-negative integer, got -1"},
      {[](json &m) { m["kernels"][0]["shared_bytes"] = 1ull << 32; },
       P + "/kernels/0/shared_bytes: 4294967296 is too large (limit "
           "4294967295)"},
      {[](json &m) { m["code"][0]["target"] = "sm_"; },
       P + "/code/0/target: unknown target \"sm_\" (expected host, sm_NN or "
           "gfxNNN)"},
      {[](json &m) { m["code"][0]["target"] = "tpu"; },
       P + "/code/0/target: unknown target \"tpu\" (expected host, sm_NN or "
           "gfxNNN)"},
      {[](json &m) { m["code"][0]["format"] = "cubin"; },
       P + "/code/0/format: code format \"cubin\" is not supported for "
           "target sm_90 (expected \"ptx\")"},
      {[](json &m) { m["code"][0]["format"] = 1; },
       P + "/code/0/format: expected a string"},
      {[](json &m) { m["code"][0]["target"] = "sm_90a"; }, ""},
      {[](json &m) { m["code"][0]["target"] = "sm_100f"; }, ""},
      // Host kernels keep the integer grid and take no block or shared
      // memory.
      {[](json &m) {
         m["code"][0] = {{"target", "host"}, {"blob", "kernels.ptx"}};
       },
       P + "/kernels/3/shared_bytes: only GPU kernels have shared memory"},
      {[](json &m) {
         m["code"][0] = {{"target", "host"}, {"blob", "kernels.ptx"}};
         m["kernels"][3].erase("shared_bytes");
       },
       P + "/launches/0/grid: expected a non-negative integer"},
      {[](json &m) {
         m["code"][0]["target"] = "host";
         m["code"][0]["format"] = "ptx";
       },
       P + "/code/0/format: code format \"ptx\" is not supported for target "
           "host (expected \"so\")"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    json m = chainModel();
    cases[i].mutate(m);
    CHECK(parseError(m) == cases[i].expect);
  }
  // A host launch with a block.
  json h = json::parse(R"({"format_version": 1, "model": "h",
    "targets": ["host"], "inputs": [], "outputs": [], "params": [],
    "buffers": [], "arena_bytes": 0,
    "kernels": [{"name": "k", "symbol": "k", "code": "kernels.ptx"}],
    "code": [{"target": "host", "blob": "kernels.ptx"}],
    "launches": [{"kernel": 0, "args": [], "grid": 4, "block": [1, 1, 1]}]})");
  CHECK(parseError(h) == P + "/launches/0/block: host kernels take no block "
                             "(their grid is a count of work items)");
  h["launches"][0].erase("block");
  CHECK(parseError(h) == "");
}

TEST_CASE("tensor maps (manifest version 4)", "[gpu-schema]") {
  std::string err;
  auto b = bundle::Bundle::parse(makeBundle(tmaModel(), "x"), err);
  INFO(err);
  REQUIRE(b);
  const bundle::LaunchDesc &l = b->model().launches[0];
  REQUIRE(l.tensorMaps.size() == 1);
  const bundle::TensorMapDesc &t = l.tensorMaps[0];
  CHECK(t.buffer == 0);
  CHECK(t.dtype == DType::F32);
  CHECK(t.dims == std::vector<uint64_t>{40, 37});
  CHECK(t.strides == std::vector<uint64_t>{160});
  CHECK(t.box == std::vector<uint32_t>{16, 8});
  CHECK(t.swizzle == bundle::TensorMapSwizzle::None);

  const std::string P = "invalid bundle: manifest: ";
  const std::string M = P + "/launches/0/tensor_maps/0";
  struct Case {
    std::function<void(json &)> mutate;
    std::string expect;
  };
  auto map = [](json &m) -> json & {
    return m["launches"][0]["tensor_maps"][0];
  };
  std::vector<Case> cases = {
      // Edges that are allowed: the whole buffer, rank 5, the largest box,
      // bf16 under a 128B swizzle, 8 maps.
      {[&](json &m) { map(m)["dims"] = {40, 37}; }, ""},
      {[&](json &m) {
         map(m)["dims"] = {4, 5, 37, 2, 1};
         map(m)["strides"] = {16, 80, 2960, 5920};
         map(m)["box"] = {4, 1, 1, 1, 1};
       },
       ""},
      {[&](json &m) {
         map(m)["dims"] = {1480};
         map(m)["strides"] = json::array();
         map(m)["box"] = {256};
       },
       ""},
      {[&](json &m) {
         map(m)["dtype"] = "bf16";
         map(m)["dims"] = {80, 37};
         map(m)["box"] = {64, 8};
         map(m)["swizzle"] = "128B";
       },
       ""},
      {[&](json &m) {
         json one = map(m);
         m["launches"][0]["tensor_maps"] = std::vector<json>(8, one);
       },
       ""},
      {[&](json &m) {
         json one = map(m);
         m["launches"][0]["tensor_maps"] = std::vector<json>(9, one);
       },
       P + "/launches/0/tensor_maps: 9 tensor maps exceed the limit of 8 a "
           "launch"},
      {[](json &m) { m["format_version"] = 3; },
       P + "/launches/0/tensor_maps: tensor maps need manifest version 4 "
           "(this one is 3)"},
      {[](json &m) { m["format_version"] = 7; },
       P + "/format_version: unsupported manifest version 7 (this runtime "
           "reads versions 1 to 6)"},
      // Version 6: a map starting `offset` bytes in (a view of part of the
      // buffer), still inside it.
      {[&](json &m) {
         m["format_version"] = 6;
         map(m)["dims"] = {40, 36};
         map(m)["offset"] = 160;
       },
       ""},
      {[&](json &m) {
         m["format_version"] = 6;
         map(m)["offset"] = 16;
       },
       M + ": the map reaches 5936 bytes into buffer 0, which has 5920"},
      {[&](json &m) {
         m["format_version"] = 6;
         map(m)["offset"] = 8;
       },
       M + "/offset: offset 8 is not a multiple of 16 bytes"},
      {[&](json &m) { map(m)["offset"] = 16; },
       M + "/offset: tensor map offsets need manifest version 6 (this one "
           "is 4)"},
      {[](json &m) { m["code"][0]["target"] = "gfx942"; },
       P + "/launches/0/tensor_maps: only CUDA kernels take tensor maps "
           "(this launch's kernel has code for gfx942)"},
      {[](json &m) {
         m["code"][0]["target"] = "host";
         m["code"][0].erase("format");
         m["launches"][0] = {{"kernel", 0},
                             {"args", {1}},
                             {"grid", 1},
                             {"tensor_maps", m["launches"][0]["tensor_maps"]}};
       },
       P + "/launches/0/tensor_maps: only CUDA kernels take tensor maps "
           "(this launch's kernel has code for host)"},
      {[](json &m) { m["launches"][0]["tensor_maps"] = 1; },
       P + "/launches/0/tensor_maps: expected an array"},
      {[&](json &m) { map(m) = 1; }, M + ": expected an object"},
      {[&](json &m) { map(m).erase("box"); }, M + ": missing field \"box\""},
      {[&](json &m) { map(m)["buffer"] = 9; },
       M + "/buffer: buffer id 9 is not in the buffer table"},
      {[&](json &m) { map(m)["dtype"] = "u16"; },
       M + "/dtype: unknown dtype \"u16\""},
      {[&](json &m) {
         map(m)["dims"] = json::array();
         map(m)["box"] = json::array();
       },
       M + "/dims: rank 0 is outside [1, 5]"},
      {[&](json &m) {
         map(m)["dims"] = {1, 1, 1, 1, 1, 1};
         map(m)["strides"] = {16, 16, 16, 16, 16};
         map(m)["box"] = {4, 1, 1, 1, 1, 1};
       },
       M + "/dims: rank 6 is outside [1, 5]"},
      {[&](json &m) { map(m)["dims"] = {40, 0}; },
       M + "/dims/1: a tensor map's dims are at least 1"},
      {[&](json &m) { map(m)["dims"] = {(1ull << 32) + 1, 1}; },
       M + "/dims/0: 4294967297 is too large (limit 4294967296)"},
      {[&](json &m) { map(m)["strides"] = {160, 16}; },
       M + "/strides: expected 1 strides (bytes, for dims 1 to rank - 1), "
           "got 2"},
      {[&](json &m) { map(m)["strides"] = {164}; },
       M + "/strides/0: stride 164 is not a multiple of 16 bytes"},
      {[&](json &m) { map(m)["strides"] = {1ull << 40}; },
       M + "/strides/0: 1099511627776 is too large (limit 1099511627775)"},
      {[&](json &m) { map(m)["box"] = {16}; },
       M + "/box: expected 2 box dims (one per dim), got 1"},
      {[&](json &m) { map(m)["box"] = {16, 0}; },
       M + "/box/1: a box dim is at least 1"},
      {[&](json &m) { map(m)["box"] = {16, 257}; },
       M + "/box/1: 257 is too large (limit 256)"},
      {[&](json &m) { map(m)["box"] = {6, 8}; },
       M + "/box/0: the box's inner dim has 24 bytes, not a multiple of 16"},
      {[&](json &m) { map(m)["swizzle"] = "16B"; },
       M + "/swizzle: unknown swizzle \"16B\" (expected none, 32B, 64B or "
           "128B)"},
      {[&](json &m) { map(m)["swizzle"] = "32B"; },
       M + "/box/0: the box's inner dim has 64 bytes, more than the 32B "
           "swizzle's 32"},
      {[&](json &m) {
         map(m)["box"] = {32, 8};
         map(m)["swizzle"] = "64B";
       },
       M + "/box/0: the box's inner dim has 128 bytes, more than the 64B "
           "swizzle's 64"},
      {[&](json &m) {
         map(m)["box"] = {64, 8};
         map(m)["swizzle"] = "128B";
       },
       M + "/box/0: the box's inner dim has 256 bytes, more than the 128B "
           "swizzle's 128"},
      {[&](json &m) { map(m)["dims"] = {40, 38}; },
       M + ": the map reaches 6080 bytes into buffer 0, which has 5920"},
      {[&](json &m) { map(m)["dims"] = {41, 37}; },
       M + ": the map reaches 5924 bytes into buffer 0, which has 5920"},
      {[&](json &m) {
         map(m)["dims"] = {1ull << 32, 1ull << 32};
         map(m)["strides"] = {(1ull << 40) - 16};
       },
       M + ": the map reaches beyond 281474976710656 bytes into buffer 0, "
           "which has 5920"},
      // A second launch of the kernel must pass as many maps.
      {[](json &m) {
         m["launches"].push_back(m["launches"][0]);
         m["launches"][1]["tensor_maps"] = json::array();
       },
       P + "/launches/1/tensor_maps: kernel 0 is launched with 1 tensor maps "
           "before and 0 here"},
      // A map counts as 16 of the 512 pointers of the parameter space.
      {[&](json &m) {
         json one = map(m);
         m["launches"][0]["tensor_maps"] = std::vector<json>(8, one);
         m["launches"][0]["args"] = std::vector<int>(385, 1);
       },
       P + "/launches/0/args: 385 buffers and 8 tensor maps exceed the 4 KiB "
           "of kernel parameters (512 pointers, a map counting as 16)"},
      {[&](json &m) {
         json one = map(m);
         m["launches"][0]["tensor_maps"] = std::vector<json>(8, one);
         m["launches"][0]["args"] = std::vector<int>(384, 1);
       },
       ""},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    json m = tmaModel();
    cases[i].mutate(m);
    CHECK(parseError(m) == cases[i].expect);
  }
  // Every value of the map replaced by values of other types and extremes:
  // a clean accept or a one-line error (parseError checks both).
  std::vector<json> junk = {nullptr, -1, 0,   1ull << 63,    3.5,           "",
                            "128B",  16, 257, json::array(), json::object()};
  json base = tmaModel();
  for (const auto &p :
       test::jsonPointers(base["launches"][0]["tensor_maps"],
                          json::json_pointer("/launches/0/tensor_maps")))
    for (const json &j : junk) {
      json m = base;
      m[p] = j;
      INFO(p.to_string() << " = " << j.dump());
      parseError(m);
    }
}

TEST_CASE("im2col tensor maps (manifest version 5)", "[gpu-schema]") {
  // x [37, 40] f32 read as an NHWC tensor of 1 x 37 x 10 x 4 whose copies
  // move 64 pixels of its 4 channels: the whole buffer (5920 bytes).
  auto im2colModel = [] {
    json m = tmaModel();
    m["format_version"] = 5;
    json &t = m["launches"][0]["tensor_maps"][0];
    t.erase("box");
    t["dims"] = {4, 10, 37, 1};
    t["strides"] = {16, 160, 5920};
    t["im2col"] = {{"channels", 4},
                   {"pixels", 64},
                   {"lower", {-1, -1}},
                   {"upper", {-1, -1}},
                   {"element_strides", {1, 1, 2, 1}}};
    return m;
  };
  std::string err;
  auto b = bundle::Bundle::parse(makeBundle(im2colModel(), "x"), err);
  INFO(err);
  REQUIRE(b);
  const bundle::TensorMapDesc &t = b->model().launches[0].tensorMaps[0];
  CHECK(t.im2col);
  CHECK(t.box.empty());
  CHECK(t.channels == 4);
  CHECK(t.pixels == 64);
  CHECK(t.lower == std::vector<int32_t>{-1, -1});
  CHECK(t.upper == std::vector<int32_t>{-1, -1});
  CHECK(t.elementStrides == std::vector<uint32_t>{1, 1, 2, 1});

  const std::string M = "invalid bundle: manifest: /launches/0/tensor_maps/0";
  auto map = [](json &m) -> json & {
    return m["launches"][0]["tensor_maps"][0];
  };
  std::vector<std::pair<std::function<void(json &)>, std::string>> cases = {
      {[&](json &m) { map(m)["im2col"]["lower"] = {-128, 127}; }, ""},
      {[](json &m) { m["format_version"] = 4; },
       M + "/im2col: im2col tensor maps need manifest version 5 (this one is "
           "4)"},
      {[&](json &m) { map(m)["box"] = {4, 1, 1, 1}; },
       M + "/box: an im2col map has no box"},
      {[&](json &m) {
         map(m)["dims"] = {40, 37};
         map(m)["strides"] = {160};
       },
       M + "/im2col: an im2col map has rank 3 to 5, not 2"},
      {[&](json &m) { map(m)["im2col"]["lower"] = {-129, 0}; },
       M + "/im2col/lower/0: -129 is outside [-128, 127]"},
      {[&](json &m) { map(m)["im2col"]["upper"] = {0}; },
       M + "/im2col/upper: expected 2 offsets, got 1"},
      {[&](json &m) { map(m)["im2col"]["channels"] = 3; },
       M + "/im2col/channels: the box's inner dim has 12 bytes, not a "
           "multiple of 16"},
      {[&](json &m) { map(m)["im2col"]["channels"] = 257; },
       M + "/im2col/channels: 257 is too large (limit 256)"},
      {[&](json &m) { map(m)["im2col"]["pixels"] = 0; },
       M + "/im2col: channels and pixels are at least 1"},
      {[&](json &m) { map(m)["im2col"]["element_strides"] = {1, 9, 1, 1}; },
       M + "/im2col/element_strides/1: 9 is too large (limit 8)"},
      {[&](json &m) { map(m)["im2col"].erase("upper"); },
       M + "/im2col: missing field \"upper\""},
      {[&](json &m) { map(m)["dims"] = {4, 10, 38, 1}; },
       M + ": the map reaches 6080 bytes into buffer 0, which has 5920"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    json m = im2colModel();
    cases[i].first(m);
    INFO("case " << i);
    CHECK(parseError(m) == cases[i].second);
  }
}

TEST_CASE("target names", "[gpu-schema]") {
  using bundle::TargetKind;
  using bundle::targetKind;
  CHECK(targetKind("host") == TargetKind::Host);
  CHECK(targetKind("sm_90") == TargetKind::Cuda);
  CHECK(targetKind("sm_80") == TargetKind::Cuda);
  CHECK(targetKind("sm_90a") == TargetKind::Cuda);
  CHECK(targetKind("sm_100f") == TargetKind::Cuda);
  CHECK(targetKind("gfx942") == TargetKind::Hip);
  CHECK(targetKind("gfx90a") == TargetKind::Hip);
  CHECK(targetKind("gfx1100") == TargetKind::Hip);
  for (const char *bad : {"", "Host", "sm_", "sm_a", "sm_9x", "sm_90b",
                          "sm_90aa", "gfx", "gfxa", "gfx9-4", "cuda"})
    CHECK(!targetKind(bad));
}

namespace {

/// x -> y through a device copy: a host-runnable model without code.
json copyModel() {
  json m = {{"format_version", 1},      {"model", "copy"},
            {"targets", json::array()}, {"params", json::array()},
            {"kernels", json::array()}, {"code", json::array()},
            {"arena_bytes", 0}};
  m["inputs"] = {tensor("x", "f32", {5}, 0)};
  m["outputs"] = {tensor("y", "f32", {5}, 1)};
  m["buffers"] = {buffer(0, "input", 20), buffer(1, "output", 20)};
  m["launches"] = {{{"copy", {{"src", 0}, {"dst", 1}, {"bytes", 20}}}}};
  return m;
}

} // namespace

TEST_CASE("model options and timing on the host", "[gpu-schema]") {
  tccrt_context *ctx = nullptr;
  REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
  auto bytes = makeBundle(copyModel(), "x");
  tccrt_model *m = nullptr;
  REQUIRE(tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &m) ==
          TCCRT_OK);
  std::string err;
  CHECK(tccrt_model_set_option(m, "cuda_graph", "1") ==
        TCCRT_ERROR_UNAVAILABLE);
  err = tccrt_context_last_error(ctx);
  CHECK(err.find("option cuda_graph needs a CUDA context, this one runs host "
                 "(") == 0);
  CHECK(tccrt_model_set_option(m, "cuda_graph", "0") == TCCRT_OK);
  // Accepted anywhere: it changes nothing without kernels that wait.
  CHECK(tccrt_model_set_option(m, "grid_dependency", "0") == TCCRT_OK);
  CHECK(tccrt_model_set_option(m, "grid_dependency", "1") == TCCRT_OK);
  CHECK(tccrt_model_set_option(m, "grid_dependency", "yes") ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(tccrt_context_last_error(ctx)) ==
        "option grid_dependency takes \"0\" or \"1\", not \"yes\"");
  CHECK(tccrt_model_set_option(m, "graphs", "1") ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(tccrt_context_last_error(ctx)) ==
        "unknown model option 'graphs' (known: cuda_graph, grid_dependency, "
        "graph_concurrency)");
  CHECK(tccrt_model_set_option(m, nullptr, "1") ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(tccrt_model_set_option(nullptr, "cuda_graph", "1") ==
        TCCRT_ERROR_INVALID_ARGUMENT);

  std::vector<double> ms(4, -1);
  CHECK(tccrt_model_time_runs(m, ms.size(), ms.data()) == TCCRT_ERROR_UNBOUND);
  float x[5] = {1, 2, 3, 4, 5}, y[5] = {0};
  REQUIRE(tccrt_model_bind_input(m, 0, x, sizeof(x)) == TCCRT_OK);
  REQUIRE(tccrt_model_bind_output(m, 0, y, sizeof(y)) == TCCRT_OK);
  REQUIRE(tccrt_model_time_runs(m, ms.size(), ms.data()) == TCCRT_OK);
  for (double t : ms)
    CHECK(t >= 0.0);
  CHECK(y[4] == 5.0f);
  tccrt_model_destroy(m);
  tccrt_context_destroy(ctx);
}

TEST_CASE("the runner takes the device from the bundle", "[gpu-schema]") {
  // HIP is not available in this build anywhere: the error shows that a
  // gfx bundle went to a HIP context without --target.
  json m = copyModel();
  m["targets"] = {"gfx942"};
  m["kernels"] = {{{"name", "k"}, {"symbol", "k"}, {"code", "kernels.ptx"}}};
  m["code"] = {{{"target", "gfx942"}, {"blob", "kernels.ptx"}}};
  auto bytes = makeBundle(m, "x");
  std::ostringstream out, err;
  CHECK(runner::runBundle(bytes, "m.tccb", runner::RunOptions(), out, err) ==
        1);
  CHECK(err.str().find("tcc: error: HIP devices are not available") == 0);

  // A host bundle by default runs on the host, and --cuda-graph is refused.
  auto host = makeBundle(copyModel(), "x");
  TempDir dir;
  runner::RunOptions opt;
  opt.outputDir = dir.path;
  std::ostringstream out2, err2;
  CHECK(runner::runBundle(host, "c.tccb", opt, out2, err2) == 0);
  opt.cudaGraph = true;
  std::ostringstream out3, err3;
  CHECK(runner::runBundle(host, "c.tccb", opt, out3, err3) == 1);
  CHECK(err3.str().find("tcc: error: option cuda_graph needs a CUDA context") ==
        0);
}

//===----------------------------------------------------------------------===//
// main: --ptx, and the skip where there is no GPU
//===----------------------------------------------------------------------===//

int main(int argc, char **argv) {
  std::vector<char *> args;
  std::string ptxPath;
  bool cudaCases = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ptx" && i + 1 < argc) {
      ptxPath = argv[++i];
      continue;
    }
    cudaCases |= a.find("[cuda]") != std::string::npos;
    args.push_back(argv[i]);
  }
  if (cudaCases) {
    tccrt_context *ctx = nullptr;
    tccrt_status s = tccrt_context_create(TCCRT_DEVICE_CUDA, 0, &ctx);
    std::string why = tccrt_last_error();
    if (s == TCCRT_ERROR_UNAVAILABLE) {
      // Only the documented reasons may skip.
      const std::string prefix = "CUDA devices are not available: ";
      if (why.rfind(prefix, 0) != 0) {
        std::cerr << "unexpected message for a missing GPU: " << why << "\n";
        return 1;
      }
      std::cout << "SKIPPED: " << why << "\n";
      return 77;
    }
    if (s != TCCRT_OK) {
      std::cerr << "cannot create a CUDA context: " << why << "\n";
      return 1;
    }
    tccrt_context_destroy(ctx);
    if (ptxPath.empty() || !readText(ptxPath, gPtx)) {
      std::cerr << "the [cuda] cases need --ptx KERNELS.ptx (made from "
                   "tests/gpu/kernels.mlir by make_ptx.py)\n";
      return 1;
    }
  }
  const char *seed = std::getenv("TCC_GPU_TEST_SEED");
  gSeed = seed ? std::strtoull(seed, nullptr, 10) : std::random_device{}();
  std::cout << "random inputs from seed " << gSeed
            << " (TCC_GPU_TEST_SEED repeats it)\n";
  return Catch::Session().run((int)args.size(), args.data());
}
