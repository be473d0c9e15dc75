//===- DType.cpp - the model format's element types -----------------------===//
#include "runtime/src/DType.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tcc {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F64: return "f64";
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F8E4M3: return "f8e4m3";
  case DType::F8E5M2: return "f8e5m2";
  case DType::I8: return "i8";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::Bool: return "bool";
  }
  return "?";
}

std::optional<DType> parseDType(const std::string &name) {
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16,
                  DType::F8E4M3, DType::F8E5M2, DType::I8, DType::I32,
                  DType::I64, DType::Bool})
    if (name == dtypeName(t))
      return t;
  return std::nullopt;
}

size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F64: case DType::I64: return 8;
  case DType::F32: case DType::I32: return 4;
  case DType::F16: case DType::BF16: return 2;
  default: return 1;
  }
}

bool isFloat(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 ||
         t == DType::BF16 || t == DType::F8E4M3 || t == DType::F8E5M2;
}

namespace {
/// A binary floating-point format narrower than double.
struct SmallFloat {
  int expBits, mantBits;
  bool hasInf;      // IEEE-style: top exponent is inf/NaN
  bool saturate;    // finite overflow gives max finite instead of inf
  uint32_t nanBits; // canonical quiet NaN, without the sign
  uint32_t maxBits; // largest finite, without the sign
};

constexpr SmallFloat kF16{5, 10, true, false, 0x7E00, 0x7BFF};
constexpr SmallFloat kBF16{8, 7, true, false, 0x7FC0, 0x7F7F};
constexpr SmallFloat kF8E4M3{4, 3, false, true, 0x7F, 0x7E};
constexpr SmallFloat kF8E5M2{5, 2, true, true, 0x7E, 0x7B};

double decodeSmall(const SmallFloat &f, uint32_t bits) {
  uint32_t sign = bits >> (f.expBits + f.mantBits) & 1;
  uint32_t e = bits >> f.mantBits & ((1u << f.expBits) - 1);
  uint32_t m = bits & ((1u << f.mantBits) - 1);
  int bias = (1 << (f.expBits - 1)) - 1;
  double v;
  if (f.hasInf && e == (1u << f.expBits) - 1)
    v = m ? std::numeric_limits<double>::quiet_NaN()
          : std::numeric_limits<double>::infinity();
  else if (!f.hasInf && (bits & ((1u << (f.expBits + f.mantBits)) - 1)) ==
                            f.nanBits)
    v = std::numeric_limits<double>::quiet_NaN();
  else if (e == 0)
    v = std::ldexp((double)m, 1 - bias - f.mantBits);
  else
    v = std::ldexp((double)(m | (1u << f.mantBits)), (int)e - bias - f.mantBits);
  return sign ? -v : v;
}

uint32_t encodeSmall(const SmallFloat &f, double v) {
  uint32_t signBit = std::signbit(v) ? 1u << (f.expBits + f.mantBits) : 0;
  if (std::isnan(v))
    return signBit | f.nanBits;
  double a = std::fabs(v);
  uint32_t infBits = ((1u << f.expBits) - 1) << f.mantBits;
  double maxFinite = decodeSmall(f, f.maxBits);
  if (std::isinf(a))
    return signBit | (f.hasInf ? infBits : f.maxBits);
  if (a == 0)
    return signBit;
  int bias = (1 << (f.expBits - 1)) - 1;
  int e;
  std::frexp(a, &e); // a = frac * 2^e, frac in [0.5, 1)
  e -= 1;            // a = m * 2^e, m in [1, 2)
  int minExp = 1 - bias;
  // Quantum of the representable grid around `a`.
  int quantumExp = (e < minExp ? minExp : e) - f.mantBits;
  double q = std::nearbyint(std::ldexp(a, -quantumExp)); // ties to even
  double rounded = std::ldexp(q, quantumExp);
  if (rounded > maxFinite)
    return signBit | (f.saturate || !f.hasInf ? f.maxBits : infBits);
  if (rounded == 0) // underflow: below half the smallest subnormal
    return signBit;
  // Re-derive fields from the rounded value (rounding may carry into the
  // exponent or out of the subnormal range).
  std::frexp(rounded, &e);
  e -= 1;
  if (e < minExp) // subnormal
    return signBit | (uint32_t)std::ldexp(rounded, bias - 1 + f.mantBits);
  uint32_t mant =
      (uint32_t)(std::ldexp(rounded, f.mantBits - e) - (1u << f.mantBits));
  return signBit | (uint32_t)(e + bias) << f.mantBits | mant;
}

template <typename T> void storeInt(double v, void *dst) {
  T out;
  if (std::isnan(v))
    out = 0;
  else if (v >= (double)std::numeric_limits<T>::max())
    out = std::numeric_limits<T>::max();
  else if (v <= (double)std::numeric_limits<T>::min())
    out = std::numeric_limits<T>::min();
  else
    out = (T)std::trunc(v);
  std::memcpy(dst, &out, sizeof(T));
}
} // namespace

