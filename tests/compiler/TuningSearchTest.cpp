//===- TuningSearchTest.cpp - the tuner's cost model and its search -------===//
//
// The cost model must learn a smooth function of its features and give its
// true gradient; the search, driven by it over a discrete space whose time
// is a known function (a stand-in for measurements: tile sizes trading
// parallelism against reuse, stages, splits), must find the fastest point
// within 5% on average after measuring a quarter of the space, and beat
// random search given the same number of measurements.
#include "compiler/tuning/CostModel.h"
#include "compiler/tuning/Search.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace tcc::tuning;

TEST_CASE("cost model fits and differentiates", "[tuning]") {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> u(-2, 2);
  auto f = [](const std::vector<double> &x) {
    return std::exp(0.5 * x[0] * x[0] - 0.3 * x[1] + 0.2 * x[0] * x[2] +
                    0.1 * std::sin(2 * x[1]));
  };
  std::vector<std::vector<double>> x, xt;
  std::vector<double> y, yt;
  for (int i = 0; i < 240; ++i) {
    std::vector<double> r = {u(rng), u(rng), u(rng)};
    (i < 200 ? x : xt).push_back(r);
    (i < 200 ? y : yt).push_back(f(r));
  }
  CostModel m(32, rng());
  m.train(x, y, 2000);
  double se = 0;
  for (size_t i = 0; i < xt.size(); ++i) {
    double e = m.predictLog(xt[i]) - std::log(yt[i]);
    se += e * e / xt.size();
  }
  INFO("held-out RMS error of log time " << std::sqrt(se));
  CHECK(std::sqrt(se) < 0.15);
  // The gradient against central differences of the prediction itself.
  for (const auto &r : xt) {
    std::vector<double> g;
    m.predictLog(r, &g);
    for (size_t i = 0; i < r.size(); ++i) {
      std::vector<double> a = r, b = r;
      a[i] += 1e-5;
      b[i] -= 1e-5;
      double fd = (m.predictLog(a) - m.predictLog(b)) / 2e-5;
      CHECK(g[i] == Approx(fd).margin(1e-5).epsilon(1e-4));
    }
  }
}

namespace {

/// A GEMM-like stand-in: coordinates log2 tile_m, log2 tile_n (5..8),
/// stages (2..5), log2 split (0..3), on a 4096 x 1024 x 8192 problem and
/// 132 processors; time = waves of blocks, each block's time falling with
/// reuse and stages and its split's share of K, plus a split's reduction.
double standIn(const std::vector<double> &c) {
  double tm = std::exp2(c[0]), tn = std::exp2(c[1]), st = c[2],
         sp = std::exp2(c[3]);
  double blocks = std::ceil(4096 / tm) * std::ceil(1024 / tn) * sp;
  double waves = std::ceil(blocks / 132);
  double perBlock = (tm * tn * 8192 / sp) * (1 / tm + 1 / tn + 0.004) /
                    (1 + 0.3 * std::min(st, 4.0)) * (st > 4 ? 1.08 : 1.0);
  double smem = (tm + tn) * 64 * 2 * st;
  if (smem > 200000)
    perBlock *= 3; // spills to fewer blocks a processor
  return 1e-6 * waves * perBlock + 0.02 * (sp - 1);
}

SearchSpace standInSpace() {
  SearchSpace s;
  for (int a = 5; a <= 8; ++a)
    for (int b = 5; b <= 8; ++b)
      for (int st = 2; st <= 5; ++st)
        for (int sp = 0; sp <= 3; ++sp)
          s.points.push_back({double(a), double(b), double(st), double(sp)});
  // Features: the coordinates, and smooth versions of what the time
  // depends on (log blocks, log smem, log work a block).
  s.features = [](const std::vector<double> &c) {
    double blocks = 12 - c[0] + 10 - c[1] + c[3];
    return std::vector<double>{c[0],
                               c[1],
                               c[2],
                               c[3],
                               blocks,
                               std::log2(std::exp2(c[0]) + std::exp2(c[1])) +
                                   c[2],
                               c[0] + c[1] - c[3]};
  };
  return s;
}

/// The best time found after `budget` measurements: the search's rounds
/// (8 random, then 8 a round: 6 proposed, 2 explored), or random picks.
double tune(const SearchSpace &s, size_t budget, bool random, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<size_t> measured;
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  CostModel model(24, seed);
  double best = 1e30;
  while (measured.size() < budget) {
    std::vector<size_t> starts;
    std::vector<std::pair<double, size_t>> order;
    for (size_t p : measured)
      order.push_back({standIn(s.points[p]), p});
    std::sort(order.begin(), order.end());
    for (size_t i = 0; i < order.size() && i < 3; ++i)
      starts.push_back(order[i].second);
    size_t n = std::min<size_t>(8, budget - measured.size());
    CostModel untrained;
    std::vector<size_t> next = proposeCandidates(s, random ? untrained : model,
                                                 measured, starts, n, 2, rng);
    for (size_t p : next) {
      measured.insert(p);
      x.push_back(s.features(s.points[p]));
      y.push_back(standIn(s.points[p]));
      best = std::min(best, y.back());
    }
    if (!random)
      model.train(x, y, 800);
  }
  return best;
}

} // namespace

TEST_CASE("gradient search finds the fastest schedule", "[tuning]") {
  SearchSpace s = standInSpace();
  double optimum = 1e30;
  for (const auto &p : s.points)
    optimum = std::min(optimum, standIn(p));
  uint64_t base = std::random_device{}();
  INFO("seed " << base);
  double felix = 0, random = 0;
  // 24 trials: with 10, one CI run in many saw 1.053 (seed 1012395600,
  // session 41) where runs measure 1.00-1.03.
  const int trials = 24;
  for (int t = 0; t < trials; ++t) {
    felix += std::log(tune(s, 64, false, base + t) / optimum) / trials;
    random += std::log(tune(s, 64, true, base + t) / optimum) / trials;
  }
  INFO("geomean over the optimum: search " << std::exp(felix) << ", random "
                                           << std::exp(random));
  // Within 5% of the optimum on average (15 runs: 1.00-1.02), and not
  // behind random picks (1.01-1.11; a quarter of the space drawn at random
  // sometimes holds a near-optimal point too, hence 1% of slack).
  CHECK(std::exp(felix) <= 1.05);
  CHECK(felix <= random + std::log(1.01));
}
