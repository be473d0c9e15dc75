//===- tcc.cpp - the tcc command line -------------------------------------===//
//
//   tcc compile MODEL.json|MODEL.onnx -o OUT [--target T] [--emit
//   bundle|mlir|llvm|asm|lib] [--input-shape NAME=D0xD1x...]
//   tcc run     MODEL.json|MODEL.onnx|BUNDLE [--input NAME=FILE.npy]...
//   [--output-dir DIR]
//   tcc bench   MODEL.json|MODEL.onnx|BUNDLE [--warmup N] [--iters N]
//   [--json FILE] [--profile FILE]
//   tcc inspect BUNDLE [--profile FILE]
//
// run, bench and inspect share their logic with the runtime-only build
// (runtime/tools); this driver adds model compilation in front of them.
//
//===----------------------------------------------------------------------===//
#include "compiler/LLVMUtils.h"
#include "compiler/LibEmitter.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "compiler/tuning/PrecisionTuner.h"
#include "compiler/tuning/Tuner.h"
#include "frontend/ModelImporter.h"
#include "frontend/OnnxImporter.h"
#include "runtime/src/FileIO.h"
#include "runtime/tools/Runner.h"
#include "runtime/tools/TuneMeasure.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <filesystem>
#include <iostream>
#include <new>
#include <sstream>

#include <unistd.h>

namespace cl = llvm::cl;

static cl::SubCommand compileCmd("compile", "Compile a model into a bundle");
static cl::SubCommand runCmd("run", "Run a model or bundle once");
static cl::SubCommand benchCmd("bench", "Time a model or bundle");
static cl::SubCommand inspectCmd("inspect", "Print a bundle's manifest");
static cl::SubCommand tuneCmd("tune",
                              "Tune a model's matmul schedules, a round at a "
                              "time (docs/cli.md)");
static cl::SubCommand tuneMeasureCmd("tune-measure",
                                     "Time a round of tcc tune's candidates");
static cl::SubCommand
    tunePrecisionCmd("tune-precision",
                     "Plan the precision of a model's matmul tiles under an "
                     "error budget (docs/precision.md)");

static cl::opt<std::string>
    inputPath(cl::Positional, cl::Required,
              cl::desc("<model.json | model.onnx | bundle>"),
              cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd),
              cl::sub(inspectCmd), cl::sub(tuneCmd), cl::sub(tuneMeasureCmd),
              cl::sub(tunePrecisionCmd));
static cl::opt<std::string> outputPath("o", cl::desc("Output path"),
                                       cl::value_desc("path"),
                                       cl::sub(compileCmd),
                                       cl::sub(tunePrecisionCmd));
static cl::opt<std::string>
    target("target",
           cl::desc("Target: host (compile's default), sm_80, sm_86, sm_89, "
                    "sm_90, sm_90a (NVIDIA), gfx90a, gfx942 (AMD); run and "
                    "bench use the bundle's own target unless this is given"),
           cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd),
           cl::sub(tuneCmd));
