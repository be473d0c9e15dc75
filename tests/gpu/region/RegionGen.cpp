//===- RegionGen.cpp - builds one region kernel into a PTX bundle ---------===//
//
//   tcc-region-gen --input N,H,W,C --member SPEC [--member SPEC ...]
//       [--type f16|bf16] [--tile TH,TW] [--warps W] [--resident 0|1]
//       [--prefetch 0|1] [--stages S]
//       [--chip sm_90|sm_80]
//       [--name NAME] [--out-dir DIR] [--emit-mlir]
//
// A member SPEC is KIND[:OPT,OPT...] with KIND conv, dw (depthwise), maxpool
// or avgpool and OPTs o=OUT_CHANNELS (conv), k=KHxKW (or k=K), s=SHxSW,
// d=DHxDW, p=PAD or p=TOP/LEFT/BOTTOM/RIGHT, bias, act=relu|relu6, res=R
// (residual: 0 the chain input, i + 1 member i's output) and excl (an
// average pool's divisor counts the image's positions only).
//
// Builds the chain with tcc::gpu::buildRegionKernel (the schedule from
// chooseRegionSchedule unless --tile/--warps say), lowers it with the NVVM
// pipeline of the compiler and writes DIR/NAME.ptx and DIR/NAME.tccb: a
// bundle with inputs x [N, H, W, C], then per member w<i> (conv
// [O, KH, KW, C], dw [C, KH, KW, 1]) and b<i> [O] where it has them, output
// y, one launch. Prints one JSON line describing it (check_region.py).
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/RegionKernel.h"
#include "tests/gpu/MatmulBundle.h"
#include "tests/gpu/TemplateGen.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <sstream>

using namespace mlir;
using tcc::gen::die;
using tcc::gen::parseInt;
using tcc::gen::parseIntList;
using Member = tcc::gpu::RegionMember;

namespace {

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    out.push_back(item);
  return out;
}

/// "A" or "AxB" as a pair.
std::array<int64_t, 2> pairOf(const std::string &flag, const std::string &v) {
  std::vector<std::string> parts = split(v, 'x');
  if (parts.size() == 1)
    return {parseInt(flag, parts[0]), parseInt(flag, parts[0])};
  if (parts.size() != 2)
    die(flag + ": expected N or NxM, got '" + v + "'");
  return {parseInt(flag, parts[0]), parseInt(flag, parts[1])};
}

Member parseMember(const std::string &spec) {
  Member m;
  size_t colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  if (kind == "conv")
    m.kind = Member::Kind::Conv;
  else if (kind == "dw")
    m.kind = Member::Kind::Depthwise;
  else if (kind == "maxpool")
    m.kind = Member::Kind::MaxPool;
  else if (kind == "avgpool")
    m.kind = Member::Kind::AvgPool;
  else
    die("--member: unknown kind '" + kind + "' (conv, dw, maxpool, avgpool)");
  if (colon == std::string::npos)
    return m;
  for (const std::string &opt : split(spec.substr(colon + 1), ',')) {
    size_t eq = opt.find('=');
    std::string key = opt.substr(0, eq);
    std::string val = eq == std::string::npos ? "" : opt.substr(eq + 1);
    std::string flag = "--member " + key;
    if (key == "o")
      m.outChannels = parseInt(flag, val);
    else if (key == "k")
      std::tie(m.kh, m.kw) =
          std::pair(pairOf(flag, val)[0], pairOf(flag, val)[1]);
    else if (key == "s")
      std::tie(m.strideH, m.strideW) =
          std::pair(pairOf(flag, val)[0], pairOf(flag, val)[1]);
    else if (key == "d")
      std::tie(m.dilationH, m.dilationW) =
          std::pair(pairOf(flag, val)[0], pairOf(flag, val)[1]);
    else if (key == "p") {
      std::vector<std::string> parts = split(val, '/');
      if (parts.size() == 1) {
        int64_t v = parseInt(flag, val);
        m.padTop = m.padLeft = m.padBottom = m.padRight = v;
      } else if (parts.size() == 4) {
        m.padTop = parseInt(flag, parts[0]);
        m.padLeft = parseInt(flag, parts[1]);
        m.padBottom = parseInt(flag, parts[2]);
        m.padRight = parseInt(flag, parts[3]);
      } else {
        die(flag + ": expected P or T/L/B/R, got '" + val + "'");
      }
    } else if (key == "bias")
      m.bias = true;
    else if (key == "act") {
      if (val == "relu")
        m.activation = Member::Activation::Relu;
      else if (val == "relu6")
        m.activation = Member::Activation::Relu6;
      else if (val != "none")
        die(flag + ": expected relu, relu6 or none, got '" + val + "'");
    } else if (key == "res")
      m.residualFrom = parseInt(flag, val);
    else if (key == "excl")
      m.countIncludePad = false;
    else
      die("--member: unknown option '" + key + "' in '" + spec + "'");
  }
  if (m.kind == Member::Kind::Conv && m.outChannels == 0)
    die("--member conv needs o=OUT_CHANNELS");
  return m;
}

