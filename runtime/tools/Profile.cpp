//===- Profile.cpp - per-launch times for tcc bench and inspect -----------===//
#include "runtime/tools/Profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

using json = nlohmann::json;

namespace tcc::runner {

std::string hex64(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string hex(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4)
    hex[i] = digits[value & 15];
  return hex;
}

namespace {

/// The kernel symbol of a launch as the profile records it (null: a copy).
json symbolOf(const tccrt_launch_info &info) {
  return info.kernel ? json(info.kernel) : json(nullptr);
}

/// One launch's figures for the per-symbol table.
struct LaunchTime {
  std::string symbol; ///< "(copy)" for a copy
  double meanUs = 0;
  double medianUs = -1; ///< < 0: unknown
};

/// The per-symbol table: calls a run, mean time a call, total a run and
/// share of the launches' total (and the sum of the medians when every
/// launch has one), largest total first, then by symbol.
json kernelTable(const std::vector<LaunchTime> &launches) {
  struct Row {
    int64_t calls = 0;
    double total = 0, medianTotal = 0;
  };
  std::map<std::string, Row> bySymbol;
  double total = 0;
  bool medians = true;
  for (const LaunchTime &l : launches) {
    Row &row = bySymbol[l.symbol];
    ++row.calls;
    row.total += l.meanUs;
    row.medianTotal += l.medianUs;
    total += l.meanUs;
    medians = medians && l.medianUs >= 0;
  }
  std::vector<std::pair<std::string, Row>> rows(bySymbol.begin(),
                                                bySymbol.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.total != b.second.total ? a.second.total > b.second.total
                                            : a.first < b.first;
  });
  json table = json::array();
  for (const auto &[symbol, row] : rows) {
    json r = {{"kernel", symbol},
              {"calls", row.calls},
              {"mean_us", row.total / (double)row.calls},
              {"total_us", row.total},
              {"share", total > 0 ? row.total / total : 0.0}};
    if (medians)
      r["median_total_us"] = row.medianTotal;
    table.push_back(std::move(r));
  }
  return table;
}

} // namespace

