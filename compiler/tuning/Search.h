//===- Search.h - gradient descent over a relaxed schedule space -*- C++
//-*-===//
//
// Felix's search (issue 17): a template's legal schedules are points of a
// discrete space; each has real coordinates (its knobs relaxed: log2 of a
// tile, a stage count), and the cost model predicts a time from features
// computed from the coordinates. From several starts (the fastest measured
// points and random ones) the search descends the predicted log-time along
// the coordinates, snapping every step to the nearest legal point; the
// points it passes that are not measured yet are ranked by their
// prediction, and the best of them, with a few random ones to keep
// exploring, are measured next.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_TUNING_SEARCH_H
#define TCC_COMPILER_TUNING_SEARCH_H

#include "compiler/tuning/CostModel.h"

#include <functional>
#include <random>
#include <set>
#include <vector>

namespace tcc::tuning {

struct SearchSpace {
  /// The relaxed coordinates of every legal point (one length).
  std::vector<std::vector<double>> points;
  /// The cost model's features at coordinates (legal or between points).
  std::function<std::vector<double>(const std::vector<double> &)> features;
};

/// The index of the legal point nearest to `r`, each coordinate measured
/// in units of its range over the space.
size_t nearestPoint(const SearchSpace &space, const std::vector<double> &r);

/// Up to `count` points to measure next, none of `measured`: the best
/// predicted of those the descents from `starts` (point indices) and from
/// `randomStarts` random points pass, then `explore` random unmeasured
/// points. An untrained model gives random points only.
std::vector<size_t> proposeCandidates(const SearchSpace &space,
                                      const CostModel &model,
                                      const std::set<size_t> &measured,
                                      const std::vector<size_t> &starts,
                                      size_t count, size_t explore,
                                      std::mt19937_64 &rng,
                                      size_t randomStarts = 4, int steps = 40);

} // namespace tcc::tuning

#endif // TCC_COMPILER_TUNING_SEARCH_H