const char *kindName(Member::Kind k) {
  switch (k) {
  case Member::Kind::Conv:
    return "conv";
  case Member::Kind::Depthwise:
    return "dw";
  case Member::Kind::MaxPool:
    return "maxpool";
  case Member::Kind::AvgPool:
    return "avgpool";
  }
  return "";
}

const char *actName(Member::Activation a) {
  return a == Member::Activation::Relu    ? "relu"
         : a == Member::Activation::Relu6 ? "relu6"
                                          : "none";
}

} // namespace

int main(int argc, char **argv) {
  std::unique_ptr<MLIRContext> context =
      tcc::gen::initGenerator("tcc-region-gen");
  MLIRContext &ctx = *context;

  tcc::gpu::RegionProblem p;
  p.type = Float16Type::get(&ctx);
  tcc::gen::GenFlags flags;
  flags.name = "region";
  bool haveInput = false;
  std::optional<std::array<int64_t, 2>> tile;
  std::optional<int64_t> warps, stages;
  std::optional<bool> resident, prefetch;
  auto ownFlag = [&](const std::string &f, tcc::gen::FlagValue value) {
    if (f == "--input") {
      std::vector<int64_t> v = parseIntList(f, value(), 4);
      p.n = v[0], p.h = v[1], p.w = v[2], p.c = v[3], haveInput = true;
    } else if (f == "--member")
      p.members.push_back(parseMember(value()));
    else if (f == "--type")
      p.type = tcc::gen::parseFloatType(ctx, f, value());
    else if (f == "--tile") {
      std::vector<int64_t> v = parseIntList(f, value(), 2);
      tile = {v[0], v[1]};
    } else if (f == "--warps")
      warps = parseInt(f, value());
    else if (f == "--resident")
      resident = parseInt(f, value()) != 0;
    else if (f == "--prefetch")
      prefetch = parseInt(f, value()) != 0;
    else if (f == "--stages")
      stages = parseInt(f, value());
    else
      return false;
    return true;
  };
  tcc::gen::parseFlags(argc, argv, flags, ownFlag);
  if (!haveInput || p.members.empty())
    die("--input and at least one --member are required");
  tcc::gen::checkChip(flags.chip);
  tcc::TargetDesc target = tcc::gen::targetOf(flags.chip);
  // As the compiler builds a planned tile: the template picks the mode for
  // --tile. No schedule fits: the given one (or 8x8) is then checked below
  // and refused with regionKernelSupports' reason.
  tcc::gpu::RegionSchedule s = tcc::gpu::chooseRegionSchedule(p, target, tile)
                                   .value_or(tcc::gpu::RegionSchedule{});
  if (tile)
    s.tileH = (*tile)[0], s.tileW = (*tile)[1];
  if (warps)
    s.warps = *warps;
  if (resident) {
    s.resident = *resident;
    s.prefetch = s.prefetch && !s.resident;
  }
  if (prefetch)
    s.prefetch = *prefetch;
  if (stages)
    s.stages = *stages;
  std::string why;
  // The heuristic's prefetch at its own tile may not fit the tile asked
  // for: then one shared pipeline, unless --prefetch 1 was asked.
  if (!prefetch && s.prefetch &&
      !tcc::gpu::regionKernelSupports(p, s, target, why))
    s.prefetch = false;
  if (!tcc::gpu::regionKernelSupports(p, s, target, why))
    die(why);

  OpBuilder b(&ctx);
  tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
  FailureOr<tcc::gpu::KernelLaunch> launch =
      tcc::gpu::buildRegionKernel(b, km.kernels, flags.name, p, s);
  if (failed(launch))
    die("cannot build the kernel");
  if (tcc::gen::verifyOrPrint(*km.module, flags.emitMlir))
    return 0;
  std::string ptx = tcc::gen::lowerToPtx(*km.module, flags.chip);
  tcc::gen::writePtx(flags.outDir, flags.name, ptx);

  std::vector<tcc::gen::BundleTensor> inputs;
  tcc::gen::BundleTensor output;
  for (const tcc::gpu::RegionArg &a : tcc::gpu::regionKernelArgs(p)) {
    std::string name = a.role == tcc::gpu::RegionArg::Role::Input    ? "x"
                       : a.role == tcc::gpu::RegionArg::Role::Output ? "y"
                       : a.role == tcc::gpu::RegionArg::Role::Weight
                           ? "w" + std::to_string(a.member)
                           : "b" + std::to_string(a.member);
    if (a.role == tcc::gpu::RegionArg::Role::Output)
      output = {name, p.type, a.shape};
    else
      inputs.push_back({name, p.type, a.shape});
  }
  tcc::gen::writeKernelBundle(flags.outDir, flags.name, flags.chip, "region",
                              "tcc.conv2d", inputs, output, ptx, *launch);

  nlohmann::json members = nlohmann::json::array();
  std::vector<tcc::gpu::RegionTile> tiles = tcc::gpu::regionTiles(p, s);
  for (size_t i = 0; i < p.members.size(); ++i) {
    const Member &m = p.members[i];
    std::array<int64_t, 3> in = p.inShape(i), out = p.outShape(i);
    members.push_back({{"kind", kindName(m.kind)},
                       {"in", in},
                       {"out", out},
                       {"kernel", {m.kh, m.kw}},
                       {"stride", {m.strideH, m.strideW}},
                       {"dilation", {m.dilationH, m.dilationW}},
                       {"pad", {m.padTop, m.padLeft, m.padBottom, m.padRight}},
                       {"bias", m.bias},
                       {"act", actName(m.activation)},
                       {"residual", m.residualFrom},
                       {"count_include_pad", m.countIncludePad}});
  }
  nlohmann::json tileJson = nlohmann::json::array();
  for (const tcc::gpu::RegionTile &t : tiles)
    tileJson.push_back(
        {{"size", t.size}, {"scale", t.scale}, {"offset", t.offset}});
  std::array<int64_t, 3> last = p.outShape(p.members.size() - 1);
  nlohmann::json info = {
      {"name", flags.name},
      {"n", p.n},
      {"h", p.h},
      {"w", p.w},
      {"c", p.c},
      {"type", tcc::gen::typeName(p.type)},
      {"members", members},
      {"out", {p.n, last[0], last[1], last[2]}},
      {"tile", {s.tileH, s.tileW}},
      {"warps", s.warps},
      {"tiles", tileJson},
      {"schedule", std::to_string(s.tileH) + "x" + std::to_string(s.tileW) +
                       "w" + std::to_string(s.warps) + (s.resident ? "r" : "") +
                       (s.prefetch ? "p" : "") +
                       (s.stages ? "s" + std::to_string(s.stages) : "")},
      {"resident", s.resident},
      {"prefetch", s.prefetch},
      {"grid", launch->grid},
      {"block", launch->block},
      {"shared_bytes", launch->sharedBytes}};
  std::cout << info.dump() << "\n";
  return 0;
}
