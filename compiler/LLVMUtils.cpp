//===- LLVMUtils.cpp - LLVM back-end steps shared by targets --------------===//
#include "compiler/LLVMUtils.h"
#include "runtime/src/CpuFeatures.h"

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"

using namespace llvm;

namespace {

const char *const kHostTriple = "x86_64-unknown-linux-gnu";

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

/// Loads a bitcode library and links the functions `module` needs from it.
bool linkBitcodeFile(Module &module, const std::string &path,
                     std::string &error) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer) {
    error = "cannot read " + path;
    return false;
  }
  Expected<std::unique_ptr<Module>> lib =
      parseBitcodeFile((*buffer)->getMemBufferRef(), module.getContext());
  if (!lib) {
    error = "bad bitcode in " + path + ": " + toString(lib.takeError());
    return false;
  }
  (*lib)->setDataLayout(module.getDataLayout());
  (*lib)->setTargetTriple(module.getTargetTriple());
  if (Linker::linkModules(module, std::move(*lib),
                          Linker::Flags::LinkOnlyNeeded)) {
    error = "cannot link " + path;
    return false;
  }
  return true;
}

/// Whether the module calls a function whose name starts with `prefix` and
/// that it does not define.
bool callsLibrary(const Module &module, StringRef prefix) {
  for (const Function &f : module)
    if (f.isDeclaration() && f.getName().starts_with(prefix))
      return true;
  return false;
}

/// Whether `inst` is the inline PTX statement `text` (tcc-gpu-grid-dependency).
bool isInlinePtx(const Instruction &inst, StringRef text) {
  auto *call = dyn_cast<CallInst>(&inst);
  auto *as = call ? dyn_cast<InlineAsm>(call->getCalledOperand()) : nullptr;
  return as && as->getAsmString() == text;
}

/// Ends each kernel's entry block right after its grid dependency
/// instructions. Instruction selection schedules a block at a time, and it
/// does not order loads of memory it takes for constant (a `noalias
/// readonly` argument) after an inline asm statement, clobber or not: in a
/// block of their own, the wait and the trigger precede every load. Runs
/// after the optimisation pipeline, which would merge the blocks again.
void isolateGridDependencyWait(Module &module) {
  for (Function &f : module) {
    if (f.isDeclaration() || f.getCallingConv() != CallingConv::PTX_Kernel)
      continue;
    BasicBlock &entry = f.getEntryBlock();
    Instruction *last = nullptr;
    for (Instruction &inst : entry)
      if (isInlinePtx(inst, "griddepcontrol.wait;") ||
          isInlinePtx(inst, "griddepcontrol.launch_dependents;"))
        last = &inst;
    if (!last)
      continue;
    BasicBlock *rest = entry.splitBasicBlock(last->getNextNode());
    // Allocas are static only in the entry block.
    for (Instruction &moved : llvm::make_early_inc_range(*rest))
      if (auto *alloca = dyn_cast<AllocaInst>(&moved);
          alloca && isa<ConstantInt>(alloca->getArraySize()))
        alloca->moveBefore(entry.getFirstInsertionPt());
  }
}

/// Only kernels stay visible, so that LLVM drops what they do not use.
void internalizeAllButKernels(Module &module) {
  for (Function &f : module)
    if (!f.isDeclaration() && f.getCallingConv() != CallingConv::PTX_Kernel &&
        f.getCallingConv() != CallingConv::AMDGPU_KERNEL)
      f.setLinkage(GlobalValue::InternalLinkage);
  for (GlobalVariable &g : module.globals())
    if (!g.isDeclaration())
      g.setLinkage(GlobalValue::InternalLinkage);
}

std::unique_ptr<TargetMachine> createGpuMachine(const std::string &tripleName,
                                                const std::string &chip,
                                                unsigned optLevel,
                                                std::string &error) {
  InitializeAllTargetInfos();
  InitializeAllTargets();
  InitializeAllTargetMCs();
  InitializeAllAsmPrinters();
  Triple triple(tripleName);
  std::string lookupError;
  const Target *target = TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "no " + tripleName + " target in this LLVM: " + lookupError;
    return nullptr;
  }
  std::unique_ptr<TargetMachine> tm(target->createTargetMachine(
      triple, chip, "", TargetOptions(), Reloc::PIC_, std::nullopt,
      optLevel >= 2 ? CodeGenOptLevel::Aggressive : CodeGenOptLevel::Default));
  if (!tm || !tm->getMCSubtargetInfo()->isCPUStringValid(chip)) {
    error = "LLVM does not know the GPU '" + chip + "'";
    return nullptr;
  }
  return tm;
}

