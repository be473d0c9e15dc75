//===- ParamRecipe.cpp - params computed from a recipe --------------------===//
//
// The generator is the documented one (docs/model-format.md, Random.h). The
// compiler and the runtime must agree to the bit, so nothing here may depend
// on how the file is compiled: no contraction of a * b + c into an FMA where
// the target has one (the pragma for clang; CMake adds -ffp-contract=off,
// which g++ needs).
//
//===----------------------------------------------------------------------===//
#pragma STDC FP_CONTRACT OFF

#include "runtime/src/ParamRecipe.h"
#include "runtime/src/Random.h"

#include <cstring>

namespace tcc {

void materialiseRecipe(const ParamRecipe &r, DType dtype, uint64_t begin,
                       uint64_t end, uint8_t *dst) {
  size_t esize = dtypeSize(dtype);
  if (r.kind == ParamRecipe::Kind::Fill) {
    uint8_t one[8];
    for (size_t i = 0; i < esize; ++i)
      one[i] = uint8_t(r.fillBits >> (8 * i));
    for (uint64_t i = begin; i < end; ++i, dst += esize)
      std::memcpy(dst, one, esize);
    return;
  }
  bool normal = r.kind == ParamRecipe::Kind::Normal;
  SplitMix64 gen(r.seed);
  gen.skip(begin * (normal ? 2 : 1));
  for (uint64_t i = begin; i < end; ++i, dst += esize) {
    double x = normal ? gen.normal(r.a, r.b) : gen.uniform(r.a, r.b);
    encodeScalar(dtype, x, dst);
  }
}

} // namespace tcc
