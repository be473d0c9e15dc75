//===- CostModel.cpp - a small differentiable model of kernel time --------===//
#include "compiler/tuning/CostModel.h"

#include <algorithm>
#include <cmath>

namespace tcc::tuning {

CostModel::CostModel(int hidden, uint64_t seed) : hidden(hidden), rng(seed) {}

void CostModel::init(int n) {
  inputs = n;
  int sizes[4] = {n, hidden, hidden, 1};
  for (int l = 0; l < 3; ++l) {
    Layer &L = layers[l];
    L.in = sizes[l];
    L.out = sizes[l + 1];
    // Glorot-scaled normal weights: tanh units start in their linear range.
    std::normal_distribution<double> d(0.0, std::sqrt(2.0 / (L.in + L.out)));
    L.w.resize(size_t(L.in) * L.out);
    for (double &w : L.w)
      w = d(rng);
    L.b.assign(L.out, 0.0);
  }
}

void CostModel::forward(const std::vector<double> &z,
                        std::vector<std::vector<double>> &acts) const {
  acts.assign(4, {});
  acts[0] = z;
  for (int l = 0; l < 3; ++l) {
    const Layer &L = layers[l];
    std::vector<double> &out = acts[l + 1];
    out.assign(L.out, 0.0);
    for (int o = 0; o < L.out; ++o) {
      double s = L.b[o];
      for (int i = 0; i < L.in; ++i)
        s += L.w[size_t(o) * L.in + i] * acts[l][i];
      out[o] = l < 2 ? std::tanh(s) : s;
    }
  }
}

void CostModel::train(const std::vector<std::vector<double>> &x,
                      const std::vector<double> &ms, int epochs,
                      double learningRate, double weightDecay) {
  if (x.empty())
    return;
  int n = int(x[0].size());
  if (inputs != n)
    init(n);
  size_t rows = x.size();
  // Standardise: features with no spread keep scale 1.
  mean.assign(n, 0.0);
  scale.assign(n, 0.0);
  for (const auto &r : x)
    for (int i = 0; i < n; ++i)
      mean[i] += r[i] / rows;
  for (const auto &r : x)
    for (int i = 0; i < n; ++i)
      scale[i] += (r[i] - mean[i]) * (r[i] - mean[i]) / rows;
  for (double &s : scale)
    s = s > 1e-12 ? std::sqrt(s) : 1.0;
  std::vector<double> y(rows);
  yMean = 0;
  for (size_t r = 0; r < rows; ++r)
    yMean += (y[r] = std::log(std::max(ms[r], 1e-9))) / rows;
  double var = 0;
  for (double v : y)
    var += (v - yMean) * (v - yMean) / rows;
  yScale = var > 1e-12 ? std::sqrt(var) : 1.0;
  std::vector<std::vector<double>> z(rows, std::vector<double>(n));
  for (size_t r = 0; r < rows; ++r)
    for (int i = 0; i < n; ++i)
      z[r][i] = (x[r][i] - mean[i]) / scale[i];

  // Adam on the mean squared error over the whole set, every epoch.
  struct Moments {
    std::vector<double> mw, vw, mb, vb;
  } mom[3];
  for (int l = 0; l < 3; ++l) {
    mom[l].mw.assign(layers[l].w.size(), 0.0);
    mom[l].vw = mom[l].mw;
    mom[l].mb.assign(layers[l].b.size(), 0.0);
    mom[l].vb = mom[l].mb;
  }
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  std::vector<std::vector<double>> acts;
  for (int e = 1; e <= epochs; ++e) {
    std::vector<double> gw[3], gb[3];
    for (int l = 0; l < 3; ++l) {
      gw[l].assign(layers[l].w.size(), 0.0);
      gb[l].assign(layers[l].b.size(), 0.0);
    }
    for (size_t r = 0; r < rows; ++r) {
      forward(z[r], acts);
      std::vector<double> delta = {
          2.0 * (acts[3][0] - (y[r] - yMean) / yScale) / rows};
      for (int l = 2; l >= 0; --l) {
        const Layer &L = layers[l];
        std::vector<double> back(L.in, 0.0);
        for (int o = 0; o < L.out; ++o) {
          gb[l][o] += delta[o];
          for (int i = 0; i < L.in; ++i) {
            gw[l][size_t(o) * L.in + i] += delta[o] * acts[l][i];
            back[i] += delta[o] * L.w[size_t(o) * L.in + i];
          }
        }
        if (l > 0)
          for (int i = 0; i < L.in; ++i)
            back[i] *= 1.0 - acts[l][i] * acts[l][i]; // tanh'
        delta = std::move(back);
      }
    }
    double c1 = 1.0 - std::pow(b1, e), c2 = 1.0 - std::pow(b2, e);
    for (int l = 0; l < 3; ++l) {
      Layer &L = layers[l];
      auto step = [&](std::vector<double> &p, std::vector<double> &g,
                      std::vector<double> &m, std::vector<double> &v,
                      bool decay) {
        for (size_t i = 0; i < p.size(); ++i) {
          double gi = g[i] + (decay ? weightDecay * p[i] : 0.0);
          m[i] = b1 * m[i] + (1 - b1) * gi;
          v[i] = b2 * v[i] + (1 - b2) * gi * gi;
          p[i] -= learningRate * (m[i] / c1) / (std::sqrt(v[i] / c2) + eps);
        }
      };
      step(L.w, gw[l], mom[l].mw, mom[l].vw, true);
      step(L.b, gb[l], mom[l].mb, mom[l].vb, false);
    }
  }
}

double CostModel::predictLog(const std::vector<double> &x,
                             std::vector<double> *grad) const {
  std::vector<double> z(inputs);
  for (int i = 0; i < inputs; ++i)
    z[i] = (x[i] - mean[i]) / scale[i];
  std::vector<std::vector<double>> acts;
  forward(z, acts);
  double out = acts[3][0] * yScale + yMean;
  if (grad) {
    std::vector<double> delta = {yScale};
    for (int l = 2; l >= 0; --l) {
      const Layer &L = layers[l];
      std::vector<double> back(L.in, 0.0);
      for (int o = 0; o < L.out; ++o)
        for (int i = 0; i < L.in; ++i)
          back[i] += delta[o] * L.w[size_t(o) * L.in + i];
      if (l > 0)
        for (int i = 0; i < L.in; ++i)
          back[i] *= 1.0 - acts[l][i] * acts[l][i];
      delta = std::move(back);
    }
    grad->resize(inputs);
    for (int i = 0; i < inputs; ++i)
      (*grad)[i] = delta[i] / scale[i];
  }
  return out;
}

} // namespace tcc::tuning
