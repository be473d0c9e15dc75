//===- Random.h - the documented deterministic generator ----------*- C++ -*-===//
//
// Parameter initialisers and tcc run's random inputs use this generator, so a
// seed gives the same values on every target and machine. It is SplitMix64
// (Steele et al., 2014): state += 0x9E3779B97F4A7C15, then two xor-shift-
// multiply rounds. uniform() takes the top 53 bits; normal() is Box-Muller on
// two uniforms, using the cosine branch only.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_RANDOM_H
#define TCC_RUNTIME_RANDOM_H

#include <cmath>
#include <cstdint>

namespace tcc {

class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Jumps over the next `n` values: the state only adds a constant per
  /// step, so a stream can be split among threads and stay bit-identical.
  void skip(uint64_t n) { state += n * 0x9E3779B97F4A7C15ull; }
  /// Uniform in [0, 1).
  double uniform() { return (double)(next() >> 11) * 0x1.0p-53; }
  double uniform(double low, double high) {
    return low + (high - low) * uniform();
  }
  double normal(double mean, double std) {
    double u1 = 1.0 - uniform(); // (0, 1]: log is finite
    double u2 = uniform();
    return mean + std * std::sqrt(-2.0 * std::log(u1)) *
                      std::cos(6.283185307179586 * u2);
  }

private:
  uint64_t state;
};

} // namespace tcc

#endif // TCC_RUNTIME_RANDOM_H
