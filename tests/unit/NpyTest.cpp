//===- NpyTest.cpp - .npy reading and writing, checked against NumPy ------===//
#include "runtime/src/Npy.h"
#include "runtime/src/Random.h"
#include "tests/unit/TestUtil.h"

#include <cstring>

using namespace tcc;

namespace {

npy::Array randomArray(DType t, std::vector<int64_t> shape, uint64_t seed) {
  npy::Array a;
  a.dtype = t;
  a.shape = std::move(shape);
  size_t n = 1;
  for (int64_t d : a.shape)
    n *= (size_t)d;
  SplitMix64 rng(seed);
  a.data.resize(n * dtypeSize(t));
  for (size_t i = 0; i < n; ++i)
    encodeScalar(
        t, t == DType::Bool ? (double)(rng.next() & 1) : rng.uniform(-100, 100),
        &a.data[i * dtypeSize(t)]);
  return a;
}

const std::vector<std::pair<DType, const char *>> kTypes = {
    {DType::F64, "float64"}, {DType::F32, "float32"}, {DType::F16, "float16"},
    {DType::I8, "int8"},     {DType::I32, "int32"},   {DType::I64, "int64"},
    {DType::Bool, "bool_"}};

std::string parseError(const std::vector<uint8_t> &bytes) {
  npy::Array a;
  std::string err;
  CHECK_FALSE(npy::parse(bytes, a, err));
  return err;
}

/// A .npy file with a hand-written header dict.
std::vector<uint8_t> withHeader(const std::string &dict, size_t dataBytes,
                                int major = 1) {
  std::string h = dict + "\n";
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', (uint8_t)major, 0};
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    out.push_back((uint8_t)(h.size() >> (8 * i)));
  out.insert(out.end(), h.begin(), h.end());
  out.resize(out.size() + dataBytes, 0);
  return out;
}

} // namespace

TEST_CASE("npy round trip in memory", "[npy]") {
  for (auto [t, name] : kTypes)
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{}, {0}, {1}, {7}, {2, 3, 4}, {3, 0, 2}}) {
      npy::Array a = randomArray(t, shape, 5), b;
      std::string err;
      auto bytes = npy::serialize(a);
      INFO(name << " " << npy::shapeString(shape));
      REQUIRE(npy::parse(bytes, b, err));
      CHECK(b.dtype == a.dtype);
      CHECK(b.shape == a.shape);
      CHECK(b.data == a.data);
      CHECK((bytes.size() - a.data.size()) % 64 == 0); // aligned data
    }
  CHECK(npy::shapeString({}) == "()");
  CHECK(npy::shapeString({3}) == "(3,)");
  CHECK(npy::shapeString({2, 3}) == "(2, 3)");
}

TEST_CASE("npy files agree with NumPy both ways", "[npy]") {
  test::TempDir dir;
  // NumPy writes arrays of every dtype (version 1.0 and a forced 2.0) and
  // their raw bytes; we write arrays and raw bytes for NumPy to check.
  std::string script = "import numpy as np\nrng = np.random.default_rng(1)\n"
                       "d = '" +
                       dir.root() + "/'\n";
  for (auto [t, name] : kTypes) {
    std::string n = name;
    script += "a = (rng.standard_normal((3, 5)) * 50).astype(np." + n +
              ")\n"
              "np.save(d + 'np_" +
              n +
              ".npy', a)\n"
              "with open(d + 'np2_" +
              n +
              ".npy', 'wb') as f:\n"
              "    np.lib.format.write_array(f, a, version=(2, 0))\n"
              "a.tofile(d + 'np_" +
              n + ".bin')\n";
  }
  REQUIRE(test::python(dir, script) == 0);

  std::string check = "import numpy as np\nd = '" + dir.root() + "/'\n";
  for (auto [t, name] : kTypes) {
    std::string n = name;
    for (std::string prefix : {"np_", "np2_"}) {
      npy::Array a;
      std::string err;
      INFO(prefix << n << ": " << err);
      REQUIRE(npy::readFile(dir.path(prefix + n + ".npy"), a, err));
      CHECK(a.dtype == t);
      CHECK(a.shape == std::vector<int64_t>{3, 5});
      CHECK(a.data == test::readBytes(dir.path("np_" + n + ".bin")));
    }
    // Ours: a 3-d array, a scalar and an empty array of each dtype.
    for (auto [tag, shape] :
         std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {"3d", {2, 1, 3}}, {"scalar", {}}, {"empty", {0, 4}}}) {
      npy::Array ours = randomArray(t, shape, 9);
      std::string err, base = dir.path("ours_" + tag + "_" + n);
      REQUIRE(npy::writeFile(base + ".npy", ours, err));
      std::ofstream(base + ".bin", std::ios::binary)
          .write((const char *)ours.data.data(),
                 (std::streamsize)ours.data.size());
      std::string pyShape = npy::shapeString(shape);
      check += "a = np.load('" + base +
               ".npy')\n"
               "assert a.dtype == np." +
               n + " and a.shape == " + pyShape +
               ", a\n"
               "assert a.flags['C_CONTIGUOUS']\n"
               "assert a.tobytes() == np.fromfile('" +
               base + ".bin', np." + n + ").tobytes()\n";
    }
  }
  REQUIRE(test::python(dir, check) == 0);
}

