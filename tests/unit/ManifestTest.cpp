//===- ManifestTest.cpp - the manifest schema: every rule refused ---------===//
#include "runtime/src/Bundle.h"
#include "tests/unit/TestUtil.h"

#include <functional>

using namespace tcc;
using namespace tcc::bundle;
using nlohmann::json;

namespace {

/// A valid manifest exercising every section: x (input) * w (param) into a
/// temp, then a temp status counter, an output y and a copy into output z.
json fullManifest() {
  json m = test::emptyManifest("full");
  m["inputs"] = {test::tensor("x", "f32", {4}, 0)};
  m["params"] = {test::tensor("w", "f32", {4}, 1)};
  m["params"][0]["blob"] = "param.w";
  m["outputs"] = {test::tensor("y", "f32", {4}, 2),
                  test::tensor("z", "f32", {4}, 5)};
  m["status"] = {{{"buffer", 4}, {"message", "index out of range"}}};
  m["buffers"] = {{{"id", 0}, {"kind", "input"}, {"bytes", 16}},
                  {{"id", 1}, {"kind", "param"}, {"bytes", 16}},
                  {{"id", 2}, {"kind", "output"}, {"bytes", 16}},
                  {{"id", 3}, {"kind", "temp"}, {"bytes", 16}, {"offset", 0}},
                  {{"id", 4}, {"kind", "temp"}, {"bytes", 4}, {"offset", 64}},
                  {{"id", 5}, {"kind", "output"}, {"bytes", 16}}};
  m["arena_bytes"] = 128;
  m["kernels"] = {{{"name", "k0"}, {"symbol", "k0"}, {"code", "host.so"}}};
  m["code"] = {{{"target", "host"}, {"blob", "host.so"}}};
  m["launches"] = {{{"kernel", 0}, {"args", {0, 1, 3, 4}}, {"grid", 4}},
                   {{"copy", {{"src", 3}, {"dst", 2}, {"bytes", 16}}}},
                   {{"copy", {{"src", 0}, {"dst", 5}, {"bytes", 16}}}}};
  return m;
}

std::vector<std::pair<std::string, std::vector<uint8_t>>> blobs() {
  return {{"param.w", std::vector<uint8_t>(16, 7)},
          {"host.so", std::vector<uint8_t>(100, 1)}};
}

/// The parse error of fullManifest() after `mutate`, "" if it parses.
std::string errorAfter(const std::function<void(json &)> &mutate) {
  json m = fullManifest();
  mutate(m);
  std::string err;
  auto b = Bundle::parse(test::makeBundle(m, blobs()), err);
  CHECK(err.find('\n') == std::string::npos);
  return b ? "" : err;
}

} // namespace

TEST_CASE("a full manifest gives the typed view", "[manifest]") {
  std::string err;
  auto b = Bundle::parse(test::makeBundle(fullManifest(), blobs()), err);
  INFO(err);
  REQUIRE(b);
  const ModelDesc &d = b->model();
  CHECK(d.arenaBytes == 128);
  REQUIRE(d.buffers.size() == 6);
  CHECK(d.buffers[4].offset == 64);
  CHECK(d.buffers[3].kind == BufferKind::Temp);
  CHECK(d.status.size() == 1);
  CHECK(d.status[0].buffer == 4);
  REQUIRE(d.launches.size() == 3);
  CHECK(d.launches[1].kind == LaunchDesc::Kind::Copy);
  CHECK(d.launches[1].src == 3);
  CHECK(d.launches[1].dst == 2);
  CHECK(d.outputs[1].name == "z");
  CHECK(d.kernels[0].code == 0);
}

TEST_CASE("buffer ids are mapped to indices", "[manifest]") {
  // Sparse, unordered ids are fine; references resolve to table positions.
  std::string err = errorAfter([](json &m) {
    for (json &b : m["buffers"])
      b["id"] = b["id"].get<int>() * 10 + 7;
    m["inputs"][0]["buffer"] = 7;
    m["params"][0]["buffer"] = 17;
    m["outputs"][0]["buffer"] = 27;
    m["outputs"][1]["buffer"] = 57;
    m["status"][0]["buffer"] = 47;
    m["launches"][0]["args"] = {7, 17, 37, 47};
    m["launches"][1]["copy"] = {{"src", 37}, {"dst", 27}, {"bytes", 16}};
    m["launches"][2]["copy"] = {{"src", 7}, {"dst", 57}, {"bytes", 16}};
  });
  CHECK(err == "");
}

