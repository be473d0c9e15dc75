//===- LLVMUtils.cpp - LLVM back-end steps shared by targets --------------===//
#include "compiler/LLVMUtils.h"

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

using namespace llvm;

namespace {

/// hostlib/SoftFloat.c as LLVM bitcode, built with the compiler.
const unsigned char kSoftFloatBitcode[] = {
#include "compiler/hostlib/SoftFloat.bc.inc"
};

/// Links the soft-float conversions into `module`, so that the libcalls LLVM
/// emits for f16/bf16 resolve inside the shared object.
bool linkSoftFloat(Module &module, std::string &error) {
  auto buffer = MemoryBuffer::getMemBuffer(
      StringRef((const char *)kSoftFloatBitcode, sizeof(kSoftFloatBitcode)),
      "SoftFloat.bc", /*RequiresNullTerminator=*/false);
  Expected<std::unique_ptr<Module>> lib =
      parseBitcodeFile(buffer->getMemBufferRef(), module.getContext());
  if (!lib) {
    error = "bad soft-float bitcode: " + toString(lib.takeError());
    return false;
  }
  (*lib)->setDataLayout(module.getDataLayout());
  (*lib)->setTargetTriple(module.getTargetTriple());
  if (Linker::linkModules(module, std::move(*lib))) {
    error = "cannot link the soft-float conversions";
    return false;
  }
  return true;
}

/// Removes a temporary file when it goes out of scope.
struct TempFile {
  SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      sys::fs::remove(path);
  }
};

void optimize(Module &module, TargetMachine *tm, unsigned optLevel) {
  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassBuilder pb(tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  OptimizationLevel level = optLevel >= 3   ? OptimizationLevel::O3
                            : optLevel == 2 ? OptimizationLevel::O2
                            : optLevel == 1 ? OptimizationLevel::O1
                                            : OptimizationLevel::O0;
  ModulePassManager mpm = optLevel == 0
                              ? pb.buildO0DefaultPipeline(level)
                              : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(module, mam);
}

bool emit(Module &module, TargetMachine &tm, CodeGenFileType type,
          SmallVectorImpl<char> &out) {
  raw_svector_ostream os(out);
  legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    return false;
  pm.run(module);
  return true;
}

std::unique_ptr<TargetMachine> createHostMachine(const std::string &cpu,
                                                 unsigned optLevel,
                                                 std::string &error) {
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();
  Triple triple("x86_64-unknown-linux-gnu");
  std::string lookupError;
  const Target *target = TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "no x86-64 target in this LLVM: " + lookupError;
    return nullptr;
  }
  TargetOptions targetOptions;
  std::unique_ptr<TargetMachine> tm(target->createTargetMachine(
      triple, cpu, "", targetOptions, Reloc::PIC_, std::nullopt,
      optLevel >= 2 ? CodeGenOptLevel::Aggressive : CodeGenOptLevel::Default));
  if (!tm)
    error = "cannot create an x86-64 target machine for CPU '" + cpu + "'";
  return tm;
}

} // namespace

mlir::LogicalResult tcc::emitHostObject(Module &module,
                                        std::vector<uint8_t> &object,
                                        std::string &error) {
  std::unique_ptr<TargetMachine> tm = createHostMachine("x86-64", 0, error);
  if (!tm)
    return mlir::failure();
  module.setTargetTriple(tm->getTargetTriple());
  module.setDataLayout(tm->createDataLayout());
  SmallVector<char, 0> out;
  if (!emit(module, *tm, CodeGenFileType::ObjectFile, out)) {
    error = "the x86-64 backend cannot emit an object";
    return mlir::failure();
  }
  object.assign(out.begin(), out.end());
  return mlir::success();
}

std::string tcc::findLLVMTool(const std::string &name) {
  for (const std::string &candidate : {name, name + "-22"}) {
    if (auto path = sys::findProgramByName(candidate, {"/usr/lib/llvm-22/bin"}))
      return *path;
    if (auto path = sys::findProgramByName(candidate))
      return *path;
  }
  return "";
}

int tcc::runProgram(const std::string &program,
                    const std::vector<std::string> &args,
                    std::string &errorOutput) {
  TempFile errFile;
  if (sys::fs::createTemporaryFile("tcc-tool", "err", errFile.path))
    return -1;
  SmallVector<StringRef> argv{program};
  for (const std::string &a : args)
    argv.push_back(a);
  std::optional<StringRef> redirects[] = {std::nullopt, std::nullopt,
                                          StringRef(errFile.path)};
  std::string execError;
  int status = sys::ExecuteAndWait(program, argv, std::nullopt, redirects,
                                   /*SecondsToWait=*/600, 0, &execError);
  if (auto buf = MemoryBuffer::getFile(errFile.path))
    errorOutput = (*buf)->getBuffer().str();
  if (!execError.empty())
    errorOutput += execError;
  return status;
}

mlir::LogicalResult tcc::compileAndLinkHostModule(
    Module &module, const std::string &cpu, unsigned optLevel,
    std::vector<uint8_t> &sharedObject, std::string &llvmIR,
    std::string &assembly, std::string &error) {
  std::unique_ptr<TargetMachine> tm = createHostMachine(cpu, optLevel, error);
  if (!tm)
    return mlir::failure();
  module.setTargetTriple(tm->getTargetTriple());
  module.setDataLayout(tm->createDataLayout());
  if (!linkSoftFloat(module, error))
    return mlir::failure();
  optimize(module, tm.get(), optLevel);
  raw_string_ostream irStream(llvmIR);
  module.print(irStream, nullptr);

  SmallVector<char, 0> asmText, object;
  if (!emit(module, *tm, CodeGenFileType::AssemblyFile, asmText) ||
      !emit(module, *tm, CodeGenFileType::ObjectFile, object)) {
    error = "the x86-64 backend cannot emit this module";
    return mlir::failure();
  }
  assembly.assign(asmText.begin(), asmText.end());

  std::string lld = findLLVMTool("ld.lld");
  if (lld.empty()) {
    error = "ld.lld not found (install Debian's lld-22)";
    return mlir::failure();
  }
  TempFile objFile, soFile;
  if (sys::fs::createTemporaryFile("tcc-host", "o", objFile.path) ||
      sys::fs::createTemporaryFile("tcc-host", "so", soFile.path)) {
    error = "cannot create temporary files";
    return mlir::failure();
  }
  {
    std::error_code ec;
    raw_fd_ostream os(objFile.path, ec);
    if (ec) {
      error = "cannot write " + objFile.path.str().str() + ": " + ec.message();
      return mlir::failure();
    }
    os.write(object.data(), object.size());
  }
  std::string lldOutput;
  int status = runProgram(lld,
                          {"-shared", "--no-undefined-version", "-O2", "-o",
                           soFile.path.str().str(), objFile.path.str().str()},
                          lldOutput);
  if (status != 0) {
    error = "ld.lld failed: " + lldOutput;
    return mlir::failure();
  }
  auto so = MemoryBuffer::getFile(soFile.path, /*IsText=*/false);
  if (!so) {
    error = "cannot read the linked shared object";
    return mlir::failure();
  }
  sharedObject.assign((*so)->getBufferStart(), (*so)->getBufferEnd());
  return mlir::success();
}
