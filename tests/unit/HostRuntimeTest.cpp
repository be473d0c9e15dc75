//===- HostRuntimeTest.cpp - libtccrt on the host with real kernels -------===//
//
// The kernels are C compiled into a shared object at test time, wrapped in a
// bundle and run through the public C API.
//
//===----------------------------------------------------------------------===//
#include "runtime/include/tccrt.h"
#include "runtime/src/Random.h"
#include "tests/unit/HostModels.h"
#include "tests/unit/TestUtil.h"

#include <cmath>
#include <cstring>

#include <sys/syscall.h>
#include <unistd.h>

using namespace tcc;
using namespace tcc::test;
using nlohmann::json;

namespace {

std::vector<float> randomFloats(size_t n, uint64_t seed, double lo, double hi) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (float &f : v)
    f = (float)rng.uniform(lo, hi);
  return v;
}

std::vector<uint8_t> floatBytes(const std::vector<float> &v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

/// A host context with `threads` threads (via TCC_NUM_THREADS).
struct Context {
  explicit Context(const char *threads = "4") {
    setenv("TCC_NUM_THREADS", threads, 1);
    REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
    unsetenv("TCC_NUM_THREADS");
  }
  ~Context() { CHECK(tccrt_context_destroy(ctx) == TCCRT_OK); }
  tccrt_model *
  load(const json &manifest,
       std::vector<std::pair<std::string, std::vector<uint8_t>>> extra = {}) {
    extra.emplace_back("host.so", kernelObject());
    auto bytes = test::makeBundle(manifest, extra);
    tccrt_model *m = nullptr;
    INFO(tccrt_context_last_error(ctx));
    REQUIRE(tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &m) ==
            TCCRT_OK);
    return m;
  }
  std::string error() const { return tccrt_context_last_error(ctx); }
  tccrt_context *ctx = nullptr;
};

} // namespace

TEST_CASE("a host .so kernel pipeline computes exp(x) * w + 1", "[host]") {
  const int64_t n = 1000;
  auto w = randomFloats(n, 11, -2, 2);
  Context c;
  tccrt_model *m = c.load(expModel(n), {{"param.w", floatBytes(w)}});
  for (uint64_t seed : {1, 2}) {
    auto x = randomFloats(n, seed, -5, 5);
    std::vector<float> y(n, -1), xc(n, -1);
    REQUIRE(tccrt_model_bind_input_by_name(m, "x", x.data(), 4 * n) ==
            TCCRT_OK);
    REQUIRE(tccrt_model_bind_output(m, 0, y.data(), 4 * n) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_output_by_name(m, "xc", xc.data(), 4 * n) ==
            TCCRT_OK);
    INFO(c.error());
    REQUIRE(tccrt_model_run(m) == TCCRT_OK);
    for (int64_t i = 0; i < n; ++i) {
      // expf is within an ulp or two; the multiply and add round once each.
      double expect = std::exp((double)x[i]) * w[i] + 1.0;
      REQUIRE(std::fabs(y[i] - expect) <= 4e-7 * 4 * std::fabs(expect) + 1e-6);
      REQUIRE(xc[i] == x[i]);
    }
  }
  CHECK(tccrt_model_destroy(m) == TCCRT_OK);
}

/// expModel as version 3: the weight the run reads is d = w + 2, made by
/// two init launches through a temp that shares the arena with the run's
/// temp; "dc" copies d out.
static json initModel(int64_t n) {
  json m = expModel(n);
  uint64_t bytes = 4 * n;
  m["format_version"] = 3;
  m["outputs"].push_back(test::tensor("dc", "f32", {n}, 6));
  m["buffers"].push_back(buffer(5, "derived", bytes));
  m["buffers"].push_back(buffer(6, "output", bytes));
  m["init_launches"] = {{{"kernel", 1}, {"args", {1, 2}}, {"grid", n}},
                        {{"kernel", 1}, {"args", {2, 5}}, {"grid", n}}};
  m["launches"][0]["args"] = {0, 5, 2};
  m["launches"].push_back(
      {{"copy", {{"src", 5}, {"dst", 6}, {"bytes", bytes}}}});
  return m;
}

