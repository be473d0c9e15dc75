//===- BundleTest.cpp - the bundle container: round trip and corruption ---===//
#include "runtime/src/Bundle.h"
#include "runtime/src/Random.h"
#include "tests/unit/TestUtil.h"

using namespace tcc;
using namespace tcc::bundle;
using nlohmann::json;

namespace {

void setLE(std::vector<uint8_t> &b, size_t at, uint64_t v, int n = 8) {
  for (int i = 0; i < n; ++i)
    b[at + i] = (uint8_t)(v >> (8 * i));
}

uint64_t getLE(const std::vector<uint8_t> &b, size_t at, int n = 8) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= (uint64_t)b[at + i] << (8 * i);
  return v;
}

void fixHeaderHash(std::vector<uint8_t> &b) {
  setLE(b, 56, fnv1a64(b.data(), 56));
}

/// `bundle` with its manifest replaced by `text` and every header field
/// recomputed: the container is sound, only the manifest says what we want.
std::vector<uint8_t> withManifest(std::vector<uint8_t> b,
                                  const std::string &text) {
  uint64_t offset = getLE(b, 16);
  b.resize(offset);
  b.insert(b.end(), text.begin(), text.end());
  setLE(b, 24, text.size());
  setLE(b, 32, fnv1a64(b.data() + offset, text.size()));
  setLE(b, 40, b.size());
  fixHeaderHash(b);
  return b;
}

std::vector<uint8_t> bytesOf(size_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t &x : v)
    x = (uint8_t)rng.next();
  return v;
}

/// A small valid model: one input, one param, one output, one kernel.
json sampleManifest() {
  json m = test::emptyManifest("sample");
  m["inputs"] = {test::tensor("x", "f32", {4}, 0)};
  m["params"] = {test::tensor("w", "f32", {4}, 1)};
  m["params"][0]["blob"] = "param.w";
  m["outputs"] = {test::tensor("y", "f32", {4}, 2)};
  m["buffers"] = {{{"id", 0}, {"kind", "input"}, {"bytes", 16}},
                  {{"id", 1}, {"kind", "param"}, {"bytes", 16}},
                  {{"id", 2}, {"kind", "output"}, {"bytes", 16}}};
  m["kernels"] = {{{"name", "k0"},
                   {"symbol", "k0"},
                   {"kind", "ew"},
                   {"ops", {"tcc.mul"}},
                   {"code", "host.so"}}};
  m["code"] = {{{"target", "host"}, {"blob", "host.so"}}};
  m["launches"] = {{{"kernel", 0}, {"args", {0, 1, 2}}, {"grid", 4}}};
  return m;
}

std::vector<uint8_t> sampleBundle() {
  return test::makeBundle(sampleManifest(), {{"param.w", bytesOf(16, 1)},
                                             {"host.so", bytesOf(100, 2)},
                                             {"empty", {}}});
}

std::string refuse(std::vector<uint8_t> bytes) {
  std::string err;
  auto b = Bundle::parse(std::move(bytes), err);
  CHECK(!b);
  CHECK(!err.empty());
  CHECK(err.find('\n') == std::string::npos);
  return err;
}

} // namespace

