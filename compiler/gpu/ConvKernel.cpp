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
namespace {

MatmulProblem gemmOf(const ConvProblem &p) {
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
  return matmulKernelSupports(gemmOf(p), why);
}

bool convScheduleValid(const ConvProblem &p, const ConvSchedule &s,
                       const ::tcc::TargetDesc &target, std::string &why) {
  if (!convKernelSupports(p, why))
    return false;
  if (!matmulScheduleValid(gemmOf(p), s, target, why)) {
    // "matmul schedule: ..." of the GEMM view, said of the convolution.
    if (llvm::StringRef(why).starts_with("matmul "))
      why = "conv " + why.substr(7);
    return false;
  }
  return true;
}

ConvSchedule chooseConvSchedule(const ConvProblem &p,
                                const ::tcc::TargetDesc &target) {
  MatmulProblem g = gemmOf(p);
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
  chooseSplitK(gemmOf(p), narrow, target);
  if (convScheduleValid(p, narrow, target, why))
    s = narrow;
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
  GemmEpilogue epilogue;
  epilogue.biasType = p.biasType;
  epilogue.residualType = p.residualType;
  epilogue.relu = p.relu;
  return buildGemmKernel(b, module, name, gemmOf(p), s, &gather, epilogue);
}

} // namespace tcc::gpu
