//===- AttentionPlan.cpp - which attention template, which schedule -------===//
#include "compiler/gpu/AttentionPlan.h"
#include "compiler/gpu/AttentionTemplate.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

#include <nlohmann/json.hpp>

#include <map>

using namespace mlir;

namespace tcc::gpu {

namespace {

/// What region `r` of a tcc.attention yields, its ops built at `b` (with
/// `loc`): its leading block arguments are `lead`, the others the captured
/// tensors, given as `captured`. A captured tensor that is a memref is read
/// where the region reads the tensor (memref.load for tensor.extract); one
/// that is not is the element itself (a template staged it), and the index
/// code of that read is left out, as AttentionMatch builds none for it.
Value instantiate(OpBuilder &b, Location loc, Region &r, ValueRange lead,
                  ValueRange captured) {
  Block &block = r.front();
  IRMapping map;
  map.map(block.getArguments().take_front(lead.size()), lead);
  auto capturedOf = [&](Value t) -> Value {
    auto arg = dyn_cast<BlockArgument>(t);
    if (!arg || arg.getOwner() != &block || arg.getArgNumber() < lead.size())
      return {};
    return captured[arg.getArgNumber() - lead.size()];
  };
  auto staged = [&](Operation *op) {
    auto e = dyn_cast<tensor::ExtractOp>(op);
    Value c = e ? capturedOf(e.getTensor()) : Value();
    return c && !isa<MemRefType>(c.getType());
  };
  // Ops read only by staged reads (their indices) are not built.
  llvm::SmallPtrSet<Operation *, 16> skip;
  for (Operation &op : llvm::reverse(block.without_terminator()))
    if (staged(&op) ||
        (!op.use_empty() && llvm::all_of(op.getUsers(), [&](Operation *u) {
          return skip.contains(u);
        })))
      skip.insert(&op);
  for (Operation &op : block.without_terminator()) {
    if (skip.contains(&op)) {
      if (staged(&op))
        map.map(op.getResult(0),
                capturedOf(cast<tensor::ExtractOp>(op).getTensor()));
      continue;
    }
    if (auto e = dyn_cast<tensor::ExtractOp>(op)) {
      if (Value c = capturedOf(e.getTensor())) {
        SmallVector<Value> idx;
        for (Value i : e.getIndices())
          idx.push_back(map.lookup(i));
        map.map(e.getResult(),
                memref::LoadOp::create(b, loc, c, idx).getResult());
        continue;
      }
    }
    // A staged element already of the compute type needs no conversion.
    if (isa<arith::ExtFOp, arith::TruncFOp>(op) &&
        map.lookupOrDefault(op.getOperand(0)).getType() ==
            op.getResult(0).getType()) {
      map.map(op.getResult(0), map.lookupOrDefault(op.getOperand(0)));
      continue;
    }
    b.clone(op, map)->setLoc(loc);
  }
  return map.lookup(block.getTerminator()->getOperand(0));
}

} // namespace

AttentionProblem attentionProblemOf(mlir::tcc::AttentionOp op,
                                    const ::tcc::TargetDesc &target) {
  AttentionProblem p;
  p.batch = op.getBatchAttr().getInt();
  p.headsQ = op.getHeadsAttr().getInt();
  p.headsKV = op.getKvHeadsAttr().getInt();
  p.lq = op.getLqAttr().getInt();
  p.lk = op.getLkAttr().getInt();
  p.headDim = op.getHeadDimAttr().getInt();
  p.valueDim = op.getValueDim().value_or(0);
  p.elemType = op.getQ().getType().getElementType();
  p.kTransposed = op.getKTransposed();
  // Operands in the model's layout: strides of the 4-D axes, the leading
  // ones a shorter operand lacks of size 1 (any stride).
  auto strides4 = [](ArrayRef<int64_t> s) {
    SmallVector<int64_t, 4> out;
    if (!s.empty())
      out.append(4 - s.size(), 0);
    out.append(s.begin(), s.end());
    return out;
  };
  p.qStrides = strides4(op.getQStrides());
  p.kStrides = strides4(op.getKStrides());
  p.vStrides = strides4(op.getVStrides());
  p.oStrides = strides4(op.getOStrides());
  p.qOffset = op.getQOffset();
  p.kOffset = op.getKOffset();
  p.vOffset = op.getVOffset();
  for (auto [i, c] : llvm::enumerate(op.getCaptured())) {
    auto t = cast<RankedTensorType>(c.getType());
    p.captured.push_back(MemRefType::get(t.getShape(), t.getElementType()));
    p.capturedView.push_back(
        llvm::is_contained(op.getCapturedViews(), int64_t(i)));
  }
  // A scale beside a key mask: the tensor-core templates apply the mask per
  // key (keyKeepApply) and keep their folded-scale softmax; the SIMT one
  // takes the changes as score code (a plan choosing SIMT anyway still
  // applies keyKeepApply).
  bool keyMaskAlone = op.getKeyMaskAlone();
  bool keyAsMask = keyMaskAlone && !target.simtAttentionOnly();
  FloatAttr scale = op.getScaleAttr();
  Operation *attention = op;
  if (scale && (!keyMaskAlone || keyAsMask)) {
    p.scale = scale.getValueAsDouble();
    p.keyKeepApply = keyAsMask;
  } else {
    for (Operation &o : op.getRegion(0).front().without_terminator())
      p.scoreModOps += !isa<arith::ConstantOp>(o);
    p.scoreMod = [attention](OpBuilder &b, Location loc, Value s, Value batch,
                             Value head, Value qi, Value ki,
                             ValueRange captured) {
      return instantiate(b, loc, attention->getRegion(0),
                         {s, batch, head, qi, ki}, captured);
    };
  }
  ArrayRef<int64_t> mask = op.getMask();
  for (size_t i = 0; i + 2 < mask.size(); i += 3)
    p.mask.push_back({mask[i], mask[i + 1], mask[i + 2]});
  if (!op.getKeyKeep().empty()) {
    p.keyKeep = [attention](OpBuilder &b, Location loc, Value batch, Value head,
                            Value ki, ValueRange captured) {
      return instantiate(b, loc, attention->getRegion(1), {batch, head, ki},
                         captured);
    };
    p.keyKeepPerHead = op.getKeyMaskPerHead();
  }
  p.maskedRows =
      op.getMaskedToInfinity() ? MaskedRowPolicy::NaN : MaskedRowPolicy::Zero;
  return p;
}

Attribute chooseAttentionPlan(MLIRContext *ctx, const AttentionProblem &p,
                              const ::tcc::TargetDesc &target,
                              std::string &why) {
  const AttentionTemplate &simt = *attentionTemplateNamed("simt"),
                          &decode = *attentionTemplateNamed("mma_decode"),
                          &wgmma = *attentionTemplateNamed("wgmma"),
                          &mma = *attentionTemplateNamed("mma");
  // A template's heuristic plan, if it builds.
  auto planned = [&](const AttentionTemplate &t) -> Attribute {
    Attribute plan = t.choose(ctx, p, target);
    return t.validate(p, plan, target, why) ? plan : Attribute();
  };
  // Targets without NVIDIA's tensor-core templates (AMD) run every dtype
  // on the SIMT template, in f32. f32 prefill takes the mma.sync template
  // as 3xTF32 (1.1-1.2x SDPA's memory-efficient kernel at sequence 4096
  // and 8192 on the H100, its error 0.7-1.1x SDPA's: session 50); f32
  // decode, bound by memory, the SIMT template's split-K pair in true f32.
  if (target.simtAttentionOnly() || (p.elemType.isF32() && preferDecode(p)))
    return simt.supports(p, target, why) ? planned(simt) : Attribute();
  if (!mma.supports(p, target, why)) {
    // What the tensor-core templates refuse in bf16 or f16 (head sizes that
    // are not a whole number of 16-byte chunks, K given transposed with keys
    // that are not) still runs fused where the SIMT template takes it, on
    // CUDA cores with the inputs widened to f32, as on AMD.
    std::string simtWhy;
    if (!simt.supports(p, target, simtWhy)) {
      why += "; " + simtWhy;
      return {};
    }
    return planned(simt);
  }
  if (preferDecode(p))
    if (Attribute plan = planned(decode))
      return plan;
  // With wgmma (sm_90a), Hopper's warpgroup MMA (1.3-1.6x the mma.sync
  // template at sequence 8192; MLA 1.96x: docs/performance.md) where it
  // takes the problem (Q and K of head size 64 to 256 in steps of 64, V of
  // 64 or 128).
  if (target.wgmma)
    if (Attribute plan = planned(wgmma))
      return plan;
  return planned(mma);
}

bool attentionPlanValid(const AttentionProblem &p, Attribute plan,
                        const ::tcc::TargetDesc &target, std::string &why) {
  // The SIMT template takes every dtype on every GPU target (16-bit inputs
  // widened to f32 on NVIDIA too: slower than the tensor-core templates, a
  // user's choice).
  const AttentionTemplate *t = attentionTemplateOf(plan);
  if (!t) {
    why = "the attention plan is not one of the attention templates";
    return false;
  }
  return t->validate(p, plan, target, why);
}

Attribute applyAttentionSchedule(MLIRContext *ctx, const AttentionProblem &p,
                                 const ::tcc::TargetDesc &target,
                                 Attribute plan, llvm::StringRef schedule,
                                 std::string &why) {
  nlohmann::json j = nlohmann::json::parse(schedule.str(), nullptr,
                                           /*allow_exceptions=*/false);
  if (!j.is_object()) {
    why = "attention schedule: not a JSON object";
    return {};
  }
  const AttentionTemplate *current = attentionTemplateOf(plan);
  std::string name = current ? current->name().str() : "";
  if (j.contains("template")) {
    if (!j["template"].is_string()) {
      why = "attention schedule: \"template\" takes a string";
      return {};
    }
    name = j["template"].get<std::string>();
  }
  if (name.empty()) {
    why = "attention schedule: no template takes this attention (" + why +
          "), and the schedule names none";
    return {};
  }
  const AttentionTemplate *t = attentionTemplateNamed(name);
  if (!t) {
    why = "attention schedule: template '" + name +
          "' is not one of mma, mma_decode, wgmma, simt";
    return {};
  }
  // The fields given over the plan's schedule when it is that template's,
  // else over the template's own heuristic.
  Attribute base = t == current ? plan : t->choose(ctx, p, target);
  Attribute result = t->withFields(ctx, base, j, why);
  if (!result)
    return {};
  if (t->validate(p, result, target, why))
    return result;
  // The mma and SIMT templates' reasons already say so.
  if (!llvm::StringRef(why).contains("attention schedule: "))
    why = "attention schedule: " + why;
  return {};
}

AttentionSchedule scheduleOf(mlir::tcc::MmaAttentionAttr a) {
  return {a.getBlockQ(), a.getBlockKV(), a.getWarps(), a.getStages()};
}

DecodeSchedule scheduleOf(mlir::tcc::MmaDecodeAttr a) {
  DecodeSchedule s;
  s.blockKV = a.getBlockKV();
  s.warps = a.getWarps();
  s.stages = a.getStages();
  s.chunkTiles = a.getChunkTiles();
  return s;
}

WgmmaAttentionSchedule scheduleOf(mlir::tcc::WgmmaAttentionAttr a) {
  WgmmaAttentionSchedule s;
  s.warpgroups = a.getWarpgroups();
  s.blockKV = a.getBlockKV();
  s.stages = a.getStages();
  s.overlap = a.getOverlap();
  s.producer = a.getProducer();
  s.pingpong = a.getPingpong();
  s.tma = a.getTma();
  return s;
}

SimtAttentionSchedule scheduleOf(mlir::tcc::SimtAttentionAttr a) {
  SimtAttentionSchedule s;
  s.blockQ = a.getBlockQ();
  s.blockKV = a.getBlockKV();
  s.tileRows = a.getTileRows();
  s.tileKeys = a.getTileKeys();
  s.splitKV = a.getSplitKV();
  s.minBlocks = a.getMinBlocks();
  s.chunkTiles = a.getChunkTiles();
  return s;
}

Attribute planOf(MLIRContext *ctx, const AttentionSchedule &s) {
  return mlir::tcc::MmaAttentionAttr::get(ctx, s.blockQ, s.blockKV, s.warps,
                                          s.stages);
}

Attribute planOf(MLIRContext *ctx, const DecodeSchedule &s) {
  return mlir::tcc::MmaDecodeAttr::get(ctx, s.blockKV, s.warps, s.stages,
                                       s.chunkTiles);
}

Attribute planOf(MLIRContext *ctx, const WgmmaAttentionSchedule &s) {
  return mlir::tcc::WgmmaAttentionAttr::get(ctx, s.warpgroups, s.blockKV,
                                            s.stages, s.overlap, s.producer,
                                            s.pingpong, s.tma);
}

Attribute planOf(MLIRContext *ctx, const SimtAttentionSchedule &s) {
  return mlir::tcc::SimtAttentionAttr::get(ctx, s.blockQ, s.blockKV,
                                           s.tileRows, s.tileKeys, s.splitKV,
                                           s.minBlocks, s.chunkTiles);
}

} // namespace tcc::gpu
