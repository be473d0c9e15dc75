//===- CpuFeatures.cpp - the x86 features a host bundle may require -------===//
#include "runtime/src/CpuFeatures.h"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace {

enum Reg { EAX, EBX, ECX, EDX };

/// Register state the OS must save for a feature's registers (XCR0 bits).
constexpr uint64_t kSse = 1u << 1, kAvx = kSse | 1u << 2,
                   kAvx512 = kAvx | 7u << 5, kAmx = 3u << 17, kApx = 1u << 19;

struct Feature {
  const char *name;
  unsigned leaf, subleaf;
  Reg reg;
  unsigned bit;
  uint64_t xcr0 = 0;
  /// AVX10: the version leaf 0x24 must report at least this.
  unsigned avx10 = 0;
};

// The features LLVM's code generator may use for ordinary code, from the
// Intel SDM (CPUID, vol. 2A) and AMD's APM (vol. 3, appendix E). System,
// atomic and crypto instructions (xsave, serialize, movdiri, aes, ...) only
// intrinsics reach, and tcc emits none: they are not recorded, so that a
// CPU (or a VM) without them still runs the bundle.
const Feature kFeatures[] = {
    {"x87", 1, 0, EDX, 0},
    {"cx8", 1, 0, EDX, 8},
    {"cmov", 1, 0, EDX, 15},
    {"mmx", 1, 0, EDX, 23},
    {"fxsr", 1, 0, EDX, 24},
    {"sse", 1, 0, EDX, 25},
    {"sse2", 1, 0, EDX, 26},
    {"sse3", 1, 0, ECX, 0},
    {"pclmul", 1, 0, ECX, 1},
    {"ssse3", 1, 0, ECX, 9},
    {"fma", 1, 0, ECX, 12, kAvx},
    {"cx16", 1, 0, ECX, 13},
    {"sse4.1", 1, 0, ECX, 19},
    {"sse4.2", 1, 0, ECX, 20},
    {"movbe", 1, 0, ECX, 22},
    {"popcnt", 1, 0, ECX, 23},
    {"avx", 1, 0, ECX, 28, kAvx},
    {"f16c", 1, 0, ECX, 29, kAvx},
    {"bmi", 7, 0, EBX, 3},
    {"avx2", 7, 0, EBX, 5, kAvx},
    {"bmi2", 7, 0, EBX, 8},
    {"avx512f", 7, 0, EBX, 16, kAvx512},
    {"avx512dq", 7, 0, EBX, 17, kAvx512},
    {"avx512ifma", 7, 0, EBX, 21, kAvx512},
    {"avx512cd", 7, 0, EBX, 28, kAvx512},
    {"avx512bw", 7, 0, EBX, 30, kAvx512},
    {"avx512vl", 7, 0, EBX, 31, kAvx512},
    {"avx512vbmi", 7, 0, ECX, 1, kAvx512},
    {"avx512vbmi2", 7, 0, ECX, 6, kAvx512},
    {"gfni", 7, 0, ECX, 8},
    {"vaes", 7, 0, ECX, 9, kAvx},
    {"vpclmulqdq", 7, 0, ECX, 10, kAvx},
    {"avx512vnni", 7, 0, ECX, 11, kAvx512},
    {"avx512bitalg", 7, 0, ECX, 12, kAvx512},
    {"avx512vpopcntdq", 7, 0, ECX, 14, kAvx512},
    {"avx512vp2intersect", 7, 0, EDX, 8, kAvx512},
    {"amx-bf16", 7, 0, EDX, 22, kAmx},
    {"avx512fp16", 7, 0, EDX, 23, kAvx512},
    {"amx-tile", 7, 0, EDX, 24, kAmx},
    {"amx-int8", 7, 0, EDX, 25, kAmx},
    {"avxvnni", 7, 1, EAX, 4, kAvx},
    {"avx512bf16", 7, 1, EAX, 5, kAvx512},
    {"amx-fp16", 7, 1, EAX, 21, kAmx},
    {"avxifma", 7, 1, EAX, 23, kAvx},
    {"avxvnniint8", 7, 1, EDX, 4, kAvx},
    {"avxneconvert", 7, 1, EDX, 5, kAvx},
    {"amx-complex", 7, 1, EDX, 8, kAmx},
    {"avxvnniint16", 7, 1, EDX, 10, kAvx},
    {"avx10.1", 7, 1, EDX, 19, kAvx512, 1},
    {"avx10.1-512", 7, 1, EDX, 19, kAvx512, 1},
    {"avx10.2", 7, 1, EDX, 19, kAvx512, 2},
    {"avx10.2-512", 7, 1, EDX, 19, kAvx512, 2},
    // APX: every feature of it under one bit.
    {"egpr", 7, 1, EDX, 21, kApx},
    {"push2pop2", 7, 1, EDX, 21, kApx},
    {"ppx", 7, 1, EDX, 21, kApx},
    {"ndd", 7, 1, EDX, 21, kApx},
    {"ccmp", 7, 1, EDX, 21, kApx},
    {"nf", 7, 1, EDX, 21, kApx},
    {"cf", 7, 1, EDX, 21, kApx},
    {"zu", 7, 1, EDX, 21, kApx},
    {"sahf", 0x80000001, 0, ECX, 0},
    {"lzcnt", 0x80000001, 0, ECX, 5},
    {"sse4a", 0x80000001, 0, ECX, 6},
    {"prfchw", 0x80000001, 0, ECX, 8},
    {"xop", 0x80000001, 0, ECX, 11, kAvx},
    {"fma4", 0x80000001, 0, ECX, 16, kAvx},
    {"tbm", 0x80000001, 0, ECX, 21},
    {"64bit", 0x80000001, 0, EDX, 29},
};

const Feature *find(const std::string &name) {
  for (const Feature &f : kFeatures)
    if (name == f.name)
      return &f;
  return nullptr;
}

#if defined(__x86_64__) || defined(__i386__)
bool cpuid(unsigned leaf, unsigned subleaf, unsigned regs[4]) {
  unsigned top = __get_cpuid_max(leaf & 0x80000000u, nullptr);
  if (top < leaf)
    return false;
  __cpuid_count(leaf, subleaf, regs[0], regs[1], regs[2], regs[3]);
  return true;
}

/// The register state the OS saves (XCR0), 0 without OSXSAVE.
uint64_t osState() {
  unsigned r[4];
  if (!cpuid(1, 0, r) || !(r[ECX] & (1u << 27)))
    return 0;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

bool present(const Feature &f) {
  unsigned r[4];
  if (!cpuid(f.leaf, f.subleaf, r) || !(r[f.reg] & (1u << f.bit)))
    return false;
  if (f.xcr0 && (osState() & f.xcr0) != f.xcr0)
    return false;
  if (f.avx10) {
    unsigned v[4];
    if (!cpuid(0x24, 0, v) || (v[EBX] & 0xff) < f.avx10)
      return false;
  }
  return true;
}
#else
bool present(const Feature &) { return false; }
#endif

} // namespace

const std::vector<std::string> &tcc::cpu::checkableFeatures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Feature &f : kFeatures)
      v.push_back(f.name);
    std::sort(v.begin(), v.end());
    return v;
  }();
  return names;
}

std::vector<std::string>
tcc::cpu::missingFeatures(const std::vector<std::string> &required) {
  std::vector<std::string> missing;
  for (const std::string &name : required) {
    const Feature *f = find(name);
    if (!f || !present(*f))
      missing.push_back(name);
  }
  return missing;
}