/// The first of `candidates` that exists.
std::string firstExisting(ArrayRef<std::string> candidates) {
  for (const std::string &c : candidates)
    if (!c.empty() && sys::fs::exists(c))
      return c;
  return "";
}

std::string findLibdevice(const std::string &cudaPath) {
  std::vector<std::string> roots;
  if (!cudaPath.empty()) {
    roots.push_back(cudaPath);
  } else {
    for (const char *env : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
      if (auto v = sys::Process::GetEnv(env))
        roots.push_back(*v);
    roots.push_back("/usr/local/cuda");
    std::error_code ec;
    std::vector<std::string> versioned;
    for (sys::fs::directory_iterator it("/usr/local", ec), end;
         it != end && !ec; it.increment(ec))
      if (sys::path::filename(it->path()).starts_with("cuda-"))
        versioned.push_back(it->path());
    llvm::sort(versioned, std::greater<>());
    roots.insert(roots.end(), versioned.begin(), versioned.end());
    roots.push_back("/usr/lib/cuda");
    roots.push_back("/usr/lib/nvidia-cuda-toolkit");
  }
  std::vector<std::string> files;
  for (const std::string &r : roots) {
    files.push_back(r + "/nvvm/libdevice/libdevice.10.bc");
    files.push_back(r + "/libdevice/libdevice.10.bc");
  }
  return firstExisting(files);
}

std::string findRocmDeviceLibs(const std::string &dir) {
  if (!dir.empty())
    return sys::fs::exists(dir + "/ocml.bc") ? dir : "";
  std::vector<std::string> dirs;
  if (auto v = sys::Process::GetEnv("ROCM_DEVICE_LIBS"))
    dirs.push_back(*v);
  dirs.push_back("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode");
  dirs.push_back("/opt/rocm/amdgcn/bitcode");
  dirs.push_back("/usr/lib/llvm-22/lib/amdgcn/bitcode");
  for (const std::string &d : dirs)
    if (sys::fs::exists(d + "/ocml.bc"))
      return d;
  return "";
}

/// The ROCm libraries read their configuration from constants that a
/// compiler defines (what the oclc_*.bc files hold): gfx ISA version,
/// wavefront size, and the non-"fast math" choices.
void defineRocmControls(Module &module, const tcc::TargetDesc &target) {
  // gfx942: major 9, minor 4, stepping 2 (the last two are hex digits).
  unsigned major = target.version >> 8, minor = (target.version >> 4) & 0xf,
           stepping = target.version & 0xf;
  bool wave64 = target.warpSize == 64;
  std::pair<const char *, uint64_t> controls[] = {
      {"__oclc_ISA_version", major * 1000 + minor * 100 + stepping},
      {"__oclc_ABI_version", 500},
      {"__oclc_wavefrontsize64", wave64},
      {"__oclc_finite_only_opt", 0},
      {"__oclc_unsafe_math_opt", 0},
      {"__oclc_daz_opt", 0},
      {"__oclc_correctly_rounded_sqrt32", 1}};
  for (auto [name, value] : controls) {
    GlobalVariable *g = module.getNamedGlobal(name);
    if (!g || !g->isDeclaration())
      continue;
    g->setInitializer(ConstantInt::get(g->getValueType(), value));
    g->setConstant(true);
    g->setLinkage(GlobalValue::InternalLinkage);
  }
}

bool writeFile(const std::string &path, ArrayRef<char> bytes,
               std::string &error) {
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (ec) {
    error = "cannot write " + path + ": " + ec.message();
    return false;
  }
  os.write(bytes.data(), bytes.size());
  return true;
}

/// Links an ELF relocatable object into a shared object with ld.lld (which
/// picks the x86-64 or AMDGPU flavour from the object).
bool linkShared(ArrayRef<char> object, std::vector<std::string> flags,
                std::vector<uint8_t> &out, std::string &error) {
  std::string lld = tcc::findLLVMTool("ld.lld");
  if (lld.empty()) {
    error = "ld.lld not found (install Debian's lld-22)";
    return false;
  }
  TempFile objFile, outFile;
  if (sys::fs::createTemporaryFile("tcc-code", "o", objFile.path) ||
      sys::fs::createTemporaryFile("tcc-code", "so", outFile.path)) {
    error = "cannot create temporary files";
    return false;
  }
  if (!writeFile(objFile.path.str().str(), object, error))
    return false;
  flags.insert(flags.begin(), "-shared");
  flags.push_back("-o");
  flags.push_back(outFile.path.str().str());
  flags.push_back(objFile.path.str().str());
  std::string lldOutput;
  if (tcc::runProgram(lld, flags, lldOutput) != 0) {
    error = "ld.lld failed: " + lldOutput;
    return false;
  }
  auto linked = MemoryBuffer::getFile(outFile.path, /*IsText=*/false);
  if (!linked) {
    error = "cannot read the linked code object";
    return false;
  }
  out.assign((*linked)->getBufferStart(), (*linked)->getBufferEnd());
  return true;
}

const Target *hostTarget(std::string &error) {
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();
  std::string lookupError;
  const Target *target =
      TargetRegistry::lookupTarget(Triple(kHostTriple), lookupError);
  if (!target)
    error = "no x86-64 target in this LLVM: " + lookupError;
  return target;
}

std::unique_ptr<TargetMachine> createHostMachine(const std::string &cpu,
                                                 const std::string &features,
                                                 unsigned optLevel,
                                                 std::string &error) {
  const Target *target = hostTarget(error);
  if (!target)
    return nullptr;
  Triple triple(kHostTriple);
  TargetOptions targetOptions;
  std::unique_ptr<TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, targetOptions, Reloc::PIC_, std::nullopt,
      optLevel >= 2 ? CodeGenOptLevel::Aggressive : CodeGenOptLevel::Default));
  if (!tm)
    error = "cannot create an x86-64 target machine for CPU '" + cpu + "'";
  return tm;
}

} // namespace

