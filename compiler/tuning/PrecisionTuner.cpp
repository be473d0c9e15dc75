//===- PrecisionTuner.cpp - tcc tune-precision ----------------------------===//
#include "compiler/tuning/PrecisionTuner.h"

#include "compiler/PrecisionPlan.h"
#include "ir/TccOps.h"
#include "runtime/src/DType.h"
#include "runtime/src/FileIO.h"
#include "runtime/src/Npy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <unistd.h>

using namespace mlir;
using nlohmann::json;

namespace tcc::tuning {
namespace {

/// A precision a tile may take: how it rounds (docs/precision.md) and
/// what the time model charges for it. The rates are cuBLAS's dense peaks
/// on the H200 (shared/perf/ANCHORS.md; int8 taken as fp8's): placeholders
/// for the mixed kernel's own, which no GPU has measured yet.
struct Precision {
  const char *name;
  DType dtype;
  double qmax;   ///< a block's largest magnitude is scaled to this; 0: unscaled
  double tflops; ///< the time model's rate
  int mantissa;  ///< fraction bits (the rule's error estimate)
  int bytes;
};

const Precision kPrecisions[] = {
    {"f32", DType::F32, 0, 51, 23, 4},
    {"bf16", DType::BF16, 0, 663, 7, 2},
    {"f16", DType::F16, 65504, 634, 10, 2},
    {"f8e4m3", DType::F8E4M3, 448, 1278, 3, 1},
    {"f8e5m2", DType::F8E5M2, 57344, 1278, 2, 1},
    {"i8", DType::I8, 127, 1278, 0, 1},
};

/// What the time model charges for reading and writing a byte once (the
/// H200's copy bandwidth, about 4 TB/s).
constexpr double kSecondsPerByte = 1.0 / 4.0e12;

/// `q` rounded to precision `p` as the plan's semantics round it.
float roundTo(const Precision &p, float q) {
  switch (p.dtype) {
  case DType::BF16:
    return float(decodeBF16(encodeBF16(q)));
  case DType::F16:
    return float(decodeF16(encodeF16(q)));
  case DType::F8E4M3:
    return float(decodeF8E4M3(encodeF8E4M3(q)));
  case DType::F8E5M2:
    return float(decodeF8E5M2(encodeF8E5M2(q)));
  case DType::I8:
    return std::min(127.0f, std::max(-127.0f, std::floor(q + 0.5f)));
  default:
    return q;
  }
}

/// A matrix operand as stored ([batch][rows][cols], f32 values of its
/// dtype), read as op(X)[i][k] where op transposes when `trans`.
struct Operand {
  int64_t batch = 1, rows = 0, cols = 0;
  bool trans = false;
  std::vector<float> v;
  float at(int64_t b, int64_t i, int64_t k) const {
    int64_t bb = batch == 1 ? 0 : b;
    int64_t r = trans ? k : i, c = trans ? i : k;
    return v[size_t((bb * rows + r) * cols + c)];
  }
};

/// One plannable matmul: C [batch, M, N] = op(A) [.., M, K] x op(B) [K, N].
struct Problem {
  std::string node, shown; ///< the plan's key; how it is printed
  mutable mlir::tcc::MatmulOp op;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  DType dtype = DType::F32;
  /// Where each operand comes from: an input's name, a param's index, or
  /// the index of a value the model computes (probed: run on the host).
  std::string aInput, bInput;
  int64_t aParam = -1, bParam = -1;
  int64_t aProbe = -1, bProbe = -1;
};

/// Per tile and precision, the squared error of the tile's output, and the
/// squared norm of the tile's exact output (summed over samples).
struct ErrorTable {
  std::vector<std::vector<double>> err2; ///< [tile][precision]
  std::vector<double> norm2;             ///< [tile]
};

struct Plan {
  std::vector<int8_t> codes; ///< per tile, an index into the precisions
  double seconds = 0, error = 0;
};

class Planner {
public:
  Planner(const Problem &p, const PrecisionTuneOptions &o,
          const std::vector<const Precision *> &precisions)
      : p(p), o(o), precs(precisions), target(o.errorBudget * o.margin) {
    gm = (p.m + o.tileM - 1) / o.tileM;
    gn = (p.n + o.tileN - 1) / o.tileN;
  }

  int64_t tiles() const { return gm * gn; }

  /// A result rounded to the operands' dtype, as the planned matmul's.
  double roundOut(float v) const {
    uint8_t buf[8];
    encodeScalar(p.dtype, v, buf);
    return decodeScalar(p.dtype, buf);
  }