uint16_t encodeF16(double v) { return (uint16_t)encodeSmall(kF16, v); }
uint16_t encodeBF16(double v) { return (uint16_t)encodeSmall(kBF16, v); }
uint8_t encodeF8E4M3(double v) { return (uint8_t)encodeSmall(kF8E4M3, v); }
uint8_t encodeF8E5M2(double v) { return (uint8_t)encodeSmall(kF8E5M2, v); }
double decodeF16(uint16_t b) { return decodeSmall(kF16, b); }
double decodeBF16(uint16_t b) { return decodeSmall(kBF16, b); }
double decodeF8E4M3(uint8_t b) { return decodeSmall(kF8E4M3, b); }
double decodeF8E5M2(uint8_t b) { return decodeSmall(kF8E5M2, b); }

void encodeScalar(DType t, double v, void *dst) {
  switch (t) {
  case DType::F64: std::memcpy(dst, &v, 8); return;
  case DType::F32: {
    float f = (float)v;
    std::memcpy(dst, &f, 4);
    return;
  }
  case DType::F16: {
    uint16_t b = encodeF16(v);
    std::memcpy(dst, &b, 2);
    return;
  }
  case DType::BF16: {
    uint16_t b = encodeBF16(v);
    std::memcpy(dst, &b, 2);
    return;
  }
  case DType::F8E4M3: *(uint8_t *)dst = encodeF8E4M3(v); return;
  case DType::F8E5M2: *(uint8_t *)dst = encodeF8E5M2(v); return;
  case DType::I8: storeInt<int8_t>(v, dst); return;
  case DType::I32: storeInt<int32_t>(v, dst); return;
  case DType::I64: storeInt<int64_t>(v, dst); return;
  case DType::Bool: *(uint8_t *)dst = v != 0 ? 1 : 0; return;
  }
}

void encodeInteger(DType t, int64_t v, void *dst) {
  if (t == DType::I64) {
    std::memcpy(dst, &v, 8);
    return;
  }
  encodeScalar(t, (double)v, dst);
}

double decodeScalar(DType t, const void *src) {
  switch (t) {
  case DType::F64: { double d; std::memcpy(&d, src, 8); return d; }
  case DType::F32: { float f; std::memcpy(&f, src, 4); return f; }
  case DType::F16: { uint16_t b; std::memcpy(&b, src, 2); return decodeF16(b); }
  case DType::BF16: { uint16_t b; std::memcpy(&b, src, 2); return decodeBF16(b); }
  case DType::F8E4M3: return decodeF8E4M3(*(const uint8_t *)src);
  case DType::F8E5M2: return decodeF8E5M2(*(const uint8_t *)src);
  case DType::I8: return *(const int8_t *)src;
  case DType::I32: { int32_t i; std::memcpy(&i, src, 4); return i; }
  case DType::I64: { int64_t i; std::memcpy(&i, src, 8); return (double)i; }
  case DType::Bool: return *(const uint8_t *)src ? 1 : 0;
  }
  return 0;
}

} // namespace tcc