TEST_CASE("init launches run once at load (manifest version 3)", "[host]") {
  const int64_t n = 777;
  auto w = randomFloats(n, 5, -2, 2);
  Context c;
  tccrt_model *m = c.load(initModel(n), {{"param.w", floatBytes(w)}});
  for (uint64_t seed : {3, 3, 4}) {
    auto x = randomFloats(n, seed, -5, 5);
    std::vector<float> y(n, -1), xc(n, -1), dc(n, -1);
    REQUIRE(tccrt_model_bind_input_by_name(m, "x", x.data(), 4 * n) ==
            TCCRT_OK);
    REQUIRE(tccrt_model_bind_output_by_name(m, "y", y.data(), 4 * n) ==
            TCCRT_OK);
    REQUIRE(tccrt_model_bind_output_by_name(m, "xc", xc.data(), 4 * n) ==
            TCCRT_OK);
    REQUIRE(tccrt_model_bind_output_by_name(m, "dc", dc.data(), 4 * n) ==
            TCCRT_OK);
    INFO(c.error());
    REQUIRE(tccrt_model_run(m) == TCCRT_OK);
    for (int64_t i = 0; i < n; ++i) {
      // Each add rounds once: the init ran exactly once, whatever the runs.
      float d = (w[i] + 1.0f) + 1.0f;
      REQUIRE(dc[i] == d);
      double expect = std::exp((double)x[i]) * d + 1.0;
      REQUIRE(std::fabs(y[i] - expect) <= 4e-7 * 4 * std::fabs(expect) + 1e-6);
    }
  }
  CHECK(tccrt_model_destroy(m) == TCCRT_OK);
}

TEST_CASE("the thread pool splits the grid into contiguous chunks", "[host]") {
  Context c("4");
  for (int64_t grid : {10, 2, 1, 37}) {
    tccrt_model *m = c.load(recordModel(grid));
    std::vector<int64_t> begins(grid, -1);
    std::vector<int32_t> hits(grid, 0);
    int32_t calls = 0;
    int64_t tid = 0;
    REQUIRE(tccrt_model_bind_output(m, 0, begins.data(), 8 * grid) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_output(m, 1, hits.data(), 4 * grid) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_output(m, 2, &calls, 4) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_output(m, 3, &tid, 8) == TCCRT_OK);
    REQUIRE(tccrt_model_run(m) == TCCRT_OK);
    INFO("grid " << grid);
    CHECK(calls == std::min<int64_t>(grid, 4));
    for (int64_t i = 0; i < grid; ++i)
      CHECK(hits[i] == 1);
    if (grid == 10) // hand-derived: chunks of 3, 3, 2, 2
      CHECK(begins == std::vector<int64_t>{0, 0, 0, 3, 3, 3, 6, 6, 8, 8});
    if (grid == 2)
      CHECK(begins == std::vector<int64_t>{0, 1});
    if (grid == 1)
      CHECK(begins == std::vector<int64_t>{0});
    // grid == 1 launches run on the calling thread.
    CHECK(tid == (int64_t)syscall(SYS_gettid));
    tccrt_model_destroy(m);
  }
}

TEST_CASE("status buffers turn into run errors", "[host]") {
  Context c;
  tccrt_model *m = c.load(gatherModel());
  std::vector<float> data = randomFloats(8, 3, -1, 1), out(5);
  std::vector<int32_t> good = {0, 7, 3, 3, 1}, bad = {0, 8, 3, -1, 1};
  REQUIRE(tccrt_model_bind_input(m, 0, data.data(), 32) == TCCRT_OK);
  REQUIRE(tccrt_model_bind_output(m, 0, out.data(), 20) == TCCRT_OK);

  REQUIRE(tccrt_model_bind_input(m, 1, good.data(), 20) == TCCRT_OK);
  REQUIRE(tccrt_model_run(m) == TCCRT_OK);
  for (int i = 0; i < 5; ++i)
    CHECK(out[i] == data[good[i]]);

  REQUIRE(tccrt_model_bind_input(m, 1, bad.data(), 20) == TCCRT_OK);
  CHECK(tccrt_model_run(m) == TCCRT_ERROR_RUN_FAILED);
  CHECK(c.error() == "index out of range in /nodes/3 (gather)");
  CHECK(std::string(tccrt_last_error()) == c.error());

  // The counter is zeroed before every run: good indices pass again.
  REQUIRE(tccrt_model_bind_input(m, 1, good.data(), 20) == TCCRT_OK);
  CHECK(tccrt_model_run(m) == TCCRT_OK);
  tccrt_model_destroy(m);
}