  /// Adds one calibration sample's errors to `table`; its block statistics
  /// (largest magnitude over RMS) to the rules' when `stats`.
  void measure(const Operand &a, const Operand &b, ErrorTable &table,
               bool stats, std::mt19937_64 &rng) {
    size_t np = precs.size();
    if (table.norm2.empty()) {
      table.err2.assign(size_t(tiles()), std::vector<double>(np, 0.0));
      table.norm2.assign(size_t(tiles()), 0.0);
    }
    if (stats && crestA.empty()) {
      crestA.assign(size_t(gm), 0.0);
      crestB.assign(size_t(gn), 0.0);
    }
    for (int64_t bt = 0; bt < p.batch; ++bt) {
      // Each block's largest magnitude (the scales) and, for the rules, its
      // dynamic range: A's row blocks, B's column blocks.
      std::vector<float> amaxA, amaxB;
      auto blocks = [&](auto value, int64_t count, int64_t tile,
                        std::vector<float> &amax, std::vector<double> &crest) {
        int64_t g = (count + tile - 1) / tile;
        amax.assign(size_t(g), 0.0f);
        std::vector<double> sq(size_t(g), 0.0);
        for (int64_t i = 0; i < count; ++i)
          for (int64_t kk = 0; kk < p.k; ++kk) {
            float x = value(i, kk);
            amax[size_t(i / tile)] =
                std::max(amax[size_t(i / tile)], std::fabs(x));
            sq[size_t(i / tile)] += double(x) * x;
          }
        if (!stats)
          return;
        for (int64_t I = 0; I < g; ++I) {
          double n = double(std::min(tile, count - I * tile)) * double(p.k);
          double rms = std::sqrt(sq[size_t(I)] / n);
          if (rms > 0)
            crest[size_t(I)] =
                std::max(crest[size_t(I)], amax[size_t(I)] / rms);
        }
      };
      blocks([&](int64_t i, int64_t kk) { return a.at(bt, i, kk); }, p.m,
             o.tileM, amaxA, crestA);
      blocks([&](int64_t j, int64_t kk) { return b.at(bt, kk, j); }, p.n,
             o.tileN, amaxB, crestB);
      auto scale = [](float amax, double qmax) {
        if (qmax == 0)
          return 1.0f;
        return amax > 0 ? amax / float(qmax) : 1.0f;
      };
      // The sampled rows of each row block and columns of each column block.
      int64_t side =
          o.samplesPerTile <= 0
              ? INT64_MAX
              : int64_t(std::ceil(std::sqrt(double(o.samplesPerTile))));
      auto pick = [&](int64_t first, int64_t count) {
        std::vector<int64_t> all(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i)
          all[size_t(i)] = first + i;
        if (count > side) {
          std::shuffle(all.begin(), all.end(), rng);
          all.resize(size_t(side));
        }
        return all;
      };
      std::vector<std::vector<int64_t>> rowsPicked(static_cast<size_t>(gm)),
          colsPicked(static_cast<size_t>(gn));
      for (int64_t I = 0; I < gm; ++I)
        rowsPicked[size_t(I)] = pick(I * o.tileM, rowsOf(I));
      for (int64_t J = 0; J < gn; ++J)
        colsPicked[size_t(J)] = pick(J * o.tileN, colsOf(J));
      // Per precision, the picked rows of A and columns of B rounded, and
      // the unrounded ones (for the exact product).
      size_t K = size_t(p.k);
      auto rowOf = [&](int64_t i, const Precision *q, float s) {
        std::vector<float> r(K);
        for (size_t kk = 0; kk < K; ++kk) {
          float x = a.at(bt, i, int64_t(kk));
          r[kk] = q ? roundTo(*q, q->qmax > 0 ? x / s : x) : x;
        }
        return r;
      };
      auto colOf = [&](int64_t j, const Precision *q, float s) {
        std::vector<float> c(K);
        for (size_t kk = 0; kk < K; ++kk) {
          float x = b.at(bt, int64_t(kk), j);
          c[kk] = q ? roundTo(*q, q->qmax > 0 ? x / s : x) : x;
        }
        return c;
      };
      auto dot = [&](const std::vector<float> &x, const std::vector<float> &y) {
        double acc = 0;
        for (size_t kk = 0; kk < K; ++kk)
          acc += double(x[kk]) * double(y[kk]);
        return acc;
      };
      std::map<int64_t, std::vector<float>> exactRows, exactCols;
      for (int64_t I = 0; I < gm; ++I)
        for (int64_t i : rowsPicked[size_t(I)])
          exactRows[i] = rowOf(i, nullptr, 1.0f);
      for (int64_t J = 0; J < gn; ++J)
        for (int64_t j : colsPicked[size_t(J)])
          exactCols[j] = colOf(j, nullptr, 1.0f);
      std::map<std::pair<int64_t, int64_t>, double> exact;
      for (int64_t I = 0; I < gm; ++I)
        for (int64_t J = 0; J < gn; ++J) {
          double sum = 0;
          for (int64_t i : rowsPicked[size_t(I)])
            for (int64_t j : colsPicked[size_t(J)]) {
              double c = dot(exactRows[i], exactCols[j]);
              exact[{i, j}] = c;
              sum += c * c;
            }
          table.norm2[size_t(I * gn + J)] +=
              sum * weight(I, J, rowsPicked, colsPicked);
        }
      for (size_t pi = 0; pi < precs.size(); ++pi) {
        const Precision *q = precs[pi];
        std::map<int64_t, std::vector<float>> qRows, qCols;
        for (int64_t I = 0; I < gm; ++I)
          for (int64_t i : rowsPicked[size_t(I)])
            qRows[i] = rowOf(i, q, scale(amaxA[size_t(I)], q->qmax));
        for (int64_t J = 0; J < gn; ++J)
          for (int64_t j : colsPicked[size_t(J)])
            qCols[j] = colOf(j, q, scale(amaxB[size_t(J)], q->qmax));
        for (int64_t I = 0; I < gm; ++I)
          for (int64_t J = 0; J < gn; ++J) {
            double sa = scale(amaxA[size_t(I)], q->qmax);
            double sb = scale(amaxB[size_t(J)], q->qmax);
            double sum = 0;
            for (int64_t i : rowsPicked[size_t(I)])
              for (int64_t j : colsPicked[size_t(J)]) {
                // The f32 product, rounded to the operands' dtype (the
                // planned matmul's result type).
                float c32 = float(float(dot(qRows[i], qCols[j]) * sa) * sb);
                double c = roundOut(c32);
                double d = c - exact[{i, j}];
                sum += d * d;
              }
            table.err2[size_t(I * gn + J)][pi] +=
                sum * weight(I, J, rowsPicked, colsPicked);
          }
      }
    }
  }