bool profileModel(tccrt_model *model, uint64_t iters, json &profile,
                  std::string &why) {
  size_t numLaunches = 0;
  tccrt_model_num_launches(model, &numLaunches);
  std::vector<tccrt_launch_info> infos(numLaunches);
  for (size_t i = 0; i < numLaunches; ++i)
    tccrt_model_launch_info(model, i, &infos[i]);

  // Runs are timed in pieces of at most 2^16 launch times, so that memory
  // stays bounded whatever --iters is; mean, min and max accumulate.
  const size_t piece =
      std::max<size_t>(1, (size_t(1) << 16) / std::max<size_t>(1, numLaunches));
  std::vector<double> launchMs, gapMs, runMs;
  // Every launch time for the medians (robust where other processes share
  // the machine), when they fit in 256 MiB.
  const bool keepSamples =
      iters * std::max<uint64_t>(1, numLaunches) <= (uint64_t(1) << 26);
  std::vector<float> samples;
  std::vector<double> runSamples;
  if (keepSamples) {
    samples.reserve((size_t)iters * numLaunches);
    runSamples.reserve((size_t)iters);
  }
  std::vector<double> sum(numLaunches, 0.0), gapSum(numLaunches, 0.0),
      lo(numLaunches, std::numeric_limits<double>::infinity()),
      hi(numLaunches, 0.0);
  double runSum = 0, runLo = std::numeric_limits<double>::infinity(), runHi = 0;
  for (uint64_t done = 0; done < iters;) {
    size_t n = (size_t)std::min<uint64_t>(piece, iters - done);
    launchMs.assign(n * numLaunches, 0.0);
    gapMs.assign(n * numLaunches, 0.0);
    runMs.assign(n, 0.0);
    if (tccrt_model_profile_runs(model, n, launchMs.data(), gapMs.data(),
                                 runMs.data()) != TCCRT_OK) {
      why = tccrt_last_error();
      return false;
    }
    for (size_t r = 0; r < n; ++r) {
      for (size_t i = 0; i < numLaunches; ++i) {
        double ms = launchMs[r * numLaunches + i];
        sum[i] += ms;
        gapSum[i] += gapMs[r * numLaunches + i];
        lo[i] = std::min(lo[i], ms);
        hi[i] = std::max(hi[i], ms);
      }
      if (keepSamples) {
        samples.insert(samples.end(), launchMs.begin() + r * numLaunches,
                       launchMs.begin() + (r + 1) * numLaunches);
        runSamples.push_back(runMs[r]);
      }
      runSum += runMs[r];
      runLo = std::min(runLo, runMs[r]);
      runHi = std::max(runHi, runMs[r]);
    }
    done += n;
  }

  // The median of launch i's samples (of the run's when i is numLaunches).
  std::vector<double> column;
  auto median = [&](size_t i) {
    column.clear();
    if (i == numLaunches)
      column = runSamples;
    else
      for (size_t r = 0; r < (size_t)iters; ++r)
        column.push_back(samples[r * numLaunches + i]);
    size_t mid = column.size() / 2;
    std::nth_element(column.begin(), column.begin() + mid, column.end());
    double m = column[mid];
    if (column.size() % 2 == 0)
      m = (m + *std::max_element(column.begin(), column.begin() + mid)) / 2;
    return m;
  };
  const double runs = (double)iters;
  json launches = json::array();
  std::vector<LaunchTime> times;
  double launchTotal = 0, gapTotal = 0;
  for (size_t i = 0; i < numLaunches; ++i) {
    const tccrt_launch_info &info = infos[i];
    json l = {{"index", i}, {"kernel", symbolOf(info)}};
    if (info.gpu) {
      l["grid"] = {info.grid[0], info.grid[1], info.grid[2]};
      l["block"] = {info.block[0], info.block[1], info.block[2]};
    } else if (info.kernel) {
      l["grid"] = info.grid[0];
    } else {
      l["bytes"] = info.grid[0];
    }
    double mean = 1000 * sum[i] / runs;
    l["mean_us"] = mean;
    LaunchTime t{info.kernel ? info.kernel : "(copy)", mean, -1};
    if (keepSamples)
      l["median_us"] = t.medianUs = 1000 * median(i);
    l["min_us"] = 1000 * lo[i];
    l["max_us"] = 1000 * hi[i];
    l["gap_us"] = 1000 * gapSum[i] / runs;
    launchTotal += mean;
    gapTotal += 1000 * gapSum[i] / runs;
    times.push_back(std::move(t));
    launches.push_back(std::move(l));
  }
  profile["launch_count"] = numLaunches;
  profile["run"] = {{"mean_us", 1000 * runSum / runs},
                    {"min_us", 1000 * runLo},
                    {"max_us", 1000 * runHi}};
  if (keepSamples)
    profile["run"]["median_us"] = 1000 * median(numLaunches);
  profile["launch_total_us"] = launchTotal;
  profile["gap_total_us"] = gapTotal;
  profile["launches"] = std::move(launches);
  profile["kernels"] = kernelTable(times);
  return true;
}