TEST_CASE("two models of one context are independent", "[host]") {
  Context c;
  tccrt_model *a = c.load(gatherModel()), *b = c.load(gatherModel());
  std::vector<float> da = randomFloats(8, 1, -1, 1),
                     db = randomFloats(8, 2, -1, 1);
  std::vector<float> oa(5), ob(5);
  std::vector<int32_t> ia = {0, 1, 2, 3, 4}, ib = {9, 1, 2, 3, 4};
  tccrt_model_bind_input(a, 0, da.data(), 32);
  tccrt_model_bind_input(a, 1, ia.data(), 20);
  tccrt_model_bind_output(a, 0, oa.data(), 20);
  tccrt_model_bind_input(b, 0, db.data(), 32);
  tccrt_model_bind_input(b, 1, ib.data(), 20);
  tccrt_model_bind_output(b, 0, ob.data(), 20);
  CHECK(tccrt_model_run(b) == TCCRT_ERROR_RUN_FAILED);
  CHECK(tccrt_model_run(a) == TCCRT_OK);
  CHECK(oa[4] == da[4]);
  CHECK(tccrt_context_destroy(c.ctx) == TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(c.error() == "context still has 2 model(s); destroy them first");
  tccrt_model_destroy(a);
  tccrt_model_destroy(b);
}

TEST_CASE("the C API checks its arguments", "[host]") {
  Context c;
  tccrt_model *m = c.load(gatherModel());
  float data[8] = {0};
  int32_t idx[5] = {0};
  size_t index = 99, count = 0;
  tccrt_tensor_info info;

  CHECK(tccrt_model_num_inputs(m, &count) == TCCRT_OK);
  CHECK(count == 2);
  CHECK(tccrt_model_input_info(m, 1, &info) == TCCRT_OK);
  CHECK(std::string(info.name) == "idx");
  CHECK(info.dtype == TCCRT_I32);
  CHECK(std::string(info.dtype_name) == "i32");
  CHECK(info.rank == 1);
  CHECK(info.shape[0] == 5);
  CHECK(info.bytes == 20);
  CHECK(tccrt_model_input_info(m, 2, &info) == TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(c.error() == "input index 2 is out of range (the model has 2)");
  CHECK(tccrt_model_input_info(m, 0, nullptr) == TCCRT_ERROR_INVALID_ARGUMENT);
  const char *name = nullptr;
  CHECK(tccrt_model_name(m, &name) == TCCRT_OK);
  CHECK(std::string(name) == "gather");

  CHECK(tccrt_model_find_input(m, "idx", &index) == TCCRT_OK);
  CHECK(index == 1);
  CHECK(tccrt_model_find_input(m, "nope", &index) == TCCRT_ERROR_NOT_FOUND);
  CHECK(c.error() == "model has no input named 'nope' (inputs: data, idx)");
  CHECK(tccrt_model_find_output(m, nullptr, &index) ==
        TCCRT_ERROR_INVALID_ARGUMENT);

  CHECK(tccrt_model_bind_input(m, 0, data, 31) == TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(c.error() == "input 'data' (f32) needs 32 bytes, got 31");
  CHECK(tccrt_model_bind_input(m, 0, nullptr, 32) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(c.error() == "buffer for input 'data' is NULL");
  CHECK(tccrt_model_bind_output(m, 3, data, 20) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(tccrt_model_bind_input_by_name(m, "out", data, 20) ==
        TCCRT_ERROR_NOT_FOUND);

  CHECK(tccrt_model_run(m) == TCCRT_ERROR_UNBOUND);
  CHECK(c.error() == "input 'data' is not bound");
  tccrt_model_bind_input(m, 0, data, 32);
  tccrt_model_bind_input(m, 1, idx, 20);
  CHECK(tccrt_model_run(m) == TCCRT_ERROR_UNBOUND);
  CHECK(c.error() == "output 'out' is not bound");

  CHECK(tccrt_model_run(nullptr) == TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(tccrt_last_error()) == "model must not be NULL");
  CHECK(tccrt_model_destroy(nullptr) == TCCRT_OK);

  void *p = nullptr;
  CHECK(tccrt_malloc(c.ctx, 100, &p) == TCCRT_OK);
  CHECK(tccrt_free(c.ctx, (char *)p + 1) == TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(tccrt_free(c.ctx, p) == TCCRT_OK);
  CHECK(tccrt_free(c.ctx, nullptr) == TCCRT_OK);
  CHECK(tccrt_copy_to_device(c.ctx, nullptr, data, 4) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  tccrt_model_destroy(m);
}

TEST_CASE("contexts for unavailable devices fail clearly", "[host]") {
  tccrt_context *ctx = nullptr;
  // On a machine with a GPU this succeeds; without one it must say why.
  tccrt_status cuda = tccrt_context_create(TCCRT_DEVICE_CUDA, 0, &ctx);
  if (cuda == TCCRT_OK) {
    tccrt_context_destroy(ctx);
    ctx = nullptr;
  } else {
    CHECK(cuda == TCCRT_ERROR_UNAVAILABLE);
    CHECK(std::string(tccrt_last_error())
              .find("CUDA devices are not available") != std::string::npos);
  }
  CHECK(tccrt_context_create(TCCRT_DEVICE_HIP, 0, &ctx) ==
        TCCRT_ERROR_UNAVAILABLE);
  CHECK(tccrt_context_create(TCCRT_DEVICE_HOST, 1, &ctx) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(tccrt_context_create((tccrt_device_kind)7, 0, &ctx) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(tccrt_context_create(TCCRT_DEVICE_HOST, 0, nullptr) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  setenv("TCC_NUM_THREADS", "many", 1);
  CHECK(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) ==
        TCCRT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(tccrt_last_error()) ==
        "TCC_NUM_THREADS must be an integer in [1, 1024], got 'many'");
  unsetenv("TCC_NUM_THREADS");
  CHECK(ctx == nullptr);
  CHECK(tccrt_api_version() == TCCRT_API_VERSION);
  CHECK(std::string(tccrt_dtype_name(TCCRT_BF16)) == "bf16");
  CHECK(tccrt_dtype_size(TCCRT_F8E5M2) == 1);
  CHECK(std::string(tccrt_dtype_name((tccrt_dtype)42)) == "?");
  CHECK(std::string(tccrt_status_string(TCCRT_ERROR_UNBOUND)) ==
        "unbound input or output");
}

TEST_CASE("bad bundles and code objects are refused at load", "[host]") {
  Context c;
  tccrt_model *m = nullptr;
  const char junk[] = "definitely not a bundle";
  CHECK(tccrt_model_load_memory(c.ctx, junk, sizeof(junk), &m) ==
        TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(c.error() == "not a tcc bundle (bad magic)");
  CHECK(tccrt_model_load_memory(c.ctx, nullptr, 0, &m) ==
        TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(tccrt_model_load_file(c.ctx, "/nonexistent/m.tccb", &m) ==
        TCCRT_ERROR_IO);
  CHECK(c.error().find("/nonexistent/m.tccb: cannot open") == 0);

  auto load = [&](const json &manifest, std::vector<uint8_t> code) {
    auto bytes = test::makeBundle(manifest, {{"host.so", std::move(code)}});
    return tccrt_model_load_memory(c.ctx, bytes.data(), bytes.size(), &m);
  };
  json gpu = gatherModel();
  gpu["targets"] = {"sm_90"};
  gpu["code"][0]["target"] = "sm_90";
  gpu["launches"][0]["grid"] = {1, 1, 1};
  gpu["launches"][0]["block"] = {256, 1, 1};
  CHECK(load(gpu, {1, 2, 3}) == TCCRT_ERROR_UNAVAILABLE);
  CHECK(c.error() == "bundle was compiled for sm_90 but this context runs "
                     "host (4 threads) (kernel 'gather' has code for sm_90)");

  CHECK(load(gatherModel(), std::vector<uint8_t>(100, 0)) ==
        TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(c.error() ==
        "code object 'host.so' is not an x86-64 ELF shared object");

  // A valid ELF header on garbage: dlopen itself must refuse it.
  std::vector<uint8_t> fake(kernelObject().begin(),
                            kernelObject().begin() + 64);
  fake.resize(4096, 0);
  CHECK(load(gatherModel(), fake) == TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(c.error().find("cannot load code object 'host.so'") == 0);

  json missing = gatherModel();
  missing["kernels"][0]["symbol"] = "no_such_kernel";
  CHECK(load(missing, kernelObject()) == TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(c.error() == "kernel symbol 'no_such_kernel' not found in code "
                     "object 'host.so'");
  CHECK(m == nullptr);

  // Loading from a file works like loading from memory.
  test::TempDir dir;
  bundle::BundleWriter w;
  w.addBlob("host.so", kernelObject());
  w.setManifest(gatherModel());
  std::string err;
  REQUIRE(w.writeFile(dir.path("g.tccb"), err));
  REQUIRE(tccrt_model_load_file(c.ctx, dir.path("g.tccb").c_str(), &m) ==
          TCCRT_OK);
  tccrt_model_destroy(m);
}

TEST_CASE("models with different code objects get their own code", "[host]") {
  // The loader identifies objects by path; two code objects loaded through
  // /proc/self/fd must never be mistaken for each other, whether alive at
  // the same time or one after the other.
  auto fillObject = [](int value, const std::string &flags = "") {
    TempDir dir;
    return buildSharedObject(
        dir,
        "#include <stdint.h>\nvoid fill(void **a, int64_t b, int64_t e) "
        "{ *(int32_t *)a[0] = " +
            std::to_string(value) + "; }\n",
        flags);
  };
  json m = test::emptyManifest("fill");
  m["outputs"] = {test::tensor("o", "i32", {}, 0)};
  m["buffers"] = {buffer(0, "output", 4)};
  m["kernels"] = {kernel("fill")};
  m["code"] = {{{"target", "host"}, {"blob", "host.so"}}};
  m["launches"] = {{{"kernel", 0}, {"args", {0}}, {"grid", 1}}};
  std::vector<std::vector<uint8_t>> bundles;
  for (int v : {1, 2, 3})
    bundles.push_back(test::makeBundle(m, {{"host.so", fillObject(v)}}));
  // An object dlclose cannot unload: it stays loaded under its path.
  bundles.push_back(
      test::makeBundle(m, {{"host.so", fillObject(4, "-Wl,-z,nodelete")}}));

  Context c;
  auto runOnce = [&](tccrt_model *model) {
    int32_t out = 0;
    REQUIRE(tccrt_model_bind_output(model, 0, &out, 4) == TCCRT_OK);
    REQUIRE(tccrt_model_run(model) == TCCRT_OK);
    return out;
  };
  auto load = [&](const std::vector<uint8_t> &b) {
    tccrt_model *model = nullptr;
    REQUIRE(tccrt_model_load_memory(c.ctx, b.data(), b.size(), &model) ==
            TCCRT_OK);
    return model;
  };
  tccrt_model *a = load(bundles[0]), *b = load(bundles[1]);
  CHECK(runOnce(a) == 1);
  CHECK(runOnce(b) == 2);
  tccrt_model_destroy(a);
  tccrt_model *d = load(bundles[2]);
  CHECK(runOnce(d) == 3);
  CHECK(runOnce(b) == 2);
  tccrt_model_destroy(b);
  tccrt_model_destroy(d);
  for (int round = 0; round < 3; ++round) {
    tccrt_model *stuck = load(bundles[3]);
    CHECK(runOnce(stuck) == 4);
    tccrt_model_destroy(stuck);
    tccrt_model *fresh = load(bundles[round % 3]);
    CHECK(runOnce(fresh) == round % 3 + 1);
    tccrt_model_destroy(fresh);
  }
}