  /// The time model: each tile's multiply-adds at its precision's rate, and
  /// per precision the plan uses, a pass converting the operands that are
  /// not params (a param's conversion runs once at load) unless they are
  /// already of that precision.
  /// With `expanded`, the plan as tcc runs it today instead
  /// (tcc-expand-precision-plans): a whole GEMM per precision it uses, and
  /// a pass selecting each tile's result.
  double seconds(const std::vector<int8_t> &codes,
                 bool expanded = false) const {
    double t = 0;
    std::vector<bool> used(precs.size(), false);
    double whole =
        2.0 * double(p.m) * double(p.n) * double(p.k) * double(p.batch);
    for (int64_t I = 0; I < gm; ++I)
      for (int64_t J = 0; J < gn; ++J) {
        const Precision *q = precs[size_t(codes[size_t(I * gn + J)])];
        used[size_t(codes[size_t(I * gn + J)])] = true;
        if (!expanded)
          t += 2.0 * double(rowsOf(I)) * double(colsOf(J)) * double(p.k) *
               double(p.batch) / (q->tflops * 1e12);
      }
    if (expanded) {
      int64_t classes = 0;
      for (size_t pi = 0; pi < precs.size(); ++pi)
        if (used[pi]) {
          t += whole / (precs[pi]->tflops * 1e12);
          ++classes;
        }
      if (classes > 1)
        t += double(classes + 1) * double(p.batch) * p.m * p.n * 4.0 *
             kSecondsPerByte;
    }
    for (size_t pi = 0; pi < precs.size(); ++pi) {
      if (!used[pi] || precs[pi]->dtype == p.dtype)
        continue;
      double bytes = 0, per = 4.0 + precs[pi]->bytes;
      if (p.aParam < 0)
        bytes += double(p.batch) * p.m * p.k * per;
      if (p.bParam < 0)
        bytes += double(p.k) * p.n * per;
      t += bytes * kSecondsPerByte;
    }
    return t;
  }

  static double error(const ErrorTable &table,
                      const std::vector<int8_t> &codes) {
    double e = 0, n = 0;
    for (size_t t = 0; t < codes.size(); ++t) {
      e += table.err2[t][size_t(codes[t])];
      n += table.norm2[t];
    }
    return n > 0 ? std::sqrt(e / n) : 0.0;
  }

  /// The rules: each tile the cheapest precision whose error, estimated from
  /// its blocks' dynamic range, is within 0.7 of the budget: floats lose
  /// about 2^-(fraction bits + 1) of each operand, i8 a step of 1/127 of
  /// the block's largest magnitude, relative to its RMS.
  std::vector<int8_t> rulePlan() const {
    std::vector<int8_t> codes(static_cast<size_t>(tiles()));
    for (int64_t I = 0; I < gm; ++I)
      for (int64_t J = 0; J < gn; ++J) {
        double best = INFINITY;
        int8_t choice = 0;
        double mostAccurate = INFINITY;
        int8_t fallback = 0;
        for (size_t pi = 0; pi < precs.size(); ++pi) {
          const Precision *q = precs[pi];
          double est;
          if (q->dtype == DType::I8) {
            double ca = crestA.empty() ? 1 : crestA[size_t(I)];
            double cb = crestB.empty() ? 1 : crestB[size_t(J)];
            est = std::sqrt(ca * ca + cb * cb) / (127.0 * std::sqrt(12.0));
          } else {
            est = std::sqrt(2.0 / 3.0) * std::ldexp(1.0, -(q->mantissa + 1));
          }
          double cost = 1.0 / q->tflops;
          if (est <= 0.7 * target && cost < best) {
            best = cost;
            choice = int8_t(pi);
          }
          if (est < mostAccurate) {
            mostAccurate = est;
            fallback = int8_t(pi);
          }
        }
        codes[size_t(I * gn + J)] = best < INFINITY ? choice : fallback;
      }
    return codes;
  }

  /// The plans of the Lagrangian relaxation: for each lambda of a sweep,
  /// each tile the precision minimising its time + lambda x its squared
  /// error (relative to the output's). Each is the fastest plan of its
  /// error, or close (the lower convex hull of the time-error trade-off):
  /// the Pareto front's backbone, and the greedy seed of the search.
  std::vector<std::vector<int8_t>>
  lagrangianPlans(const ErrorTable &table) const {
    double norm = 0;
    for (double x : table.norm2)
      norm += x;
    std::vector<std::vector<int8_t>> plans;
    for (int step = 0; step <= 240; ++step) {
      double lambda = std::pow(10.0, -30.0 + 0.25 * step);
      std::vector<int8_t> codes(static_cast<size_t>(tiles()));
      for (int64_t I = 0; I < gm; ++I)
        for (int64_t J = 0; J < gn; ++J) {
          size_t t = size_t(I * gn + J);
          double bestCost = INFINITY;
          for (size_t pi = 0; pi < precs.size(); ++pi) {
            double time = 2.0 * double(rowsOf(I)) * double(colsOf(J)) *
                          double(p.k) / (precs[pi]->tflops * 1e12);
            double cost = time + lambda * table.err2[t][pi] / norm;
            if (cost < bestCost) {
              bestCost = cost;
              codes[t] = int8_t(pi);
            }
          }
        }
      if (plans.empty() || plans.back() != codes)
        plans.push_back(std::move(codes));
    }
    return plans;
  }

