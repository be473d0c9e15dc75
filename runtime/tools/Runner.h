//===- Runner.h - the logic of tcc run, bench and inspect -------*- C++ -*-===//
//
// Shared by the full `tcc` driver (which compiles a model and passes the
// bundle in memory) and the runtime-only `tcc` (which reads a bundle file).
// Each entry point returns the process exit status: 0 on success, 1 after
// printing one "tcc: error: ..." line on `err`. docs/runtime.md describes
// the behaviour users see.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TOOLS_RUNNER_H
#define TCC_RUNTIME_TOOLS_RUNNER_H

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace tcc::runner {

struct RunOptions {
  /// The device: "host", "sm_*" (CUDA) or "gfx*" (HIP); empty means the
  /// bundle's own target (its first code object's, "host" if it has none).
  std::string target;
  /// NAME, FILE.npy pairs, already split.
  std::vector<std::pair<std::string, std::string>> inputs;
  /// NAME=FILE.npy as given on the command line, split against the model's
  /// input names (splitInputSpec) once the model is loaded.
  std::vector<std::string> inputSpecs;
  /// Where DIR/<output>.npy go; empty means ".".
  std::string outputDir;
  /// Seed of the random values of inputs not given.
  uint64_t seed = 0;
  /// Random integer inputs are drawn from [0, randomIntLimit) (>= 1).
  uint64_t randomIntLimit = 10;
  /// Run through a CUDA or HIP graph (option "cuda_graph"); GPU devices
  /// only.
  bool cudaGraph = false;
  /// Every kernel starts after the previous one ended (option
  /// "grid_dependency" 0).
  bool serialLaunches = false;
  /// The graph is a chain of the launches in order (option
  /// "graph_concurrency" 0).
  bool graphChain = false;
};

struct BenchOptions {
  /// As RunOptions::target.
  std::string target;
  int warmup = 10;
  int iters = 100;
  /// When set, the figures are also written there as JSON.
  std::string jsonPath;
  /// Replay a CUDA or HIP graph (option "cuda_graph"); GPU devices only.
  bool cudaGraph = false;
  /// As RunOptions::serialLaunches and RunOptions::graphChain.
  bool serialLaunches = false;
  bool graphChain = false;
  /// NAME=FILE.npy, as RunOptions::inputSpecs: the inputs a timing depends
  /// on (a padding mask, indices); the others are random.
  std::vector<std::string> inputSpecs;
  /// When set, `iters` more runs time every launch (launched one by one,
  /// never through a graph) and the profile is written there as JSON
  /// (Profile.h, docs/runtime.md).
  std::string profilePath;
};

/// Runs the bundle once: inputs from .npy files or seeded random values,
/// each output to DIR/<name>.npy, a summary per output on `out`, notes on
/// `err`.
int runBundle(std::vector<uint8_t> bundle, const std::string &displayName,
              const RunOptions &options, std::ostream &out, std::ostream &err);
/// Times `iters` runs after `warmup` ones on the inputs given and random
/// values for the others, with
/// tccrt_model_time_runs (device events on a GPU, the host clock on the
/// host); prints median, min, max, p10 and p90 in milliseconds. With
/// `profilePath`, then profiles `iters` runs launch by launch.
int benchBundle(std::vector<uint8_t> bundle, const std::string &displayName,
                const BenchOptions &options, std::ostream &out,
                std::ostream &err);
/// Validates the bundle and prints its manifest as JSON, and nothing else,
/// on `out`. With `profilePath`, a profile `tcc bench --profile` wrote for
/// this bundle is checked and its figures added (mergeProfile).
int inspectBundle(std::vector<uint8_t> bundle, const std::string &displayName,
                  std::ostream &out, std::ostream &err,
                  const std::string &profilePath = "");
/// The same for a bundle file, reading only its header and manifest (not the
/// weights, which are not checked; run and load check everything).
int inspectBundleFile(const std::string &path, std::ostream &out,
                      std::ostream &err, const std::string &profilePath = "");

/// Splits "NAME=FILE" where NAME is one of `inputNames`: the spec must start
/// with NAME followed by '=', and when several names qualify (inputs "a"
/// and "a=b" for "a=b=c.npy") the longest wins. So input names and file
/// names may both contain '='. False with `why` when no input qualifies.
bool splitInputSpec(const std::string &spec,
                    const std::vector<std::string> &inputNames,
                    std::string &name, std::string &file, std::string &why);

/// The longest file name stem an output gets, so that STEM.npy fits the
/// 255-byte limit of Linux file systems.
constexpr size_t kMaxOutputStem = 251;

/// The file name an output is written under: its name with every character
/// outside [A-Za-z0-9._-] replaced by '_', a leading '.' replaced by '_',
/// and "_" for an empty name; so it never leaves the output directory. A
/// stem longer than kMaxOutputStem bytes keeps its first 234 bytes and gets
/// '-' and 16 hex digits of the name's FNV-1a-64 hash, so that long names
/// stay distinct.
std::string outputFileStem(const std::string &name);

} // namespace tcc::runner

#endif // TCC_RUNTIME_TOOLS_RUNNER_H
