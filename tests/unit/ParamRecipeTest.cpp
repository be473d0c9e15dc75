//===- ParamRecipeTest.cpp - params computed at load from their recipe ----===//
//
// A bundle may store a `fill` or `random` param as its recipe (manifest
// version 2). The reference for the bytes the runtime computes is
// tests/frontend/check_params.py's independent Python implementation of the
// documented recipe, the one that checks the compiler's bytes too: both
// sides are held to the same bytes.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/ParamRecipe.h"
#include "runtime/include/tccrt.h"
#include "runtime/src/Bundle.h"
#include "tests/unit/TestUtil.h"

#include <cmath>
#include <cstring>
#include <functional>

using namespace tcc;
using namespace tcc::test;
using nlohmann::json;

namespace {

struct Case {
  std::string dtype;
  std::vector<int64_t> shape;
  ParamRecipe recipe;
  json init; ///< The model format's initialiser, for the Python reference.
};

ParamRecipe fill(uint64_t bits) {
  ParamRecipe r;
  r.kind = ParamRecipe::Kind::Fill;
  r.fillBits = bits;
  return r;
}

ParamRecipe random(bool normal, double a, double b, uint64_t seed) {
  ParamRecipe r;
  r.kind = normal ? ParamRecipe::Kind::Normal : ParamRecipe::Kind::Uniform;
  r.a = a;
  r.b = b;
  r.seed = seed;
  return r;
}

uint64_t numel(const std::vector<int64_t> &shape) {
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= (uint64_t)d;
  return n;
}

/// A model whose params are the cases' recipes, each copied to an output.
json recipeManifest(const std::vector<Case> &cases) {
  json m = emptyManifest("recipes");
  m["format_version"] = 2;
  int id = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    DType t = *parseDType(cases[i].dtype);
    uint64_t bytes = numel(cases[i].shape) * dtypeSize(t);
    json p =
        tensor("p" + std::to_string(i), cases[i].dtype, cases[i].shape, id);
    p["init"] = bundle::recipeToJson(cases[i].recipe, t);
    m["params"].push_back(p);
    m["outputs"].push_back(tensor("o" + std::to_string(i), cases[i].dtype,
                                  cases[i].shape, id + 1));
    m["buffers"].push_back({{"id", id}, {"kind", "param"}, {"bytes", bytes}});
    m["buffers"].push_back(
        {{"id", id + 1}, {"kind", "output"}, {"bytes", bytes}});
    m["launches"].push_back(
        {{"copy", {{"src", id}, {"dst", id + 1}, {"bytes", bytes}}}});
    id += 2;
  }
  return m;
}

/// Loads `manifest` on a host context of `threads` threads, runs it and
/// returns every output's bytes.
std::vector<std::vector<uint8_t>> runOutputs(const json &manifest,
                                             const char *threads = "3") {
  setenv("TCC_NUM_THREADS", threads, 1);
  tccrt_context *ctx = nullptr;
  REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
  unsetenv("TCC_NUM_THREADS");
  std::vector<uint8_t> bytes = makeBundle(manifest);
  tccrt_model *m = nullptr;
  INFO(tccrt_context_last_error(ctx));
  REQUIRE(tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &m) ==
          TCCRT_OK);
  size_t n = 0;
  REQUIRE(tccrt_model_num_outputs(m, &n) == TCCRT_OK);
  std::vector<std::vector<uint8_t>> outs(n);
  std::vector<void *> mem(n);
  for (size_t i = 0; i < n; ++i) {
    tccrt_tensor_info info;
    REQUIRE(tccrt_model_output_info(m, i, &info) == TCCRT_OK);
    outs[i].resize(info.bytes);
    REQUIRE(tccrt_malloc(ctx, info.bytes, &mem[i]) == TCCRT_OK);
    REQUIRE(tccrt_model_bind_output(m, i, mem[i], info.bytes) == TCCRT_OK);
  }
  REQUIRE(tccrt_model_run(m) == TCCRT_OK);
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(outs[i].data(), mem[i], outs[i].size());
    tccrt_free(ctx, mem[i]);
  }
  tccrt_model_destroy(m);
  tccrt_context_destroy(ctx);
  return outs;
}

} // namespace