  /// The evolutionary search: tournament selection, tile-wise and
  /// block-wise crossover, random and cheapening mutations, the fittest
  /// kept; fitness the time, an infeasible plan's grown by its excess
  /// error. Every plan evaluated goes to `archive`.
  Plan evolve(const ErrorTable &table,
              const std::vector<std::vector<int8_t>> &seeds,
              std::vector<Plan> &archive, std::mt19937_64 &rng) {
    size_t T = size_t(tiles()), np = precs.size();
    auto evaluate = [&](std::vector<int8_t> codes) {
      Plan pl;
      pl.codes = std::move(codes);
      pl.seconds = seconds(pl.codes);
      pl.error = error(table, pl.codes);
      if (archive.size() < 200000)
        archive.push_back(pl);
      return pl;
    };
    auto fitness = [&](const Plan &pl) {
      if (pl.error <= target)
        return pl.seconds;
      return pl.seconds * (2.0 + 10.0 * pl.error / target);
    };
    const size_t N = 48;
    std::vector<Plan> pop;
    for (const auto &s : seeds)
      if (!s.empty())
        pop.push_back(evaluate(s));
    std::uniform_int_distribution<size_t> anyPrec(0, np - 1);
    std::uniform_real_distribution<double> u01(0, 1);
    while (pop.size() < N) {
      std::vector<int8_t> c =
          pop[pop.size() % std::max<size_t>(1, seeds.size())].codes;
      for (auto &x : c)
        if (u01(rng) < 0.2)
          x = int8_t(anyPrec(rng));
      pop.push_back(evaluate(c));
    }
    auto tournament = [&]() -> const Plan & {
      const Plan &x = pop[rng() % pop.size()], &y = pop[rng() % pop.size()];
      return fitness(x) <= fitness(y) ? x : y;
    };
    auto start = std::chrono::steady_clock::now();
    for (int gen = 0; gen < 2000; ++gen) {
      double elapsed = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if (elapsed > o.searchSeconds)
        break;
      std::vector<Plan> next = pop;
      for (size_t c = 0; c < N; ++c) {
        const Plan &x = tournament(), &y = tournament();
        std::vector<int8_t> child = x.codes;
        double kind = u01(rng);
        if (kind < 0.4) {
          for (size_t t = 0; t < T; ++t)
            if (u01(rng) < 0.5)
              child[t] = y.codes[t];
        } else if (kind < 0.7) {
          // A tile row or column from the other parent.
          bool row = u01(rng) < 0.5;
          int64_t pickAt = int64_t(rng() % uint64_t(row ? gm : gn));
          for (int64_t I = 0; I < gm; ++I)
            for (int64_t J = 0; J < gn; ++J)
              if ((row ? I : J) == pickAt)
                child[size_t(I * gn + J)] = y.codes[size_t(I * gn + J)];
        }
        double rate = 2.0 / double(T);
        for (size_t t = 0; t < T; ++t)
          if (u01(rng) < rate)
            child[t] = int8_t(anyPrec(rng));
        if (u01(rng) < 0.5) {
          // One tile to the next faster precision, or the next more
          // accurate one.
          size_t t = rng() % T;
          bool faster = u01(rng) < 0.5;
          double cur = precs[size_t(child[t])]->tflops;
          int8_t pickP = child[t];
          double bestGap = INFINITY;
          for (size_t pi = 0; pi < np; ++pi) {
            double gap =
                faster ? precs[pi]->tflops - cur : cur - precs[pi]->tflops;
            if (gap > 0 && gap < bestGap) {
              bestGap = gap;
              pickP = int8_t(pi);
            }
          }
          child[t] = pickP;
        }
        next.push_back(evaluate(std::move(child)));
      }
      std::sort(next.begin(), next.end(), [&](const Plan &x, const Plan &y) {
        return fitness(x) < fitness(y);
      });
      next.resize(N);
      pop = std::move(next);
    }
    return pop.front();
  }

  int64_t rowsOf(int64_t I) const {
    return std::min(o.tileM, p.m - I * o.tileM);
  }
  int64_t colsOf(int64_t J) const {
    return std::min(o.tileN, p.n - J * o.tileN);
  }

  int64_t gm = 0, gn = 0;

private:
  /// The tile's elements per sampled element.
  double weight(int64_t I, int64_t J,
                const std::vector<std::vector<int64_t>> &rows,
                const std::vector<std::vector<int64_t>> &cols) const {
    double sampled = double(rows[size_t(I)].size() * cols[size_t(J)].size());
    return double(rowsOf(I)) * double(colsOf(J)) / sampled;
  }