TEST_CASE("optional fields and edge shapes are accepted", "[manifest]") {
  CHECK(errorAfter([](json &m) { m.erase("status"); }) == "");
  // An output listed twice (the model format allows it).
  CHECK(errorAfter([](json &m) { m["outputs"][1]["name"] = "y"; }) == "");
  // Scalars and empty tensors.
  CHECK(errorAfter([](json &m) {
          m["outputs"][1]["shape"] = json::array();
          m["buffers"][5]["bytes"] = 4;
          m["launches"][2]["copy"]["bytes"] = 4;
        }) == "");
  CHECK(errorAfter([](json &m) {
          m["outputs"][1]["shape"] = {3, 0, 5};
          m["buffers"][5]["bytes"] = 0;
          m["launches"][2]["copy"]["bytes"] = 0;
        }) == "");
  CHECK(errorAfter([](json &m) { m["launches"][0]["grid"] = 0; }) == "");
  CHECK(errorAfter([](json &m) { m["future_key"] = {{"a", 1}}; }) == "");
  CHECK(errorAfter(
            [](json &m) { m["launches"][0]["writes"] = json::array(); }) == "");
}

TEST_CASE("a launch's written arguments", "[manifest]") {
  json m = fullManifest();
  std::string err;
  auto b = Bundle::parse(test::makeBundle(m, blobs()), err);
  REQUIRE(b);
  CHECK_FALSE(b->model().launches[0].writesListed);
  m["launches"][0]["writes"] = {2, 3};
  b = Bundle::parse(test::makeBundle(m, blobs()), err);
  INFO(err);
  REQUIRE(b);
  CHECK(b->model().launches[0].writesListed);
  CHECK(b->model().launches[0].writes == std::vector<size_t>{2, 3});
  m["launches"][0]["write_slices"] = {
      {{"arg", 3}, {"offset", 2}, {"bytes", 2}, {"stride", 4}}};
  b = Bundle::parse(test::makeBundle(m, blobs()), err);
  INFO(err);
  REQUIRE(b);
  const auto &slices = b->model().launches[0].writeSlices;
  REQUIRE(slices.size() == 1);
  CHECK((slices[0].arg == 3 && slices[0].offset == 2 && slices[0].bytes == 2 &&
         slices[0].stride == 4));
}

