//===- Flash3Gen.cpp - builds one wgmma attention kernel into PTX ---------===//
//
//   tcc-flash3-gen --lq LQ --lk LK --d D [--batch B] [--hq HQ] [--hkv HKV]
//       [--type bf16|f16] [--scale S] [--causal] [--window W] [--mask A,B,C]
//       [--alibi] [--softcap C] [--algebra-callbacks] [--masked-rows zero|nan]
//       [--schedule WARPGROUPS,BKV,STAGES,OVERLAP] [--name NAME]
//       [--out-dir DIR] [--emit-mlir]
//
// Builds the kernel with tcc::gpu::buildWgmmaAttentionKernel (the schedule
// from chooseWgmmaAttentionSchedule unless given), lowers it for sm_90a with
// the compiler's NVVM pipeline, writes DIR/NAME.ptx and prints one JSON line
// in the format of tcc-flash-gen (tests/gpu/flash/check_flash.py's input).
// The variants are those of tests/gpu/flash/FlashGen.cpp:
//   --causal        mask q - k >= 0
//   --window W      mask k - q + W - 1 >= 0
//   --mask A,B,C    any constraint A*q + B*k + C >= 0 (repeatable)
//   --alibi         scoreMod s + slope_h * (k - q), slope_h = 2^(-8(h+1)/HQ)
//   --softcap C     scoreMod C * tanh(s / C)
//   --algebra-callbacks  softmax's correction/contribution as callbacks
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/WgmmaAttention.h"
#include "tests/gpu/TemplateGen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <iostream>

using namespace mlir;
using tcc::gen::die;
using tcc::gen::parseInt;

constexpr const char *kChip = "sm_90a";

namespace {

double parseDouble(const std::string &flag, const std::string &v) {
  char *end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !std::isfinite(x))
    die(flag + ": expected a finite number, got '" + v + "'");
  return x;
}

Value f32Const(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
}

Value exp2Approx(OpBuilder &b, Location loc, Value x) {
  return tcc::gpu::buildExp2Approx(b, loc, x);
}

} // namespace