  const Problem &p;
  const PrecisionTuneOptions &o;
  std::vector<const Precision *> precs;
  std::vector<double> crestA, crestB;

public:
  /// The error the search plans to: the budget times the margin, which
  /// leaves room for data the calibration did not see.
  double target;
};

/// The values of a .npy array as f32 values of `dtype` (rounded as `tcc
/// run` converts inputs).
bool readValues(const std::string &path, DType dtype,
                const std::vector<int64_t> &shape, std::vector<float> &out,
                std::string &error) {
  npy::Array a;
  if (!npy::readFile(path, a, error))
    return false;
  if (a.shape != shape) {
    error = path + ": shape " + npy::shapeString(a.shape) + ", the input is " +
            npy::shapeString(shape);
    return false;
  }
  size_t n = 1, size = dtypeSize(a.dtype);
  for (int64_t d : shape)
    n *= size_t(d);
  out.resize(n);
  uint8_t buf[8];
  for (size_t i = 0; i < n; ++i) {
    double v = decodeScalar(a.dtype, a.data.data() + i * size);
    encodeScalar(dtype, v, buf);
    out[i] = float(decodeScalar(dtype, buf));
  }
  return true;
}

std::string fmt(double v, const char *spec = "%.3g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

/// The time-error plot: every plan evaluated (grey), the Pareto front
/// (blue), the uniform plans (red, named), the chosen plan (green), the
/// budget (dashed).
std::string paretoSvg(const std::string &title, const std::vector<Plan> &all,
                      const std::vector<Plan> &front,
                      const std::vector<std::pair<std::string, Plan>> &uniform,
                      const Plan &chosen, double budget) {
  const double W = 720, H = 480, L = 70, R = 20, T = 40, B = 50;
  double tMax = 0, eMin = INFINITY, eMax = 0;
  auto consider = [&](const Plan &p) {
    tMax = std::max(tMax, p.seconds);
    if (p.error > 0) {
      eMin = std::min(eMin, p.error);
      eMax = std::max(eMax, p.error);
    }
  };
  for (const Plan &p : front)
    consider(p);
  for (const auto &u : uniform)
    consider(u.second);
  consider(chosen);
  eMin = std::min(eMin, budget);
  eMax = std::max(eMax, budget);
  if (!(eMin < INFINITY))
    eMin = 1e-9;
  double lo = std::floor(std::log10(std::max(eMin, 1e-12))),
         hi = std::ceil(std::log10(std::max(eMax, 1e-11)));
  if (hi <= lo)
    hi = lo + 1;
  auto x = [&](double s) { return L + (W - L - R) * s / (tMax * 1.05); };
  auto y = [&](double e) {
    double le = std::log10(std::max(e, std::pow(10.0, lo)));
    return T + (H - T - B) * (hi - le) / (hi - lo);
  };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W
    << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << L << "\" y=\"20\" font-size=\"14\">" << title
    << "</text>\n"
    << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R
    << "\" y2=\"" << H - B << "\" stroke=\"black\"/>\n"
    << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\""
    << H - B << "\" stroke=\"black\"/>\n"
    << "<text x=\"" << (W + L) / 2 - 80 << "\" y=\"" << H - 12
    << "\">predicted time (us, model)</text>\n"
    << "<text x=\"12\" y=\"" << (H - B + T) / 2
    << "\" transform=\"rotate(-90 12 " << (H - B + T) / 2
    << ")\">relative error (log)</text>\n";
  for (double d = lo; d <= hi; d += 1)
    s << "<text x=\"" << L - 45 << "\" y=\"" << y(std::pow(10.0, d)) + 4
      << "\">1e" << int(d) << "</text>\n";
  for (int i = 0; i <= 4; ++i) {
    double t = tMax * 1.05 * i / 4;
    s << "<text x=\"" << x(t) - 10 << "\" y=\"" << H - B + 16 << "\">"
      << fmt(t * 1e6, "%.1f") << "</text>\n";
  }
  size_t stride = std::max<size_t>(1, all.size() / 3000);
  for (size_t i = 0; i < all.size(); i += stride)
    s << "<circle cx=\"" << x(all[i].seconds) << "\" cy=\"" << y(all[i].error)
      << "\" r=\"1.5\" fill=\"#bbb\"/>\n";
  s << "<polyline fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"2\" "
       "points=\"";
  for (const Plan &p : front)
    s << x(p.seconds) << "," << y(p.error) << " ";
  s << "\"/>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << y(budget) << "\" x2=\"" << W - R
    << "\" y2=\"" << y(budget)
    << "\" stroke=\"#888\" stroke-dasharray=\"6,4\"/>\n"
    << "<text x=\"" << W - R - 90 << "\" y=\"" << y(budget) - 4 << "\">budget "
    << fmt(budget) << "</text>\n";
  for (const auto &[name, p] : uniform)
    s << "<circle cx=\"" << x(p.seconds) << "\" cy=\"" << y(p.error)
      << "\" r=\"5\" fill=\"#c0392b\"/><text x=\"" << x(p.seconds) + 7
      << "\" y=\"" << y(p.error) - 5 << "\">" << name << "</text>\n";
  s << "<circle cx=\"" << x(chosen.seconds) << "\" cy=\"" << y(chosen.error)
    << "\" r=\"6\" fill=\"#27ae60\"/><text x=\"" << x(chosen.seconds) + 8
    << "\" y=\"" << y(chosen.error) + 14 << "\">chosen</text>\n";
  s << "</svg>\n";
  return s.str();
}

/// The plans no other plan beats in both time and error, fastest first.
std::vector<Plan> paretoFront(std::vector<Plan> plans) {
  std::sort(plans.begin(), plans.end(), [](const Plan &a, const Plan &b) {
    return a.seconds < b.seconds ||
           (a.seconds == b.seconds && a.error < b.error);
  });
  std::vector<Plan> front;
  double best = INFINITY;
  for (Plan &p : plans)
    if (p.error < best) {
      best = p.error;
      front.push_back(std::move(p));
    }
  return front;
}

} // namespace

int tunePrecision(ImportedModel &model, const std::string &modelPath,
                  const PrecisionTuneOptions &o, const ProbeFn &probeFn,
                  std::ostream &out, std::ostream &err) {
  auto fail = [&](const std::string &msg) {
    err << "tcc: error: " << msg << "\n";
    return 1;
  };
  if (!(o.errorBudget > 0 && o.errorBudget < 1))
    return fail("--error-budget must be a relative error in (0, 1)");
  if (!(o.margin > 0 && o.margin <= 1))
    return fail("--margin must be in (0, 1]");
  if (o.tileM < 1 || o.tileN < 1 || o.tileM > (1 << 20) || o.tileN > (1 << 20))
    return fail("--tile must be ROWSxCOLUMNS, each 1 to 2^20");
  if (o.outPlan.empty())
    return fail("tune-precision needs -o PLAN.json");
  std::vector<const Precision *> precs;
  for (const std::string &name : o.precisions) {
    const Precision *found = nullptr;
    for (const Precision &p : kPrecisions)
      if (name == p.name)
        found = &p;
    if (!found)
      return fail("--precisions: unknown precision '" + name +
                  "' (known: f32, bf16, f16, f8e4m3, f8e5m2, i8)");
    if (llvm::is_contained(precs, found))
      return fail("--precisions: '" + name + "' is listed twice");
    precs.push_back(found);
  }
  if (precs.empty())
    return fail("--precisions lists no precision");

  ModuleOp module = *model.module;
  func::FuncOp entry;
  module.walk([&](func::FuncOp f) {
    if (f->hasAttr("tcc.entry"))
      entry = f;
  });
  if (!entry)
    return fail(modelPath + ": the model has no entry function");
  // Arguments: inputs by name, params by their index among the params.
  std::map<unsigned, std::string> inputOf;
  std::map<unsigned, int64_t> paramOf;
  int64_t nextParam = 0;
  for (BlockArgument arg : entry.getArguments()) {
    auto kind =
        entry.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tcc.kind");
    auto name =
        entry.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tcc.name");
    if (kind && kind.getValue() == "param")
      paramOf[arg.getArgNumber()] = nextParam++;
    else if (name)
      inputOf[arg.getArgNumber()] = name.getValue().str();
  }
  std::vector<Problem> problems;
  // Operands the model computes, to be probed.
  std::vector<Value> probed;
  entry.walk([&](mlir::tcc::MatmulOp op) {
    std::vector<std::string> keys = planNodeKeys(op.getLoc());
    std::string node = keys.empty() ? "(unnamed)" : keys.front();
    // Printed with its name where it has one; planned by its first key.
    std::string shown =
        keys.size() > 1 ? node + " (" + keys.back() + ")" : node;
    auto note = [&](const std::string &why) {
      out << shown << ": not planned: " << why << "\n";
    };
    auto aTy = cast<RankedTensorType>(op.getA().getType());
    auto bTy = cast<RankedTensorType>(op.getB().getType());
    auto cTy = cast<RankedTensorType>(op.getType());
    Type elt = aTy.getElementType();
    if (!isa<FloatType>(elt) || cTy.getElementType() != elt)
      return note("not a matmul of float operands keeping their dtype");
    Problem p;
    p.node = node;
    p.shown = shown;
    p.op = op;
    int64_t rank = cTy.getRank();
    p.m = cTy.getDimSize(rank - 2);
    p.n = cTy.getDimSize(rank - 1);
    p.transA = op.getTransposeA();
    p.transB = op.getTransposeB();
    p.k = aTy.getDimSize(aTy.getRank() - (p.transA ? 2 : 1));
    p.batch = 1;
    for (int64_t d : cTy.getShape().drop_back(2))
      p.batch *= d;
    if (p.m == 0 || p.n == 0 || p.k == 0 || p.batch == 0)
      return note("an empty matmul");
    if (bTy.getRank() != 2 ||
        (aTy.getRank() != 2 &&
         aTy.getShape().drop_back(2) != cTy.getShape().drop_back(2)))
      return note("a batched B, or a batch A does not match");
    std::optional<DType> dt = parseDType(elt.isF32()    ? "f32"
                                         : elt.isBF16() ? "bf16"
                                         : elt.isF16()  ? "f16"
                                         : elt.isF64()  ? "f64"
                                                        : "");
    if (!dt)
      return note("operands of a dtype tune-precision does not read");
    p.dtype = *dt;
    for (auto [v, input, param, probe] :
         {std::tuple(op.getA(), &p.aInput, &p.aParam, &p.aProbe),
          std::tuple(op.getB(), &p.bInput, &p.bParam, &p.bProbe)}) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (arg && arg.getOwner() == &entry.getBody().front()) {
        if (paramOf.count(arg.getArgNumber()))
          *param = paramOf[arg.getArgNumber()];
        else
          *input = inputOf[arg.getArgNumber()];
        continue;
      }
      if (!probeFn)
        return note("its operands are computed by the model");
      auto at = llvm::find(probed, v);
      *probe = at - probed.begin();
      if (at == probed.end())
        probed.push_back(v);
    }
    problems.push_back(p);
  });
  if (problems.empty())
    return fail(modelPath + ": no matmul of float operands to plan");

