//===- AttentionGen.cpp - what the attention generators share -------------===//
#include "tests/gpu/AttentionGen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <iostream>

using namespace mlir;

namespace tcc::gen {
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

AttentionCase parseAttentionCase(int argc, char **argv, MLIRContext &ctx,
                                 const std::string &defaultChip) {
  AttentionCase c;
  tcc::gpu::AttentionProblem &p = c.p;
  p.elemType = BFloat16Type::get(&ctx);
  tcc::gen::GenFlags &flags = c.flags;
  flags.name = "attn";
  flags.chip = defaultChip;
  bool &causal = c.causal, &alibi = c.alibi, &callbacks = c.callbacks;
  bool haveScale = false;
  int64_t &window = c.window;
  double &softcap = c.softcap;
  bool haveLq = false, haveLk = false, haveD = false;
  std::string layout = "bhld", oLayout;
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
    else if (f == "--dv") // V's head size, where not --d's (MLA)
      p.valueDim = parseInt(f, value());
    else if (f == "--type") {
      std::string t = value();
      if (t == "bf16")
        p.elemType = BFloat16Type::get(&ctx);
      else if (t == "f16")
        p.elemType = Float16Type::get(&ctx);
      else if (t == "f32") // the SIMT template's (tests/gpu/simt)
        p.elemType = Float32Type::get(&ctx);
      else
        die("--type: expected bf16, f16 or f32, got '" + t + "'");
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
    else if (f == "--k-transposed")
      p.kTransposed = true;
    else if (f == "--layout" || f == "--o-layout") {
      std::string v = value();
      if (v != "bhld" && v != "blhd")
        die(f + ": expected bhld or blhd, got '" + v + "'");
      (f == "--layout" ? layout : oLayout) = v;
    } else if (f == "--q-strides" || f == "--k-strides" || f == "--v-strides" ||
               f == "--o-strides") {
      std::vector<int64_t> v = tcc::gen::parseIntList(f, value(), 4);
      (f[2] == 'q'   ? p.qStrides
       : f[2] == 'k' ? p.kStrides
       : f[2] == 'v' ? p.vStrides
                     : p.oStrides)
          .assign(v.begin(), v.end());
    } else if (f == "--masked-rows") {
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
  tcc::gen::parseFlags(argc, argv, flags, ownFlag);
  const std::string &name = flags.name;
  if (!haveLq || !haveLk || !haveD)
    die("--lq, --lk and --d are required");
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
  // K given transposed with lk not a multiple of 8: the tensor-core
  // templates refuse it (their checks say why), the SIMT one takes it.
  // --layout blhd: each tensor lies with its heads and rows swapped in
  // memory ([B, L, H, D], as a model keeps Q, K and V before transposing
  // them for attention; K given transposed [B, D, H, LK]); --o-layout, O's
  // alone. Explicit --X-strides win.
  if (oLayout.empty())
    oLayout = layout;
  auto swapped = [](llvm::SmallVector<int64_t, 4> &strides,
                    llvm::ArrayRef<int64_t> shape) {
    if (!strides.empty())
      return;
    int64_t n1 = shape[1], n2 = shape[2], n3 = shape[3];
    strides = {n1 * n2 * n3, n3, n1 * n3, 1};
  };
  using tcc::gpu::AttentionOperand;
  if (layout == "blhd") {
    swapped(p.qStrides,
            tcc::gpu::attentionOperandShape(p, AttentionOperand::Q));
    swapped(p.kStrides,
            tcc::gpu::attentionOperandShape(p, AttentionOperand::K));
    swapped(p.vStrides,
            tcc::gpu::attentionOperandShape(p, AttentionOperand::V));
  }
  if (oLayout == "blhd")
    swapped(p.oStrides,
            tcc::gpu::attentionOperandShape(p, AttentionOperand::O));
  int64_t headsQ = p.headsQ;
  if (alibi)
    p.scoreMod = [headsQ](OpBuilder &b, Location loc, Value s, Value,
                          Value head, Value q, Value k, ValueRange) -> Value {
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
                           Value, Value, ValueRange) -> Value {
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
  return c;
}

void printAttentionCase(const AttentionCase &c,
                        const std::vector<int64_t> &schedule,
                        const tcc::gpu::KernelLaunch &launch,
                        const tcc::gpu::DecodeKernels *decode) {
  auto strides = [&](tcc::gpu::AttentionOperand which) {
    llvm::SmallVector<int64_t, 4> v =
        tcc::gpu::attentionOperandStrides(c.p, which);
    return std::vector<int64_t>(v.begin(), v.end());
  };
  nlohmann::json mask = nlohmann::json::array();
  for (const tcc::gpu::MaskConstraint &mc : c.p.mask)
    mask.push_back({mc.a, mc.b, mc.c});
  nlohmann::json info = {
      {"name", c.flags.name},
      {"batch", c.p.batch},
      {"hq", c.p.headsQ},
      {"hkv", c.p.headsKV},
      {"lq", c.p.lq},
      {"lk", c.p.lk},
      {"d", c.p.headDim},
      {"type", c.p.elemType.isBF16()  ? "bf16"
               : c.p.elemType.isF16() ? "f16"
                                      : "f32"},
      {"scale", c.p.scale},
      {"causal", c.causal},
      {"window", c.window},
      {"mask", mask},
      {"alibi", c.alibi},
      {"softcap", c.softcap},
      {"callbacks", c.callbacks},
      {"k_transposed", c.p.kTransposed},
      // Element strides of the logical [B, H, rows, D] tensors (K given
      // transposed: [B, HKV, D, LK]) in their buffers.
      {"q_strides", strides(tcc::gpu::AttentionOperand::Q)},
      {"k_strides", strides(tcc::gpu::AttentionOperand::K)},
      {"v_strides", strides(tcc::gpu::AttentionOperand::V)},
      {"o_strides", strides(tcc::gpu::AttentionOperand::O)},
      {"masked_rows",
       c.p.maskedRows == tcc::gpu::MaskedRowPolicy::Zero ? "zero" : "nan"},
      {"schedule", schedule},
      {"grid", launch.grid},
      {"block", launch.block},
      {"shared_bytes", launch.sharedBytes}};
  // TMA descriptors the kernel takes after its buffers: over the buffer of
  // kernel argument `operand` (0 q, 1 k, 2 v, 3 o).
  if (!launch.tensorMaps.empty()) {
    nlohmann::json maps = nlohmann::json::array();
    for (const tcc::gpu::TensorMapSpec &m : launch.tensorMaps)
      maps.push_back({{"operand", m.operand},
                      {"dtype", m.dtype},
                      {"dims", m.dims},
                      {"strides", m.strides},
                      {"box", m.box},
                      {"swizzle", m.swizzle}});
    info["tensor_maps"] = maps;
  }
  // One chunk: the partial kernel writes O, launched as a prefill kernel.
  if (decode && !decode->single())
    info["decode"] = {{"combine_grid", decode->combine.grid},
                      {"combine_block", decode->combine.block},
                      {"partial_o_bytes", decode->partialOBytes},
                      {"stats_bytes", decode->partialStatsBytes}};
  std::cout << info.dump() << "\n";
}

} // namespace tcc::gen
