//===- DType.h - the model format's element types -----------------*- C++ -*-===//
//
// Names, sizes and scalar conversions for the format's dtypes, without LLVM:
// the frontend encodes literals and initialisers with it, the runtime reads
// and writes .npy files and fills random inputs with it.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_DTYPE_H
#define TCC_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tcc {

enum class DType : uint8_t { F64, F32, F16, BF16, F8E4M3, F8E5M2, I8, I32, I64, Bool };

/// "f32", "bf16", ... as the model format spells them.
const char *dtypeName(DType t);
std::optional<DType> parseDType(const std::string &name);
size_t dtypeSize(DType t);
bool isFloat(DType t);

/// Writes `v` converted to `t` at `dst`: floats round to nearest even; f16 and
/// bf16 overflow to infinity; f8 saturates to its largest finite value
/// (f8e5m2 keeps infinities); NaN stays NaN (0 for integers); integers
/// truncate toward zero and saturate; bool is `v != 0`.
void encodeScalar(DType t, double v, void *dst);
/// Writes an integer exactly when the dtype can hold it (i64 above 2^53).
void encodeInteger(DType t, int64_t v, void *dst);
/// The value at `src` as a double (i64 may round).
double decodeScalar(DType t, const void *src);

/// Bit patterns of the narrow floats, for tests and the runtime's npy code.
uint16_t encodeF16(double v);
uint16_t encodeBF16(double v);
uint8_t encodeF8E4M3(double v);
uint8_t encodeF8E5M2(double v);
double decodeF16(uint16_t bits);
double decodeBF16(uint16_t bits);
double decodeF8E4M3(uint8_t bits);
double decodeF8E5M2(uint8_t bits);

} // namespace tcc

#endif // TCC_RUNTIME_DTYPE_H