  // Calibration samples of each input the problems read (of every input,
  // when the model computes operands: its probe reads them all).
  std::vector<std::string> needed;
  for (const Problem &p : problems)
    for (const std::string &in : {p.aInput, p.bInput})
      if (!in.empty())
        needed.push_back(in);
  if (!probed.empty())
    for (const auto &[arg, name] : inputOf)
      needed.push_back(name);
  std::map<std::string, std::vector<std::string>> files;
  size_t samples = 0;
  for (const std::string &in : needed) {
    if (files.count(in))
      continue;
    namespace fs = std::filesystem;
    std::vector<std::string> paths;
    fs::path one = fs::path(o.calibrationDir) / (in + ".npy");
    if (fs::is_regular_file(one)) {
      paths.push_back(one.string());
    } else {
      for (int i = 0;; ++i) {
        fs::path f = fs::path(o.calibrationDir) /
                     (in + "." + std::to_string(i) + ".npy");
        if (!fs::is_regular_file(f))
          break;
        paths.push_back(f.string());
      }
    }
    if (paths.empty())
      return fail(o.calibrationDir + ": no " + in + ".npy (or " + in +
                  ".0.npy, ...) for the input '" + in + "'");
    if (samples && paths.size() != samples)
      return fail(o.calibrationDir + ": the inputs have different numbers "
                                     "of samples");
    samples = paths.size();
    files[in] = paths;
  }
  if (!samples)
    samples = 1; // params alone
  size_t train = samples > 1 ? samples - 1 : 1;
  bool heldOut = samples > 1;

  // Every calibration file of the shape of its input (before the probe
  // reads them).
  for (const auto &[arg, name] : inputOf) {
    auto it = files.find(name);
    if (it == files.end())
      continue;
    auto ty = cast<RankedTensorType>(entry.getArgument(arg).getType());
    std::vector<int64_t> shape(ty.getShape().begin(), ty.getShape().end());
    for (const std::string &path : it->second) {
      npy::Array a;
      std::string error;
      if (!npy::readFile(path, a, error))
        return fail(error);
      if (a.shape != shape)
        return fail(path + ": shape " + npy::shapeString(a.shape) +
                    ", the input is " + npy::shapeString(shape));
    }
  }

