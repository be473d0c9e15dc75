//===- Search.cpp - gradient descent over a relaxed schedule space --------===//
#include "compiler/tuning/Search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace tcc::tuning {
namespace {

/// Each coordinate's range over the space (1 where it does not vary).
std::vector<double> ranges(const SearchSpace &space,
                           std::vector<double> *lo = nullptr,
                           std::vector<double> *hi = nullptr) {
  size_t d = space.points.front().size();
  std::vector<double> mn(d, std::numeric_limits<double>::infinity()),
      mx(d, -std::numeric_limits<double>::infinity());
  for (const auto &p : space.points)
    for (size_t i = 0; i < d; ++i) {
      mn[i] = std::min(mn[i], p[i]);
      mx[i] = std::max(mx[i], p[i]);
    }
  std::vector<double> r(d);
  for (size_t i = 0; i < d; ++i)
    r[i] = mx[i] > mn[i] ? mx[i] - mn[i] : 1.0;
  if (lo)
    *lo = mn;
  if (hi)
    *hi = mx;
  return r;
}

/// The gradient of the predicted log-time along the coordinates: the
/// model's gradient along the features, through the features' Jacobian
/// (central differences: the feature functions need not be written twice).
std::vector<double> gradient(const SearchSpace &space, const CostModel &model,
                             const std::vector<double> &r,
                             const std::vector<double> &range) {
  std::vector<double> gf;
  model.predictLog(space.features(r), &gf);
  std::vector<double> g(r.size(), 0.0);
  for (size_t i = 0; i < r.size(); ++i) {
    double h = 1e-3 * range[i];
    std::vector<double> a = r, b = r;
    a[i] += h;
    b[i] -= h;
    std::vector<double> fa = space.features(a), fb = space.features(b);
    for (size_t j = 0; j < gf.size(); ++j)
      g[i] += gf[j] * (fa[j] - fb[j]) / (2 * h);
  }
  return g;
}

} // namespace

size_t nearestPoint(const SearchSpace &space, const std::vector<double> &r) {
  std::vector<double> range = ranges(space);
  size_t best = 0;
  double bestD = std::numeric_limits<double>::infinity();
  for (size_t p = 0; p < space.points.size(); ++p) {
    double d = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      double t = (space.points[p][i] - r[i]) / range[i];
      d += t * t;
    }
    if (d < bestD) {
      bestD = d;
      best = p;
    }
  }
  return best;
}

std::vector<size_t> proposeCandidates(const SearchSpace &space,
                                      const CostModel &model,
                                      const std::set<size_t> &measured,
                                      const std::vector<size_t> &starts,
                                      size_t count, size_t explore,
                                      std::mt19937_64 &rng, size_t randomStarts,
                                      int steps) {
  std::vector<size_t> out;
  if (space.points.empty() || count == 0)
    return out;
  std::vector<size_t> unmeasured;
  for (size_t p = 0; p < space.points.size(); ++p)
    if (!measured.count(p))
      unmeasured.push_back(p);
  std::shuffle(unmeasured.begin(), unmeasured.end(), rng);
  if (!model.trained() || unmeasured.size() <= count) {
    unmeasured.resize(std::min(count, unmeasured.size()));
    return unmeasured;
  }
  std::vector<double> lo, hi;
  std::vector<double> range = ranges(space, &lo, &hi);
  std::vector<size_t> from = starts;
  std::uniform_int_distribution<size_t> any(0, space.points.size() - 1);
  for (size_t i = 0; i < randomStarts; ++i)
    from.push_back(any(rng));
  // Predicted log-times of the unmeasured points the descents pass.
  std::map<size_t, double> found;
  for (size_t s : from) {
    std::vector<double> r = space.points[s];
    // Steps of a quarter of each range along the normalised gradient,
    // shrinking: long enough to cross the space, short enough to settle.
    for (int t = 0; t < steps; ++t) {
      std::vector<double> g = gradient(space, model, r, range);
      double norm = 0;
      for (size_t i = 0; i < g.size(); ++i)
        norm += g[i] * range[i] * g[i] * range[i];
      norm = std::sqrt(norm);
      if (!(norm > 1e-12))
        break;
      double eta = 0.25 * std::pow(0.95, t);
      for (size_t i = 0; i < r.size(); ++i)
        r[i] = std::clamp(r[i] - eta * g[i] * range[i] * range[i] / norm, lo[i],
                          hi[i]);
      size_t p = nearestPoint(space, r);
      if (!measured.count(p) && !found.count(p))
        found[p] = model.predictLog(space.features(space.points[p]));
    }
  }
  std::vector<std::pair<double, size_t>> ranked;
  for (auto [p, t] : found)
    ranked.push_back({t, p});
  std::sort(ranked.begin(), ranked.end());
  size_t exploit = count > explore ? count - explore : 0;
  for (size_t i = 0; i < ranked.size() && out.size() < exploit; ++i)
    out.push_back(ranked[i].second);
  // Exploration, and filling up when the descents found too few.
  for (size_t p : unmeasured) {
    if (out.size() >= count)
      break;
    if (std::find(out.begin(), out.end(), p) == out.end())
      out.push_back(p);
  }
  return out;
}

} // namespace tcc::tuning
