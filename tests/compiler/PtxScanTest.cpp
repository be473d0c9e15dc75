//===- PtxScanTest.cpp - which kernels wait before touching memory --------===//
#include "compiler/PtxScan.h"

#include <catch2/catch.hpp>

using tcc::kernelsWaitingFirst;

namespace {

/// A kernel whose body is `body` (one instruction a line).
std::string kernel(const std::string &name, const std::string &body) {
  return "\n.visible .entry " + name + "(\n\t.param .u64 .ptr .align 1 " +
         name + "_param_0\n)\n.maxntid 128\n{\n\t.reg .b64 \t%rd<4>;\n" + body +
         "\tret;\n\n}\n";
}

} // namespace

TEST_CASE("a kernel that waits first may overlap its predecessor",
          "[ptx-scan]") {
  std::string ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n";
  // Parameter loads, address arithmetic and special registers are harmless.
  ptx += kernel("waits", "\tld.param.b64 \t%rd1, [waits_param_0];\n"
                         "\tcvta.to.global.u64 \t%rd2, %rd1;\n"
                         "\tmov.u32 \t%r1, %tid.x;\n"
                         "\t// begin inline asm\n\tgriddepcontrol.wait;\n"
                         "\t// end inline asm\n"
                         "\tld.global.nc.b32 \t%r2, [%rd2];\n");
  // Each of these touches global memory, or may, before the wait.
  ptx += kernel("loads", "\tld.global.nc.b32 \t%r2, [%rd2];\n"
                         "\tgriddepcontrol.wait;\n");
  ptx += kernel("generic", "\tld.b32 \t%r2, [%rd2];\n\tgriddepcontrol.wait;\n");
  ptx += kernel("async", "\tcp.async.cg.shared.global [%r1], [%rd2], 16;\n"
                         "\tgriddepcontrol.wait;\n");
  ptx += kernel("stores", "\tst.global.b32 \t[%rd2], %r1;\n"
                          "\tgriddepcontrol.wait;\n");
  // Control flow first: a block could leave or loop before waiting.
  ptx +=
      kernel("branches", "\t@%p1 bra \t$L__BB0_2;\n\tgriddepcontrol.wait;\n");
  ptx += kernel("label", "$L__BB1_1:\n\tgriddepcontrol.wait;\n");
  ptx += kernel("never", "\tld.param.b64 \t%rd1, [never_param_0];\n");
  // Shared and local memory are the block's own.
  ptx += kernel("shared", "\tst.shared.b32 \t[%r1], %r1;\n"
                          "\tld.local.b32 \t%r2, [%rd1];\n"
                          "\tgriddepcontrol.wait;\n");
  std::vector<std::string> got = kernelsWaitingFirst(ptx);
  CHECK(got == std::vector<std::string>{"waits", "shared"});
}

TEST_CASE("PTX without kernels has none that wait", "[ptx-scan]") {
  CHECK(kernelsWaitingFirst("").empty());
  CHECK(kernelsWaitingFirst(".version 8.0\n.func f()\n{\n\tret;\n}\n").empty());
}
