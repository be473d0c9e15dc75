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
    int rc = 1;
    std::remove(jsonPath.c_str()); // never the previous candidate's figures
    auto start = std::chrono::steady_clock::now();
    if (io::readRegularFile(dir + "/" + bundle, b, why))
      rc = benchBundle(std::move(b), bundle, options, quiet, errs);
    else
      errs << "tcc: error: " << why << "\n";
    double ms = -1;
    if (rc == 0) {
      std::ifstream in(jsonPath);
      nlohmann::json r = nlohmann::json::parse(in, nullptr, false);
      if (!r.is_discarded() && r.contains("median_ms") &&
          r["median_ms"].is_number())
        ms = r["median_ms"].get<double>();
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
    measurements.push_back({{"id", c["id"]}, {"ms", ms}, {"seconds", seconds}});
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
  out << "measured " << measurements.size() << " of " << total
      << " candidates into " << dir << "/measurements.json\n";
  if (measurements.empty())
    return fail("no candidate of " + dir + " could be measured");
  return 0;
}

} // namespace tcc::runner
