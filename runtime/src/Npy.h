//===- Npy.h - NumPy .npy files for tcc run ---------------------*- C++ -*-===//
//
// A small reader and writer of the .npy format (versions 1.0, 2.0 and 3.0 of
// the header), little-endian and C order only, for the dtypes tcc run needs:
// <f8 <f4 <f2 |i1 <i4 <i8 |b1. Anything else is refused with a clear message.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_NPY_H
#define TCC_RUNTIME_NPY_H

#include "runtime/src/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::npy {

/// An array in C order; `dtype` is one of F64 F32 F16 I8 I32 I64 Bool.
struct Array {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/// Whether .npy can hold `t` natively (bf16 and f8 cannot).
bool isNpyDType(DType t);

/// Parses .npy bytes. On failure returns false with a one-line `error`.
bool parse(const std::vector<uint8_t> &bytes, Array &out, std::string &error);
/// Reads and parses a file; errors start with the path.
bool readFile(const std::string &path, Array &out, std::string &error);

/// The .npy bytes of `a` (version 1.0 header, 2.0 when it does not fit).
/// `a.dtype` must satisfy isNpyDType.
std::vector<uint8_t> serialize(const Array &a);
bool writeFile(const std::string &path, const Array &a, std::string &error);

/// "(2, 3)" as NumPy prints shapes.
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace tcc::npy

#endif // TCC_RUNTIME_NPY_H