TEST_CASE("the runtime computes recipe params as the documented recipe",
          "[recipe]") {
  std::vector<Case> cases = {
      {"f32",
       {3, 7},
       random(true, 0.25, 0.02, 7),
       {{"random", "normal"}, {"mean", 0.25}, {"std", 0.02}, {"seed", 7}}},
      {"f32",
       {5, 1, 3},
       random(false, -1.5, 2.5, 0),
       {{"random", "uniform"}, {"low", -1.5}, {"high", 2.5}, {"seed", 0}}},
      {"f16",
       {13},
       random(true, 0, 3, UINT64_MAX),
       {{"random", "normal"}, {"mean", 0}, {"std", 3}, {"seed", UINT64_MAX}}},
      {"f16",
       {2, 9},
       random(false, -70000, 70000, 3),
       {{"random", "uniform"}, {"low", -70000}, {"high", 70000}, {"seed", 3}}},
      {"bf16",
       {11, 3},
       random(true, -1, 0.5, 12345678901234567ull),
       {{"random", "normal"},
        {"mean", -1},
        {"std", 0.5},
        {"seed", 12345678901234567ull}}},
      {"bf16",
       {7},
       random(false, 1e-3, 1e-3, 9),
       {{"random", "uniform"}, {"low", 1e-3}, {"high", 1e-3}, {"seed", 9}}},
      {"f64",
       {4, 3},
       random(true, 0, 1, 1),
       {{"random", "normal"}, {"mean", 0}, {"std", 1}, {"seed", 1}}},
      {"f8e4m3",
       {17},
       random(true, 0, 200, 5),
       {{"random", "normal"}, {"mean", 0}, {"std", 200}, {"seed", 5}}},
      {"f8e5m2",
       {6},
       random(false, -3, 3, 6),
       {{"random", "uniform"}, {"low", -3}, {"high", 3}, {"seed", 6}}},
      {"f32",
       {},
       random(true, 1, 0, 2),
       {{"random", "normal"}, {"mean", 1}, {"std", 0}, {"seed", 2}}},
      {"f32",
       {0, 5},
       random(true, 0, 1, 2),
       {{"random", "normal"}, {"mean", 0}, {"std", 1}, {"seed", 2}}},
      // Fills: the bits the compiler writes, against the value's encoding.
      {"f32", {3, 5}, fill(0xff800000), {{"fill", "-inf"}}},
      {"f16", {9}, fill(0x3c00), {{"fill", 1.0}}},
      {"bf16", {2, 2, 3}, fill(0xbf40), {{"fill", -0.75}}},
      {"f64", {3}, fill(0x3fb999999999999aull), {{"fill", 0.1}}},
      {"i64", {5}, fill(0x8000000000000001ull), {{"fill", INT64_MIN + 1}}},
      {"i32", {1, 7}, fill(0xffffffff), {{"fill", -1}}},
      {"i8", {3}, fill(0x80), {{"fill", -128}}},
      {"bool", {4}, fill(1), {{"fill", true}}},
  };
  std::vector<std::vector<uint8_t>> got = runOutputs(recipeManifest(cases));
  REQUIRE(got.size() == cases.size());

  TempDir dir;
  json list = json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string file = dir.path(std::to_string(i) + ".bin");
    std::ofstream(file, std::ios::binary)
        .write((const char *)got[i].data(), got[i].size());
    list.push_back({{"dtype", cases[i].dtype},
                    {"n", numel(cases[i].shape)},
                    {"init", cases[i].init},
                    {"file", file}});
  }
  writeText(dir.path("cases.json"), list.dump());
  // Exact, except that Python's and C's log/cos may differ in the last bit
  // and move a rounding by one step of the dtype (as check_params.py
  // allows). Every case but those must match to the bit.
  std::string script = R"(