TEST_CASE("fnv1a64 matches the published test vectors", "[bundle]") {
  CHECK(fnv1a64(nullptr, 0) == 0xcbf29ce484222325ull);
  CHECK(fnv1a64((const uint8_t *)"a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64((const uint8_t *)"foobar", 6) == 0x85944171f73967e8ull);
}

TEST_CASE("bundle round trip", "[bundle]") {
  std::vector<uint8_t> bytes = sampleBundle();
  REQUIRE(bytes.size() % 1 == 0);
  std::string err;
  auto b = Bundle::parse(bytes, err);
  INFO(err);
  REQUIRE(b);
  CHECK(b->size() == bytes.size());
  CHECK(b->blob("param.w").second == 16);
  CHECK(std::vector<uint8_t>(b->blob("param.w").first,
                             b->blob("param.w").first + 16) == bytesOf(16, 1));
  CHECK(std::vector<uint8_t>(b->blob("host.so").first,
                             b->blob("host.so").first + 100) ==
        bytesOf(100, 2));
  CHECK(b->blob("empty").second == 0);
  CHECK(b->blob("nope").first == nullptr);
  for (const json &e : b->manifest()["blobs"])
    CHECK(e["offset"].get<uint64_t>() % 64 == 0);
  json m = b->manifest();
  m.erase("blobs");
  CHECK(m == sampleManifest());

  const ModelDesc &d = b->model();
  CHECK(d.model == "sample");
  REQUIRE(d.inputs.size() == 1);
  CHECK(d.inputs[0].bytes == 16);
  CHECK(d.params[0].blob == "param.w");
  CHECK(d.kernels[0].ops == std::vector<std::string>{"tcc.mul"});
  CHECK(d.launches[0].args == std::vector<size_t>{0, 1, 2});
  CHECK(d.launches[0].grid == 4);
}

TEST_CASE("empty blobs share their offset with the next blob", "[bundle]") {
  // Params with no elements are empty blobs; the writer places one at the
  // offset of the blob after it, which is no overlap. Enough blobs that the
  // reader's sort is not an insertion sort (ties land in any order).
  for (int every : {2, 3, 5}) {
    BundleWriter w;
    for (int i = 0; i < 60; ++i)
      w.addBlob("b" + std::to_string(i),
                i % every == 0 ? std::vector<uint8_t>() : bytesOf(8, i));
    w.addBlob("param.w", bytesOf(16, 1));
    w.addBlob("host.so", bytesOf(100, 2));
    w.setManifest(sampleManifest());
    std::string err;
    auto b = Bundle::parse(w.serialize(), err);
    INFO(every << ": " << err);
    CHECK(b);
  }
}

TEST_CASE("writer names blobs uniquely and adds format_version", "[bundle]") {
  BundleWriter w;
  CHECK(w.addBlob("a", {1}) == "a");
  CHECK(w.addBlob("a", {2}) == "a#2");
  CHECK(w.addBlob("a", {3}) == "a#3");
  json m = sampleManifest();
  m.erase("format_version");
  m["params"][0]["blob"] = "a#2";
  m["buffers"][1]["bytes"] = 1;
  m["params"][0]["dtype"] = "i8";
  m["params"][0]["shape"] = {1};
  w.addBlob("host.so", {});
  w.setManifest(m);
  std::string err;
  auto b = Bundle::parse(w.serialize(), err);
  INFO(err);
  REQUIRE(b);
  CHECK(b->manifest()["format_version"] == 1);
  CHECK(*b->blob("a#2").first == 2);
}

TEST_CASE("bundle files: write, read, refuse to write invalid", "[bundle]") {
  test::TempDir dir;
  BundleWriter w;
  w.addBlob("param.w", bytesOf(16, 1));
  w.addBlob("host.so", bytesOf(100, 2));
  w.setManifest(sampleManifest());
  std::string err;
  REQUIRE(w.writeFile(dir.path("m.tccb"), err));
  auto b = Bundle::readFile(dir.path("m.tccb"), err);
  INFO(err);
  REQUIRE(b);
  CHECK(b->model().model == "sample");

  CHECK(!Bundle::readFile(dir.path("missing.tccb"), err));
  CHECK(err.find("missing.tccb: cannot open") != std::string::npos);
  CHECK(!Bundle::readFile(dir.root(), err));
  CHECK(err.find("not a regular file") != std::string::npos);

  BundleWriter bad;
  bad.setManifest(sampleManifest()); // its blobs are missing
  CHECK(!bad.writeFile(dir.path("bad.tccb"), err));
  CHECK(err.find("refusing to write an invalid bundle") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.path("bad.tccb")));
}

TEST_CASE("the layout matches docs/bundle-format.md (read by Python)",
          "[bundle]") {
  test::TempDir dir;
  auto bytes = sampleBundle();
  std::ofstream(dir.path("m.tccb"), std::ios::binary)
      .write((const char *)bytes.data(), (std::streamsize)bytes.size());
  // An independent reader of the documented layout.
  REQUIRE(test::python(dir, R"(
import json, struct, sys
data = open(')" + dir.path("m.tccb") +
                                R"(', 'rb').read()
def fnv(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & (2**64 - 1)
    return h
magic, ver, flags, moff, msize, mhash, fsize, res, hhash = struct.unpack('<8sIIQQQQQQ', data[:64])
assert magic == b'TCCBUNDL' and ver == 1 and flags == 0 and res == 0
assert hhash == fnv(data[:56]) and fsize == len(data)
assert moff % 64 == 0 and moff + msize == len(data)
assert mhash == fnv(data[moff:])
man = json.loads(data[moff:].decode())
assert man['format_version'] == 1 and man['model'] == 'sample'
end = 64
for b in sorted(man['blobs'], key=lambda b: b['offset']):
    assert b['offset'] % 64 == 0 and b['offset'] >= end
    assert all(x == 0 for x in data[end:b['offset']])
    blob = data[b['offset']:b['offset'] + b['size']]
    assert len(blob) == b['size'] and '%016x' % fnv(blob) == b['fnv1a64']
    end = b['offset'] + b['size']
assert all(x == 0 for x in data[end:moff])
)") == 0);
}

TEST_CASE("truncation at every length is refused", "[bundle]") {
  auto bytes = sampleBundle();
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("length " << n);
    std::string err =
        refuse(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n));
    CHECK(err.find("truncated") != std::string::npos);
  }
}

TEST_CASE("every flipped byte is detected", "[bundle]") {
  auto bytes = sampleBundle();
  for (size_t i = 0; i < bytes.size(); ++i)
    for (uint8_t mask : {0x01, 0x80, 0xFF}) {
      auto copy = bytes;
      copy[i] ^= mask;
      INFO("byte " << i << " mask " << (int)mask);
      refuse(copy);
    }
}

TEST_CASE("corruption gets the right message", "[bundle]") {
  auto bytes = sampleBundle();
  uint64_t moff = getLE(bytes, 16);
  auto flip = [&](size_t at) {
    auto c = bytes;
    c[at] ^= 0x20;
    return c;
  };
  CHECK(refuse(flip(0)) == "not a tcc bundle (bad magic)");
  CHECK(refuse(flip(20)) == "corrupted bundle: header checksum mismatch");
  CHECK(refuse(flip(moff + 3)) ==
        "corrupted bundle: manifest checksum mismatch");
  CHECK(refuse(flip(64 + 5)).find("checksum mismatch") != std::string::npos);
  CHECK(refuse(flip(64 + 5)).find("blob \"") != std::string::npos);
  CHECK(refuse(flip(moff - 1)).find("non-zero padding") != std::string::npos);

  SECTION("wrong version, with or without a fixed checksum") {
    auto c = bytes;
    setLE(c, 8, 2, 4);
    CHECK(refuse(c) == "unsupported bundle format version 2 (this runtime "
                       "reads version 1)");
    fixHeaderHash(c);
    CHECK(refuse(c).find("version 2") != std::string::npos);
  }
  SECTION("unknown flags") {
    auto c = bytes;
    setLE(c, 12, 1, 4);
    fixHeaderHash(c);
    CHECK(refuse(c).find("unknown flags") != std::string::npos);
  }
  SECTION("trailing bytes") {
    auto c = bytes;
    c.push_back(0);
    CHECK(refuse(c).find("unexpected bytes after the declared end") !=
          std::string::npos);
  }
  SECTION("lying header sizes") {
    for (auto [at, value] :
         std::vector<std::pair<size_t, uint64_t>>{{16, 0},
                                                  {16, 32},
                                                  {16, moff + 1},
                                                  {16, ~0ull - 63},
                                                  {24, 1},
                                                  {24, ~0ull},
                                                  {40, ~0ull},
                                                  {40, 64}}) {
      auto c = bytes;
      setLE(c, at, value);
      fixHeaderHash(c);
      INFO("field " << at << " = " << value);
      std::string err = refuse(c);
      CHECK((err.find("manifest range") != std::string::npos ||
             err.find("truncated") != std::string::npos ||
             err.find("unexpected bytes") != std::string::npos));
    }
  }
  SECTION("a manifest that lies about its own size") {
    auto c = bytes;
    setLE(c, 24, getLE(c, 24) - 1);
    fixHeaderHash(c);
    CHECK(refuse(c).find("manifest range") != std::string::npos);
  }
}

TEST_CASE("bad manifests and blob tables are refused", "[bundle]") {
  auto bytes = sampleBundle();
  std::string err;
  json m = Bundle::parse(bytes, err)->manifest();
  auto with = [&](const std::string &text) {
    return refuse(withManifest(bytes, text));
  };
  auto withJson = [&](auto mutate) {
    json c = m;
    mutate(c);
    return with(c.dump());
  };

  CHECK(with("{\"format_version\": 1,") ==
        "invalid bundle: manifest is not valid JSON");
  CHECK(with("[1, 2]") == "invalid bundle: manifest: /: expected an object");
  CHECK(with(std::string(10000, '[') + std::string(10000, ']'))
            .find("nests deeper") != std::string::npos);
  CHECK(with("\"\xff\xfe\"") == "invalid bundle: manifest is not valid JSON");
  CHECK(withJson([](json &c) { c.erase("blobs"); }) ==
        "invalid bundle: manifest: /: missing field \"blobs\"");
  CHECK(withJson([](json &c) { c["blobs"] = 3; }) ==
        "invalid bundle: manifest: /blobs: expected an array");
  CHECK(withJson([](json &c) { c["blobs"][0].erase("fnv1a64"); }) ==
        "invalid bundle: manifest: /blobs/0: missing field \"fnv1a64\"");
  CHECK(withJson([](json &c) { c["blobs"][0]["fnv1a64"] = "XYZ"; }) ==
        "invalid bundle: manifest: /blobs/0/fnv1a64: expected 16 lowercase "
        "hex digits");
  CHECK(withJson([](json &c) { c["blobs"][0]["size"] = -1; }) ==
        "invalid bundle: manifest: /blobs/0/size: expected a non-negative "
        "integer");
  CHECK(withJson([](json &c) {
          c["blobs"][0]["offset"] = 65;
        }).find("not a multiple of 64") != std::string::npos);
  CHECK(withJson([](json &c) {
          c["blobs"][0]["offset"] = 0;
        }).find("lies outside the blob area") != std::string::npos);
  // offset + size wraps around 2^64 if added naively.
  CHECK(withJson([](json &c) {
          c["blobs"][0]["offset"] = ~0ull - 63;
          c["blobs"][0]["size"] = 128;
        }).find("lies outside the blob area") != std::string::npos);
  CHECK(withJson([](json &c) {
          c["blobs"][0]["size"] = 1ull << 62;
        }).find("lies outside the blob area") != std::string::npos);
  CHECK(withJson([](json &c) {
          c["blobs"][1]["name"] = "param.w";
        }).find("duplicate blob name") != std::string::npos);
  CHECK(withJson([](json &c) {
          c["blobs"][0]["size"] = 17;
        }).find("checksum mismatch") != std::string::npos);
  CHECK(withJson([&](json &c) {
          // Two entries for the same bytes: overlap.
          json dup = c["blobs"][0];
          dup["name"] = "again";
          c["blobs"].push_back(dup);
        }).find("overlap") != std::string::npos);
}
