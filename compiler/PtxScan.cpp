//===- PtxScan.cpp - facts read back from emitted PTX ---------------------===//
#include "compiler/PtxScan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace {

/// Whether the instruction `opcode` (its first token: "ld.global.nc.v4.u32",
/// "@%p1" stripped) may touch memory outside the block's own, or transfer
/// control. Anything not known to be harmless counts.
bool mayTouchGlobalOrBranch(StringRef opcode) {
  auto space = [&](StringRef op) {
    for (StringRef s : {".param", ".shared", ".local"})
      if (opcode.starts_with((op + s).str()))
        return true;
    return false;
  };
  if (opcode.starts_with("ld.") || opcode.starts_with("st."))
    return !space(opcode.substr(0, 2));
  // Register moves, arithmetic, address conversions and special registers.
  static const char *const harmless[] = {
      "mov",  "add", "sub",  "mul",  "mad",  "cvt",     "cvta", "shl", "shr",
      "and",  "or",  "xor",  "not",  "setp", "selp",    "min",  "max", "div",
      "rem",  "neg", "abs",  "fma",  "bfe",  "bfi",     "prmt", "clz", "popc",
      "brev", "shf", "lop3", "slct", "sad",  "copysign"};
  return !llvm::is_contained(ArrayRef(harmless), opcode.split('.').first);
}

} // namespace

std::vector<std::string> tcc::kernelsWaitingFirst(StringRef ptx) {
  std::vector<std::string> out;
  SmallVector<StringRef, 0> lines;
  ptx.split(lines, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    StringRef line = lines[i].trim();
    // ".visible .entry name(" or ".entry name(".
    size_t at = line.find(".entry ");
    if (at == StringRef::npos || line.starts_with("//"))
      continue;
    StringRef name = line.substr(at + 7).split('(').first.trim();
    // The body starts at the first line that is "{".
    while (i < lines.size() && lines[i].trim() != "{")
      ++i;
    bool waits = false;
    for (++i; i < lines.size(); ++i) {
      StringRef inst = lines[i].split("//").first.trim();
      if (inst.empty() || inst.starts_with(".reg") ||
          inst.starts_with(".shared") || inst.starts_with(".local") ||
          inst.starts_with(".loc") || inst.starts_with(".pragma"))
        continue;
      if (inst == "}" || inst.ends_with(":") || inst.starts_with("@") ||
          inst.starts_with("{"))
        break; // the end, a label, a predicated or a scoped instruction
      StringRef opcode = inst.split(' ').first.split('\t').first;
      opcode.consume_back(";");
      if (opcode == "griddepcontrol.wait") {
        waits = true;
        break;
      }
      if (mayTouchGlobalOrBranch(opcode))
        break;
    }
    if (waits)
      out.push_back(name.str());
  }
  return out;
}
