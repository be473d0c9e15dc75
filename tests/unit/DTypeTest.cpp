//===- DTypeTest.cpp - scalar conversions against independent references
//---===//
//
// Hand-derived bit patterns for the documented cases; NumPy for every f16
// value and conversion; a bit-trick reference for bf16 from f32; brute-force
// nearest-value search for the f8 formats.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/DType.h"
#include "runtime/src/Random.h"
#include "tests/unit/TestUtil.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace tcc;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
} // namespace

TEST_CASE("dtype names and sizes", "[dtype]") {
  for (auto [t, name, size] : {std::tuple{DType::F64, "f64", 8},
                               {DType::F32, "f32", 4},
                               {DType::F16, "f16", 2},
                               {DType::BF16, "bf16", 2},
                               {DType::F8E4M3, "f8e4m3", 1},
                               {DType::F8E5M2, "f8e5m2", 1},
                               {DType::I8, "i8", 1},
                               {DType::I32, "i32", 4},
                               {DType::I64, "i64", 8},
                               {DType::Bool, "bool", 1}}) {
    CHECK(std::string(dtypeName(t)) == name);
    CHECK(dtypeSize(t) == (size_t)size);
    CHECK(parseDType(name) == t);
  }
  CHECK(!parseDType("float32"));
  CHECK(!parseDType(""));
  CHECK(isFloat(DType::BF16));
  CHECK(!isFloat(DType::Bool));
}

TEST_CASE("bf16 bit patterns", "[dtype]") {
  CHECK(encodeBF16(1.0) == 0x3F80);
  CHECK(encodeBF16(-2.0) == 0xC000);
  CHECK(encodeBF16(0.0) == 0x0000);
  CHECK(encodeBF16(-0.0) == 0x8000);
  // 1 + 2^-8 is half an ulp above 1: ties go to the even mantissa (1.0).
  CHECK(encodeBF16(1.0 + std::ldexp(1, -8)) == 0x3F80);
  // 1 + 3*2^-8 lies halfway between mantissas 1 and 2: even is 2.
  CHECK(encodeBF16(1.0 + 3 * std::ldexp(1, -8)) == 0x3F82);
  // A hair above the tie rounds up.
  CHECK(encodeBF16(1.0 + std::ldexp(1, -8) + std::ldexp(1, -30)) == 0x3F81);
  CHECK(encodeBF16(1e39) == 0x7F80); // overflow: infinity
  CHECK(encodeBF16(-kInf) == 0xFF80);
  CHECK(encodeBF16(kNaN) == 0x7FC0);
  CHECK(encodeBF16(3.3895313892515355e38) == 0x7F7F); // largest finite
  CHECK(decodeBF16(0x3F80) == 1.0);
  CHECK(decodeBF16(0x4049) == 3.140625);
  CHECK(decodeBF16(0x0001) == std::ldexp(1, -133)); // smallest subnormal
  CHECK(std::isnan(decodeBF16(0x7FC0)));
  CHECK(decodeBF16(0xFF80) == -kInf);
}

TEST_CASE("bf16 matches round-to-nearest-even on f32 bits", "[dtype]") {
  SplitMix64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = (uint32_t)rng.next();
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f))
      continue;
    // The classic reference: add 0x7FFF plus the lowest kept bit, truncate.
    uint16_t expect = (uint16_t)((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
    INFO("f32 bits " << std::hex << bits);
    REQUIRE(encodeBF16(f) == expect);
    REQUIRE(decodeBF16(expect) == (double)[&] {
      uint32_t b = (uint32_t)expect << 16;
      float r;
      std::memcpy(&r, &b, 4);
      return r;
    }());
  }
}

TEST_CASE("f16 bit patterns", "[dtype]") {
  CHECK(encodeF16(1.0) == 0x3C00);
  CHECK(encodeF16(-2.0) == 0xC000);
  CHECK(encodeF16(0.1) == 0x2E66);
  CHECK(encodeF16(65504) == 0x7BFF); // largest finite
  CHECK(encodeF16(65519) == 0x7BFF); // below the tie
  CHECK(encodeF16(65520) == 0x7C00); // the tie rounds to even: infinity
  CHECK(encodeF16(std::ldexp(1, -24)) == 0x0001); // smallest subnormal
  CHECK(encodeF16(std::ldexp(1, -25)) == 0x0000); // tie with 0: even
  CHECK(encodeF16(3 * std::ldexp(1, -25)) == 0x0002);
  CHECK(encodeF16(-0.0) == 0x8000);
  CHECK(encodeF16(kNaN) == 0x7E00);
  CHECK(decodeF16(0x7BFF) == 65504);
  CHECK(decodeF16(0x0001) == std::ldexp(1, -24));
  CHECK(decodeF16(0xFC00) == -kInf);
}