TEST_CASE("every schema rule is enforced with its pointer", "[manifest]") {
  struct Case {
    std::function<void(json &)> mutate;
    std::string expect;
  };
  const std::string P = "invalid bundle: manifest: ";
  std::vector<Case> cases = {
      {[](json &m) { m["format_version"] = 7; },
       P + "/format_version: unsupported manifest version 7 (this runtime "
           "reads versions 1 to 6)"},
      {[](json &m) { m["format_version"] = "1"; },
       P + "/format_version: expected a non-negative integer"},
      {[](json &m) { m.erase("model"); }, P + "/: missing field \"model\""},
      {[](json &m) { m["targets"] = "host"; },
       P + "/targets: expected an array"},
      {[](json &m) { m["targets"] = {""}; },
       P + "/targets/0: expected a non-empty string"},
      {[](json &m) { m["arena_bytes"] = 1ull << 60; },
       P + "/arena_bytes: 1152921504606846976 is too large (limit "
           "281474976710656)"},
      {[](json &m) { m["buffers"][0] = 5; },
       P + "/buffers/0: expected an object"},
      {[](json &m) { m["buffers"][0]["kind"] = "weird"; },
       P + "/buffers/0/kind: unknown buffer kind \"weird\" (expected input, "
           "output, param or temp)"},
      {[](json &m) { m["buffers"][0]["bytes"] = "16"; },
       P + "/buffers/0/bytes: expected a non-negative integer"},
      {[](json &m) { m["buffers"][1]["id"] = 0; },
       P + "/buffers/1/id: duplicate buffer id 0"},
      {[](json &m) { m["buffers"][0]["id"] = 1ull << 33; },
       P + "/buffers/0/id: 8589934592 is too large (limit 4294967295)"},
      {[](json &m) { m["buffers"][3].erase("offset"); },
       P + "/buffers/3: missing field \"offset\" (temps live in the arena)"},
      {[](json &m) { m["buffers"][3]["offset"] = 32; },
       P + "/buffers/3/offset: arena offset 32 is not a multiple of 64"},
      {[](json &m) { m["buffers"][4]["bytes"] = 65; },
       P + "/buffers/4: temp at offset 64 with 65 bytes ends past "
           "arena_bytes 128"},
      {[](json &m) { m["buffers"][0]["offset"] = 0; },
       P + "/buffers/0/offset: only temp buffers have an offset"},
      {[](json &m) { m["inputs"][0]["dtype"] = "float"; },
       P + "/inputs/0/dtype: unknown dtype \"float\""},
      {[](json &m) { m["inputs"][0]["name"] = ""; },
       P + "/inputs/0/name: must not be empty"},
      {[](json &m) { m["inputs"][0]["shape"] = {-4}; },
       P + "/inputs/0/shape/0: expected a non-negative integer, got -4"},
      {[](json &m) { m["inputs"][0]["shape"] = {1.5}; },
       P + "/inputs/0/shape/0: expected a non-negative integer"},
      {[](json &m) { m["inputs"][0]["shape"] = {1ull << 40, 1ull << 40}; },
       P + "/inputs/0/shape: tensor is larger than the limit of "
           "281474976710656 bytes"},
      {[](json &m) { m["inputs"][0]["shape"] = std::vector<int>(33, 1); },
       P + "/inputs/0/shape: rank 33 exceeds the limit of 32"},
      {[](json &m) { m["inputs"][0]["shape"] = {5}; },
       P + "/inputs/0/buffer: buffer 0 has 16 bytes but the tensor needs 20"},
      {[](json &m) { m["inputs"][0]["dtype"] = "f16"; },
       P + "/inputs/0/buffer: buffer 0 has 16 bytes but the tensor needs 8"},
      {[](json &m) { m["inputs"][0]["buffer"] = 99; },
       P + "/inputs/0/buffer: buffer id 99 is not in the buffer table"},
      {[](json &m) { m["inputs"][0]["buffer"] = -1; },
       P + "/inputs/0/buffer: expected a non-negative integer, got -1"},
      {[](json &m) { m["inputs"][0]["buffer"] = 1; },
       P + "/inputs/0/buffer: buffer 1 is a param buffer, expected input"},
      {[](json &m) { m["outputs"][1]["buffer"] = 2; },
       P + "/outputs/1/buffer: buffer 2 is already used by another output"},
      {[](json &m) { m["inputs"].push_back(m["inputs"][0]); },
       P + "/inputs/1/name: duplicate name \"x\""},
      {[](json &m) { m["params"][0].erase("blob"); },
       P + "/params/0: missing field \"blob\""},
      {[](json &m) { m["params"][0]["blob"] = "nope"; },
       P + "/params/0/blob: no blob named \"nope\""},
      {[](json &m) { m["params"][0]["blob"] = "host.so"; },
       P + "/params/0/blob: blob \"host.so\" has 100 bytes, the param needs "
           "16"},
      {[](json &m) { m["outputs"].erase(1); },
       P + "/buffers/5: no output refers to buffer 5"},
      {[](json &m) { m["status"][0]["buffer"] = 3; },
       P + "/status/0/buffer: status buffer 3 must be a 4-byte temp"},
      {[](json &m) { m["status"][0]["buffer"] = 0; },
       P + "/status/0/buffer: status buffer 0 must be a 4-byte temp"},
      {[](json &m) { m["status"][0].erase("message"); },
       P + "/status/0: missing field \"message\""},
      {[](json &m) { m["code"][0]["blob"] = "nope"; },
       P + "/code/0/blob: no blob named \"nope\""},
      {[](json &m) { m["code"].push_back(m["code"][0]); },
       P + "/code/1/blob: blob \"host.so\" is listed twice"},
      {[](json &m) { m["kernels"][0]["code"] = "param.w"; },
       P + "/kernels/0/code: \"param.w\" is not a blob of the code table"},
      {[](json &m) { m["kernels"][0]["symbol"] = ""; },
       P + "/kernels/0/symbol: must not be empty"},
      {[](json &m) { m["kernels"][0]["ops"] = {1}; },
       P + "/kernels/0/ops/0: expected a string"},
      {[](json &m) { m["kernels"][0]["grid_dependency"] = 1; },
       P + "/kernels/0/grid_dependency: expected true or false"},
      {[](json &m) { m["kernels"][0]["grid_dependency"] = true; },
       P + "/kernels/0/grid_dependency: only CUDA kernels wait for a grid "
           "dependency"},
      {[](json &m) { m["kernels"][0]["cluster"] = {1, 2}; },
       P + "/kernels/0/cluster: expected [x, y, z] blocks"},
      {[](json &m) { m["kernels"][0]["cluster"] = {1, 0, 1}; },
       P + "/kernels/0/cluster/1: must be at least 1"},
      {[](json &m) { m["kernels"][0]["cluster"] = {1, 4, 4}; },
       P + "/kernels/0/cluster: a cluster holds at most 8 blocks"},
      {[](json &m) { m["kernels"][0]["cluster"] = {1, 2, 1}; },
       P + "/kernels/0/cluster: only CUDA kernels run in clusters"},
      {[](json &m) { m["launches"][0] = json::array(); },
       P + "/launches/0: expected an object"},
      {[](json &m) { m["launches"][0]["kernel"] = 5; },
       P + "/launches/0/kernel: kernel 5 is out of range (there are 1)"},
      {[](json &m) { m["launches"][0]["args"][1] = 42; },
       P + "/launches/0/args/1: buffer id 42 is not in the buffer table"},
      {[](json &m) { m["launches"][0]["writes"] = 2; },
       P + "/launches/0/writes: expected an array"},
      {[](json &m) { m["launches"][0]["writes"] = {2, 4}; },
       P + "/launches/0/writes/1: argument 4 is out of range (the launch "
           "passes 4)"},
      {[](json &m) { m["launches"][0]["writes"] = {3, 2}; },
       P + "/launches/0/writes/1: the written arguments must be ascending, "
           "each once"},
      {[](json &m) { m["launches"][0]["writes"] = {2, 2}; },
       P + "/launches/0/writes/1: the written arguments must be ascending, "
           "each once"},
      {[](json &m) { m["launches"][0]["writes"] = {-1}; },
       P + "/launches/0/writes/0: expected a non-negative integer, got -1"},
      {[](json &m) {
         m["launches"][0]["write_slices"] = {
             {{"arg", 2}, {"offset", 0}, {"bytes", 4}, {"stride", 8}}};
       },
       P + "/launches/0/write_slices/0/arg: argument 2 is not among the "
           "launch's writes"},
      {[](json &m) {
         m["launches"][0]["writes"] = {3};
         m["launches"][0]["write_slices"] = {
             {{"arg", 3}, {"offset", 6}, {"bytes", 4}, {"stride", 8}}};
       },
       P + "/launches/0/write_slices/0: a slice of 4 bytes at 6 every 8 "
           "does not tile buffer 4 (4 bytes)"},
      {[](json &m) {
         m["launches"][0]["writes"] = {3};
         m["launches"][0]["write_slices"] = {{{"arg", 3}, {"offset", 0}}};
       },
       P + "/launches/0/write_slices/0: missing field \"bytes\""},
      {[](json &m) { m["launches"][0]["grid"] = -1; },
       P + "/launches/0/grid: expected a non-negative integer, got -1"},
      {[](json &m) { m["launches"][0].erase("grid"); },
       P + "/launches/0: missing field \"grid\""},
      {[](json &m) { m["launches"][0]["copy"] = m["launches"][1]["copy"]; },
       P + "/launches/0: a launch has exactly one of \"kernel\" and \"copy\""},
      {[](json &m) { m["launches"][1] = json::object(); },
       P + "/launches/1: a launch has exactly one of \"kernel\" and \"copy\""},
      {[](json &m) { m["launches"][1]["copy"]["dst"] = 0; },
       P + "/launches/1/copy/dst: cannot copy into input buffer 0"},
      {[](json &m) { m["launches"][1]["copy"]["dst"] = 1; },
       P + "/launches/1/copy/dst: cannot copy into param buffer 1"},
      {[](json &m) { m["launches"][1]["copy"]["bytes"] = 17; },
       P + "/launches/1/copy/bytes: copy of 17 bytes exceeds buffer 3"},
      {[](json &m) { m["launches"][1]["copy"].erase("src"); },
       P + "/launches/1/copy: missing field \"src\""},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    CHECK(errorAfter(cases[i].mutate) == cases[i].expect);
  }
}

