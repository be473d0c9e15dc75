//===- RunnerTest.cpp - tcc run, bench and inspect ------------------------===//
#include "runtime/tools/Runner.h"
#include "runtime/src/Npy.h"
#include "runtime/src/Random.h"
#include "tests/unit/HostModels.h"
#include "tests/unit/TestUtil.h"

#include <cmath>
#include <cstring>
#include <sstream>

using namespace tcc;
using namespace tcc::test;
using namespace tcc::runner;
using nlohmann::json;

namespace {

struct Result {
  int status;
  std::string out, err;
};

Result run(const std::vector<uint8_t> &bundle, const RunOptions &opt) {
  std::ostringstream out, err;
  int status = runBundle(bundle, "m.tccb", opt, out, err);
  return {status, out.str(), err.str()};
}

npy::Array floats(std::vector<int64_t> shape, std::vector<float> values) {
  npy::Array a;
  a.dtype = DType::F32;
  a.shape = std::move(shape);
  a.data.resize(values.size() * 4);
  std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

std::vector<float> asFloats(const npy::Array &a) {
  REQUIRE(a.dtype == DType::F32);
  std::vector<float> v(a.data.size() / 4);
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

npy::Array load(const std::string &path) {
  npy::Array a;
  std::string err;
  INFO(err);
  REQUIRE(npy::readFile(path, a, err));
  return a;
}

void save(const std::string &path, const npy::Array &a) {
  std::string err;
  REQUIRE(npy::writeFile(path, a, err));
}

/// bf16 of an f32 by round-to-nearest-even on the bits, back as f32.
float bf16Round(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16;
  std::memcpy(&f, &b, 4);
  return f;
}

bool contains(const std::string &s, const std::string &what) {
  return s.find(what) != std::string::npos;
}

} // namespace

TEST_CASE("run: inputs from .npy, outputs to .npy", "[runner]") {
  const int64_t n = 1000;
  SplitMix64 rng(5);
  std::vector<float> w(n), x(n);
  for (int64_t i = 0; i < n; ++i) {
    w[i] = (float)rng.uniform(-2, 2);
    x[i] = (float)rng.uniform(-3, 3);
  }
  auto bundle = hostBundle(expModel(n), {{"param.w", floats({n}, w).data}});
  TempDir dir;
  save(dir.path("x.npy"), floats({n}, x));
  RunOptions opt;
  opt.inputs = {{"x", dir.path("x.npy")}};
  opt.outputDir = dir.path("out/nested"); // created on demand
  Result r = run(bundle, opt);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err == "");
  CHECK(contains(r.out, "y: f32 (1000,)  min "));
  CHECK(contains(r.out, "xc: f32 (1000,)"));
  CHECK(contains(r.out, "nan 0  ["));
  auto y = asFloats(load(dir.path("out/nested/y.npy")));
  auto xc = asFloats(load(dir.path("out/nested/xc.npy")));
  for (int64_t i = 0; i < n; ++i) {
    double expect = std::exp((double)x[i]) * w[i] + 1.0;
    REQUIRE(std::fabs(y[i] - expect) <= 2e-6 * std::fabs(expect) + 1e-6);
    REQUIRE(xc[i] == x[i]);
  }
}

TEST_CASE("run: missing inputs are seeded random values", "[runner]") {
  const int64_t n = 64;
  auto bundle =
      hostBundle(expModel(n), {{"param.w", std::vector<uint8_t>(4 * n, 0)}});
  TempDir dir;
  auto runSeed = [&](uint64_t seed, const std::string &sub) {
    RunOptions opt;
    opt.seed = seed;
    opt.outputDir = dir.path(sub);
    Result r = run(bundle, opt);
    REQUIRE(r.status == 0);
    CHECK(r.err == "note: input x (f32 (64,)) not given; using random values "
                   "(seed " +
                       std::to_string(seed) + ")\n");
    return asFloats(load(dir.path(sub + "/xc.npy")));
  };
  auto a = runSeed(0, "a"), b = runSeed(0, "b"), c = runSeed(1, "c");
  CHECK(a == b);
  CHECK(a != c);
  for (float v : a) {
    CHECK(v >= -1.0f);
    CHECK(v < 1.0f);
  }
}

TEST_CASE("run: dtype conversions, narrow outputs and file names", "[runner]") {
  auto bundle = hostBundle(copyModel());
  TempDir dir;
  std::vector<float> q(12);
  SplitMix64 rng(8);
  for (float &v : q)
    v = (float)rng.uniform(-10, 10);
  save(dir.path("q.npy"), floats({3, 4}, q));
  npy::Array k;
  k.dtype = DType::I64;
  k.shape = {5};
  std::vector<int64_t> kv = {-3, 0, 7, 2147483647, -2147483648LL};
  k.data.resize(40);
  std::memcpy(k.data.data(), kv.data(), 40);
  save(dir.path("k.npy"), k);
  npy::Array e = floats({4}, {1.0f, 500.0f, -0.3f, 1e-9f});
  save(dir.path("e.npy"), e);

  RunOptions opt;
  opt.inputs = {{"q", dir.path("q.npy")},
                {"k", dir.path("k.npy")},
                {"e", dir.path("e.npy")}};
  opt.outputDir = dir.path("out");
  Result r = run(bundle, opt);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(r.err, "note: converting q from f32 to bf16\n"));
  CHECK(contains(r.err, "note: converting k from i64 to i32\n"));
  CHECK(contains(r.err, "note: converting e from f32 to f8e4m3\n"));
  CHECK(contains(r.err, "note: input b (bool (3,)) not given"));
  CHECK(contains(r.err, "note: output q/out is bf16; writing it as float32 "
                        "(exact)\n"));
  CHECK(contains(r.err, "note: output 'q/out' is written to " +
                            dir.path("out/q_out.npy")));

