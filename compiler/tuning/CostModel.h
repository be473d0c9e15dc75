//===- CostModel.h - a small differentiable model of kernel time -*- C++
//-*-===//
//
// Felix-style tuning (issue 17) predicts a kernel's time from features of
// its problem and its schedule, where the schedule's discrete knobs are
// relaxed into real numbers (log2 of a tile size, a stage count), so that
// the prediction has a gradient along them. The model is a multilayer
// perceptron (two tanh hidden layers) trained on measurements by Adam on
// the squared error of log(time); features and targets are standardised
// with the training set's statistics. It is written here (no dependency):
// a few hundred measurements and a few dozen features train in
// milliseconds.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_TUNING_COSTMODEL_H
#define TCC_COMPILER_TUNING_COSTMODEL_H

#include <cstdint>
#include <random>
#include <vector>

namespace tcc::tuning {

class CostModel {
public:
  /// `hidden` units in each of the two hidden layers.
  explicit CostModel(int hidden = 32, uint64_t seed = 1);

  /// Fits the model to (x[i], log(ms[i])); rows of `x` have one length.
  /// Starts from the current weights when they fit that length (a later
  /// round refines), else from fresh ones.
  void train(const std::vector<std::vector<double>> &x,
             const std::vector<double> &ms, int epochs = 1500,
             double learningRate = 3e-3, double weightDecay = 1e-4);

  bool trained() const { return inputs > 0; }

  /// The predicted log(ms) of `x`; with `grad`, its gradient along each
  /// feature of `x` (the same length as `x`).
  double predictLog(const std::vector<double> &x,
                    std::vector<double> *grad = nullptr) const;

private:
  struct Layer {
    int in = 0, out = 0;
    std::vector<double> w, b; ///< w[o * in + i]
  };
  int hidden;
  std::mt19937_64 rng;
  int inputs = 0;
  std::vector<double> mean, scale; ///< of the features
  double yMean = 0, yScale = 1;    ///< of log(ms)
  Layer layers[3];

  void init(int n);
  /// Activations of every layer for a standardised input (acts[0] = input).
  void forward(const std::vector<double> &z,
               std::vector<std::vector<double>> &acts) const;
};

} // namespace tcc::tuning

#endif // TCC_COMPILER_TUNING_COSTMODEL_H