static cl::opt<bool> cudaGraph(
    "cuda-graph",
    cl::desc("On CUDA, capture the launch sequence once as a graph and replay "
             "it"),
    cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<bool> serialLaunches(
    "serial-launches",
    cl::desc("On CUDA, start every kernel after the previous one ended "
             "(no programmatic dependent launch)"),
    cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<bool> graphChain(
    "graph-chain",
    cl::desc("With --cuda-graph, record the launches as a chain, in order "
             "(by default a launch waits only for the launches whose memory "
             "it shares)"),
    cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<std::string>
    hostCpu("cpu",
            cl::desc("x86-64 CPU for host code: an LLVM CPU name or native "
                     "(default: a portable baseline); the bundle then runs "
                     "only on CPUs with its features"),
            cl::init("x86-64-v2"), cl::sub(compileCmd), cl::sub(runCmd),
            cl::sub(benchCmd));
static cl::opt<std::string> cudaPath(
    "cuda-path",
    cl::desc("CUDA toolkit whose libdevice NVIDIA kernels link (default: "
             "searched for)"),
    cl::sub(compileCmd), cl::sub(tuneCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<std::string> rocmDeviceLibs(
    "rocm-device-libs",
    cl::desc("Folder of the ROCm device libraries (ocml.bc) AMD kernels link "
             "(default: searched for)"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<bool> allowTf32(
    "allow-tf32",
    cl::desc("f32 matmuls may round their inputs to tf32 on tensor cores "
             "(less precise; NVIDIA sm_80 and later)"),
    cl::sub(compileCmd), cl::sub(tuneCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<std::string> scheduleFile(
    "schedule",
    cl::desc("JSON file overriding GPU kernel schedules, for experiments "
             "(docs/cli.md)"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<std::string> tuningRecords(
    "tuning-records",
    cl::desc("JSON file of measured schedules (docs/cli.md): a kernel whose "
             "signature a record for the target holds is built with its "
             "schedule"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<bool> gpuRowFusion(
    "gpu-row-fusion", cl::init(true),
    cl::desc("Kernels of row-wise ops (softmax, norms) as one launch with "
             "the row in registers (default on; =false for a launch per op)"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<bool> gpuConcatInPlace(
    "gpu-concat-in-place", cl::init(true),
    cl::desc("Convolutions feeding a channel concat store their channels "
             "into it (twice if other kernels read them; an up-convolution's "
             "interleave in its store), and the concat launches nothing "
             "(NVIDIA; default on; =false for a copy kernel)"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<bool> gpuConvTma(
    "gpu-conv-tma", cl::init(true),
    cl::desc("Convolutions on Hopper's wgmma template copy their input "
             "(an im2col tensor map) and weights by TMA where the shapes "
             "allow (sm_90a; default on; =false for cp.async copies)"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<bool> gpuMatmulEpilogues(
    "gpu-matmul-epilogues", cl::init(true),
    cl::desc("A matmul's elementwise code after it (scales, bias, "
             "activation, cast) runs in the GEMM template's epilogue "
             "(NVIDIA; default on; =false gives it a kernel of its own)"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<bool> gpuAttention(
    "gpu-attention", cl::init(true),
    cl::desc("Attention chains as one fused attention kernel (NVIDIA, AMD; "
             "default on; =false for the GEMM and row kernels)"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<bool> explain(
    "explain",
    cl::desc("Print why a chain that looks like attention is not fused into "
             "the attention kernel (GPU targets), and the region groups "
             "--region-fusion=auto chose, one line each"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<std::string> fusionMode(
    "fusion",
    cl::desc("Reduction-chain fusion: auto (cost model; off on GPU targets "
             "for now), off, rolling or splitk (forced, for experiments)"),
    cl::init("auto"), cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<std::string> regionFusion(
    "region-fusion",
    cl::desc("Region fusion (AFusion) of convolution chains: off "
             "(default); auto (a cost model and search choose region groups, "
             "shown by tcc inspect; on GPU targets each group is one fused "
             "kernel); alternatives=N,out=FILE[,seed=S] (auto, and N "
             "alternative groupings with predicted times written to FILE); "
             "or FILE[:ID] (force alternative ID of such a file)"),
    cl::init("off"), cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<std::string> precisionPlan(
    "precision-plan",
    cl::desc("A precision plan file (docs/precision.md): the precision each "
             "output tile of the matmuls it names computes in"),
    cl::value_desc("FILE"), cl::sub(compileCmd), cl::sub(runCmd),
    cl::sub(benchCmd));
static cl::opt<bool> precisionPlanTiles(
    "precision-plan-tiles",
    cl::desc("Experimental, not yet run on a GPU: on sm_90a each precision "
             "of a plan computes only its tiles (one masked wgmma GEMM each) "
             "instead of a whole GEMM"),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<std::string> convLayout(
    "conv-layout",
    cl::desc("Layout of convolutions: auto (NHWC where they run on tensor "
             "cores: NVIDIA f16/bf16, f32 with --allow-tf32; NCHW elsewhere), "
             "nhwc or nchw (every convolution)"),
    cl::init("auto"), cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<std::string> gridDependency(
    "grid-dependency",
    cl::desc("Programmatic dependent launch on sm_90 and later: exit "
             "(default: the next kernel is launched as this one's last block "
             "exits, and waits for its writes), early (once every block of "
             "this one has started) or off"),
    cl::init("exit"), cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
static cl::opt<unsigned> gpuIndexBits(
    "gpu-index-bits",
    cl::desc("Index arithmetic width in GPU kernels: 32, 64, or 0 for 32 "
             "when every buffer has fewer than 2^31 elements (default)"),
    cl::init(0), cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
enum class ParamRecipes { Embed, Keep };
static cl::opt<ParamRecipes> paramRecipes(
    "param-recipes",
    cl::desc("Params initialised by fill or random: their bytes in the "
             "bundle, or the recipe, computed when the bundle loads"),
    cl::init(ParamRecipes::Embed),
    cl::values(clEnumValN(ParamRecipes::Embed, "embed", "the bytes (default)"),
               clEnumValN(ParamRecipes::Keep, "keep",
                          "the recipe: small bundles of large random models")),
    cl::sub(compileCmd), cl::sub(runCmd), cl::sub(benchCmd));
enum class Emit { Bundle, Mlir, Llvm, Asm, Lib };
static cl::opt<Emit> emit(
    "emit", cl::desc("What to write"), cl::init(Emit::Bundle),
    cl::values(clEnumValN(Emit::Bundle, "bundle", "the bundle (default)"),
               clEnumValN(Emit::Mlir, "mlir", "MLIR after kernel outlining"),
               clEnumValN(Emit::Llvm, "llvm", "LLVM IR of the kernels"),
               clEnumValN(Emit::Asm, "asm", "assembly of the kernels"),
               clEnumValN(Emit::Lib, "lib",
                          "a C header and a static library embedding the "
                          "bundle (-o DIR/NAME gives NAME.h and libNAME.a)")),
    cl::sub(compileCmd));
static cl::list<std::string>
    inputs("input", cl::desc("NAME=FILE.npy (repeatable)"), cl::sub(runCmd),
           cl::sub(benchCmd));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("NAME=D0xD1x... : fixes the shape of an ONNX graph input "
             "(repeatable; e.g. x=1x3x224x224)"),
    cl::sub(compileCmd), cl::sub(tuneCmd), cl::sub(runCmd), cl::sub(benchCmd),
    cl::sub(tunePrecisionCmd));
static cl::opt<std::string> outputDir("output-dir",
                                      cl::desc("Where outputs are written"),
                                      cl::init("."), cl::sub(runCmd));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed for random inputs"),
                              cl::init(0), cl::sub(runCmd));
static cl::opt<int> warmup("warmup", cl::desc("Untimed runs"), cl::init(10),
                           cl::sub(benchCmd));
static cl::opt<int> iters("iters", cl::desc("Timed runs"), cl::init(100),
                          cl::sub(benchCmd));
static cl::opt<std::string>
    jsonPath("json", cl::desc("Write the figures as JSON"), cl::sub(benchCmd));
static cl::opt<std::string> profilePath(
    "profile",
    cl::desc("bench: also time every launch and write them to this file "
             "(JSON); inspect: add the times of such a file to the manifest"),
    cl::sub(benchCmd), cl::sub(inspectCmd));

static cl::opt<std::string>
    tuneWork("work", cl::desc("The tuning folder: rounds, then records.json"),
             cl::value_desc("dir"), cl::sub(tuneCmd));
static cl::opt<int> tuneRoundSize(
    "round-size", cl::init(32),
    cl::desc("Candidates a round compiles (shared among the signatures)"),
    cl::sub(tuneCmd));
static cl::opt<bool>
    tuneFinish("finish",
               cl::desc("Write WORK/records.json from the measurements "
                        "instead of another round"),
               cl::sub(tuneCmd));
static cl::opt<uint64_t> tuneSeed("seed", cl::desc("Seed of the search"),
                                  cl::init(0), cl::sub(tuneCmd));
static cl::opt<std::string> tuneStrategy(
    "strategy", cl::init("model"),
    cl::desc("How rounds choose schedules: model (the cost model's gradient "
             "search), random or grid (baselines)"),
    cl::sub(tuneCmd));
static cl::opt<int> tuneRounds(
    "rounds", cl::init(0),
    cl::desc("On a machine with the GPU: compile and measure this many "
             "rounds, then write the records (0: one round, measured with "
             "tune-measure)"),
    cl::sub(tuneCmd));
static cl::opt<double> tuneBudget(
    "budget", cl::init(0),
    cl::desc("With --rounds: start no round after this many seconds"),
    cl::sub(tuneCmd));
static cl::opt<int> tuneWarmup("warmup", cl::desc("Untimed runs"), cl::init(10),
                               cl::sub(tuneMeasureCmd), cl::sub(tuneCmd));
static cl::opt<int> tuneIters("iters", cl::desc("Timed runs"), cl::init(50),
                              cl::sub(tuneMeasureCmd), cl::sub(tuneCmd));

static cl::opt<std::string> calibrationDir(
    "calibration",
    cl::desc("Calibration data: NAME.npy (or NAME.0.npy, NAME.1.npy, ...; "
             "the last of several held out) per model input"),
    cl::value_desc("dir"), cl::sub(tunePrecisionCmd));
static cl::opt<double> errorBudget(
    "error-budget",
    cl::desc("The largest relative error of each planned matmul's output "
             "(Frobenius norm, against float64)"),
    cl::init(0), cl::sub(tunePrecisionCmd));
static cl::opt<double> planMargin(
    "margin",
    cl::desc("Plan to this fraction of the budget on the calibration data "
             "(0.9), leaving room for data it did not see"),
    cl::init(0.9), cl::sub(tunePrecisionCmd));
static cl::opt<std::string>
    precisionReport("report",
                    cl::desc("Write report.md, pareto.json and SVG plots here"),
                    cl::value_desc("dir"), cl::sub(tunePrecisionCmd));
static cl::opt<std::string>
    planTile("tile", cl::desc("The plan's tile, ROWSxCOLUMNS (128x128)"),
             cl::init("128x128"), cl::sub(tunePrecisionCmd));
static cl::list<std::string> planPrecisions(
    "precisions", cl::CommaSeparated,
    cl::desc("Precisions a tile may take (f32,bf16,f16,f8e4m3,f8e5m2,i8)"),
    cl::sub(tunePrecisionCmd));
static cl::opt<uint64_t> planSeed("seed", cl::desc("Seed of the search"),
                                  cl::init(0), cl::sub(tunePrecisionCmd));
static cl::opt<double>
    planSeconds("search-seconds",
                cl::desc("The evolutionary search's time per matmul"),
                cl::init(2.0), cl::sub(tunePrecisionCmd));
static cl::opt<int64_t> planSamples(
    "samples-per-tile",
    cl::desc("Output elements sampled per tile for its error (0: all)"),
    cl::init(64), cl::sub(tunePrecisionCmd));

/// MLIR's options (--mlir-print-ir-after-all, --mlir-timing, ...) register
/// at the top level; make them valid after every subcommand too.
static void shareTopLevelOptions() {
  auto &top = cl::getRegisteredOptions(cl::SubCommand::getTopLevel());
  std::vector<cl::Option *> options;
  for (auto &entry : top)
    if (entry.second->Subs.count(&cl::SubCommand::getTopLevel()))
      options.push_back(entry.second);
  for (cl::Option *o : options) {
    if (o->isPositional() || o->isSink() || o->isConsumeAfter())
      continue;
    o->removeArgument();
    o->Subs.clear();
    o->addSubCommand(cl::SubCommand::getAll());
    o->addArgument();
  }
}

static int fail(const std::string &message) {
  llvm::errs() << "tcc: error: " << message << "\n";
  return 1;
}

/// Out of memory while LLVM or MLIR run (compiling): they cannot unwind, so
/// report it in one line and exit instead of LLVM's abort and stack dump.
static void outOfMemory(void *, const char *, bool) {
  static const char msg[] = "tcc: error: out of memory\n";
  (void)!::write(2, msg, sizeof(msg) - 1);
  ::_exit(1);
}

/// The runtime side (reading files, run, bench, inspect) handles
/// std::bad_alloc itself, cleanly: let operator new throw it there instead
/// of calling LLVM's out-of-memory handler.
static void throwOnOutOfMemory() { std::set_new_handler(nullptr); }

static bool readFile(const std::string &path, std::vector<uint8_t> &bytes,
                     std::string &error) {
  return tcc::io::readRegularFile(path, bytes, error);
}

static bool isBundle(const std::vector<uint8_t> &bytes) {
  static const char magic[] = "TCCBUNDL";
  return bytes.size() >= 8 && std::equal(magic, magic + 8, bytes.begin());
}

/// --target and --cpu as the compiler takes them, checked before any model
/// is read; prints one line on failure.
static bool parseTargetOptions(tcc::CompileOptions &options) {
  std::string error;
  std::optional<tcc::TargetDesc> desc =
      tcc::parseTarget(target.empty() ? "host" : target.getValue(), error);
  if (!desc) {
    fail(error);
    return false;
  }
  options.target = *desc;
  if (gridDependency != "early" && gridDependency != "exit" &&
      gridDependency != "off") {
    fail("--grid-dependency must be early, exit or off, not '" +
         gridDependency + "'");
    return false;
  }
  if (mlir::failed(tcc::resolveHostCpu(hostCpu, options.host.cpu,
                                       options.host.cpuFeatures, error))) {
    fail(error);
    return false;
  }
  return true;
}

/// Imports the model file at `path` (JSON or ONNX, with --input-shape)
/// into `context`; std::nullopt after printing the errors. `standalone`:
/// a model tcc wrote (no --input-shape).
static std::optional<tcc::ImportedModel> importPath(const std::string &path,
                                                    mlir::MLIRContext &context,
                                                    bool standalone,
                                                    bool deferRecipes) {
  std::vector<std::string> errors;
  tcc::ImportLimits limits;
  limits.deferRecipes = deferRecipes;
  std::optional<tcc::ImportedModel> model;
  if (tcc::isOnnxPath(path)) {
    tcc::InputShapes shapes;
    std::vector<std::string> specs;
    if (!standalone)
      specs.assign(inputShapes.begin(), inputShapes.end());
    for (const std::string &spec : specs)
      if (std::string e = tcc::parseInputShape(spec, shapes); !e.empty()) {
        fail(e);
        return std::nullopt;
      }
    model = tcc::importOnnxFile(path, context, errors, shapes, limits);
  } else if (!standalone && !inputShapes.empty()) {
    fail("--input-shape applies to ONNX models (.onnx) only");
    return std::nullopt;
  } else {
    model = tcc::importModelFile(path, context, errors, limits);
  }
  if (!model) {
    for (const std::string &e : errors)
      llvm::errs() << e << "\n";
    if (errors.empty())
      llvm::errs() << path << ": error: cannot import the model\n";
    return std::nullopt;
  }
  return model;
}

/// Compiles the model at `path`; prints one line per problem on failure.
/// `records` overrides --tuning-records; a `standalone` model (tcc tune's
/// kernel alone) takes no --input-shape and keeps its params as recipes.
static bool compilePath(const std::string &path,
                        const tcc::CompileOptions &targetOptions,
                        tcc::CompileOutput &out,
                        const std::string *records = nullptr,
                        bool standalone = false) {
  mlir::DialectRegistry registry;
  tcc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // One line per diagnostic: "FILE: error: message"; with --explain, the
  // passes' remarks (why attention was not fused) as "FILE: remark: NODE:
  // message", NODE the model node's JSON pointer (and name).
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    bool remark = d.getSeverity() == mlir::DiagnosticSeverity::Remark;
    if (d.getSeverity() != mlir::DiagnosticSeverity::Error &&
        !(remark && explain))
      return mlir::success();
    std::string msg = d.str();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    if (!remark) {
      llvm::errs() << path << ": error: " << msg << "\n";
      return mlir::success();
    }
    std::string where;
    if (auto node = mlir::dyn_cast<mlir::NameLoc>(d.getLocation())) {
      where = node.getName().str();
      if (auto name = mlir::dyn_cast<mlir::NameLoc>(node.getChildLoc()))
        where += " (" + name.getName().str() + ")";
      where += ": ";
    }
    llvm::errs() << path << ": remark: " << where << msg << "\n";
    return mlir::success();
  });
  // Kept recipes need no bytes at compile time.
  std::optional<tcc::ImportedModel> model =
      importPath(path, context, standalone,
                 standalone || paramRecipes == ParamRecipes::Keep);
  if (!model)
    return false;
  mlir::DefaultTimingManager timingManager;
  mlir::applyDefaultTimingManagerCLOptions(timingManager);
  mlir::TimingScope timing = timingManager.getRootScope();
  tcc::CompileOptions options = targetOptions;
  options.host.timing = &timing;
  options.host.emitText =
      compileCmd && (emit == Emit::Llvm || emit == Emit::Asm);
  options.gpu.target = options.target;
  options.gpu.cudaPath = cudaPath;
  options.gpu.rocmDeviceLibs = rocmDeviceLibs;
  options.gpu.allowTf32 = allowTf32;
  options.gpu.indexBits = gpuIndexBits;
  options.gpu.gridDependency = gridDependency;
  options.gpu.scheduleFile = scheduleFile;
  options.gpu.tuningRecords = records ? *records : tuningRecords.getValue();
  options.gpu.rowFusion = gpuRowFusion;
  options.gpu.concatInPlace = gpuConcatInPlace;
  options.gpu.convTma = gpuConvTma;
  options.gpu.matmulEpilogues = gpuMatmulEpilogues;
  options.gpu.attention = gpuAttention;
  options.gpu.timing = &timing;
  options.fusion = fusionMode;
  options.convLayout = convLayout;
  options.regionFusion = regionFusion;
  options.precisionPlan = precisionPlan;
  options.precisionPlanTiles = precisionPlanTiles;
  options.keepParamRecipes = standalone || paramRecipes == ParamRecipes::Keep;
  return mlir::succeeded(tcc::compileModel(*model, options, out));
}

/// -o is written atomically: two compiles to one path leave one whole file.
static int writeOutput(const std::string &path, const void *data, size_t size) {
  std::string error;
  return tcc::io::writeFileAtomically(path, data, size, error) ? 0
                                                               : fail(error);
}

static int doCompile() {
  if (gpuIndexBits != 0 && gpuIndexBits != 32 && gpuIndexBits != 64)
    return fail("--gpu-index-bits must be 0, 32 or 64");
  if (outputPath.empty())
    return fail("compile needs -o OUTPUT");
  tcc::CompileOptions options;
  if (!parseTargetOptions(options))
    return 1;
  tcc::CompileOutput out;
  if (!compilePath(inputPath, options, out))
    return 1;
  switch (emit) {
  case Emit::Bundle: {
    std::string error;
    if (!out.bundle.streamToFile(outputPath, error))
      return fail(error);
    return 0;
  }
  case Emit::Mlir:
    return writeOutput(outputPath, out.mlir.data(), out.mlir.size());
  case Emit::Llvm:
    return writeOutput(outputPath, out.llvmIR.data(), out.llvmIR.size());
  case Emit::Asm:
    return writeOutput(outputPath, out.assembly.data(), out.assembly.size());
  case Emit::Lib: {
    std::string error;
    if (!tcc::emitLibrary(out.bundle.serialize(), outputPath, error))
      return fail(error);
    return 0;
  }
  }
  return 0;
}

/// --iters and --warmup of `command` (tune, tune-measure); false after
/// printing why not.
static bool tuneTimingValid(const char *command) {
  if (tuneIters >= 1 && tuneWarmup >= 0)
    return true;
  fail(std::string(command) +
       ": --iters must be at least 1, --warmup at least 0");
  return false;
}

/// tcc tune MODEL --target T --work DIR: a round of candidates, or the
/// records (compiler/tuning/Tuner.h).
static int doTune() {
  if (target.empty())
    return fail("tune needs --target (the GPU the records are for)");
  tcc::CompileOptions options;
  if (!parseTargetOptions(options))
    return 1;
  if (tuneRoundSize < 1 || tuneRoundSize > 10000)
    return fail("--round-size must be 1 to 10000");
  tcc::tuning::TuneOptions t;
  t.workDir = tuneWork;
  t.target = target;
  t.roundSize = tuneRoundSize;
  t.finish = tuneFinish;
  t.seed = tuneSeed;
  t.strategy = tuneStrategy;
  t.rounds = tuneRounds;
  t.budgetSeconds = tuneBudget;
  if (tuneRounds < 0 || tuneBudget < 0)
    return fail("--rounds and --budget must not be negative");
  if (!tuneTimingValid("tune"))
    return 1;
  auto compile = [&](const std::string &model, const std::string &records,
                     std::vector<uint8_t> &bundle) {
    tcc::CompileOutput out;
    // --input-shape is the model's; the kernels alone are JSON models whose
    // random weights stay recipes (small candidate bundles).
    if (!compilePath(model, options, out, &records, model != inputPath))
      return false;
    bundle = out.bundle.serialize();
    return true;
  };
  auto inspect = [](const std::vector<uint8_t> &bundle, nlohmann::json &m) {
    std::ostringstream text, errs;
    if (tcc::runner::inspectBundle(bundle, "candidate", text, errs) != 0) {
      llvm::errs() << errs.str();
      return false;
    }
    m = nlohmann::json::parse(text.str(), nullptr, false);
    return !m.is_discarded();
  };
  auto measure = [](const std::string &roundDir) {
    throwOnOutOfMemory();
    int rc = tcc::runner::tuneMeasure(roundDir, tuneWarmup, tuneIters,
                                      std::cout, std::cerr);
    llvm::install_out_of_memory_new_handler(); // compiling again
    return rc;
  };
  return tcc::tuning::tune(inputPath, t, compile, inspect, std::cout, std::cerr,
                           measure);
}

static int doTunePrecision() {
  if (calibrationDir.empty())
    return fail("tune-precision needs --calibration DIR (and --error-budget "
                "E)");
  tcc::tuning::PrecisionTuneOptions o;
  o.calibrationDir = calibrationDir;
  o.errorBudget = errorBudget;
  o.margin = planMargin;
  o.outPlan = outputPath;
  o.reportDir = precisionReport;
  o.seed = planSeed;
  o.searchSeconds = planSeconds;
  o.samplesPerTile = planSamples;
  if (!planPrecisions.empty())
    o.precisions.assign(planPrecisions.begin(), planPrecisions.end());
  llvm::StringRef tile = planTile;
  auto [rows, cols] = tile.split('x');
  if (rows.getAsInteger(10, o.tileM) || cols.getAsInteger(10, o.tileN))
    return fail("--tile must be ROWSxCOLUMNS, e.g. 128x128");
  if (!(planSeconds >= 0) || planSamples < 0)
    return fail("--search-seconds and --samples-per-tile must not be "
                "negative");
  mlir::DialectRegistry registry;
  tcc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error) {
      std::string msg = d.str();
      std::replace(msg.begin(), msg.end(), '\n', ' ');
      llvm::errs() << inputPath << ": error: " << msg << "\n";
    }
    return mlir::success();
  });
  std::optional<tcc::ImportedModel> model =
      importPath(inputPath, context, false, false);
  if (!model)
    return 1;
  // Operands the model computes: the probe compiled for the host and run
  // once per calibration sample.
  auto probe = [&](tcc::ImportedModel &m,
                   const std::vector<std::vector<std::string>> &specs,
                   const std::vector<std::string> &outDirs,
                   std::string &error) {
    tcc::CompileOptions options;
    std::optional<tcc::TargetDesc> host = tcc::parseTarget("host", error);
    if (!host)
      return false;
    options.target = *host;
    if (mlir::failed(tcc::resolveHostCpu(hostCpu, options.host.cpu,
                                         options.host.cpuFeatures, error)))
      return false;
    tcc::CompileOutput out;
    if (mlir::failed(tcc::compileModel(m, options, out))) {
      error = "the model does not compile for the host";
      return false;
    }
    std::vector<uint8_t> bundle = out.bundle.serialize();
    for (size_t s = 0; s < specs.size(); ++s) {
      tcc::runner::RunOptions run;
      run.target = "host";
      run.inputSpecs = specs[s];
      run.outputDir = outDirs[s];
      std::error_code ec;
      std::filesystem::create_directories(outDirs[s], ec);
      std::ostringstream quiet, errs;
      if (tcc::runner::runBundle(bundle, "probe", run, quiet, errs) != 0) {
        std::string msg = errs.str();
        msg = msg.substr(0, msg.find('\n'));
        if (msg.rfind("tcc: error: ", 0) == 0)
          msg = msg.substr(12);
        error = msg;
        return false;
      }
    }
    return true;
  };
  return tcc::tuning::tunePrecision(*model, inputPath, o, probe, std::cout,
                                    std::cerr);
}

/// The bundle for run/bench: read, or compiled from a model file.
static bool loadOrCompile(std::vector<uint8_t> &bundle) {
  throwOnOutOfMemory();
  std::string error;
  std::vector<uint8_t> bytes;
  if (!readFile(inputPath, bytes, error)) {
    fail(error);
    return false;
  }
  if (isBundle(bytes)) {
    bundle = std::move(bytes);
    return true;
  }
  bytes = {};
  llvm::install_out_of_memory_new_handler(); // LLVM cannot unwind
  tcc::CompileOptions options;
  if (!parseTargetOptions(options))
    return false;
  tcc::CompileOutput out;
  if (!compilePath(inputPath, options, out))
    return false;
  bundle = out.bundle.serialize();
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::install_bad_alloc_error_handler(outOfMemory);
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  tcc::registerAllPasses();
  shareTopLevelOptions();
  cl::ParseCommandLineOptions(argc, argv,
                              "tcc: a tensor compiler\n\n"
                              "  tcc compile MODEL.json|MODEL.onnx -o OUT\n"
                              "  tcc run MODEL.json|MODEL.onnx|BUNDLE\n"
                              "  tcc bench MODEL.json|MODEL.onnx|BUNDLE\n"
                              "  tcc inspect BUNDLE\n"
                              "  tcc tune MODEL --target T --work DIR\n"
                              "  tcc tune-measure DIR/round-N\n"
                              "  tcc tune-precision MODEL --calibration DIR "
                              "--error-budget E -o PLAN\n");
  if (compileCmd)
    return doCompile();
  if (tuneCmd)
    return doTune();
  if (tunePrecisionCmd)
    return doTunePrecision();
  if (tuneMeasureCmd) {
    throwOnOutOfMemory();
    if (!tuneTimingValid("tune-measure"))
      return 1;
    return tcc::runner::tuneMeasure(inputPath, tuneWarmup, tuneIters, std::cout,
                                    std::cerr);
  }
  if (profilePath.getNumOccurrences() && profilePath.empty())
    return fail("--profile needs a file name");
  if (inspectCmd) {
    throwOnOutOfMemory();
    return tcc::runner::inspectBundleFile(inputPath, std::cout, std::cerr,
                                          profilePath);
  }
  if (runCmd || benchCmd) {
    std::vector<uint8_t> bundle;
    if (!loadOrCompile(bundle))
      return 1;
    throwOnOutOfMemory();
    if (runCmd) {
      tcc::runner::RunOptions options;
      options.target = target;
      options.outputDir = outputDir;
      options.seed = seed;
      options.cudaGraph = cudaGraph;
      options.serialLaunches = serialLaunches;
      options.graphChain = graphChain;
      // Split against the model's input names once it is loaded: names and
      // files may both contain '='.
      for (const std::string &spec : inputs) {
        if (spec.find('=') == std::string::npos)
          return fail("--input expects NAME=FILE.npy, got '" + spec + "'");
        options.inputSpecs.push_back(spec);
      }
      return tcc::runner::runBundle(std::move(bundle), inputPath, options,
                                    std::cout, std::cerr);
    }
    tcc::runner::BenchOptions options;
    options.target = target;
    options.warmup = warmup;
    options.iters = iters;
    options.jsonPath = jsonPath;
    options.profilePath = profilePath;
    options.cudaGraph = cudaGraph;
    options.serialLaunches = serialLaunches;
    options.graphChain = graphChain;
    for (const std::string &spec : inputs) {
      if (spec.find('=') == std::string::npos)
        return fail("--input expects NAME=FILE.npy, got '" + spec + "'");
      options.inputSpecs.push_back(spec);
    }
    return tcc::runner::benchBundle(std::move(bundle), inputPath, options,
                                    std::cout, std::cerr);
  }
  return fail("expected a subcommand: compile, run, bench, inspect, tune or "
              "tune-measure (tcc --help)");
}
