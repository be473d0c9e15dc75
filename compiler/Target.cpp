//===- Target.cpp - what tcc knows of a code target -----------------------===//
#include "compiler/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace tcc;

namespace {

/// The GPUs tcc generates code for, each checked in CI (gpu-codegen: every
/// op, example and model compiles and assembles). Below sm_80 the templates'
/// cp.async and bf16 mma.sync do not exist; newer NVIDIA generations and other
/// AMD chips are not compiled in CI, so they are refused rather than guessed.
TargetDesc nvidia(unsigned sm, bool archSpecific, int64_t shared, int64_t sms) {
  TargetDesc t;
  t.arch = TargetArch::Nvidia;
  t.name = "sm_" + std::to_string(sm) + (archSpecific ? "a" : "");
  t.version = sm;
  t.cpAsync = sm >= 80;
  t.mmaSync = sm >= 80;
  t.tma = sm >= 90;
  t.wgmma = sm == 90 && archSpecific;
  t.l2CacheHints = sm >= 90;
  t.gridDependency = sm >= 90;
  t.clusters = sm >= 90;
  t.warpSize = 32;
  t.maxSharedPerBlock = shared;
  t.multiprocessors = sms;
  return t;
}

TargetDesc amd(llvm::StringRef gfx, int64_t cus) {
  TargetDesc t;
  t.arch = TargetArch::Amd;
  t.name = ("gfx" + gfx).str();
  gfx.getAsInteger(16, t.version);
  t.warpSize = 64; // CDNA runs wave64
  t.maxSharedPerBlock = 65536;
  t.multiprocessors = cus;
  return t;
}

const std::vector<TargetDesc> &knownTargets() {
  static const std::vector<TargetDesc> targets = [] {
    std::vector<TargetDesc> v;
    v.push_back(TargetDesc()); // host
    // Shared memory a block may opt in to (CUDA's "max shared memory per
    // block optin"); multiprocessors of A100 and H100/H200. GA10x and AD10x
    // parts range from 16 to 144 SMs: unknown.
    v.push_back(nvidia(80, false, 166912, 108));
    v.push_back(nvidia(86, false, 101376, 0));
    v.push_back(nvidia(89, false, 101376, 0));
    v.push_back(nvidia(90, false, 232448, 132));
    v.push_back(nvidia(90, true, 232448, 132));
    // 64 KiB of LDS a workgroup; MI250X's 110 compute units a die, MI300X's
    // 304.
    v.push_back(amd("90a", 110));
    v.push_back(amd("942", 304));
    return v;
  }();
  return targets;
}

std::string listText() { return llvm::join(supportedTargets(), ", "); }

} // namespace

int64_t TargetDesc::multiprocessorsForHeuristics() const {
  if (multiprocessors)
    return multiprocessors;
  return isAmd() ? 104 : 80;
}

const std::vector<std::string> &tcc::supportedTargets() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const TargetDesc &t : knownTargets())
      v.push_back(t.name);
    return v;
  }();
  return names;
}

std::optional<TargetDesc> tcc::parseTarget(llvm::StringRef name,
                                           std::string &error) {
  for (const TargetDesc &t : knownTargets())
    if (t.name == name)
      return t;
  std::string why;
  llvm::StringRef rest = name;
  unsigned number = 0;
  if (rest.consume_front("sm_")) {
    if (!rest.consume_back("a"))
      rest.consume_back("f");
    if (!rest.empty() && llvm::all_of(rest, llvm::isDigit) &&
        !rest.getAsInteger(10, number))
      why = number < 80 ? "tcc's NVIDIA kernels need sm_80 or later "
                          "(cp.async, bf16 mma.sync)"
                        : "this NVIDIA GPU is not supported yet";
  } else if (rest.consume_front("gfx")) {
    if (!rest.empty() && llvm::all_of(rest, llvm::isAlnum))
      why = "this AMD GPU is not supported yet";
  }
  error = "unknown target '" + name.str() + "'";
  if (!why.empty())
    error = "target '" + name.str() + "' is not supported: " + why;
  error += " (supported: " + listText() + ")";
  return std::nullopt;
}
