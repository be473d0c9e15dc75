//===- TargetTest.cpp - the target description and the CPU table ---------===//
#include "compiler/Target.h"
#include "runtime/src/Bundle.h"
#include "runtime/src/CpuFeatures.h"

#include <catch2/catch.hpp>

#include <algorithm>

using tcc::parseTarget;
using tcc::TargetDesc;

static TargetDesc parsed(const char *name) {
  std::string error;
  std::optional<TargetDesc> t = parseTarget(name, error);
  REQUIRE(t);
  CHECK(error.empty());
  return *t;
}

static std::string refused(const char *name) {
  std::string error;
  CHECK_FALSE(parseTarget(name, error));
  // One line naming the target and listing what is supported.
  CHECK(error.find('\n') == std::string::npos);
  CHECK(error.find(std::string("'") + name + "'") != std::string::npos);
  CHECK(error.find("supported: host, sm_80") != std::string::npos);
  return error;
}

TEST_CASE("NVIDIA targets carry their features and limits", "[target]") {
  TargetDesc sm80 = parsed("sm_80"), sm90 = parsed("sm_90"),
             sm90a = parsed("sm_90a"), sm86 = parsed("sm_86");
  for (const TargetDesc &t : {sm80, sm90, sm90a, sm86}) {
    CHECK(t.isNvidia());
    CHECK(t.cpAsync);
    CHECK(t.mmaSync);
    CHECK(t.warpSize == 32);
  }
  CHECK(sm80.version == 80);
  CHECK(sm90a.version == 90);
  CHECK(sm90a.name == "sm_90a");
  // wgmma is sm_90a's alone; TMA is every sm_90's.
  CHECK_FALSE(sm80.wgmma);
  CHECK_FALSE(sm90.wgmma);
  CHECK(sm90a.wgmma);
  CHECK_FALSE(sm80.tma);
  CHECK(sm90.tma);
  CHECK_FALSE(sm80.l2CacheHints);
  CHECK(sm90.l2CacheHints);
  CHECK_FALSE(sm80.gridDependency);
  CHECK(sm90.gridDependency);
  // 163 KiB on A100, 227 KiB on Hopper, 99 KiB on GA10x.
  CHECK(sm80.maxSharedPerBlock == 163 * 1024);
  CHECK(sm90.maxSharedPerBlock == 227 * 1024);
  CHECK(sm86.maxSharedPerBlock == 99 * 1024);
  CHECK(sm80.multiprocessors == 108);
  CHECK(sm90.multiprocessors == 132);
  CHECK(sm86.multiprocessors == 0);
  CHECK(sm86.multiprocessorsForHeuristics() > 0);
}

TEST_CASE("AMD targets and the host", "[target]") {
  TargetDesc gfx942 = parsed("gfx942"), gfx90a = parsed("gfx90a"),
             host = parsed("host");
  CHECK(gfx942.isAmd());
  CHECK(gfx942.version == 0x942);
  CHECK(gfx90a.version == 0x90a);
  CHECK(gfx942.warpSize == 64);
  CHECK(gfx942.maxSharedPerBlock == 65536);
  CHECK_FALSE(gfx942.mmaSync);
  CHECK(host.isHost());
  CHECK_FALSE(host.isGpu());
  // Attention: AMD's SIMT template takes every dtype; NVIDIA's tensor-core
  // templates take every dtype (f32 as 3xTF32); the host has none.
  TargetDesc sm90 = parsed("sm_90");
  CHECK(gfx942.hasAttentionTemplates());
  CHECK(gfx90a.hasAttentionTemplates());
  CHECK(sm90.hasAttentionTemplates());
  CHECK_FALSE(host.hasAttentionTemplates());
  CHECK(gfx90a.simtAttentionOnly());
  CHECK(gfx942.simtAttentionOnly());
  CHECK_FALSE(sm90.simtAttentionOnly());
}

TEST_CASE("unsupported and malformed targets are refused in one line",
          "[target]") {
  CHECK(refused("sm_75").find("need sm_80 or later") != std::string::npos);
  CHECK(refused("sm_70").find("need sm_80 or later") != std::string::npos);
  CHECK(refused("sm_100").find("not supported yet") != std::string::npos);
  CHECK(refused("gfx1100").find("not supported yet") != std::string::npos);
  for (const char *bad : {"sm_9x", "sm_", "sm90", "gfx", "gfx9-4", "cuda", "",
                          "SM_90", "sm_90b", "host2"})
    CHECK(refused(bad).find("unknown target") != std::string::npos);
}

TEST_CASE("every supported target parses to itself", "[target]") {
  for (const std::string &name : tcc::supportedTargets())
    CHECK(parsed(name.c_str()).name == name);
}

TEST_CASE("the CPU feature table", "[cpu-features]") {
  const std::vector<std::string> &names = tcc::cpu::checkableFeatures();
  CHECK(std::is_sorted(names.begin(), names.end()));
  for (const char *f : {"sse4.2", "avx2", "avx512f", "avx512bw", "fma"})
    CHECK(std::binary_search(names.begin(), names.end(), f));
  // Every x86-64 CPU has SSE2; no CPU has a feature the table lacks.
  CHECK(tcc::cpu::missingFeatures({"sse2", "cx8", "64bit"}).empty());
  CHECK(tcc::cpu::missingFeatures({"sse2", "no-such-feature"}) ==
        std::vector<std::string>{"no-such-feature"});
}

/// The parse error of a manifest with one code entry `code` (and a kernel
/// using it), "" when it parses; `features` gets its cpu_features.
static std::string parseCode(const nlohmann::json &code,
                             std::vector<std::string> &features) {
  nlohmann::json none = nlohmann::json::array();
  nlohmann::json m = {
      {"format_version", 1},
      {"model", "m"},
      {"targets", {code["target"]}},
      {"inputs", none},
      {"outputs", none},
      {"params", none},
      {"buffers", none},
      {"arena_bytes", 0},
      {"kernels", {{{"name", "k"}, {"symbol", "k"}, {"code", "c"}}}},
      {"code", {code}},
      {"launches", none}};
  tcc::bundle::BundleWriter w;
  w.addBlob("c", std::vector<uint8_t>(64, 1));
  w.setManifest(m);
  std::string err;
  auto b = tcc::bundle::Bundle::parse(w.serialize(), err);
  CHECK(err.find('\n') == std::string::npos);
  if (b)
    features = b->model().code[0].cpuFeatures;
  return b ? "" : err;
}

TEST_CASE("the manifest's CPU requirement", "[cpu-features]") {
  std::vector<std::string> features;
  nlohmann::json host = {{"target", "host"}, {"blob", "c"}};
  CHECK(parseCode(host, features).empty());
  CHECK(features.empty()); // older bundles: nothing to check
  host["cpu"] = "x86-64-v3";
  host["cpu_features"] = {"avx", "avx2", "fma"};
  CHECK(parseCode(host, features).empty());
  CHECK(features == std::vector<std::string>{"avx", "avx2", "fma"});
  host["cpu_features"] = {"avx", 3};
  CHECK(parseCode(host, features).find("/code/0/cpu_features/1") !=
        std::string::npos);
  host["cpu_features"] = "avx";
  CHECK(parseCode(host, features).find("expected an array") !=
        std::string::npos);
  nlohmann::json gpu = {
      {"target", "sm_90"}, {"blob", "c"}, {"cpu_features", {"avx"}}};
  CHECK(parseCode(gpu, features).find("host code only") != std::string::npos);
}
