//===- ConvGen.cpp - builds one convolution kernel into a PTX bundle ------===//
//
//   tcc-conv-gen --n N --h H --w W --c C --o O --kernel KH,KW
//       [--stride SH,SW] [--pad TOP,LEFT,BOTTOM,RIGHT] [--dilation DH,DW]
//       [--bias] [--relu] [--type bf16|f16|f32] [--out-type f32|bf16|f16]
//       [--tf32] [--schedule TM,TN,TK,WM,WN,STAGES] [--chip sm_90|sm_80]
//       [--wgmma auto|auto-cpasync|TM,TN,WARPGROUPS,STAGES[,SPLIT_K[,TMA]]] [--name NAME]
//       [--out-dir DIR] [--emit-mlir]
//
// Builds the channels-last convolution with tcc::gpu::buildConvKernel (the
// schedule from chooseConvSchedule unless given), or with --wgmma (needs
// --chip sm_90a) buildWgmmaConvKernel (auto: chooseWgmmaConvSchedule's,
// which must take it), lowers it with the NVVM
// pipeline of the compiler, and writes DIR/NAME.ptx and DIR/NAME.tccb: a
// bundle with inputs x [N, H, W, C], w [O, KH, KW, C] (and bias [O]), output
// y [N, OH, OW, O] and one launch (two with split-K: the partials' sum).
// Prints one JSON line describing it.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/ConvKernel.h"
#include "compiler/gpu/DepthwiseKernel.h"
#include "tests/gpu/MatmulBundle.h"
#include "tests/gpu/TemplateGen.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <optional>

using namespace mlir;
using tcc::gen::die;
using tcc::gen::parseInt;
using tcc::gen::parseIntList;

namespace {

/// The JSON line's fields every convolution case has.
nlohmann::json describe(const tcc::gpu::ConvProblem &p, bool bias,
                        const std::string &name) {
  return {{"name", name},
          {"n", p.n},
          {"h", p.h},
          {"w", p.w},
          {"c", p.c},
          {"o", p.o},
          {"kernel", {p.kh, p.kw}},
          {"stride", {p.strideH, p.strideW}},
          {"pad", {p.padTop, p.padLeft, p.padBottom, p.padRight}},
          {"dilation", {p.dilationH, p.dilationW}},
          {"out", {p.n, p.outH(), p.outW(), p.o}},
          {"bias", bias},
          {"relu", p.relu},
          {"type", tcc::gen::typeName(p.inType)},
          {"out_type", tcc::gen::typeName(p.outType)},
          {"tf32", p.allowTf32}};
}

std::vector<tcc::gen::BundleTensor> inputsOf(const tcc::gpu::ConvProblem &p,
                                             bool bias) {
  std::vector<tcc::gen::BundleTensor> inputs = {
      {"x", p.inType, {p.n, p.h, p.w, p.c}},
      {"w", p.weightType, {p.o, p.kh, p.kw, p.c}}};
  if (bias)
    inputs.push_back({"bias", p.biasType, {p.o}});
  return inputs;
}

/// Split-K (`splits` > 1): the reduction that sums the partials and
/// applies the epilogue, built into `km`.
std::optional<tcc::gpu::KernelLaunch> reduceOf(mlir::OpBuilder &b,
                                               tcc::gen::KernelModule &km,
                                               const tcc::gpu::ConvProblem &p,
                                               const std::string &name,
                                               int64_t splits) {
  if (splits <= 1)
    return std::nullopt;
  return tcc::gpu::buildSplitKReduceKernel(b, km.kernels, name + "_splitk",
                                           tcc::gpu::convGemm(p), splits,
                                           tcc::gpu::convEpilogue(p));
}

/// Lowers `km`, writes DIR/NAME.ptx and DIR/NAME.tccb (the reduction, if
/// any, reading a workspace of `workspace` bytes) and prints the JSON line.
int writeCase(tcc::gen::KernelModule &km, const tcc::gpu::ConvProblem &p,
              bool bias, const tcc::gen::GenFlags &flags,
              const tcc::gpu::KernelLaunch &launch,
              const std::optional<tcc::gpu::KernelLaunch> &reduce,
              int64_t workspace, nlohmann::json schedule) {
  if (tcc::gen::verifyOrPrint(*km.module, flags.emitMlir))
    return 0;
  std::string ptx = tcc::gen::lowerToPtx(*km.module, flags.chip);
  tcc::gen::writePtx(flags.outDir, flags.name, ptx);
  tcc::gen::writeKernelBundle(
      flags.outDir, flags.name, flags.chip, "conv2d", "tcc.conv2d",
      inputsOf(p, bias), {"y", p.outType, {p.n, p.outH(), p.outW(), p.o}}, ptx,
      launch, reduce ? &*reduce : nullptr, workspace, 2);
  nlohmann::json info = describe(p, bias, flags.name);
  info["schedule"] = std::move(schedule);
  info["grid"] = launch.grid;
  info["block"] = launch.block;
  info["shared_bytes"] = launch.sharedBytes;
  std::cout << info.dump() << "\n";
  return 0;
}

/// --wgmma: the convolution on the wgmma template, schedule `spec` ("auto",
/// "auto-cpasync": the same without TMA copies, or
/// TM,TN,WARPGROUPS,STAGES[,SPLIT_K[,TMA]]).
int buildWgmma(const tcc::gpu::ConvProblem &p, const std::string &spec,
               bool bias, const tcc::TargetDesc &target,
               const tcc::gen::GenFlags &flags) {
  if (flags.chip != "sm_90a")
    die("--wgmma needs --chip sm_90a");
  tcc::gpu::WgmmaSchedule s;
  if (spec == "auto" || spec == "auto-cpasync") {
    std::optional<tcc::gpu::WgmmaSchedule> chosen =
        tcc::gpu::chooseWgmmaConvSchedule(p, target, spec == "auto");
    if (!chosen)
      die("--wgmma auto: chooseWgmmaConvSchedule leaves it to mma.sync");
    s = *chosen;
  } else {
    // TM,TN,WARPGROUPS,STAGES[,SPLIT_K[,TMA]]
    std::vector<int64_t> v = parseIntList(
        "--wgmma", spec, std::count(spec.begin(), spec.end(), ',') + 1);
    if (v.size() < 4 || v.size() > 6)
      die("--wgmma: expected TM,TN,WARPGROUPS,STAGES[,SPLIT_K[,TMA]]");
    s = {v[0],
         v[1],
         v[2],
         v[3],
         v.size() >= 5 ? v[4] : 1,
         v.size() == 6 && v[5]};
  }
  mlir::OpBuilder b(p.inType.getContext());
  tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
  mlir::FailureOr<tcc::gpu::KernelLaunch> launch =
      tcc::gpu::buildWgmmaConvKernel(b, km.kernels, flags.name, p, s);
  if (failed(launch))
    die("cannot build the kernel");
  tcc::gpu::MatmulSchedule split;
  split.splitK = s.splitK;
  return writeCase(km, p, bias, flags, *launch,
                   reduceOf(b, km, p, flags.name, s.splitK),
                   tcc::gpu::splitKWorkspaceBytes(tcc::gpu::convGemm(p), split),
                   {"wgmma", s.tileM, s.tileN, s.warpgroups, s.stages, s.splitK,
                    s.tma ? 1 : 0});
}

} // namespace

