//===- MatmulBundle.cpp - a one-matmul bundle for the GEMM generators -----===//
#include "tests/gpu/MatmulBundle.h"
#include "runtime/src/Bundle.h"
#include "tests/gpu/TemplateGen.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>

namespace tcc::gen {

std::string typeName(mlir::Type t) {
  if (mlir::isa<mlir::Float8E4M3FNType>(t))
    return "f8e4m3";
  if (mlir::isa<mlir::Float8E5M2Type>(t))
    return "f8e5m2";
  return t.isBF16() ? "bf16" : t.isF16() ? "f16" : "f32";
}

void writeKernelBundle(const std::string &outDir, const std::string &name,
                       const std::string &chip, const std::string &kind,
                       const std::string &op,
                       const std::vector<BundleTensor> &inputs,
                       const BundleTensor &output, const std::string &ptx,
                       const tcc::gpu::KernelLaunch &launch,
                       const tcc::gpu::KernelLaunch *reduce,
                       int64_t workspaceBytes, int epilogueFrom) {
  auto bytes = [](const BundleTensor &t) {
    int64_t n = t.type.getIntOrFloatBitWidth() / 8;
    for (int64_t d : t.shape)
      n *= d;
    return n;
  };
  auto tensor = [](const BundleTensor &t, int buffer) {
    return nlohmann::json{{"name", t.name},
                          {"dtype", typeName(t.type)},
                          {"shape", t.shape},
                          {"buffer", buffer}};
  };
  auto buffer = [](int id, const char *kind, int64_t size) {
    return nlohmann::json{{"id", id}, {"kind", kind}, {"bytes", size}};
  };
  nlohmann::json ins = nlohmann::json::array(),
                 buffers = nlohmann::json::array(),
                 args = nlohmann::json::array();
  int id = 0;
  for (const BundleTensor &t : inputs) {
    ins.push_back(tensor(t, id));
    buffers.push_back(buffer(id, "input", bytes(t)));
    args.push_back(id++);
  }
  int outId = id;
  buffers.push_back(buffer(outId, "output", bytes(output)));
  nlohmann::json kernels = {{{"name", name},
                             {"symbol", name},
                             {"kind", kind},
                             {"ops", {op}},
                             {"code", "kernels.ptx"},
                             {"shared_bytes", launch.sharedBytes}}};
  if (launch.cluster[0] * launch.cluster[1] * launch.cluster[2] > 1)
    kernels[0]["cluster"] = launch.cluster;
  nlohmann::json launches = nlohmann::json::array();
  int64_t arena = 0;
  // The template's tensor maps, over its arguments `kernelArgs`.
  int version = 1;
  auto withMaps = [&](nlohmann::json l, const nlohmann::json &kernelArgs) {
    if (launch.tensorMaps.empty())
      return l;
    nlohmann::json maps = nlohmann::json::array();
    for (const tcc::gpu::TensorMapSpec &m : launch.tensorMaps) {
      nlohmann::json map = {{"buffer", kernelArgs.at(m.operand)},
                            {"dtype", m.dtype},
                            {"dims", m.dims},
                            {"strides", m.strides},
                            {"swizzle", m.swizzle}};
      if (m.im2col)
        map["im2col"] = {{"channels", m.channels},
                         {"pixels", m.pixels},
                         {"lower", m.lower},
                         {"upper", m.upper},
                         {"element_strides", m.elementStrides}};
      else
        map["box"] = m.box;
      version = std::max(version, m.im2col ? 5 : 4);
      maps.push_back(map);
    }
    l["tensor_maps"] = maps;
    return l;
  };
  if (reduce) {
    int temp = outId + 1;
    nlohmann::json t = buffer(temp, "temp", workspaceBytes);
    t["offset"] = 0;
    buffers.push_back(t);
    arena = (workspaceBytes + 63) / 64 * 64;
    // The GEMM writes the temp; the reduction reads it and the epilogue's
    // inputs, and writes the output.
    nlohmann::json gemmArgs = nlohmann::json::array();
    for (int i = 0; i < epilogueFrom; ++i)
      gemmArgs.push_back(i);
    gemmArgs.push_back(temp);
    nlohmann::json reduceArgs = {temp};
    for (int i = epilogueFrom; i < outId; ++i)
      reduceArgs.push_back(i);
    reduceArgs.push_back(outId);
    kernels.push_back({{"name", name + "_splitk"},
                       {"symbol", name + "_splitk"},
                       {"kind", kind},
                       {"ops", {op}},
                       {"code", "kernels.ptx"},
                       {"shared_bytes", 0}});
    launches.push_back(withMaps({{"kernel", 0},
                                 {"args", gemmArgs},
                                 {"grid", launch.grid},
                                 {"block", launch.block}},
                                gemmArgs));
    launches.push_back({{"kernel", 1},
                        {"args", reduceArgs},
                        {"grid", reduce->grid},
                        {"block", reduce->block}});
  } else {
    args.push_back(outId);
    launches.push_back(withMaps({{"kernel", 0},
                                 {"args", args},
                                 {"grid", launch.grid},
                                 {"block", launch.block}},
                                args));
  }
  nlohmann::json manifest = {
      {"format_version", version},
      {"model", name},
      {"targets", {chip}},
      {"inputs", ins},
      {"outputs", {tensor(output, id)}},
      {"params", nlohmann::json::array()},
      {"buffers", buffers},
      {"arena_bytes", arena},
      {"kernels", kernels},
      {"code",
       {{{"target", chip}, {"blob", "kernels.ptx"}, {"format", "ptx"}}}},
      {"launches", launches}};
  tcc::bundle::BundleWriter w;
  w.addBlob("kernels.ptx", std::vector<uint8_t>(ptx.begin(), ptx.end()));
  w.setManifest(manifest);
  std::string error;
  if (!w.writeFile(outDir + "/" + name + ".tccb", error))
    die(error);
}

void writeMatmulBundle(const std::string &outDir, const MatmulBundle &mb,
                       const std::string &ptx,
                       const tcc::gpu::KernelLaunch &launch) {
  writeKernelBundle(outDir, mb.name, mb.chip, "matmul", "tcc.matmul",
                    {{"a", mb.aType, mb.aShape}, {"b", mb.bType, mb.bShape}},
                    {"c", mb.cType, mb.cShape}, ptx, launch);

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
