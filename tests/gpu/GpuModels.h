//===- GpuModels.h - the bundles of the GPU tests ---------------*- C++ -*-===//
//
// Manifests over the PTX of kernels.mlir, written as the compiler will write
// them (docs/bundle-format.md): one code object for sm_90, launches with a
// grid of blocks, a param, temps in the arena, a copy and a status counter.
// Shared by the C API tests (GpuTest.cpp) and the bundle generator of the
// command-line test (GpuBundles.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_GPU_GPUMODELS_H
#define TCC_TESTS_GPU_GPUMODELS_H

#include "runtime/src/Bundle.h"
#include "runtime/src/Random.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tcc::gputest {

using nlohmann::json;

// Sizes fixed by kernels.mlir.
constexpr int64_t kN = 4099;                           // add_f32, mul_f32
constexpr int64_t kBatch = 3, kRows = 67, kCols = 131; // transpose_f32
constexpr int64_t kSumBlocks = 32, kSumBlock = 256;    // block_sum_f32
constexpr int64_t kData = 1000, kIndices = 777;        // gather_f32
/// tma_tile_f32 copies 16x8 boxes; the tensor (kMapRows x kMapCols f32) is
/// covered by kMapGrid[1] x kMapGrid[0] of them, which hang over its right
/// and bottom edges.
constexpr int64_t kMapRows = 37, kMapCols = 40;
constexpr uint32_t kMapBox[2] = {16, 8};
constexpr uint32_t kMapGrid[2] = {3, 5};
constexpr const char *kGatherMessage =
    "index out of range in /nodes/1 (gather)";
/// The seed of the param w of the chain model (its values: w = paramW()).
constexpr uint64_t kParamSeed = 20251;

inline json tensor(const std::string &name, const std::string &dtype,
                   std::vector<int64_t> shape, int buffer) {
  return {
      {"name", name}, {"dtype", dtype}, {"shape", shape}, {"buffer", buffer}};
}

inline json buffer(int id, const char *kind, uint64_t bytes) {
  return {{"id", id}, {"kind", kind}, {"bytes", bytes}};
}

inline json launch(int kernel, std::vector<int> args,
                   std::vector<uint32_t> grid, std::vector<uint32_t> block) {
  return {{"kernel", kernel}, {"args", args}, {"grid", grid}, {"block", block}};
}

inline json kernel(const std::string &symbol) {
  return {{"name", symbol}, {"symbol", symbol}, {"code", "kernels.ptx"}};
}

/// y = (a + b) * w, z = a + b (through a temp and a copy), mt = the batched
/// transpose of m, s = the sums of x's 256-element blocks. `sumShared` is
/// block_sum's dynamic shared memory. Each launch lists the arguments it
/// writes, so that a graph runs the transpose and the sums beside the rest.
inline json chainModel(uint32_t sumShared = 1024) {
  const uint64_t vec = kN * 4, mat = kBatch * kRows * kCols * 4;
  json m = {
      {"format_version", 1}, {"model", "gpu_chain"}, {"targets", {"sm_90"}}};
  m["inputs"] = {tensor("a", "f32", {kN}, 0), tensor("b", "f32", {kN}, 1),
                 tensor("m", "f32", {kBatch, kRows, kCols}, 6),
                 tensor("x", "f32", {kSumBlocks * kSumBlock}, 8)};
  m["params"] = {tensor("w", "f32", {kN}, 2)};
  m["params"][0]["blob"] = "param.w";
  m["outputs"] = {tensor("y", "f32", {kN}, 4), tensor("z", "f32", {kN}, 5),
                  tensor("mt", "f32", {kBatch, kCols, kRows}, 7),
                  tensor("s", "f32", {kSumBlocks}, 9)};
  json temp = buffer(3, "temp", vec);
  temp["offset"] = 0;
  m["buffers"] = {buffer(0, "input", vec),
                  buffer(1, "input", vec),
                  buffer(2, "param", vec),
                  temp,
                  buffer(4, "output", vec),
                  buffer(5, "output", vec),
                  buffer(6, "input", mat),
                  buffer(7, "output", mat),
                  buffer(8, "input", kSumBlocks * kSumBlock * 4),
                  buffer(9, "output", kSumBlocks * 4)};
  m["arena_bytes"] = (vec + 63) / 64 * 64;
  m["kernels"] = {kernel("add_f32"), kernel("mul_f32"), kernel("transpose_f32"),
                  kernel("block_sum_f32")};
  m["kernels"][3]["shared_bytes"] = sumShared;
  m["code"] = {
      {{"target", "sm_90"}, {"blob", "kernels.ptx"}, {"format", "ptx"}}};
  const uint32_t blocks = (kN + 255) / 256;
  m["launches"] = {launch(0, {0, 1, 3}, {blocks, 1, 1}, {256, 1, 1}),
                   launch(1, {3, 2, 4}, {blocks, 1, 1}, {256, 1, 1}),
                   {{"copy", {{"src", 3}, {"dst", 5}, {"bytes", vec}}}},
                   launch(2, {6, 7},
                          {(kCols + 31) / 32, (kRows + 7) / 8, kBatch},
                          {32, 8, 1}),
                   launch(3, {8, 9}, {kSumBlocks, 1, 1}, {kSumBlock, 1, 1})};
  for (int l : {0, 1})
    m["launches"][l]["writes"] = {2};
  for (int l : {3, 4})
    m["launches"][l]["writes"] = {1};
  return m;
}