bool mergeProfile(json &manifest, uint64_t manifestHash, const json &profile,
                  const std::string &profileName, std::string &why) {
  auto bad = [&](const std::string &what) {
    why = profileName + ": " + what;
    return false;
  };
  if (!profile.is_object() || profile.value("format", json()) != kProfileFormat)
    return bad("not a tcc profile (no \"format\": \"tcc-profile\"; "
               "'tcc bench BUNDLE --profile FILE' writes them)");
  if (profile.value("version", json()) != kProfileVersion)
    return bad("unsupported profile version " +
               profile.value("version", json()).dump() + " (this tcc reads " +
               std::to_string(kProfileVersion) + ")");
  auto launches = profile.find("launches");
  if (launches == profile.end() || !launches->is_array())
    return bad("no \"launches\" array");
  const json &mLaunches = manifest.at("launches");
  const json &mKernels = manifest.at("kernels");
  if (launches->size() != mLaunches.size())
    return bad(
        "measured on another bundle: " + std::to_string(launches->size()) +
        " launches, this bundle has " + std::to_string(mLaunches.size()));
  std::vector<LaunchTime> times(mLaunches.size());
  double total = 0;
  for (size_t i = 0; i < mLaunches.size(); ++i) {
    const json &ml = mLaunches[i], &pl = (*launches)[i];
    // The manifest is validated: a launch is a copy or names a kernel.
    json symbol = ml.contains("copy")
                      ? json(nullptr)
                      : mKernels.at(ml.at("kernel").get<size_t>()).at("symbol");
    if (!pl.is_object())
      return bad("launch " + std::to_string(i) + " is not an object");
    if (pl.value("kernel", json("?")) != symbol)
      return bad("measured on another bundle: launch " + std::to_string(i) +
                 " is " + pl.value("kernel", json("?")).dump() + " there and " +
                 symbol.dump() + " here");
    auto us = pl.find("mean_us");
    if (us == pl.end() || !us->is_number() ||
        !std::isfinite(us->get<double>()) || us->get<double>() < 0)
      return bad("launch " + std::to_string(i) +
                 " has no non-negative \"mean_us\"");
    times[i].symbol = symbol.is_null() ? "(copy)" : symbol.get<std::string>();
    times[i].meanUs = us->get<double>();
    if (auto med = pl.find("median_us"); med != pl.end() && med->is_number() &&
                                         std::isfinite(med->get<double>()) &&
                                         med->get<double>() >= 0)
      times[i].medianUs = med->get<double>();
    total += times[i].meanUs;
  }
  if (auto hash = profile.find("manifest_fnv1a64");
      hash != profile.end() && *hash != hex64(manifestHash))
    return bad("measured on another bundle: manifest checksum " + hash->dump() +
               ", this bundle's is \"" + hex64(manifestHash) + "\"");

  json summary = {{"file", profileName},
                  {"timer", profile.value("timer", json(nullptr))},
                  {"target", profile.value("target", json(nullptr))},
                  {"iters", profile.value("iters", json(nullptr))},
                  {"launch_total_us", total}};
  if (auto run = profile.find("run");
      run != profile.end() && run->is_object() && run->contains("mean_us"))
    summary["run_mean_us"] = run->at("mean_us");
  summary["kernels"] = kernelTable(times);
  manifest["profile"] = std::move(summary);

  // A region group's time: its launches' (the compiler lists them), else
  // those of its kernel's symbol.
  if (auto groups = manifest.find("region_groups");
      groups != manifest.end() && groups->is_array())
    for (json &g : *groups) {
      if (!g.is_object())
        continue;
      std::vector<size_t> of;
      if (auto ls = g.find("launches"); ls != g.end() && ls->is_array()) {
        for (const json &l : *ls)
          if (l.is_number_unsigned() && l.get<size_t>() < times.size())
            of.push_back(l.get<size_t>());
      } else if (auto k = g.find("kernel"); k != g.end() && k->is_string()) {
        for (size_t i = 0; i < times.size(); ++i)
          if (times[i].symbol == k->get<std::string>())
            of.push_back(i);
      }
      double us = 0, medianUs = 0;
      bool medians = true;
      for (size_t i : of) {
        us += times[i].meanUs;
        medianUs += times[i].medianUs;
        medians = medians && times[i].medianUs >= 0;
      }
      g["measured_us"] = of.empty() ? json(nullptr) : json(us);
      if (!of.empty() && medians)
        g["measured_median_us"] = medianUs;
    }
  return true;
}

} // namespace tcc::runner