TEST_CASE("npy files NumPy writes but we refuse", "[npy]") {
  test::TempDir dir;
  std::string d = dir.root() + "/";
  REQUIRE(
      test::python(dir, "import numpy as np\nd = '" + d +
                            "'\n"
                            "np.save(d + 'fortran.npy', np.asfortranarray("
                            "np.ones((2, 3), np.float32)))\n"
                            "np.save(d + 'big.npy', np.ones(3, '>f4'))\n"
                            "np.save(d + 'u16.npy', np.ones(3, np.uint16))\n"
                            "np.save(d + 'rec.npy', np.zeros(2, "
                            "dtype=[('a', '<f4'), ('b', '<i4')]))\n") == 0);
  npy::Array a;
  std::string err;
  CHECK_FALSE(npy::readFile(d + "fortran.npy", a, err));
  CHECK(err == d + "fortran.npy: Fortran-order arrays are not supported "
                   "(save a C-order array, e.g. np.ascontiguousarray)");
  CHECK_FALSE(npy::readFile(d + "big.npy", a, err));
  CHECK(err == d + "big.npy: big-endian data ('>f4') is not supported");
  CHECK_FALSE(npy::readFile(d + "u16.npy", a, err));
  CHECK(err == d + "u16.npy: dtype '<u2' is not supported (supported: <f8 "
                   "<f4 <f2 |i1 <i4 <i8 |b1)");
  CHECK_FALSE(npy::readFile(d + "rec.npy", a, err));
  CHECK(err == d + "rec.npy: structured dtypes are not supported");
  CHECK_FALSE(npy::readFile(d + "none.npy", a, err));
  CHECK(err.rfind(d + "none.npy: cannot open", 0) == 0);
}

TEST_CASE("malformed npy bytes are refused", "[npy]") {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (2,), }";
  npy::Array a;
  std::string err;
  REQUIRE(npy::parse(withHeader(ok, 8), a, err));
  REQUIRE(npy::parse(withHeader(ok, 8, 3), a, err)); // version 3.0
  CHECK(parseError({}) == "not a .npy file (bad magic)");
  CHECK(parseError({'P', 'K', 3, 4, 0, 0, 0, 0, 0}) ==
        "not a .npy file (bad magic)");
  CHECK(parseError(withHeader(ok, 8, 4)) == "unsupported .npy version 4.0");
  CHECK(parseError(withHeader(ok, 7)) ==
        "data has 7 bytes but shape (2,) of <f4 needs 8");
  CHECK(parseError(withHeader(ok, 9)) ==
        "data has 9 bytes but shape (2,) of <f4 needs 8");
  auto truncated = withHeader(ok, 8);
  truncated.resize(20);
  CHECK(parseError(truncated) == "truncated .npy header");
  truncated.resize(9);
  CHECK(parseError(truncated) == "truncated .npy header");
  CHECK(parseError(withHeader("{'descr': '<f4', 'shape': (2,)}", 8)) ==
        "header lacks one of 'descr', 'fortran_order', 'shape'");
  CHECK(parseError(withHeader("{'descr': '<f4', 'fortran_order': Maybe, "
                              "'shape': (2,)}",
                              8)) == "malformed header: expected True or "
                                     "False");
  CHECK(parseError(withHeader("{'descr': '<f4', 'fortran_order': False, "
                              "'shape': (2, x)}",
                              8)) == "malformed header: expected a dimension");
  CHECK(parseError(withHeader("{'descr': '<f4', 'fortran_order': False, "
                              "'shape': (99999999999999999999,)}",
                              8)) == "dimension too large");
  CHECK(parseError(withHeader("{'descr': '<f8', 'fortran_order': False, "
                              "'shape': (262144, 262144, 262144)}",
                              8)) == "array too large");
  CHECK(parseError(withHeader("{'descr': '<f4', 'fortran_order': False, "
                              "'shape': (2,), 'extra': 1}",
                              8)) == "unexpected key 'extra' in the header");
  CHECK(parseError(withHeader("{'descr: '<f4'", 8)) ==
        "malformed header: expected ':'");
  // Bool bytes other than 0/1 are normalised.
  auto b = withHeader("{'descr': '|b1', 'fortran_order': False, "
                      "'shape': (2,), }",
                      0);
  b.push_back(0);
  b.push_back(7);
  REQUIRE(npy::parse(b, a, err));
  CHECK(a.data == std::vector<uint8_t>{0, 1});
}