mlir::LogicalResult tcc::emitHostObject(Module &module,
                                        std::vector<uint8_t> &object,
                                        std::string &error) {
  std::unique_ptr<TargetMachine> tm = createHostMachine("x86-64", "", 0, error);
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

mlir::LogicalResult tcc::resolveHostCpu(const std::string &cpu,
                                        std::string &name,
                                        std::string &features,
                                        std::string &error) {
  name = cpu;
  features.clear();
  if (cpu == "native") {
    name = sys::getHostCPUName().str();
    std::vector<std::string> flags;
    for (const auto &f : sys::getHostCPUFeatures())
      flags.push_back((f.second ? "+" : "-") + f.first().str());
    llvm::sort(flags);
    features = llvm::join(flags, ",");
  }
  const Target *target = hostTarget(error);
  if (!target)
    return mlir::failure();
  std::unique_ptr<MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(Triple(kHostTriple), "", ""));
  if (!sti || !sti->isCPUStringValid(name)) {
    error = "unknown --cpu '" + cpu +
            "' (an x86-64 CPU LLVM knows, such as x86-64-v2, x86-64-v3, "
            "x86-64-v4, skylake-avx512, znver4, sapphirerapids, or native)";
    return mlir::failure();
  }
  return mlir::success();
}

mlir::LogicalResult tcc::compileAndLinkHostModule(
    Module &module, const std::string &cpu, const std::string &features,
    unsigned optLevel, std::vector<uint8_t> &sharedObject, std::string *llvmIR,
    std::string *assembly, std::vector<std::string> &requiredFeatures,
    std::string &error) {
  std::unique_ptr<TargetMachine> tm =
      createHostMachine(cpu, features, optLevel, error);
  if (!tm)
    return mlir::failure();
  // What the code may use is what the target machine enables: the CPU's
  // features with the string's changes. Those the runtime can check are
  // recorded.
  requiredFeatures.clear();
  const MCSubtargetInfo *sti = tm->getMCSubtargetInfo();
  for (const SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
    if (sti->getFeatureBits().test(kv.Value) &&
        llvm::binary_search(tcc::cpu::checkableFeatures(), kv.Key))
      requiredFeatures.push_back(kv.Key);
  llvm::sort(requiredFeatures);
  module.setTargetTriple(tm->getTargetTriple());
  module.setDataLayout(tm->createDataLayout());
  if (!linkSoftFloat(module, error))
    return mlir::failure();
  optimize(module, tm.get(), optLevel);
  if (llvmIR) {
    raw_string_ostream irStream(*llvmIR);
    module.print(irStream, nullptr);
  }

  SmallVector<char, 0> asmText, object;
  if ((assembly &&
       !emit(module, *tm, CodeGenFileType::AssemblyFile, asmText)) ||
      !emit(module, *tm, CodeGenFileType::ObjectFile, object)) {
    error = "the x86-64 backend cannot emit this module";
    return mlir::failure();
  }
  if (assembly)
    assembly->assign(asmText.begin(), asmText.end());

  if (!linkShared(object, {"--no-undefined-version", "-O2"}, sharedObject,
                  error))
    return mlir::failure();
  return mlir::success();
}

mlir::LogicalResult
tcc::compileNvptxModule(Module &module, const TargetDesc &target,
                        unsigned optLevel, const std::string &cudaPath,
                        std::string &ptx, std::string &llvmIR,
                        std::string &error) {
  std::unique_ptr<TargetMachine> tm =
      createGpuMachine("nvptx64-nvidia-cuda", target.name, optLevel, error);
  if (!tm)
    return mlir::failure();
  module.setTargetTriple(tm->getTargetTriple());
  module.setDataLayout(tm->createDataLayout());
  if (callsLibrary(module, "__nv_")) {
    std::string libdevice = findLibdevice(cudaPath);
    if (libdevice.empty()) {
      error = "libdevice.10.bc (math functions for NVIDIA GPUs) not found: "
              "install the CUDA toolkit or pass --cuda-path";
      return mlir::failure();
    }
    if (!linkBitcodeFile(module, libdevice, error))
      return mlir::failure();
  }
  // libdevice asks NVVMReflect whether to flush denormals: it must not.
  module.addModuleFlag(Module::Override, "nvvm-reflect-ftz", uint32_t(0));
  internalizeAllButKernels(module);
  optimize(module, tm.get(), optLevel);
  isolateGridDependencyWait(module);
  raw_string_ostream irStream(llvmIR);
  module.print(irStream, nullptr);
  SmallVector<char, 0> text;
  if (!emit(module, *tm, CodeGenFileType::AssemblyFile, text)) {
    error = "the NVPTX back end cannot emit this module";
    return mlir::failure();
  }
  ptx.assign(text.begin(), text.end());
  return mlir::success();
}

mlir::LogicalResult
tcc::compileAmdgpuModule(Module &module, const TargetDesc &target,
                         unsigned optLevel, const std::string &deviceLibDir,
                         std::vector<uint8_t> &hsaco, std::string &llvmIR,
                         std::string &assembly, std::string &error) {
  std::unique_ptr<TargetMachine> tm =
      createGpuMachine("amdgcn-amd-amdhsa", target.name, optLevel, error);
  if (!tm)
    return mlir::failure();
  module.setTargetTriple(tm->getTargetTriple());
  module.setDataLayout(tm->createDataLayout());
  if (callsLibrary(module, "__ocml_") || callsLibrary(module, "__ockl_")) {
    std::string dir = findRocmDeviceLibs(deviceLibDir);
    if (dir.empty()) {
      error = "the ROCm device libraries (ocml.bc) were not found: install "
              "Debian's rocm-device-libs or pass --rocm-device-libs";
      return mlir::failure();
    }
    for (const char *lib : {"ocml.bc", "ockl.bc"})
      if (!linkBitcodeFile(module, dir + "/" + lib, error))
        return mlir::failure();
  }
  defineRocmControls(module, target);
  module.addModuleFlag(Module::Error, "amdhsa_code_object_version",
                       uint32_t(500));
  internalizeAllButKernels(module);
  optimize(module, tm.get(), optLevel);
  raw_string_ostream irStream(llvmIR);
  module.print(irStream, nullptr);

  // Code generation changes the IR it runs on (control flow annotation), so
  // the assembly comes from a copy.
  SmallVector<char, 0> asmText, object;
  std::unique_ptr<Module> copy = CloneModule(module);
  if (!emit(*copy, *tm, CodeGenFileType::AssemblyFile, asmText) ||
      !emit(module, *tm, CodeGenFileType::ObjectFile, object)) {
    error = "the AMDGPU back end cannot emit this module";
    return mlir::failure();
  }
  assembly.assign(asmText.begin(), asmText.end());
  if (!linkShared(object, {}, hsaco, error))
    return mlir::failure();
  return mlir::success();
}
