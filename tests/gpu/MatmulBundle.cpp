//===- MatmulBundle.cpp - a one-matmul bundle for the GEMM generators -----===//
#include "tests/gpu/MatmulBundle.h"
#include "runtime/src/Bundle.h"
#include "tests/gpu/TemplateGen.h"

#include <nlohmann/json.hpp>

#include <iostream>

namespace tcc::gen {

std::string typeName(mlir::Type t) {
  return t.isBF16() ? "bf16" : t.isF16() ? "f16" : "f32";
}

void writeMatmulBundle(const std::string &outDir, const MatmulBundle &mb,
                       const std::string &ptx,
                       const tcc::gpu::KernelLaunch &launch) {
  auto bytes = [](const std::vector<int64_t> &shape, mlir::Type t) {
    int64_t n = t.getIntOrFloatBitWidth() / 8;
    for (int64_t d : shape)
      n *= d;
    return n;
  };
  auto tensor = [](const char *name, mlir::Type t,
                   const std::vector<int64_t> &shape, int buffer) {
    return nlohmann::json{{"name", name},
                          {"dtype", typeName(t)},
                          {"shape", shape},
                          {"buffer", buffer}};
  };
  auto buffer = [](int id, const char *kind, int64_t size) {
    return nlohmann::json{{"id", id}, {"kind", kind}, {"bytes", size}};
  };
  nlohmann::json manifest = {
      {"model", mb.name},
      {"targets", {mb.chip}},
      {"inputs",
       {tensor("a", mb.aType, mb.aShape, 0),
        tensor("b", mb.bType, mb.bShape, 1)}},
      {"outputs", {tensor("c", mb.cType, mb.cShape, 2)}},
      {"params", nlohmann::json::array()},
      {"buffers",
       {buffer(0, "input", bytes(mb.aShape, mb.aType)),
        buffer(1, "input", bytes(mb.bShape, mb.bType)),
        buffer(2, "output", bytes(mb.cShape, mb.cType))}},
      {"arena_bytes", 0},
      {"kernels",
       {{{"name", mb.name},
         {"symbol", mb.name},
         {"kind", "matmul"},
         {"ops", {"tcc.matmul"}},
         {"code", "kernels.ptx"},
         {"shared_bytes", launch.sharedBytes}}}},
      {"code",
       {{{"target", mb.chip}, {"blob", "kernels.ptx"}, {"format", "ptx"}}}},
      {"launches",
       {{{"kernel", 0},
         {"args", {0, 1, 2}},
         {"grid", launch.grid},
         {"block", launch.block}}}}};
  tcc::bundle::BundleWriter w;
  w.addBlob("kernels.ptx", std::vector<uint8_t>(ptx.begin(), ptx.end()));
  w.setManifest(manifest);
  std::string error;
  if (!w.writeFile(outDir + "/" + mb.name + ".tccb", error))
    die(error);

  nlohmann::json info = {{"name", mb.name},
                         {"m", mb.m},
                         {"n", mb.n},
                         {"k", mb.k},
                         {"batch", mb.batch},
                         {"a_batched", mb.aBatched},
                         {"b_batched", mb.bBatched},
                         {"trans_a", mb.transA},
                         {"trans_b", mb.transB},
                         {"type", typeName(mb.aType)},
                         {"out_type", typeName(mb.cType)},
                         {"tf32", mb.tf32},
                         {"schedule", mb.schedule},
                         {"grid", launch.grid},
                         {"block", launch.block},
                         {"shared_bytes", launch.sharedBytes}};
  std::cout << info.dump() << "\n";
}

} // namespace tcc::gen