/// out = data[idx] with a status counter for indices outside [0, 1000).
inline json gatherModel() {
  json m = {
      {"format_version", 1}, {"model", "gpu_gather"}, {"targets", {"sm_90"}}};
  m["inputs"] = {tensor("data", "f32", {kData}, 0),
                 tensor("idx", "i32", {kIndices}, 1)};
  m["params"] = json::array();
  m["outputs"] = {tensor("out", "f32", {kIndices}, 2)};
  json status = buffer(3, "temp", 4);
  status["offset"] = 0;
  m["buffers"] = {buffer(0, "input", kData * 4),
                  buffer(1, "input", kIndices * 4),
                  buffer(2, "output", kIndices * 4), status};
  m["status"] = {{{"buffer", 3}, {"message", kGatherMessage}}};
  m["arena_bytes"] = 64;
  m["kernels"] = {kernel("gather_f32")};
  m["code"] = {{{"target", "sm_90"}, {"blob", "kernels.ptx"}}};
  m["launches"] = {
      launch(0, {0, 1, 2, 3}, {(kIndices + 255) / 256, 1, 1}, {256, 1, 1})};
  return m;
}

/// Manifest version 4: y = the boxes of x's tensor map laid side by side
/// (kMapGrid[1] * 8 rows of kMapGrid[0] * 16 floats), zeros past x's edges.
inline json tmaModel() {
  const uint64_t outRows = kMapGrid[1] * kMapBox[1],
                 outCols = kMapGrid[0] * kMapBox[0];
  json m = {
      {"format_version", 4}, {"model", "gpu_tma"}, {"targets", {"sm_90"}}};
  m["inputs"] = {tensor("x", "f32", {kMapRows, kMapCols}, 0)};
  m["params"] = json::array();
  m["outputs"] = {tensor("y", "f32", {(int64_t)outRows, (int64_t)outCols}, 1)};
  m["buffers"] = {buffer(0, "input", kMapRows * kMapCols * 4),
                  buffer(1, "output", outRows * outCols * 4)};
  m["arena_bytes"] = 0;
  m["kernels"] = {kernel("tma_tile_f32")};
  m["code"] = {{{"target", "sm_90"}, {"blob", "kernels.ptx"}}};
  json l = launch(0, {1}, {kMapGrid[0], kMapGrid[1], 1}, {1, 1, 1});
  l["tensor_maps"] = {{{"buffer", 0},
                       {"dtype", "f32"},
                       {"dims", {kMapCols, kMapRows}},
                       {"strides", {kMapCols * 4}},
                       {"box", {kMapBox[0], kMapBox[1]}},
                       {"swizzle", "none"}}};
  m["launches"] = {l};
  return m;
}

inline std::vector<uint8_t> floatBytes(const std::vector<float> &v) {
  std::vector<uint8_t> out(v.size() * 4);
  if (!v.empty())
    std::memcpy(out.data(), v.data(), out.size());
  return out;
}

/// The chain model's param: uniform in [0.5, 2).
inline std::vector<float> paramW() {
  SplitMix64 rng(kParamSeed);
  std::vector<float> w(kN);
  for (float &v : w)
    v = (float)rng.uniform(0.5, 2.0);
  return w;
}

inline std::vector<uint8_t> makeBundle(const json &manifest,
                                       const std::string &ptx) {
  bundle::BundleWriter w;
  w.addBlob("kernels.ptx", std::vector<uint8_t>(ptx.begin(), ptx.end()));
  if (manifest.contains("params") && !manifest["params"].empty())
    w.addBlob("param.w", floatBytes(paramW()));
  w.setManifest(manifest);
  return w.serialize();
}

inline bool readText(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  out.assign(std::istreambuf_iterator<char>(in),
             std::istreambuf_iterator<char>());
  return true;
}

} // namespace tcc::gputest

#endif // TCC_TESTS_GPU_GPUMODELS_H
