//===- ParamRecipe.h - params computed from a recipe ----------*- C++ -*-===//
//
// The model format's `fill` and `random` initialisers describe a param's bytes
// in a few numbers. The frontend materialises them at compile time; with
// `tcc compile --param-recipes=keep` the bundle stores the recipe instead and
// the runtime materialises it at load. Both call materialiseRecipe, compiled
// once in this library, so that a recipe gives the same bytes either way.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_PARAMRECIPE_H
#define TCC_RUNTIME_PARAMRECIPE_H

#include "runtime/src/DType.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace tcc {

struct ParamRecipe {
  enum class Kind : uint8_t { Fill, Normal, Uniform };
  Kind kind = Kind::Fill;
  /// Fill: one element's bytes as a little-endian integer (the low
  /// dtypeSize bytes; the rest zero), so that -inf, NaN payloads and i64
  /// values are exact.
  uint64_t fillBits = 0;
  /// Normal: mean and std; uniform: low and high. Finite.
  double a = 0, b = 1;
  uint64_t seed = 0;
};

/// Writes elements [begin, end) of a param of `dtype` made by `recipe` to
/// `dst`, which holds (end - begin) * dtypeSize(dtype) bytes. An element's
/// bytes do not depend on how the range is split: random recipes jump the
/// generator to `begin` (the documented recipe draws one value per element
/// for uniform, two for normal, in row-major order).
void materialiseRecipe(const ParamRecipe &recipe, DType dtype, uint64_t begin,
                       uint64_t end, uint8_t *dst);

/// Why `recipe` is not valid for `dtype` (random needs a float dtype, finite
/// parameters, std >= 0 and low <= high; a fill's bits must fit the dtype,
/// a bool's be 0 or 1), or an empty string. Inline: the manifest reader
/// checks recipes without linking the generator.
inline const char *recipeProblem(const ParamRecipe &r, DType dtype) {
  if (r.kind == ParamRecipe::Kind::Fill) {
    size_t esize = dtypeSize(dtype);
    if (esize < 8 && r.fillBits >> (8 * esize) != 0)
      return "fill value has more bits than the dtype";
    if (dtype == DType::Bool && r.fillBits > 1)
      return "a bool fill must be 0 or 1";
    return "";
  }
  if (!isFloat(dtype))
    return "random recipes need a float dtype";
  if (!std::isfinite(r.a) || !std::isfinite(r.b))
    return "random recipe parameters must be finite";
  if (r.kind == ParamRecipe::Kind::Normal && !(r.b >= 0))
    return "std must be >= 0";
  if (r.kind == ParamRecipe::Kind::Uniform && !(r.b >= r.a))
    return "high must be >= low";
  return "";
}

} // namespace tcc

#endif // TCC_RUNTIME_PARAMRECIPE_H
