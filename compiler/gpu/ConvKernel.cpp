//===- ConvKernel.cpp - the tensor-core implicit-GEMM convolution ---------===//
//
// The convolution is the GEMM template with a gathered A (see
// MatmulKernel.cpp: KernelBuilder::gatherRows, copyGatheredA): this file
// maps the convolution to that GEMM, checks what the gather needs and
// chooses the tiles.
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/ConvKernel.h"
#include "compiler/gpu/TemplateUtils.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;

namespace tcc::gpu {
MatmulProblem convGemm(const ConvProblem &p) {
  MatmulProblem g;
  g.batch = 1;
  g.aBatched = g.bBatched = false;
  g.m = p.n * p.outH() * p.outW();
  g.n = p.o;
  g.k = p.kh * p.kw * p.c;
  g.transA = false;
  g.transB = true; // the weight [O][KH*KW*C]
  g.aType = p.inType;
  g.bType = p.weightType;
  g.cType = p.outType;
  g.allowTf32 = p.allowTf32;
  return g;
}

GemmEpilogue convEpilogue(const ConvProblem &p) {
  GemmEpilogue e;
  e.biasType = p.biasType;
  e.residualType = p.residualType;
  e.relu = p.relu;
  e.outStride = p.outStride;
  e.outOffset = p.outOffset;
  e.rawOut = p.rawOut;
  e.copyOut = p.copyOut;
  e.shuffleH = p.shuffleH;
  e.shuffleW = p.shuffleW;
  e.rowsH = p.outH();
  e.rowsW = p.outW();
  return e;
}

namespace {

GemmGather gatherOf(const ConvProblem &p) {
  GemmGather g;
  g.batch = p.n;
  g.h = p.h;
  g.w = p.w;
  g.c = p.c;
  g.oh = p.outH();
  g.ow = p.outW();
  g.kh = p.kh;
  g.kw = p.kw;
  g.strideH = p.strideH;
  g.strideW = p.strideW;
  g.padTop = p.padTop;
  g.padLeft = p.padLeft;
  g.dilationH = p.dilationH;
  g.dilationW = p.dilationW;
  return g;
}

WgmmaProblem wgmmaOf(const ConvProblem &p) {
  MatmulProblem g = convGemm(p);
  WgmmaProblem w;
  w.m = g.m;
  w.n = g.n;
  w.k = g.k;
  w.transB = true;
  w.abType = p.inType;
  w.cType = p.outType;
  return w;
}

bool isFloat(Type t) { return t && (t.isBF16() || t.isF16() || t.isF32()); }

} // namespace

bool convWindowValid(const ConvProblem &p, std::string &why) {
  for (int64_t v : {p.n, p.h, p.w, p.c, p.o, p.kh, p.kw, p.strideH, p.strideW,
                    p.dilationH, p.dilationW})
    if (v < 1)
      return why = "sizes, strides and dilations must be >= 1", false;
  for (int64_t v : {p.padTop, p.padLeft, p.padBottom, p.padRight})
    if (v < 0 || v > (1 << 20))
      return why = "pads must be in [0, 2^20]", false;
  if (p.outH() < 1 || p.outW() < 1)
    return why = "empty output", false;
  return true;
}

bool convKernelSupports(const ConvProblem &p, std::string &why) {
  auto fail = [&](const std::string &msg) {
    why = "conv kernel: " + msg;
    return false;
  };
  if (p.groups != 1)
    return fail("grouped convolution (groups " + std::to_string(p.groups) +
                ")");
  if (!isFloat(p.inType) || p.inType != p.weightType)
    return fail("input and weight must both be bf16, f16 or f32");
  if (p.inType.isF32() && !p.allowTf32)
    return fail("f32 runs on tensor cores only as tf32 (--allow-tf32)");
  if (!isFloat(p.outType) || (p.biasType && !isFloat(p.biasType)) ||
      (p.residualType && !isFloat(p.residualType)))
    return fail("output, bias and residual must be f32, bf16 or f16");
  std::string msg;
  if (!convWindowValid(p, msg))
    return fail(msg);
  // The gather's offsets are 32-bit: the padded input and every window
  // offset must fit (with room for the padding's negative offsets).
  int64_t limit = int64_t(1) << 30;
  int64_t padded = (p.h + p.padTop + p.padBottom + p.kh * p.dilationH) *
                   (p.w + p.padLeft + p.padRight + p.kw * p.dilationW);
  if (padded > limit / p.c || p.n > limit / padded / p.c ||
      p.n * p.outH() * p.outW() > limit || p.kh * p.kw > limit / p.c)
    return fail("the input or the output has 2^30 elements or more");
  if (!gemmOutputsValid(convEpilogue(p), convGemm(p).m, p.o, msg))
    return fail(msg);
  return matmulKernelSupports(convGemm(p), why);
}

bool convScheduleValid(const ConvProblem &p, const ConvSchedule &s,
                       const ::tcc::TargetDesc &target, std::string &why) {
  if (!convKernelSupports(p, why))
    return false;
  if (!matmulScheduleValid(convGemm(p), s, target, why)) {
    // "matmul schedule: ..." of the GEMM view, said of the convolution.
    if (llvm::StringRef(why).starts_with("matmul "))
      why = "conv " + why.substr(7);
    return false;
  }
  return true;
}

ConvSchedule chooseConvSchedule(const ConvProblem &p,
                                const ::tcc::TargetDesc &target) {
  MatmulProblem g = convGemm(p);
  ConvSchedule s = chooseMatmulSchedule(g, target);
  // Few output channels: a tile no wider than they need (the matmul
  // heuristic only shrinks tiles to fill the multiprocessors).
  ConvSchedule narrow = s;
  int64_t need = std::max<int64_t>(32, llvm::PowerOf2Ceil(p.o));
  while (narrow.tileN > need) {
    narrow.tileN /= 2;
    if (narrow.tileN / narrow.warpsN < 32 && narrow.warpsN > 1) {
      // Keep the block's warps: move them to M while its tile allows.
      narrow.warpsN /= 2;
      if (narrow.tileM / (narrow.warpsM * 2) >= 32)
        narrow.warpsM *= 2;
    }
  }
  std::string why;
  chooseSplitK(convGemm(p), narrow, target);
  if (convScheduleValid(p, narrow, target, why))
    s = narrow;
  // Convolutions only: the matmul schedules were tuned without it.
  MatmulSchedule split = s;
  splitThinGrid(convGemm(p), split, target);
  if (split.splitK != s.splitK && convScheduleValid(p, split, target, why))
    s = split;
  return s;
}

FailureOr<KernelLaunch> buildConvKernel(OpBuilder &b,
                                        mlir::gpu::GPUModuleOp module,
                                        StringRef name, const ConvProblem &p,
                                        const ConvSchedule &s) {
  std::string why;
  if (!convKernelSupports(p, why))
    return module.emitError(why), failure();
  GemmGather gather = gatherOf(p);
  return buildGemmKernel(b, module, name, convGemm(p), s, &gather,
                         convEpilogue(p));
}

std::optional<WgmmaSchedule>
chooseWgmmaConvSchedule(const ConvProblem &p, const ::tcc::TargetDesc &target,
                        bool tma) {
  std::string why;
  if (!target.wgmma || !convKernelSupports(p, why))
    return std::nullopt;
  if (p.inType.isF32() && !p.allowTf32)
    return std::nullopt;
  WgmmaProblem w = wgmmaOf(p);
  GemmGather g = gatherOf(p);
  // Under 256 output pixels mma.sync's smaller tiles did as well or better
  // (ResNet-50's 14x14 layers, session 24), and a 64-row wgmma would idle;
  // under 64 output channels most of the narrowest wgmma tile would
  // (DenseNet's 32-channel layers). Under 4 k-tiles the 64-deep k-tile
  // pads K with zeros (MobileNetV2's 24-channel 1x1 layers: 2.7x the
  // products) and the pipeline never fills: MobileNetV2 and SqueezeNet ran
  // 4-6% slower with them on wgmma.
  if (w.m < 256 || w.n < 64 || w.k < 4 * wgmmaTileK(w.abType))
    return std::nullopt;
  // The tiles, with the f16 TFLOP/s one multiprocessor sustained on them
  // (tests/gpu/conv on the H200, session 24: U-Net's and ResNet-50's
  // layers, every tile and split measured).
  struct Candidate {
    WgmmaSchedule s; // tileM, tileN, warpgroups, stages
    double smTflops;
  };
  const Candidate candidates[] = {{{128, 256, 2, 4}, 2.8},
                                  {{128, 128, 2, 5}, 2.5},
                                  {{128, 64, 2, 4}, 2.1},
                                  {{64, 128, 1, 4}, 2.1},
                                  {{64, 64, 1, 4}, 2.0}};
  int64_t widest = std::max<int64_t>(64, llvm::PowerOf2Ceil(p.o));
  int64_t sms = target.multiprocessorsForHeuristics();
  int64_t tileK = wgmmaTileK(w.abType), kTiles = ceilDiv(w.k, tileK);
  int64_t elem = w.abType.getIntOrFloatBitWidth() / 8;
  // Estimated microseconds: the larger of the multiprocessors' MMA time
  // (blocks beyond one a multiprocessor queue behind it) and the operands'
  // L2 traffic (A is read once per column of tiles, B once per row, at
  // ~7 TB/s), plus for split-K the f32 partials written and read (~3 TB/s)
  // and the reduction's launch. On the measured layers it picked the
  // fastest schedule or one within 10% of it.
  std::optional<WgmmaSchedule> best;
  double bestUs = 0;
  for (const Candidate &c : candidates) {
    int64_t tileM = c.s.tileM, tileN = c.s.tileN;
    if (tileN > widest)
      continue;
    int64_t tiles = ceilDiv(w.m, tileM) * ceilDiv(w.n, tileN);
    double traffic = double(w.m * w.k * elem) * ceilDiv(w.n, tileN) +
                     double(w.n * w.k * elem) * ceilDiv(w.m, tileM);
    for (int64_t split = 1; split <= 16; split *= 2) {
      int64_t perSplit = ceilDiv(kTiles, split);
      if (split > 1 && (perSplit < 2 || (split - 1) * perSplit >= kTiles))
        break;
      int64_t blocks = tiles * split;
      double mma = double(ceilDiv(blocks, sms)) * perSplit * tileM * tileN *
                   tileK * 2 / (c.smTflops * 1e6);
      double us = std::max(mma, traffic / 7e6);
      if (split > 1)
        us += 2.0 + 2.0 * split * w.m * w.n * 4 / 3e6;
      WgmmaSchedule s = c.s;
      s.splitK = split;
      if ((!best || us < bestUs) &&
          wgmmaKernelSupports(w, s, target, why, &g)) {
        best = s;
        bestUs = us;
      }
    }
  }
  // The same schedule with its operands copied by TMA where the shapes
  // allow (channels a multiple of the k-tile, the im2col map's limits).
  if (best && tma) {
    WgmmaSchedule t = *best;
    t.tma = true;
    if (wgmmaKernelSupports(w, t, target, why, &g))
      best = t;
  }
  return best;
}

bool wgmmaConvScheduleValid(const ConvProblem &p, const WgmmaSchedule &s,
                            const ::tcc::TargetDesc &target, std::string &why) {
  if (!convKernelSupports(p, why))
    return false;
  if (p.inType.isF32() && !p.allowTf32) {
    why = "the wgmma template computes f32 convolutions as tf32 only";
    return false;
  }
  GemmGather g = gatherOf(p);
  return wgmmaKernelSupports(wgmmaOf(p), s, target, why, &g);
}

std::vector<WgmmaSchedule>
wgmmaConvScheduleSpace(const ConvProblem &p, const ::tcc::TargetDesc &target) {
  std::vector<WgmmaSchedule> space;
  std::string why;
  for (WgmmaSchedule s : wgmmaScheduleSpace(wgmmaOf(p), target))
    for (bool tma : {false, true}) {
      s.tma = tma;
      if (wgmmaConvScheduleValid(p, s, target, why))
        space.push_back(s);
    }
  return space;
}

std::vector<ConvSchedule> convScheduleSpace(const ConvProblem &p,
                                            const ::tcc::TargetDesc &target) {
  std::vector<ConvSchedule> space;
  std::string why;
  if (!convKernelSupports(p, why))
    return space;
  for (ConvSchedule s : matmulScheduleSpace(convGemm(p), target))
    if (convScheduleValid(p, s, target, why))
      space.push_back(s);
  return space;
}

FailureOr<KernelLaunch> buildWgmmaConvKernel(OpBuilder &b,
                                             mlir::gpu::GPUModuleOp module,
                                             StringRef name,
                                             const ConvProblem &p,
                                             const WgmmaSchedule &s) {
  std::string why;
  if (!convKernelSupports(p, why))
    return module.emitError(why), failure();
  GemmGather gather = gatherOf(p);
  return buildWgmmaKernel(b, module, name, wgmmaOf(p), s, &gather,
                          convEpilogue(p));
}

} // namespace tcc::gpu
