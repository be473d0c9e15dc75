//===- tcc-rt-main.cpp - the runtime-only tcc driver ----------------------===//
//
// Built as `tcc` when the compiler is not (-DTCC_BUILD_COMPILER=OFF): runs,
// times and inspects bundles compiled elsewhere, with the same flags as the
// full driver. The argument parser is hand-written so that this needs no
// LLVM.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/FileIO.h"
#include "runtime/tools/Runner.h"
#include "runtime/tools/TuneMeasure.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <iostream>

#include <unistd.h>

using namespace tcc::runner;

namespace {

const char kUsage[] =
    "usage: tcc run BUNDLE [--target T] [--input NAME=FILE.npy]... "
    "[--output-dir DIR] [--seed N] [--cuda-graph] [--serial-launches]\n"
    "       [--graph-chain]\n"
    "       tcc bench BUNDLE [--target T] [--input NAME=FILE.npy]... "
    "[--warmup N] [--iters N] [--json FILE] [--profile FILE] "
    "[--cuda-graph] [--serial-launches] [--graph-chain]\n"
    "       tcc inspect BUNDLE [--profile FILE]\n"
    "       tcc tune-measure ROUND_DIR [--warmup N] [--iters N]\n"
    "The device is the bundle's target unless --target names one (host,\n"
    "sm_NN for CUDA, gfxNNN for HIP); --cuda-graph replays the launches as a\n"
    "CUDA graph (a HIP graph on HIP devices); --serial-launches starts no\n"
    "kernel before the previous one ended; --graph-chain records the graph\n"
    "as a chain, in order (by default a launch waits only for the launches\n"
    "whose memory it shares). bench --profile FILE also\n"
    "times every launch and writes them to FILE (JSON); inspect --profile\n"
    "FILE adds them to the manifest it prints.\n"
    "This tcc is runtime-only (built without the compiler): it runs bundles\n"
    "that a full tcc wrote with 'tcc compile MODEL.json -o BUNDLE'.\n";

int usageError(const std::string &message) {
  std::cerr << "tcc: error: " << message << " (see 'tcc --help')\n";
  return 1;
}

const char kModelNotBundle[] =
    " looks like a model description; this tcc is runtime-only "
    "(built with -DTCC_BUILD_COMPILER=OFF) and runs compiled "
    "bundles: compile the model with a full tcc first";

/// Model files are JSON objects; bundles start with their magic.
bool looksLikeModel(const std::vector<uint8_t> &bytes) {
  size_t i = 0;
  while (i < bytes.size() && std::isspace(bytes[i]))
    ++i;
  return i < bytes.size() && bytes[i] == '{';
}

bool parseUnsigned(const std::string &text, unsigned long long max,
                   unsigned long long &out) {
  if (text.empty() || text[0] < '0' || text[0] > '9')
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtoull(text.c_str(), &end, 10);
  return !*end && errno == 0 && out <= max;
}

/// Reads the bundle file, recognising a model file given by mistake.
bool readBundle(const std::string &path, std::vector<uint8_t> &bytes,
                std::string &why) {
  if (!tcc::io::readRegularFile(path, bytes, why))
    return false;
  if (looksLikeModel(bytes)) {
    why = path + kModelNotBundle;
    return false;
  }
  return true;
}

/// tcc tune-measure ROUND_DIR [--warmup N] [--iters N]: times a round of
/// `tcc tune`'s candidates (TuneMeasure.h).
int tuneMeasureMain(const std::vector<std::string> &args) {
  std::string dir;
  unsigned long long warmup = 10, iters = 50;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a == "--warmup" || a == "--iters") {
      unsigned long long v;
      if (i + 1 >= args.size() || !parseUnsigned(args[++i], 1000000, v))
        return usageError(a + " needs an integer in [0, 1e6]");
      (a == "--warmup" ? warmup : iters) = v;
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option '" + a + "' for tcc tune-measure");
    } else if (!dir.empty()) {
      return usageError("tune-measure takes one round folder");
    } else {
      dir = a;
    }
  }
  if (dir.empty())
    return usageError("tune-measure needs a round folder (tcc tune wrote it)");
  if (iters == 0)
    return usageError("--iters must be at least 1");
  return tcc::runner::tuneMeasure(dir, int(warmup), int(iters), std::cout,
                                  std::cerr);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty())
    return usageError("no command given (run, bench or inspect)");
  if (args[0] == "--help" || args[0] == "-help" || args[0] == "-h") {
    std::cout << kUsage;
    return 0;
  }
  const std::string command = args[0];
  if (command == "tune-measure")
    return tuneMeasureMain(args);
  if (command != "run" && command != "bench" && command != "inspect")
    return usageError("unknown command '" + command +
                      "' (this runtime-only tcc has run, bench, inspect and "
                      "tune-measure)");

  RunOptions run;
  BenchOptions bench;
  std::string profilePath; // inspect's
  std::string bundlePath;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (!bundlePath.empty())
        return usageError("more than one bundle given ('" + bundlePath +
                          "' and '" + arg + "')");
      bundlePath = arg;
      continue;
    }
    // Accept -flag and --flag, with "=VALUE" or the value as the next word.
    std::string flag = arg.substr(arg[1] == '-' ? 2 : 1), value;
    bool hasValue = false;
    if (size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      hasValue = true;
    }
    if (flag == "help" || flag == "h") {
      std::cout << kUsage;
      return 0;
    }
    auto needValue = [&]() -> bool {
      if (hasValue)
        return true;
      if (i + 1 >= args.size())
        return false;
      value = args[++i];
      return true;
    };
    bool forRun = command == "run", forBench = command == "bench";
    if (flag == "target" && (forRun || forBench)) {
      if (!needValue())
        return usageError("--target needs a value");
      run.target = bench.target = value;
    } else if (flag == "input" && (forRun || forBench)) {
      if (!needValue())
        return usageError("--input needs NAME=FILE.npy");
      // Split against the model's input names once it is loaded: names and
      // files may both contain '='.
      if (value.find('=') == std::string::npos)
        return usageError("--input needs NAME=FILE.npy, got '" + value + "'");
      run.inputSpecs.push_back(value);
      bench.inputSpecs.push_back(value);
    } else if (flag == "output-dir" && forRun) {
      if (!needValue() || value.empty())
        return usageError("--output-dir needs a directory");
      run.outputDir = value;
    } else if (flag == "seed" && forRun) {
      unsigned long long v;
      if (!needValue() || !parseUnsigned(value, ULLONG_MAX, v))
        return usageError("--seed needs a non-negative integer");
      run.seed = v;
    } else if ((flag == "warmup" || flag == "iters") && forBench) {
      unsigned long long v;
      if (!needValue() || !parseUnsigned(value, 1000000000ull, v))
        return usageError("--" + flag + " needs an integer in [0, 1e9]");
      (flag == "warmup" ? bench.warmup : bench.iters) = (int)v;
    } else if (flag == "cuda-graph" && (forRun || forBench)) {
      if (hasValue)
        return usageError("--cuda-graph takes no value");
      run.cudaGraph = bench.cudaGraph = true;
    } else if (flag == "serial-launches" && (forRun || forBench)) {
      if (hasValue)
        return usageError("--serial-launches takes no value");
      run.serialLaunches = bench.serialLaunches = true;
    } else if (flag == "graph-chain" && (forRun || forBench)) {
      if (hasValue)
        return usageError("--graph-chain takes no value");
      run.graphChain = bench.graphChain = true;
    } else if (flag == "profile" && (forBench || command == "inspect")) {
      if (!needValue() || value.empty())
        return usageError("--profile needs a file name");
      bench.profilePath = profilePath = value;
    } else if (flag == "json" && forBench) {
      if (!needValue() || value.empty())
        return usageError("--json needs a file name");
      bench.jsonPath = value;
    } else {
      return usageError("unknown option '" + arg + "' for tcc " + command);
    }
  }
  if (bundlePath.empty())
    return usageError("no bundle given");

  if (command == "inspect") {
    // Only the header and the manifest are read; a model file fails the
    // magic check, so recognise one by its first bytes.
    std::vector<uint8_t> head;
    uint64_t size;
    std::string why;
    int fd = tcc::io::openRegularFile(bundlePath, size, why);
    if (fd >= 0) {
      head.resize((size_t)std::min<uint64_t>(size, 4096));
      bool ok =
          tcc::io::readAt(fd, 0, head.data(), head.size(), bundlePath, why);
      ::close(fd);
      if (ok && looksLikeModel(head)) {
        std::cerr << "tcc: error: " << bundlePath << kModelNotBundle << "\n";
        return 1;
      }
    }
    return inspectBundleFile(bundlePath, std::cout, std::cerr, profilePath);
  }
  std::vector<uint8_t> bytes;
  std::string why;
  if (!readBundle(bundlePath, bytes, why)) {
    std::cerr << "tcc: error: " << why << "\n";
    return 1;
  }
  if (command == "run")
    return runBundle(std::move(bytes), bundlePath, run, std::cout, std::cerr);
  return benchBundle(std::move(bytes), bundlePath, bench, std::cout, std::cerr);
}