TEST_CASE("f16 agrees with NumPy on every value and on rounding", "[dtype]") {
  test::TempDir dir;
  // NumPy decodes all 65536 codes and rounds a mix of random values, exact
  // ties between neighbours and their neighbours in f64.
  REQUIRE(test::python(dir, R"(
import numpy as np
codes = np.arange(65536, dtype=np.uint16)
codes.view(np.float16).astype(np.float64).tofile(')" +
                                dir.path("decoded.bin") + R"(')
rng = np.random.default_rng(7)
finite = codes.view(np.float16)[np.isfinite(codes.view(np.float16))].astype(np.float64)
finite = np.unique(finite)
mid = (finite[:-1] + finite[1:]) / 2
vals = np.concatenate([
    rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000),
    mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf),
    [65519.99, 65520.0, 1e6, -1e6, 0.0, -0.0, np.inf, -np.inf]])
vals.tofile(')" + dir.path("values.bin") +
                                R"(')
with np.errstate(over='ignore'):  # 1e6 overflows to inf, as intended
    enc = vals.astype(np.float16)
enc.view(np.uint16).tofile(')" + dir.path("encoded.bin") +
                                R"(')
)") == 0);
  auto decoded = test::readBytes(dir.path("decoded.bin"));
  REQUIRE(decoded.size() == 65536 * 8);
  for (uint32_t c = 0; c < 65536; ++c) {
    double expect;
    std::memcpy(&expect, &decoded[c * 8], 8);
    double got = decodeF16((uint16_t)c);
    INFO("code " << c);
    if (std::isnan(expect))
      REQUIRE(std::isnan(got));
    else
      REQUIRE(got == expect);
  }
  auto values = test::readBytes(dir.path("values.bin"));
  auto encoded = test::readBytes(dir.path("encoded.bin"));
  REQUIRE(values.size() == encoded.size() * 4);
  for (size_t i = 0; i < encoded.size() / 2; ++i) {
    double v;
    uint16_t expect;
    std::memcpy(&v, &values[i * 8], 8);
    std::memcpy(&expect, &encoded[i * 2], 2);
    INFO("value " << v);
    REQUIRE(encodeF16(v) == expect);
  }
}

namespace {
/// Brute-force reference for an f8 format: the nearest of its finite
/// values, ties to the even code, saturating beyond the largest.
uint8_t nearestF8(double v, double (*decode)(uint8_t), uint8_t maxCode) {
  double a = std::fabs(v);
  uint8_t best = 0;
  for (uint8_t c = 1; c <= maxCode; ++c) {
    double da = std::fabs(decode(c) - a), db = std::fabs(decode(best) - a);
    if (da < db || (da == db && (c & 1) == 0))
      best = c;
  }
  return (uint8_t)(best | (std::signbit(v) ? 0x80 : 0));
}
} // namespace

TEST_CASE("f8e4m3 bit patterns", "[dtype]") {
  CHECK(encodeF8E4M3(1.0) == 0x38);
  CHECK(encodeF8E4M3(-1.0) == 0xB8);
  CHECK(encodeF8E4M3(448) == 0x7E); // largest finite
  CHECK(encodeF8E4M3(500) == 0x7E); // saturates
  CHECK(encodeF8E4M3(464) == 0x7E); // tie between 448 and (NaN) 480
  CHECK(encodeF8E4M3(-1e9) == 0xFE);
  CHECK(encodeF8E4M3(kInf) == 0x7E); // no infinity in e4m3fn
  CHECK(encodeF8E4M3(kNaN) == 0x7F);
  CHECK(encodeF8E4M3(std::ldexp(1, -9)) == 0x01);  // smallest subnormal
  CHECK(encodeF8E4M3(std::ldexp(1, -10)) == 0x00); // tie with 0: even
  CHECK(decodeF8E4M3(0x7E) == 448);
  CHECK(decodeF8E4M3(0x08) == std::ldexp(1, -6)); // smallest normal
  CHECK(std::isnan(decodeF8E4M3(0x7F)));
  CHECK(std::isnan(decodeF8E4M3(0xFF)));
}

TEST_CASE("f8e5m2 bit patterns", "[dtype]") {
  CHECK(encodeF8E5M2(1.0) == 0x3C);
  CHECK(encodeF8E5M2(57344) == 0x7B); // largest finite
  CHECK(encodeF8E5M2(1e6) == 0x7B);   // finite overflow saturates
  CHECK(encodeF8E5M2(kInf) == 0x7C);  // infinities stay
  CHECK(encodeF8E5M2(-kInf) == 0xFC);
  CHECK(encodeF8E5M2(kNaN) == 0x7E);
  CHECK(encodeF8E5M2(std::ldexp(1, -16)) == 0x01);
  CHECK(decodeF8E5M2(0x7C) == kInf);
  CHECK(std::isnan(decodeF8E5M2(0x7D)));
  CHECK(decodeF8E5M2(0x04) == std::ldexp(1, -14));
}

TEST_CASE("f8 rounding matches a brute-force nearest search", "[dtype]") {
  struct Format {
    const char *name;
    uint8_t (*encode)(double);
    double (*decode)(uint8_t);
    uint8_t maxCode;
  };
  for (Format f : {Format{"e4m3", encodeF8E4M3, decodeF8E4M3, 0x7E},
                   Format{"e5m2", encodeF8E5M2, decodeF8E5M2, 0x7B}}) {
    // Decoding is monotonic over the positive finite codes.
    for (uint8_t c = 1; c <= f.maxCode; ++c)
      REQUIRE(f.decode(c) > f.decode(c - 1));
    std::vector<double> values;
    for (uint8_t c = 0; c < f.maxCode; ++c) {
      double mid = (f.decode(c) + f.decode(c + 1)) / 2;
      values.insert(values.end(), {f.decode(c), mid, std::nextafter(mid, 0.0),
                                   std::nextafter(mid, kInf)});
    }
    SplitMix64 rng(3);
    for (int i = 0; i < 20000; ++i)
      values.push_back(rng.uniform(-1, 1) *
                       std::ldexp(1.0, (int)(rng.next() % 40) - 20));
    for (double v : values) {
      for (double s : {v, -v}) {
        INFO(f.name << " value " << s);
        REQUIRE(f.encode(s) == nearestF8(s, f.decode, f.maxCode));
      }
    }
  }
}

TEST_CASE("encodeScalar and decodeScalar on every dtype", "[dtype]") {
  uint8_t buf[8];
  encodeScalar(DType::I8, 300, buf);
  CHECK(decodeScalar(DType::I8, buf) == 127); // saturates
  encodeScalar(DType::I8, -1.7, buf);
  CHECK(decodeScalar(DType::I8, buf) == -1); // toward zero
  encodeScalar(DType::I32, kNaN, buf);
  CHECK(decodeScalar(DType::I32, buf) == 0);
  encodeScalar(DType::I32, -3e10, buf);
  CHECK(decodeScalar(DType::I32, buf) == INT32_MIN);
  encodeScalar(DType::Bool, 0.5, buf);
  CHECK(buf[0] == 1);
  encodeScalar(DType::Bool, 0.0, buf);
  CHECK(buf[0] == 0);
  encodeScalar(DType::F32, 0.1, buf);
  float f;
  std::memcpy(&f, buf, 4);
  CHECK(f == 0.1f);
  encodeScalar(DType::BF16, 1.0, buf);
  CHECK((buf[0] | buf[1] << 8) == 0x3F80);
  encodeScalar(DType::F8E4M3, 500, buf);
  CHECK(buf[0] == 0x7E);
  // i64 integers above 2^53 stay exact through encodeInteger.
  int64_t big = (int64_t(1) << 53) + 1, back;
  encodeInteger(DType::I64, big, buf);
  std::memcpy(&back, buf, 8);
  CHECK(back == big);
  encodeInteger(DType::I8, -200, buf);
  CHECK((int8_t)buf[0] == -128);
}