  auto qo = load(dir.path("out/q_out.npy"));
  CHECK(qo.shape == std::vector<int64_t>{3, 4});
  auto qv = asFloats(qo);
  for (size_t i = 0; i < q.size(); ++i)
    CHECK(qv[i] == bf16Round(q[i]));
  auto ko = load(dir.path("out/k.npy"));
  REQUIRE(ko.dtype == DType::I32);
  std::vector<int32_t> kOut(5);
  std::memcpy(kOut.data(), ko.data.data(), 20);
  CHECK(kOut == std::vector<int32_t>{-3, 0, 7, 2147483647, INT32_MIN});
  CHECK(load(dir.path("out/b.npy")).dtype == DType::Bool);
  CHECK(load(dir.path("out/h.npy")).dtype == DType::F16);
  // f8e4m3: 500 saturates to 448, -0.3 rounds to -0.3125, 1e-9 to 0.
  CHECK(asFloats(load(dir.path("out/_._e.npy"))) ==
        std::vector<float>{1.0f, 448.0f, -0.3125f, 0.0f});
  CHECK(load(dir.path("out/a_b.npy")).dtype == DType::F64);
  CHECK(load(dir.path("out/a_b_2.npy")).data ==
        load(dir.path("out/a_b.npy")).data);
  // Nothing escaped the output directory.
  size_t files = 0;
  for (auto &entry : std::filesystem::recursive_directory_iterator(dir.root()))
    files += entry.is_regular_file();
  CHECK(files == 3 + 7); // three inputs, seven outputs
}

TEST_CASE("run: errors are one clear line", "[runner]") {
  TempDir dir;
  auto copies = hostBundle(copyModel());
  auto firstError = [](const Result &r) {
    CHECK(r.status == 1);
    size_t at = r.err.find("tcc: error: ");
    REQUIRE(at != std::string::npos);
    std::string line = r.err.substr(at);
    CHECK(std::count(line.begin(), line.end(), '\n') == 1);
    return line.substr(12, line.size() - 13);
  };
  auto withInputs =
      [&](std::vector<std::pair<std::string, std::string>> inputs) {
        RunOptions opt;
        opt.inputs = std::move(inputs);
        opt.outputDir = dir.path("out");
        return firstError(run(copies, opt));
      };
  save(dir.path("q34.npy"), floats({3, 4}, std::vector<float>(12, 1)));
  save(dir.path("q43.npy"), floats({4, 3}, std::vector<float>(12, 1)));
  npy::Array big;
  big.dtype = DType::I64;
  big.shape = {5};
  big.data.assign(40, 0);
  big.data[16 + 4] = 1; // element 2 = 2^32
  save(dir.path("kbig.npy"), big);

  CHECK(withInputs({{"zz", dir.path("q34.npy")}}) ==
        "model has no input named 'zz' (inputs: q, k, b, h, e, d)");
  CHECK(withInputs({{"q", dir.path("q34.npy")}, {"q", dir.path("q34.npy")}}) ==
        "input 'q' is given twice");
  CHECK(withInputs({{"q", dir.path("q43.npy")}}) ==
        "input q: " + dir.path("q43.npy") +
            " has shape (4, 3), the model expects (3, 4)");
  CHECK(withInputs({{"k", dir.path("q34.npy")}}) ==
        "input k: " + dir.path("q34.npy") +
            " has shape (3, 4), the model expects (5,)");
  CHECK(withInputs({{"k", dir.path("kbig.npy")}}) ==
        "input k: " + dir.path("kbig.npy") +
            ": value 4294967296 at flat index 2 does not fit in i32");
  CHECK(withInputs({{"q", dir.path("nope.npy")}})
            .find(dir.path("nope.npy") + ": cannot open") == 0);
  save(dir.path("d.npy"), big);
  CHECK(withInputs({{"d", dir.path("d.npy")}}) ==
        "input d: " + dir.path("d.npy") +
            " has shape (5,), the model "
            "expects (2,)");
  big.shape = {2};
  big.data.resize(16);
  save(dir.path("d2.npy"), big);
  CHECK(withInputs({{"d", dir.path("d2.npy")}}) ==
        "input d: " + dir.path("d2.npy") + ": cannot convert i64 to f64");

  RunOptions opt;
  opt.target = "sm_90";
  // A bundle of copies only needs no code: it runs on a GPU machine, and
  // elsewhere the error says why.
  Result onCuda = run(copies, opt);
  if (onCuda.status != 0)
    CHECK(onCuda.err.find("tcc: error: CUDA devices are not available") !=
          std::string::npos);
  opt.target = "tpu";
  CHECK(firstError(run(copies, opt)) ==
        "unknown target 'tpu' (expected host, sm_NN or gfxNNN)");
  auto broken = copies;
  broken[broken.size() - 2] ^= 1;
  CHECK(firstError(run(broken, RunOptions())) ==
        "m.tccb: corrupted bundle: manifest checksum mismatch");
  test::writeText(dir.path("file"), "x");
  opt = RunOptions();
  opt.outputDir = dir.path("file");
  CHECK(firstError(run(copies, opt)).find("cannot create output directory") ==
        0);

  // A run-time check that fires.
  auto gather = hostBundle(gatherModel());
  npy::Array idx;
  idx.dtype = DType::I32;
  idx.shape = {5};
  idx.data.assign(20, 0);
  idx.data[8] = 9;
  save(dir.path("idx.npy"), idx);
  opt = RunOptions();
  opt.inputs = {{"idx", dir.path("idx.npy")}};
  opt.outputDir = dir.path("g");
  CHECK(firstError(run(gather, opt)) ==
        "index out of range in /nodes/3 (gather)");
}