  // The probe: a copy of the model that also returns the computed
  // operands, run on the host once per sample into probeDirs[s].
  std::vector<std::string> probeDirs;
  std::filesystem::path probeRoot;
  struct Cleanup {
    std::filesystem::path path;
    ~Cleanup() {
      std::error_code ec;
      if (!path.empty())
        std::filesystem::remove_all(path, ec);
    }
  } cleanup;
  if (!probed.empty()) {
    IRMapping map;
    ImportedModel probe;
    probe.name = model.name;
    probe.module = cast<ModuleOp>(module->clone(map));
    probe.params = model.params;
    func::FuncOp pe;
    probe.module->walk([&](func::FuncOp f) {
      if (f->hasAttr("tcc.entry"))
        pe = f;
    });
    auto ret = cast<func::ReturnOp>(pe.getBody().front().getTerminator());
    unsigned first = ret.getNumOperands();
    for (Value v : probed)
      ret->insertOperands(ret.getNumOperands(), map.lookup(v));
    pe.setType(FunctionType::get(module.getContext(),
                                 pe.getFunctionType().getInputs(),
                                 ret.getOperandTypes()));
    for (size_t i = 0; i < probed.size(); ++i)
      pe.setResultAttr(
          first + unsigned(i), "tcc.name",
          StringAttr::get(module.getContext(), "tccprobe" + std::to_string(i)));
    // A folder of its own (mkdtemp): no other user's files are read back.
    std::error_code ec;
    std::string tmpl =
        (std::filesystem::temp_directory_path(ec) / "tcc-probe-XXXXXX")
            .string();
    if (!::mkdtemp(tmpl.data()))
      return fail("cannot make a temporary folder for the probe");
    probeRoot = tmpl;
    cleanup.path = probeRoot;
    std::vector<std::vector<std::string>> specs;
    for (size_t s = 0; s < samples; ++s) {
      std::vector<std::string> spec;
      for (const auto &[name, paths] : files)
        spec.push_back(name + "=" + paths[s]);
      specs.push_back(spec);
      probeDirs.push_back((probeRoot / std::to_string(s)).string());
    }
    std::string error;
    if (!probeFn(probe, specs, probeDirs, error))
      return fail("running the model on the host for the operands it "
                  "computes: " +
                  error);
  }