int main(int argc, char **argv) {
  std::unique_ptr<MLIRContext> context =
      tcc::gen::initGenerator("tcc-conv-gen");
  MLIRContext &ctx = *context;

  tcc::gpu::ConvProblem p;
  p.inType = p.weightType = BFloat16Type::get(&ctx);
  p.outType = Float32Type::get(&ctx);
  bool bias = false;
  tcc::gen::GenFlags flags;
  flags.name = "conv";
  int have = 0;
  std::string wgmma;
  auto ownFlag = [&](const std::string &f, tcc::gen::FlagValue value) {
    if (f == "--n")
      p.n = parseInt(f, value()), have |= 1;
    else if (f == "--h")
      p.h = parseInt(f, value()), have |= 2;
    else if (f == "--w")
      p.w = parseInt(f, value()), have |= 4;
    else if (f == "--c")
      p.c = parseInt(f, value()), have |= 8;
    else if (f == "--o")
      p.o = parseInt(f, value()), have |= 16;
    else if (f == "--kernel") {
      std::vector<int64_t> v = parseIntList(f, value(), 2);
      p.kh = v[0], p.kw = v[1], have |= 32;
    } else if (f == "--stride") {
      std::vector<int64_t> v = parseIntList(f, value(), 2);
      p.strideH = v[0], p.strideW = v[1];
    } else if (f == "--dilation") {
      std::vector<int64_t> v = parseIntList(f, value(), 2);
      p.dilationH = v[0], p.dilationW = v[1];
    } else if (f == "--pad") {
      std::vector<int64_t> v = parseIntList(f, value(), 4);
      p.padTop = v[0], p.padLeft = v[1], p.padBottom = v[2], p.padRight = v[3];
    } else if (f == "--bias")
      bias = true;
    else if (f == "--relu")
      p.relu = true;
    else if (f == "--type")
      p.inType = p.weightType = tcc::gen::parseFloatType(ctx, f, value());
    else if (f == "--out-type")
      p.outType = tcc::gen::parseFloatType(ctx, f, value());
    else if (f == "--tf32")
      p.allowTf32 = true;
    else if (f == "--groups")
      p.groups = parseInt(f, value());
    else if (f == "--wgmma")
      wgmma = value();
    else
      return false;
    return true;
  };
  tcc::gen::parseFlags(argc, argv, flags, ownFlag);
  if (have != 63)
    die("--n, --h, --w, --c, --o and --kernel are required");
  // The bias has the input's type, as the frontend builds it.
  if (bias)
    p.biasType = p.inType;
  tcc::gen::checkChip(flags.chip);
  std::string why;
  if (p.groups != 1) {
    // Depthwise (groups = C = O): the depthwise template, one launch.
    if (p.groups != p.c || p.o != p.c)
      die("--groups must equal --c and --o (depthwise)");
    tcc::gpu::DepthwiseProblem d;
    static_cast<tcc::gpu::ConvProblem &>(d) = p;
    if (!tcc::gpu::depthwiseKernelSupports(d, why))
      die(why);
    OpBuilder b(&ctx);
    tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
    tcc::gpu::KernelLaunch launch =
        tcc::gpu::buildDepthwiseKernel(b, km.kernels, flags.name, d);
    if (tcc::gen::verifyOrPrint(*km.module, flags.emitMlir))
      return 0;
    std::string ptx = tcc::gen::lowerToPtx(*km.module, flags.chip);
    tcc::gen::writePtx(flags.outDir, flags.name, ptx);
    std::vector<tcc::gen::BundleTensor> inputs = {
        {"x", p.inType, {p.n, p.h, p.w, p.c}},
        {"w", p.weightType, {p.o, p.kh, p.kw, 1}}};
    if (bias)
      inputs.push_back({"bias", p.biasType, {p.o}});
    tcc::gen::writeKernelBundle(
        flags.outDir, flags.name, flags.chip, "conv2d", "tcc.conv2d", inputs,
        {"y", p.outType, {p.n, d.outH(), d.outW(), p.o}}, ptx, launch);
    nlohmann::json info = {
        {"name", flags.name}, {"n", p.n}, {"h", p.h}, {"w", p.w},
        {"c", p.c}, {"o", p.o}, {"groups", p.groups},
        {"kernel", {p.kh, p.kw}}, {"stride", {p.strideH, p.strideW}},
        {"pad", {p.padTop, p.padLeft, p.padBottom, p.padRight}},
        {"dilation", {p.dilationH, p.dilationW}},
        {"out", {p.n, d.outH(), d.outW(), p.o}}, {"bias", bias},
        {"relu", p.relu}, {"type", tcc::gen::typeName(p.inType)},
        {"out_type", tcc::gen::typeName(p.outType)}, {"tf32", p.allowTf32},
        {"schedule", "depthwise"}, {"grid", launch.grid},
        {"block", launch.block}, {"shared_bytes", launch.sharedBytes}};
    std::cout << info.dump() << "\n";
    return 0;
  }
  if (!tcc::gpu::convKernelSupports(p, why))
    die(why);
  tcc::TargetDesc target = tcc::gen::targetOf(flags.chip);
  if (!wgmma.empty())
    return buildWgmma(p, wgmma, bias, target, flags);
  tcc::gpu::ConvSchedule s = tcc::gpu::chooseConvSchedule(p, target);
  if (!flags.schedule.empty()) {
    // TM,TN,TK,WM,WN,STAGES[,SPLIT_K]
    std::vector<int64_t> v = parseIntList(
        "--schedule", flags.schedule,
        std::count(flags.schedule.begin(), flags.schedule.end(), ',') == 6 ? 7
                                                                           : 6);
    s = {v[0], v[1], v[2], v[3], v[4], v[5], v.size() == 7 ? v[6] : 1};
    tcc::gpu::chooseSplitKReduction(s, target);
  }
  if (!tcc::gpu::convScheduleValid(p, s, target, why))
    die(why);

  OpBuilder b(&ctx);
  tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
  FailureOr<tcc::gpu::KernelLaunch> launch =
      tcc::gpu::buildConvKernel(b, km.kernels, flags.name, p, s);
  if (failed(launch))
    die("cannot build the kernel");
  return writeCase(
      km, p, bias, flags, *launch,
      reduceOf(b, km, p, flags.name, s.clusterSplitK ? 1 : s.splitK),
      tcc::gpu::splitKWorkspaceBytes(tcc::gpu::convGemm(p), s),
      {s.tileM, s.tileN, s.tileK, s.warpsM, s.warpsN, s.stages, s.splitK});
}