TEST_CASE("output file stems stay inside the directory", "[runner]") {
  CHECK(outputFileStem("y") == "y");
  CHECK(outputFileStem("x.y-z_1") == "x.y-z_1");
  CHECK(outputFileStem("a/b") == "a_b");
  CHECK(outputFileStem("..") == "_.");
  CHECK(outputFileStem("../../etc/passwd") == "_._.._etc_passwd");
  CHECK(outputFileStem(".hidden") == "_hidden");
  CHECK(outputFileStem("") == "_");
  CHECK(outputFileStem("caf\xc3\xa9 x") == "caf___x");
}

TEST_CASE("bench prints and writes its figures", "[runner]") {
  TempDir dir;
  BenchOptions opt;
  opt.warmup = 2;
  opt.iters = 25;
  opt.jsonPath = dir.path("b.json");
  std::ostringstream out, err;
  auto exp =
      hostBundle(expModel(256), {{"param.w", std::vector<uint8_t>(1024)}});
  REQUIRE(benchBundle(exp, "e.tccb", opt, out, err) == 0);
  INFO(out.str() << err.str());
  CHECK(err.str() == "");
  CHECK(contains(out.str(), "exp_mul on host: 25 runs after 2 warm-up\n"));
  for (const char *key : {"median", "min", "max", "p10", "p90"})
    CHECK(contains(out.str(), std::string("  ") + key));
  std::ifstream f(dir.path("b.json"));
  json j = json::parse(f);
  CHECK(j["iters"] == 25);
  CHECK(j["warmup"] == 2);
  CHECK(j["model"] == "exp_mul");
  double mn = j["min_ms"], p10 = j["p10_ms"], med = j["median_ms"],
         p90 = j["p90_ms"], mx = j["max_ms"];
  CHECK(0 <= mn);
  CHECK(mn <= p10);
  CHECK(p10 <= med);
  CHECK(med <= p90);
  CHECK(p90 <= mx);

  std::ostringstream out2, err2;
  opt.iters = 0;
  CHECK(benchBundle(exp, "e.tccb", opt, out2, err2) == 1);
  CHECK(err2.str() == "tcc: error: --iters must be >= 1\n");
}

TEST_CASE("inspect prints only the manifest JSON", "[runner]") {
  auto bundle = hostBundle(gatherModel());
  std::ostringstream out, err;
  REQUIRE(inspectBundle(bundle, "g.tccb", out, err) == 0);
  CHECK(err.str() == "");
  json j = json::parse(out.str());
  CHECK(j["model"] == "gather");
  CHECK(j["kernels"][0]["symbol"] == "gather");
  CHECK(j["blobs"][0]["name"] == "host.so");
  json m = j;
  m.erase("blobs");
  CHECK(m == gatherModel());

  std::ostringstream out2, err2;
  bundle.resize(100);
  CHECK(inspectBundle(bundle, "g.tccb", out2, err2) == 1);
  CHECK(out2.str() == "");
  CHECK(contains(err2.str(), "tcc: error: g.tccb: truncated bundle"));
}