int main(int argc, char **argv) {
  std::unique_ptr<MLIRContext> context =
      tcc::gen::initGenerator("tcc-flash3-gen");
  MLIRContext &ctx = *context;

  tcc::gpu::AttentionProblem p;
  p.elemType = BFloat16Type::get(&ctx);
  tcc::gen::GenFlags flags;
  flags.name = "attn";
  bool causal = false, alibi = false, callbacks = false;
  bool haveScale = false;
  int64_t window = 0;
  double softcap = 0;
  bool haveLq = false, haveLk = false, haveD = false;
  // The flags of this generator; parseFlags takes the common ones.
  auto ownFlag = [&](const std::string &f, tcc::gen::FlagValue value) {
    if (f == "--batch")
      p.batch = parseInt(f, value());
    else if (f == "--hq")
      p.headsQ = parseInt(f, value());
    else if (f == "--hkv")
      p.headsKV = parseInt(f, value());
    else if (f == "--lq")
      p.lq = parseInt(f, value()), haveLq = true;
    else if (f == "--lk")
      p.lk = parseInt(f, value()), haveLk = true;
    else if (f == "--d")
      p.headDim = parseInt(f, value()), haveD = true;
    else if (f == "--type") {
      std::string t = value();
      if (t == "bf16")
        p.elemType = BFloat16Type::get(&ctx);
      else if (t == "f16")
        p.elemType = Float16Type::get(&ctx);
      else
        die("--type: expected bf16 or f16, got '" + t + "'");
    } else if (f == "--scale")
      p.scale = parseDouble(f, value()), haveScale = true;
    else if (f == "--causal")
      causal = true;
    else if (f == "--window") {
      window = parseInt(f, value());
      if (window < 1)
        die("--window: expected a positive integer");
    } else if (f == "--mask") {
      std::vector<int64_t> v = tcc::gen::parseIntList(f, value(), 3, true);
      p.mask.push_back({v[0], v[1], v[2]});
    } else if (f == "--alibi")
      alibi = true;
    else if (f == "--softcap") {
      softcap = parseDouble(f, value());
      if (softcap <= 0)
        die("--softcap: expected a positive number");
    } else if (f == "--algebra-callbacks")
      callbacks = true;
    else if (f == "--masked-rows") {
      std::string v = value();
      if (v == "zero")
        p.maskedRows = tcc::gpu::MaskedRowPolicy::Zero;
      else if (v == "nan")
        p.maskedRows = tcc::gpu::MaskedRowPolicy::NaN;
      else
        die("--masked-rows: expected zero or nan, got '" + v + "'");
    } else
      return false;
    return true;
  };
  flags.chip = kChip;
  tcc::gen::parseFlags(argc, argv, flags, ownFlag);
  const std::string &chip = flags.chip, &name = flags.name,
                    &outDir = flags.outDir;
  if (!haveLq || !haveLk || !haveD)
    die("--lq, --lk and --d are required");
  if (chip != kChip)
    die("--chip: wgmma needs sm_90a");
  if (name.empty() || std::isdigit((unsigned char)name[0]) ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                             "VWXYZ0123456789_") != std::string::npos)
    die("--name: expected letters, digits and '_', not starting with a "
        "digit");
  if (!haveScale && p.headDim > 0)
    p.scale = 1.0 / std::sqrt(double(p.headDim));
  if (causal)
    p.mask.push_back({1, -1, 0});
  if (window)
    p.mask.push_back({-1, 1, window - 1});
  if (alibi && softcap > 0)
    die("--alibi and --softcap together are not a test case here");
  int64_t headsQ = p.headsQ;
  if (alibi)
    p.scoreMod = [headsQ](OpBuilder &b, Location loc, Value s, Value,
                          Value head, Value q, Value k) -> Value {
      Type f32 = b.getF32Type();
      Value h1 = arith::AddIOp::create(
          b, loc, head,
          arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1)));
      Value e = arith::MulFOp::create(b, loc,
                                      arith::SIToFPOp::create(b, loc, f32, h1),
                                      f32Const(b, loc, -8.0 / double(headsQ)));
      Value slope = exp2Approx(b, loc, e);
      Value dist = arith::SIToFPOp::create(b, loc, f32,
                                           arith::SubIOp::create(b, loc, k, q));
      return LLVM::FMAOp::create(b, loc, slope, dist, s);
    };
  if (softcap > 0)
    p.scoreMod = [softcap](OpBuilder &b, Location loc, Value s, Value, Value,
                           Value, Value) -> Value {
      // c * tanh(s / c), tanh(x) = 1 - 2 / (e^(2x) + 1) (exact limits at
      // +-inf; absolute error ~1e-7 near 0).
      Value e =
          exp2Approx(b, loc,
                     arith::MulFOp::create(
                         b, loc, s, f32Const(b, loc, 2.0 * M_LOG2E / softcap)));
      auto fm = arith::FastMathFlagsAttr::get(b.getContext(),
                                              arith::FastMathFlags::afn);
      Value frac = arith::DivFOp::create(
          b, loc, f32Const(b, loc, 2.0),
          arith::AddFOp::create(b, loc, e, f32Const(b, loc, 1.0)), fm);
      Value t = arith::SubFOp::create(b, loc, f32Const(b, loc, 1.0), frac);
      return arith::MulFOp::create(b, loc, t, f32Const(b, loc, softcap));
    };
  if (callbacks) {
    p.correction = [](OpBuilder &b, Location loc, Value oldRun,
                      Value newRun) -> Value {
      Value d = arith::SubFOp::create(b, loc, oldRun, newRun);
      return exp2Approx(
          b, loc, arith::MulFOp::create(b, loc, d, f32Const(b, loc, M_LOG2E)));
    };
    p.contribution = [](OpBuilder &b, Location loc, Value s,
                        Value run) -> Value {
      Value d = arith::SubFOp::create(b, loc, s, run);
      return exp2Approx(
          b, loc, arith::MulFOp::create(b, loc, d, f32Const(b, loc, M_LOG2E)));
    };
  }
  tcc::gpu::WgmmaAttentionSchedule s =
      tcc::gpu::chooseWgmmaAttentionSchedule(p);
  if (!flags.schedule.empty()) {
    std::vector<int64_t> v =
        tcc::gen::parseIntList("--schedule", flags.schedule, 4);
    if (v[3] != 0 && v[3] != 1)
      die("--schedule: OVERLAP must be 0 or 1");
    s = {v[0], v[1], v[2], v[3] == 1};
  }
  std::string why;
  if (!tcc::gpu::wgmmaAttentionSupports(p, s, why))
    die(why);

  OpBuilder b(&ctx);
  tcc::gen::KernelModule km = tcc::gen::createKernelModule(b);
  FailureOr<tcc::gpu::KernelLaunch> launch =
      tcc::gpu::buildWgmmaAttentionKernel(b, km.kernels, name, p, s);
  if (failed(launch))
    die("cannot build the kernel");
  if (tcc::gen::verifyOrPrint(*km.module, flags.emitMlir))
    return 0;
  tcc::gen::writePtx(outDir, name, tcc::gen::lowerToPtx(*km.module, chip));

  nlohmann::json mask = nlohmann::json::array();
  for (const tcc::gpu::MaskConstraint &mc : p.mask)
    mask.push_back({mc.a, mc.b, mc.c});
  nlohmann::json info = {
      {"name", name},
      {"batch", p.batch},
      {"hq", p.headsQ},
      {"hkv", p.headsKV},
      {"lq", p.lq},
      {"lk", p.lk},
      {"d", p.headDim},
      {"type", p.elemType.isBF16() ? "bf16" : "f16"},
      {"scale", p.scale},
      {"causal", causal},
      {"window", window},
      {"mask", mask},
      {"alibi", alibi},
      {"softcap", softcap},
      {"callbacks", callbacks},
      {"masked_rows",
       p.maskedRows == tcc::gpu::MaskedRowPolicy::Zero ? "zero" : "nan"},
      {"schedule", {s.warpgroups, s.blockKV, s.stages, int(s.overlap)}},
      {"grid", launch->grid},
      {"block", launch->block},
      {"shared_bytes", launch->sharedBytes}};
  std::cout << info.dump() << "\n";
  return 0;
}