import json, math, sys
sys.path.insert(0, ")" +
                       std::string(TCC_TEST_SOURCE_DIR) +
                       R"(/tests/frontend")
import numpy as np
from check_params import encode, random_values, decode, ulp
bad = 0
exact = 0
for c in json.load(open(")" +
                       dir.path("cases.json") + R"(")):
    got = open(c["file"], "rb").read()
    init, dt, n = c["init"], c["dtype"], c["n"]
    if "fill" in init:
        v = init["fill"]
        v = float(v) if isinstance(v, str) else v
        exp = encode(dt, v) * n
    else:
        normal = init["random"] == "normal"
        a = init["mean"] if normal else init["low"]
        b = init["std"] if normal else init["high"]
        exp = b"".join(encode(dt, x) for x in random_values(
            init["random"], a, b, init["seed"], n))
    if got == exp:
        exact += 1
        continue
    ok = "random" in init and len(got) == len(exp)
    if ok:
        g, e = decode(dt, got), decode(dt, exp)
        ok = bool(np.all(np.abs(g - e) <= [ulp(dt, x) for x in e]))
    if not ok:
        bad += 1
        print("FAIL", c, got[:16].hex(), exp[:16].hex())
print(exact, "exact")
sys.exit(1 if bad else 0)
)";
  CHECK(python(dir, script) == 0);
}

TEST_CASE("recipe bytes do not depend on how the range is split", "[recipe]") {
  // Large enough for several threads at load (over 2^20 elements).
  const uint64_t n = (uint64_t(3) << 19) + 7;
  for (ParamRecipe r : {random(true, 0, 0.02, 11), random(false, -2, 2, 12)}) {
    for (const char *dt : {"f16", "f32"}) {
      DType t = *parseDType(dt);
      size_t es = dtypeSize(t);
      std::vector<uint8_t> whole(n * es), pieces(n * es);
      materialiseRecipe(r, t, 0, n, whole.data());
      uint64_t cut[] = {0, 1, 1000, 777777, n};
      for (int i = 0; i + 1 < 5; ++i)
        materialiseRecipe(r, t, cut[i], cut[i + 1],
                          pieces.data() + cut[i] * es);
      CHECK(pieces == whole);
      std::vector<Case> one = {{dt, {(int64_t)n}, r, json()}};
      for (const char *threads : {"1", "5"})
        CHECK(runOutputs(recipeManifest(one), threads)[0] == whole);
    }
  }
}

TEST_CASE("recipes survive the manifest's JSON to the bit", "[recipe]") {
  for (double x : {0.1, -0.0, 5e-324, 1.7976931348623157e308, 1.0 / 3,
                   -2.5e-310, 123456789.123456789}) {
    ParamRecipe r = random(true, x, std::fabs(x), UINT64_MAX);
    json j = json::parse(bundle::recipeToJson(r, DType::F32).dump());
    double a = j["mean"].get<double>(), b = j["std"].get<double>();
    CHECK(std::memcmp(&a, &r.a, 8) == 0);
    CHECK(std::memcmp(&b, &r.b, 8) == 0);
    CHECK(j["seed"].get<uint64_t>() == UINT64_MAX);
  }
  CHECK(bundle::recipeToJson(fill(0x3c00), DType::F16) ==
        json{{"fill", "0x3c00"}});
  CHECK(bundle::recipeToJson(fill(1), DType::Bool) == json{{"fill", "0x01"}});
  CHECK(bundle::recipeToJson(fill(0x8000000000000001ull), DType::I64) ==
        json{{"fill", "0x8000000000000001"}});
}