  std::mt19937_64 rng(o.seed);
  json planJson = {{"format", "tcc-precision-plan"},
                   {"version", 1},
                   {"matmuls", json::array()}};
  json report = json::array();
  std::ostringstream md;
  md << "# tune-precision: " << modelPath << "\n\n"
     << "Error budget " << o.errorBudget
     << " (relative Frobenius error of each matmul's output against float64; "
     << "the search plans to " << o.margin << " of it), "
     << "tiles " << o.tileM << " x " << o.tileN << ", " << train
     << " calibration sample(s)" << (heldOut ? ", 1 held out" : "")
     << ". Times are the model's (cuBLAS's peak rates per precision: "
        "placeholders until the mixed kernel is measured), for a kernel "
        "computing each tile once in its precision; tcc runs a plan of "
        "several precisions today as one whole GEMM per precision and a "
        "select (the second time column), so a mixed plan is not faster "
        "than uniform ones yet.\n\n";
  for (const Problem &p : problems) {
    Planner planner(p, o, precs);
    auto operand = [&](const std::string &input, int64_t param, int64_t probe,
                       bool isA, size_t sample, Operand &x,
                       std::string &error) {
      auto ty = cast<RankedTensorType>(isA ? p.op.getA().getType()
                                           : p.op.getB().getType());
      std::vector<int64_t> shape(ty.getShape().begin(), ty.getShape().end());
      x.rows = shape[shape.size() - 2];
      x.cols = shape.back();
      x.batch = shape.size() > 2 ? p.batch : 1;
      x.trans = isA ? p.transA : p.transB;
      if (param >= 0) {
        ParamData &pd = model.params[size_t(param)];
        pd.materialise();
        size_t n = 1, size = dtypeSize(pd.dtype);
        for (int64_t d : pd.shape)
          n *= size_t(d);
        x.v.resize(n);
        for (size_t i = 0; i < n; ++i)
          x.v[i] = float(decodeScalar(pd.dtype, pd.bytes.data() + i * size));
        return true;
      }
      if (probe >= 0)
        return readValues(probeDirs[sample] + "/tccprobe" +
                              std::to_string(probe) + ".npy",
                          p.dtype, shape, x.v, error);
      return readValues(files[input][sample], p.dtype, shape, x.v, error);
    };
    ErrorTable table, held;
    for (size_t s = 0; s < samples; ++s) {
      Operand a, b;
      std::string error;
      if (!operand(p.aInput, p.aParam, p.aProbe, true, s, a, error) ||
          !operand(p.bInput, p.bParam, p.bProbe, false, s, b, error))
        return fail(error);
      bool isHeld = heldOut && s == samples - 1;
      planner.measure(a, b, isHeld ? held : table, /*stats=*/!isHeld, rng);
    }
    // The most accurate plan: each tile's least error.
    std::vector<int8_t> accurate(static_cast<size_t>(planner.tiles()));
    for (size_t t = 0; t < accurate.size(); ++t)
      accurate[t] =
          int8_t(std::min_element(table.err2[t].begin(), table.err2[t].end()) -
                 table.err2[t].begin());
    double floorErr = Planner::error(table, accurate);
    if (floorErr > o.errorBudget)
      return fail("the error budget " + fmt(o.errorBudget) +
                  " is unreachable for " + p.node +
                  ": its most accurate plan (each tile's most accurate of " +
                  "the precisions) has error " + fmt(floorErr));
    std::vector<std::pair<std::string, Plan>> uniform;
    std::vector<std::vector<int8_t>> seeds;
    for (size_t pi = 0; pi < precs.size(); ++pi) {
      Plan u;
      u.codes.assign(size_t(planner.tiles()), int8_t(pi));
      u.seconds = planner.seconds(u.codes);
      u.error = Planner::error(table, u.codes);
      uniform.push_back({precs[pi]->name, u});
      seeds.push_back(u.codes);
    }
    std::vector<int8_t> rule = planner.rulePlan();
    seeds.push_back(rule);
    seeds.push_back(accurate);
    // The relaxation's plans: every one into the archive (the front), the
    // fastest within the target a seed.
    std::vector<Plan> archive;
    Plan greedy;
    greedy.seconds = INFINITY;
    for (std::vector<int8_t> &codes : planner.lagrangianPlans(table)) {
      Plan pl{codes, planner.seconds(codes), Planner::error(table, codes)};
      if (pl.error <= planner.target && pl.seconds < greedy.seconds)
        greedy = pl;
      archive.push_back(std::move(pl));
    }
    if (!greedy.codes.empty())
      seeds.push_back(greedy.codes);
    planner.evolve(table, seeds, archive, rng);
    // The fastest plan evaluated within the target (the search's, or the
    // relaxation's), else the most accurate one.
    Plan best{accurate, planner.seconds(accurate), floorErr};
    for (const Plan &pl : archive)
      if (pl.error <= planner.target && pl.seconds < best.seconds)
        best = pl;
    std::vector<Plan> front = paretoFront(archive);

    // The plan file: the precisions the tiles use, in first-use order.
    std::vector<std::string> used;
    std::map<int8_t, int64_t> index;
    json rows = json::array();
    std::map<std::string, int64_t> counts;
    for (int64_t I = 0; I < planner.gm; ++I) {
      json row = json::array();
      for (int64_t J = 0; J < planner.gn; ++J) {
        int8_t c = best.codes[size_t(I * planner.gn + J)];
        auto [it, added] = index.try_emplace(c, int64_t(used.size()));
        if (added)
          used.push_back(precs[size_t(c)]->name);
        row.push_back(it->second);
        ++counts[precs[size_t(c)]->name];
      }
      rows.push_back(row);
    }
    planJson["matmuls"].push_back({{"node", p.node},
                                   {"tile", {o.tileM, o.tileN}},
                                   {"precisions", used},
                                   {"tiles", rows}});
    auto heldErr = [&](const std::vector<int8_t> &codes) {
      return heldOut ? Planner::error(held, codes) : NAN;
    };
    Plan rulePl{rule, planner.seconds(rule), Planner::error(table, rule)};
    std::string mix;
    for (const auto &[name, n] : counts)
      mix += (mix.empty() ? "" : ", ") + std::to_string(n) + " " + name;
    out << p.shown << ": " << p.m << " x " << p.n << " x " << p.k
        << (p.batch > 1 ? " (batch " + std::to_string(p.batch) + ")" : "")
        << ", " << planner.gm << " x " << planner.gn << " tiles\n";
    auto line = [&](const std::string &what, const Plan &pl) {
      out << "  " << what << ": " << fmt(pl.seconds * 1e6, "%.2f")
          << " us (model; as run today "
          << fmt(planner.seconds(pl.codes, true) * 1e6, "%.2f") << "), error "
          << fmt(pl.error)
          << (heldOut ? ", held out " + fmt(heldErr(pl.codes)) : "")
          << (pl.error <= o.errorBudget ? "" : "  (over the budget)") << "\n";
    };
    for (const auto &[name, u] : uniform)
      line("uniform " + name, u);
    line("rules", rulePl);
    line("chosen (" + mix + ")", best);
    out << "  searched " << archive.size() << " plans; Pareto front of "
        << front.size() << "\n";

    md << "## " << p.shown << "\n\n"
       << p.m << " x " << p.n << " x " << p.k << ", " << planner.gm << " x "
       << planner.gn << " tiles of " << o.tileM << " x " << o.tileN
       << ".\n\n| plan | time (us, model: mixed kernel) | as run today "
          "(a GEMM per precision) | error | held-out error |\n"
       << "| --- | ---: | ---: | ---: | ---: |\n";
    auto mdLine = [&](const std::string &what, const Plan &pl) {
      md << "| " << what << " | " << fmt(pl.seconds * 1e6, "%.2f") << " | "
         << fmt(planner.seconds(pl.codes, true) * 1e6, "%.2f") << " | "
         << fmt(pl.error) << " | "
         << (heldOut ? fmt(heldErr(pl.codes)) : std::string("-")) << " |\n";
    };
    for (const auto &[name, u] : uniform)
      mdLine("uniform " + name, u);
    mdLine("rules", rulePl);
    mdLine("**chosen** (" + mix + ")", best);
    md << "\nPareto front (" << front.size() << " plans of " << archive.size()
       << " evaluated):\n\n| time (us) | error |\n| ---: | ---: |\n";
    for (const Plan &f : front)
      md << "| " << fmt(f.seconds * 1e6, "%.2f") << " | " << fmt(f.error)
         << " |\n";
    md << "\n";
    json entry = {
        {"node", p.node},
        {"chosen", {{"seconds", best.seconds}, {"error", best.error}}},
        {"front", json::array()},
        {"uniform", json::object()}};
    if (heldOut)
      entry["chosen"]["held_out_error"] = heldErr(best.codes);
    for (const Plan &f : front)
      entry["front"].push_back({f.seconds, f.error});
    for (const auto &[name, u] : uniform)
      entry["uniform"][name] = {{"seconds", u.seconds}, {"error", u.error}};
    report.push_back(entry);
    if (!o.reportDir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o.reportDir, ec);
      std::string safe = p.node;
      for (char &c : safe)
        if (!std::isalnum(static_cast<unsigned char>(c)))
          c = '_';
      std::ofstream svg(o.reportDir + "/pareto" + safe + ".svg");
      svg << paretoSvg(p.node + ": time against error", archive, front, uniform,
                       best, o.errorBudget);
      md << "![" << p.node << "](pareto" << safe << ".svg)\n\n";
    }
  }
  std::string error;
  std::string text = planJson.dump(1) + "\n";
  if (!io::writeFileAtomically(o.outPlan, text.data(), text.size(), error))
    return fail(error);
  if (!o.reportDir.empty()) {
    std::string r = report.dump(1) + "\n", m = md.str();
    if (!io::writeFileAtomically(o.reportDir + "/pareto.json", r.data(),
                                 r.size(), error) ||
        !io::writeFileAtomically(o.reportDir + "/report.md", m.data(), m.size(),
                                 error))
      return fail(error);
  }
  out << "wrote " << o.outPlan << "\n";
  return 0;
}

} // namespace tcc::tuning
