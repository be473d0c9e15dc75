//===- TuneMeasure.cpp - tcc tune-measure: time a tuning round ------------===//
#include "runtime/tools/TuneMeasure.h"

#include "runtime/src/FileIO.h"
#include "runtime/tools/Runner.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace tcc::runner {

int tuneMeasure(const std::string &roundDir, int warmup, int iters,
                std::ostream &out, std::ostream &err) {
  auto fail = [&](const std::string &m) {
    err << "tcc: error: " << m << "\n";
    return 1;
  };
  std::string dir = roundDir.empty() ? "." : roundDir;
  std::vector<uint8_t> bytes;
  std::string why;
  if (!io::readRegularFile(dir + "/candidates.json", bytes, why))
    return fail(why);
  nlohmann::json cands = nlohmann::json::parse(bytes, nullptr, false);
  if (cands.is_discarded() || !cands.contains("candidates") ||
      !cands["candidates"].is_array())
    return fail(dir + "/candidates.json: not a tuning round (tcc tune writes "
                      "one)");
  nlohmann::json measurements = nlohmann::json::array();
  size_t total = cands["candidates"].size(), done = 0, failed = 0;
  std::string jsonPath = dir + "/.bench.json";
  for (const nlohmann::json &c : cands["candidates"]) {
    ++done;
    if (!c.contains("id") || !c["id"].is_number_integer() ||
        !c.contains("bundle") || !c["bundle"].is_string())
      return fail(dir + "/candidates.json: a candidate needs an integer id "
                        "and a bundle");
    std::string bundle = c["bundle"].get<std::string>();
    if (bundle.find('/') != std::string::npos)
      return fail(dir + "/candidates.json: bundle '" + bundle +
                  "' must be a file of the round folder");
    std::vector<uint8_t> b;
    std::ostringstream quiet, errs;
    BenchOptions options;
    options.warmup = warmup;
    options.iters = iters;
    options.jsonPath = jsonPath;
    // The tuned kernel's own time where the round names its function: the
    // sum, per run, of its launches' median times in a profile (the model
    // around it, layout changes of a standalone convolution, is not the
    // schedule's doing).
    std::string prefix;
    if (c.contains("kernel_prefix") && c["kernel_prefix"].is_string())
      prefix = c["kernel_prefix"].get<std::string>();
    std::string profilePath = dir + "/.profile.json";
    if (!prefix.empty()) {
      options.profilePath = profilePath;
      std::remove(profilePath.c_str());
    }
    int rc = 1;
    std::remove(jsonPath.c_str()); // never the previous candidate's figures
    auto start = std::chrono::steady_clock::now();
    if (io::readRegularFile(dir + "/" + bundle, b, why))
      rc = benchBundle(std::move(b), bundle, options, quiet, errs);
    else
      errs << "tcc: error: " << why << "\n";
    double ms = -1, bundleMs = -1;
    if (rc == 0) {
      std::ifstream in(jsonPath);
      nlohmann::json r = nlohmann::json::parse(in, nullptr, false);
      if (!r.is_discarded() && r.contains("median_ms") &&
          r["median_ms"].is_number())
        ms = bundleMs = r["median_ms"].get<double>();
    }
    if (rc == 0 && !prefix.empty()) {
      std::ifstream in(profilePath);
      nlohmann::json prof = nlohmann::json::parse(in, nullptr, false);
      double us = 0;
      bool found = false;
      if (!prof.is_discarded() && prof.contains("kernels") &&
          prof["kernels"].is_array())
        for (const nlohmann::json &k : prof["kernels"]) {
          // The function's launches: its name, or its name and "_".
          std::string symbol =
              k.is_object() && k.contains("kernel") && k["kernel"].is_string()
                  ? k["kernel"].get<std::string>()
                  : std::string();
          if (symbol != prefix && symbol.rfind(prefix + "_", 0) != 0)
            continue;
          const char *key =
              k.contains("median_total_us") ? "median_total_us" : "total_us";
          if (k.contains(key) && k[key].is_number()) {
            us += k[key].get<double>();
            found = true;
          }
        }
      ms = found ? us / 1000 : -1;
      if (!found)
        errs << "tcc: error: no launch of " << prefix << " in its profile\n";
    }
    if (ms <= 0) {
      ++failed;
      std::string e = errs.str();
      out << "candidate " << c["id"] << " (" << bundle
          << "): not measured: " << e.substr(0, e.find('\n')) << "\n";
      continue;
    }
    // The seconds this candidate cost (load, warm-up, timed runs): the
    // tuning curve's x.
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    measurements.push_back({{"id", c["id"]},
                            {"ms", ms},
                            {"bundle_ms", bundleMs},
                            {"seconds", seconds}});
    // Written after each: a round cut short keeps what it measured.
    std::string text =
        nlohmann::json{{"measurements", measurements}}.dump(1) + "\n";
    if (!io::writeFileAtomically(dir + "/measurements.json", text.data(),
                                 text.size(), why))
      return fail(why);
    out << "[" << done << "/" << total << "] " << bundle << " " << ms
        << " ms\n";
    out.flush();
  }
  std::remove(jsonPath.c_str());
  std::remove((dir + "/.profile.json").c_str());
  out << "measured " << measurements.size() << " of " << total
      << " candidates into " << dir << "/measurements.json\n";
  if (measurements.empty())
    return fail("no candidate of " + dir + " could be measured");
  return 0;
}

} // namespace tcc::runner
