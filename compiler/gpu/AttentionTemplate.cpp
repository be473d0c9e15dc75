//===- AttentionTemplate.cpp - attention templates behind one interface ===//
//
// Each template's supports, heuristic, validity, schedule fields and
// kernels, over AttentionProblem; the functions each wraps live with its
// template (AttentionKernel.h, WgmmaAttention.h, SimtAttention.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/gpu/AttentionTemplate.h"
#include "compiler/gpu/AttentionPlan.h"

#include <map>

namespace tcc::gpu {

using namespace mlir;

namespace {

/// Sets the fields of a user schedule (`fields`, a JSON object) that name
/// `ints` (integers) and `flags` (booleans) of template `name`; false with
/// `why` at the first other key or a value of the wrong type.
bool setFields(const nlohmann::json &fields,
               const std::map<std::string, int64_t *> &ints,
               const std::map<std::string, bool *> &flags, llvm::StringRef name,
               std::string &why) {
  for (auto &[key, value] : fields.items()) {
    if (key == "template")
      continue;
    if (auto it = ints.find(key); it != ints.end() && value.is_number_integer())
      *it->second = value.get<int64_t>();
    else if (auto f = flags.find(key); f != flags.end() && value.is_boolean())
      *f->second = value.get<bool>();
    else {
      if (ints.count(key)) {
        why = "'" + key + "' takes an integer";
      } else if (flags.count(key)) {
        why = "'" + key + "' takes true or false";
      } else {
        why =
            "'" + key + "' is not a field of the " + name.str() + " template (";
        for (auto &f : ints)
          why += f.first + " ";
        for (auto &f : flags)
          why += f.first + " ";
        why.back() = ')';
      }
      why = "attention schedule: " + why;
      return false;
    }
  }
  return true;
}

/// One kernel reading Q, K, V and writing O, or its failure as `why`.
FailureOr<AttentionKernels> oneKernel(const std::string &name,
                                      FailureOr<KernelLaunch> launch,
                                      std::string &why) {
  if (failed(launch)) {
    why = "the attention kernel could not be built";
    return failure();
  }
  AttentionKernels k;
  k.kernel = name;
  k.launch = *launch;
  return k;
}

/// A user schedule's fields: integers and flags of a template's schedule.
struct Fields {
  std::map<std::string, int64_t *> ints;
  std::map<std::string, bool *> flags;
};

/// What every template does alike over its plan attribute `AttrT` and its
/// schedule `Sched`: owns the attribute, reads the plan's schedule, and
/// sets a user schedule's fields (`fieldsOf`) on it.
template <typename AttrT, typename Sched, typename Base = AttentionTemplate>
class Typed : public Base {
protected:
  static Sched schedule(Attribute plan) {
    return scheduleOf(cast<AttrT>(plan));
  }
  /// The fields of `s` a user schedule may set, by name.
  virtual Fields fieldsOf(Sched &s) const = 0;

public:
  bool owns(Attribute plan) const override {
    return isa_and_present<AttrT>(plan);
  }
  Attribute withFields(MLIRContext *ctx, Attribute plan,
                       const nlohmann::json &fields,
                       std::string &why) const override {
    Sched s = schedule(plan);
    Fields f = fieldsOf(s);
    if (!setFields(fields, f.ints, f.flags, this->name(), why))
      return {};
    return planOf(ctx, s);
  }
};

/// The f32 SIMT template (every dtype widened to f32; AMD's only one), in
/// one kernel or split over the keys (chunkTiles > 0) with a combine.
class SimtTemplate final
    : public Typed<mlir::tcc::SimtAttentionAttr, SimtAttentionSchedule> {
public:
  llvm::StringRef name() const override { return "simt"; }
  bool supports(const AttentionProblem &p, const ::tcc::TargetDesc &,
                std::string &why) const override {
    return simtAttentionSupports(p, why);
  }
  Attribute choose(MLIRContext *ctx, const AttentionProblem &p,
                   const ::tcc::TargetDesc &target) const override {
    return planOf(ctx, chooseSimtAttentionSchedule(p, target));
  }
  bool validate(const AttentionProblem &p, Attribute plan,
                const ::tcc::TargetDesc &target,
                std::string &why) const override {
    return supports(p, target, why) &&
           simtAttentionScheduleValid(p, schedule(plan), target, why);
  }
  FailureOr<AttentionKernels> build(OpBuilder &b, mlir::gpu::GPUModuleOp module,
                                    llvm::StringRef name,
                                    const AttentionProblem &p, Attribute plan,
                                    const ::tcc::TargetDesc &target,
                                    std::string &why) const override {
    SimtAttentionSchedule s = schedule(plan);
    if (!s.chunkTiles) {
      std::string kernel = (name + "_attn_simt").str();
      return oneKernel(
          kernel, buildSimtAttentionKernel(b, module, kernel, p, s, target),
          why);
    }
    // Decode: the keys split over blocks, then a combine.
    AttentionKernels k;
    k.kernel = (name + "_decode").str();
    k.combine = (name + "_combine").str();
    FailureOr<SimtDecodeKernels> dk =
        buildSimtDecodeKernels(b, module, k.kernel, k.combine, p, s, target);
    if (failed(dk)) {
      why = "the SIMT decode kernels could not be built";
      return failure();
    }
    k.launch = dk->partial;
    k.combineLaunch = dk->combine;
    k.partialOBytes = dk->partialOBytes;
    k.statsBytes = dk->partialStatsBytes;
    return k;
  }

protected:
  Fields fieldsOf(SimtAttentionSchedule &s) const override {
    return {{{"block_q", &s.blockQ},
             {"block_kv", &s.blockKV},
             {"tile_rows", &s.tileRows},
             {"tile_keys", &s.tileKeys},
             {"min_blocks", &s.minBlocks},
             {"chunk_tiles", &s.chunkTiles}},
            {{"split_kv", &s.splitKV}}};
  }
};

/// What the tensor-core templates (mma.sync and wgmma: bf16 and f16, f32
/// as 3xTF32) share: a target with mma.sync, and the problems
/// attentionKernelSupports takes.
class TensorCoreTemplate : public AttentionTemplate {
public:
  bool supports(const AttentionProblem &p, const ::tcc::TargetDesc &target,
                std::string &why) const override {
    if (!target.mmaSync) {
      why = "the attention plan names a tensor-core template (mma.sync), "
            "which " +
            target.name +
            " does not have: its attention takes the SIMT template";
      return false;
    }
    return attentionKernelSupports(p, why);
  }
};

/// The mma.sync prefill template.
class MmaTemplate final : public Typed<mlir::tcc::MmaAttentionAttr,
                                       AttentionSchedule, TensorCoreTemplate> {
public:
  llvm::StringRef name() const override { return "mma"; }
  Attribute choose(MLIRContext *ctx, const AttentionProblem &p,
                   const ::tcc::TargetDesc &target) const override {
    return planOf(ctx, chooseAttentionSchedule(p, target));
  }
  bool validate(const AttentionProblem &p, Attribute plan,
                const ::tcc::TargetDesc &target,
                std::string &why) const override {
    return supports(p, target, why) &&
           attentionScheduleValid(p, schedule(plan), target, why);
  }
  FailureOr<AttentionKernels> build(OpBuilder &b, mlir::gpu::GPUModuleOp module,
                                    llvm::StringRef name,
                                    const AttentionProblem &p, Attribute plan,
                                    const ::tcc::TargetDesc &,
                                    std::string &why) const override {
    std::string kernel = (name + "_attn").str();
    return oneKernel(kernel,
                     buildAttentionKernel(b, module, kernel, p, schedule(plan)),
                     why);
  }

protected:
  Fields fieldsOf(AttentionSchedule &s) const override {
    return {{{"block_q", &s.blockQ},
             {"block_kv", &s.blockKV},
             {"warps", &s.warps},
             {"stages", &s.stages}},
            {}};
  }
};

/// The mma.sync split-K decode pair (one kernel where one chunk holds
/// every key).
class MmaDecodeTemplate final
    : public Typed<mlir::tcc::MmaDecodeAttr, DecodeSchedule,
                   TensorCoreTemplate> {
public:
  llvm::StringRef name() const override { return "mma_decode"; }
  Attribute choose(MLIRContext *ctx, const AttentionProblem &p,
                   const ::tcc::TargetDesc &target) const override {
    return planOf(ctx, chooseDecodeSchedule(p, target));
  }
  bool validate(const AttentionProblem &p, Attribute plan,
                const ::tcc::TargetDesc &target,
                std::string &why) const override {
    return supports(p, target, why) &&
           decodeScheduleValid(p, schedule(plan), target, why);
  }
  FailureOr<AttentionKernels> build(OpBuilder &b, mlir::gpu::GPUModuleOp module,
                                    llvm::StringRef name,
                                    const AttentionProblem &p, Attribute plan,
                                    const ::tcc::TargetDesc &,
                                    std::string &why) const override {
    AttentionKernels k;
    k.kernel = (name + "_decode").str();
    std::string combine = (name + "_combine").str();
    FailureOr<DecodeKernels> dk =
        buildDecodeKernels(b, module, k.kernel, combine, p, schedule(plan));
    if (failed(dk)) {
      why = "the decode kernels could not be built";
      return failure();
    }
    k.launch = dk->partial;
    if (dk->single())
      return k;
    k.combine = combine;
    k.combineLaunch = dk->combine;
    k.partialOBytes = dk->partialOBytes;
    k.statsBytes = dk->partialStatsBytes;
    return k;
  }

protected:
  Fields fieldsOf(DecodeSchedule &s) const override {
    return {{{"block_kv", &s.blockKV},
             {"warps", &s.warps},
             {"stages", &s.stages},
             {"chunk_tiles", &s.chunkTiles}},
            {}};
  }
};

/// Hopper's warpgroup-MMA prefill template (sm_90a).
class WgmmaTemplate final
    : public Typed<mlir::tcc::WgmmaAttentionAttr, WgmmaAttentionSchedule,
                   TensorCoreTemplate> {
public:
  llvm::StringRef name() const override { return "wgmma"; }
  Attribute choose(MLIRContext *ctx, const AttentionProblem &p,
                   const ::tcc::TargetDesc &) const override {
    return planOf(ctx, chooseWgmmaAttentionSchedule(p));
  }
  bool validate(const AttentionProblem &p, Attribute plan,
                const ::tcc::TargetDesc &target,
                std::string &why) const override {
    if (!supports(p, target, why))
      return false;
    if (!target.wgmma) {
      why = "the wgmma attention template needs a target with wgmma (sm_90a)";
      return false;
    }
    return wgmmaAttentionSupports(p, schedule(plan), target, why);
  }
  FailureOr<AttentionKernels> build(OpBuilder &b, mlir::gpu::GPUModuleOp module,
                                    llvm::StringRef name,
                                    const AttentionProblem &p, Attribute plan,
                                    const ::tcc::TargetDesc &,
                                    std::string &why) const override {
    std::string kernel = (name + "_attn_wgmma").str();
    return oneKernel(
        kernel, buildWgmmaAttentionKernel(b, module, kernel, p, schedule(plan)),
        why);
  }

protected:
  Fields fieldsOf(WgmmaAttentionSchedule &s) const override {
    return {{{"warpgroups", &s.warpgroups},
             {"block_kv", &s.blockKV},
             {"stages", &s.stages}},
            {{"overlap", &s.overlap},
             {"producer", &s.producer},
             {"pingpong", &s.pingpong},
             {"tma", &s.tma}}};
  }
};

const MmaTemplate kMma;
const MmaDecodeTemplate kMmaDecode;
const WgmmaTemplate kWgmma;
const SimtTemplate kSimt;
const AttentionTemplate *const kTemplates[] = {&kMma, &kMmaDecode, &kWgmma,
                                               &kSimt};

} // namespace

const AttentionTemplate *attentionTemplateNamed(llvm::StringRef name) {
  for (const AttentionTemplate *t : kTemplates)
    if (t->name() == name)
      return t;
  return nullptr;
}

const AttentionTemplate *attentionTemplateOf(Attribute plan) {
  for (const AttentionTemplate *t : kTemplates)
    if (t->owns(plan))
      return t;
  return nullptr;
}

} // namespace tcc::gpu
