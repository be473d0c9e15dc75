/*===- SoftFloat.c - narrow-float conversions for host kernels -----------===*
 *
 * On x86-64 without F16C/AVX512-BF16, LLVM lowers f16 and bf16 conversions to
 * calls of compiler-rt's __truncsfhf2 & co. A bundle's shared object cannot
 * count on the process having them (older libgcc lacks the bf16 ones), so
 * tcc links these definitions into every host module. They use integer
 * arithmetic only: a float conversion here would call itself.
 * Rounding is to nearest even; overflow gives infinity; NaN stays NaN.
 *
 *===----------------------------------------------------------------------===*/

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define HIDDEN __attribute__((visibility("hidden")))

static u64 bitsOfDouble(double d) {
  u64 u;
  __builtin_memcpy(&u, &d, 8);
  return u;
}

static u32 bitsOfFloat(float f) {
  u32 u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}

static float floatOfBits(u32 u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

/* Rounds the double with bits `bits` to a binary format with `ebits`
 * exponent and `mbits` mantissa bits (IEEE style: top exponent is inf/NaN). */
static u32 roundDouble(u64 bits, int ebits, int mbits) {
  u32 sign = (u32)(bits >> 63) << (ebits + mbits);
  int e = (int)((bits >> 52) & 0x7ff);
  u64 m = bits & ((1ull << 52) - 1);
  u32 expMax = (1u << ebits) - 1;
  int bias = (1 << (ebits - 1)) - 1;
  if (e == 0x7ff) /* inf, or a quiet NaN keeping the top payload bits */
    return sign | expMax << mbits |
           (m ? 1u << (mbits - 1) | (u32)(m >> (52 - mbits)) : 0);
  if (e == 0 && m == 0)
    return sign;
  /* value = sig * 2^(exp - 52) */
  int exp = e ? e - 1023 : -1022;
  u64 sig = e ? m | 1ull << 52 : m;
  int biased = exp + bias;
  int shift = 52 - mbits;
  if (biased < 1) { /* subnormal result */
    shift += 1 - biased;
    biased = 0;
  }
  if (shift >= 64)
    return sign;
  u64 q = sig >> shift;
  u64 rem = sig & ((1ull << shift) - 1), half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (q & 1)))
    ++q;
  u32 out;
  if (biased == 0) {
    out = (u32)q; /* a carry into 1 << mbits is the smallest normal */
  } else {
    if (q >> (mbits + 1)) {
      q >>= 1;
      ++biased;
    }
    if (biased >= (int)expMax)
      return sign | expMax << mbits;
    out = (u32)biased << mbits | (u32)(q & ((1u << mbits) - 1));
  }
  return sign | out;
}

static _Float16 halfOfBits(u16 b) {
  _Float16 h;
  __builtin_memcpy(&h, &b, 2);
  return h;
}

static __bf16 bfloatOfBits(u16 b) {
  __bf16 h;
  __builtin_memcpy(&h, &b, 2);
  return h;
}

HIDDEN _Float16 __truncdfhf2(double x) {
  return halfOfBits((u16)roundDouble(bitsOfDouble(x), 5, 10));
}
HIDDEN _Float16 __truncsfhf2(float x) { return __truncdfhf2((double)x); }
HIDDEN __bf16 __truncdfbf2(double x) {
  return bfloatOfBits((u16)roundDouble(bitsOfDouble(x), 8, 7));
}
HIDDEN __bf16 __truncsfbf2(float x) { return __truncdfbf2((double)x); }

HIDDEN float __extendhfsf2(_Float16 h) {
  u16 b;
  __builtin_memcpy(&b, &h, 2);
  u32 s = (u32)(b >> 15) << 31, e = (b >> 10) & 31, m = b & 1023;
  if (e == 31)
    return floatOfBits(s | 0x7f800000u | m << 13);
  if (e == 0) /* subnormal: m * 2^-24, exact in f32 */
    return floatOfBits(s | bitsOfFloat((float)m * 5.9604644775390625e-8f));
  return floatOfBits(s | (e + 112) << 23 | m << 13);
}
HIDDEN double __extendhfdf2(_Float16 h) { return (double)__extendhfsf2(h); }

HIDDEN float __extendbfsf2(__bf16 h) {
  u16 b;
  __builtin_memcpy(&b, &h, 2);
  return floatOfBits((u32)b << 16);
}