/// fullManifest() as version 3: an init launch of k0 on the param w writes
/// derived buffer 6, which the run's kernel reads instead of w.
json initManifest() {
  json m = fullManifest();
  m["format_version"] = 3;
  m["buffers"].push_back({{"id", 6}, {"kind", "derived"}, {"bytes", 16}});
  m["init_launches"] = {{{"kernel", 0}, {"args", {1, 6}}, {"grid", 4}}};
  m["launches"][0]["args"] = {0, 6, 3, 4};
  return m;
}

TEST_CASE("init launches and derived buffers (version 3)", "[manifest]") {
  std::string err;
  auto b = Bundle::parse(test::makeBundle(initManifest(), blobs()), err);
  INFO(err);
  REQUIRE(b);
  const ModelDesc &d = b->model();
  REQUIRE(d.initLaunches.size() == 1);
  CHECK(d.launches.size() == 3);
  CHECK(d.buffers[6].kind == BufferKind::Derived);
  CHECK(d.initLaunches[0].args == std::vector<size_t>{1, 6});

  const std::string P = "invalid bundle: manifest: ";
  struct Case {
    std::function<void(json &)> mutate;
    std::string expect;
  };
  std::vector<Case> cases = {
      {[](json &m) { m["format_version"] = 2; },
       P + "/buffers/6/kind: unknown buffer kind \"derived\" (expected "
           "input, output, param or temp)"},
      {[](json &m) {
         m["format_version"] = 2;
         m["buffers"].erase(6);
         m["launches"][0]["args"] = {0, 1, 3, 4};
         m["init_launches"][0]["args"] = {1, 3};
       },
       P + "/init_launches: init launches need manifest version 3 (this one "
           "is 2)"},
      {[](json &m) { m["buffers"][6]["kind"] = "weird"; },
       P + "/buffers/6/kind: unknown buffer kind \"weird\" (expected input, "
           "output, param, temp or derived)"},
      {[](json &m) { m["init_launches"][0]["args"] = {0, 6}; },
       P + "/init_launches/0: an init launch cannot use input buffer 0 (it "
           "runs at load, before any binding)"},
      {[](json &m) {
         m["init_launches"][0] = {
             {"copy", {{"src", 1}, {"dst", 2}, {"bytes", 16}}}};
       },
       P + "/init_launches/0: an init launch cannot use output buffer 2 (it "
           "runs at load, before any binding)"},
      {[](json &m) { m["init_launches"] = json::array(); },
       P + "/buffers/6: no init launch writes derived buffer 6"},
      {[](json &m) { m["launches"][1]["copy"]["dst"] = 6; },
       P + "/launches/1/copy/dst: cannot copy into derived buffer 6"},
      {[](json &m) { m["init_launches"][0]["kernel"] = 3; },
       P + "/init_launches/0/kernel: kernel 3 is out of range (there are 1)"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    json m = initManifest();
    cases[i].mutate(m);
    std::string e;
    auto bad = Bundle::parse(test::makeBundle(m, blobs()), e);
    CHECK(!bad);
    CHECK(e == cases[i].expect);
  }
  // An init copy into a derived buffer is how a derived param may be made.
  json m = initManifest();
  m["init_launches"] = {{{"copy", {{"src", 1}, {"dst", 6}, {"bytes", 16}}}}};
  CHECK(Bundle::parse(test::makeBundle(m, blobs()), err));
}

TEST_CASE("random manifest mutations never crash", "[manifest]") {
  // Replace random values of the manifest by values of other types; every
  // outcome must be a clean accept or a one-line error.
  json base = fullManifest();
  std::vector<json> junk = {
      nullptr,        -1,  0, 1ull << 63, 3.5, "", "x", json::array(),
      json::object(), true};
  for (const auto &p : test::jsonPointers(base))
    for (const json &j : junk) {
      json m = base;
      m[p] = j;
      std::string err;
      auto b = Bundle::parse(test::makeBundle(m, blobs()), err);
      INFO(p.to_string() << " = " << j.dump());
      CHECK((b != nullptr) == err.empty());
    }
}