TEST_CASE("malformed recipes are refused in one line", "[recipe]") {
  auto errorAfter = [](const std::function<void(json &)> &mutate) {
    json m = recipeManifest({{"f16", {3, 5}, random(true, 0, 1, 4), json()},
                             {"i32", {2}, fill(7), json()}});
    mutate(m);
    std::string err;
    auto b = bundle::Bundle::parse(makeBundle(m), err);
    CHECK(err.find('\n') == std::string::npos);
    return b ? std::string() : err;
  };
  const std::string P = "invalid bundle: manifest: /params/";
  CHECK(errorAfter([](json &) {}) == "");
  CHECK(errorAfter([](json &m) { m["params"][0]["init"] = {{"gauss", 1}}; }) ==
        P + "0/init: unknown param recipe (this runtime knows {\"fill\": "
            "...} and {\"random\": \"normal\" or \"uniform\", ...})");
  CHECK(errorAfter([](json &m) {
          m["params"][0]["init"]["random"] = "gamma";
        }) == P + "0/init/random: unknown random distribution \"gamma\" (this "
                  "runtime knows normal and uniform)");
  CHECK(errorAfter([](json &m) { m["params"][0]["init"] = 3; }) ==
        P + "0/init: expected an object");
  CHECK(errorAfter([](json &m) { m["params"][0]["init"]["fill"] = "0x0"; }) ==
        P + "0/init: a recipe has \"fill\" or \"random\", not both");
  CHECK(errorAfter([](json &m) { m["params"][0]["init"].erase("seed"); }) ==
        P + "0/init: missing field \"seed\"");
  CHECK(errorAfter([](json &m) { m["params"][0]["init"]["seed"] = -1; }) ==
        P + "0/init/seed: expected a non-negative integer, got -1");
  CHECK(errorAfter([](json &m) { m["params"][0]["init"]["std"] = -1; }) ==
        P + "0/init: std must be >= 0 (the param is f16)");
  CHECK(errorAfter([](json &m) { m["params"][0]["init"]["mean"] = "0"; }) ==
        P + "0/init/mean: expected a number");
  CHECK(errorAfter([](json &m) {
          m["params"][1]["init"] = {
              {"random", "uniform"}, {"low", 0}, {"high", 1}, {"seed", 1}};
        }) == P + "1/init: random recipes need a float dtype (the param is "
                  "i32)");
  CHECK(errorAfter([](json &m) { m["params"][1]["init"]["fill"] = "0x07"; }) ==
        P + "1/init/fill: expected the element's bits as \"0x\" and 8 hex "
            "digits for i32");
  CHECK(errorAfter([](json &m) {
          m["params"][1]["init"]["fill"] = "0x0000000g";
        }) == P + "1/init/fill: expected the element's bits as \"0x\" and 8 "
                  "hex digits for i32");
  CHECK(errorAfter([](json &m) { m["params"][1]["blob"] = "param.1"; }) ==
        P + "1: a param has \"blob\" or \"init\", not both");
  // A shape that does not match the buffer, as for any param.
  CHECK(errorAfter([](json &m) { m["params"][0]["shape"] = {3, 4}; }) ==
        P + "0/buffer: buffer 0 has 30 bytes but the tensor needs 24");
  // Version 1 has no recipes: "init" is an unknown key there.
  CHECK(errorAfter([](json &m) { m["format_version"] = 1; }) ==
        P + "0: missing field \"blob\"");

  // Through the C API: an error status and the same line, never a crash.
  json m = recipeManifest({{"f32", {2}, random(true, 0, 1, 4), json()}});
  m["params"][0]["init"]["random"] = "cauchy";
  std::vector<uint8_t> bytes = makeBundle(m);
  tccrt_context *ctx = nullptr;
  REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
  tccrt_model *model = nullptr;
  CHECK(tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &model) ==
        TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(std::string(tccrt_context_last_error(ctx))
            .find("/params/0/init/random: unknown random distribution "
                  "\"cauchy\"") != std::string::npos);
  tccrt_context_destroy(ctx);
}
