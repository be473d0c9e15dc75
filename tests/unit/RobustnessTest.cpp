//===- RobustnessTest.cpp - issue 12: inputs that must not crash tcc ------===//
//
// Special files, sizes that overflow, memory plans larger than the machine,
// long or '='-holding tensor names, concurrent use of one model, atomic
// writes and reading only a bundle's manifest.
//
//===----------------------------------------------------------------------===//
#include "runtime/include/tccrt.h"
#include "runtime/src/Backend.h"
#include "runtime/src/FileIO.h"
#include "runtime/src/Npy.h"
#include "runtime/tools/Runner.h"
#include "tests/unit/HostModels.h"
#include "tests/unit/TestUtil.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

using namespace tcc;
using namespace tcc::test;
using nlohmann::json;

namespace {

bool contains(const std::string &s, const std::string &what) {
  return s.find(what) != std::string::npos;
}

/// A model without kernels: y = copy of x, both f32 of `n` elements, with
/// names of our choosing.
json copyOne(const std::string &in, const std::string &out, int64_t n) {
  json m = emptyManifest("copy");
  m["inputs"] = {tensor(in, "f32", {n}, 0)};
  m["outputs"] = {tensor(out, "f32", {n}, 1)};
  m["buffers"] = {buffer(0, "input", 4 * n), buffer(1, "output", 4 * n)};
  m["launches"] = {{{"copy", {{"src", 0}, {"dst", 1}, {"bytes", 4 * n}}}}};
  return m;
}

npy::Array floats(std::vector<float> values) {
  npy::Array a;
  a.dtype = DType::F32;
  a.shape = {(int64_t)values.size()};
  a.data.resize(values.size() * 4);
  std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

std::vector<float> loadFloats(const std::string &path) {
  npy::Array a;
  std::string err;
  INFO(err);
  REQUIRE(npy::readFile(path, a, err));
  REQUIRE(a.dtype == DType::F32);
  std::vector<float> v(a.data.size() / 4);
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

/// A FIFO nobody writes to: opening it for reading would block.
std::string makeFifo(const TempDir &dir) {
  std::string path = dir.path("fifo");
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  return path;
}

} // namespace

TEST_CASE("tccrt_malloc refuses sizes whose rounding wraps", "[host]") {
  tccrt_context *ctx;
  REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
  for (size_t bytes :
       {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 62, SIZE_MAX - 63, SIZE_MAX / 2}) {
    void *p = nullptr;
    INFO(bytes);
    CHECK(tccrt_malloc(ctx, bytes, &p) == TCCRT_ERROR_OUT_OF_MEMORY);
    CHECK(p == nullptr);
    CHECK(contains(tccrt_context_last_error(ctx), "cannot allocate"));
  }
  // Ordinary sizes still work, and the memory is all there.
  void *p = nullptr;
  REQUIRE(tccrt_malloc(ctx, 100, &p) == TCCRT_OK);
  std::memset(p, 0xAB, 100);
  CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
  CHECK(tccrt_free(ctx, p) == TCCRT_OK);
  CHECK(tccrt_context_destroy(ctx) == TCCRT_OK);
}

TEST_CASE("a model larger than the machine is refused at load, with figures",
          "[host]") {
  tccrt_context *ctx;
  REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
  // A 2^47-byte arena (128 TiB) and 1 GiB of input and of output: no test
  // machine has that much, and nothing is allocated before the check.
  json m = copyOne("x", "y", int64_t(1) << 28);
  m["arena_bytes"] = uint64_t(1) << 47;
  auto bytes = makeBundle(m);
  tccrt_model *model = nullptr;
  CHECK(tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &model) ==
        TCCRT_ERROR_OUT_OF_MEMORY);
  CHECK(model == nullptr);
  std::string err = tccrt_context_last_error(ctx);
  INFO(err);
  CHECK(contains(err, "model needs 131074.00 GiB (140739635838976 bytes) "
                      "(params 0.00 GiB (0 bytes), arena 131072.00 GiB "
                      "(140737488355328 bytes), inputs 1.00 GiB (1073741824 "
                      "bytes), outputs 1.00 GiB (1073741824 bytes)) but host"));
  CHECK(contains(err, " has only "));
  CHECK(err.find('\n') == std::string::npos);
  CHECK(tccrt_context_destroy(ctx) == TCCRT_OK);
}

TEST_CASE("the host reports the memory it has", "[host]") {
  uint64_t bytes = 0;
  std::string what;
  REQUIRE(rt::hostAvailableMemory(bytes, what));
  // Whatever limits it, the test process has some memory left, and no more
  // than the machine's.
  CHECK(bytes > (uint64_t(1) << 20));
  CHECK(bytes <= (uint64_t)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) +
                     (uint64_t(1) << 50));
  CHECK(!what.empty());
}

TEST_CASE("the memory plan's sum cannot wrap around", "[host]") {
  // 2^16 outputs of 2^48 bytes (the per-tensor limit): 2^64 bytes in all,
  // which a 64-bit sum would see as 0.
  json m = emptyManifest("wrap");
  for (int i = 0; i < (1 << 16); ++i) {
    m["outputs"].push_back(tensor("o" + std::to_string(i), "i8",
                                  {int64_t(1) << 48}, i));
    m["buffers"].push_back(buffer(i, "output", uint64_t(1) << 48));
  }
  auto bytes = makeBundle(m);
  tccrt_context *ctx;
  REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
  tccrt_model *model = nullptr;
  CHECK(tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &model) ==
        TCCRT_ERROR_OUT_OF_MEMORY);
  CHECK(contains(tccrt_context_last_error(ctx),
                 "(18446744073709551615 bytes) (params"));
  tccrt_model_destroy(model);
  CHECK(tccrt_context_destroy(ctx) == TCCRT_OK);
}

TEST_CASE("one model used from several threads stays consistent", "[host]") {
  tccrt_context *ctx;
  setenv("TCC_NUM_THREADS", "3", 1);
  REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
  unsetenv("TCC_NUM_THREADS");
  const int64_t n = 4096;
  auto bytes =
      hostBundle(expModel(n), {{"param.w", std::vector<uint8_t>(4 * n, 0)}});
  tccrt_model *model = nullptr;
  REQUIRE(tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &model) ==
          TCCRT_OK);
  // w = 0: y = exp(x) * 0 + 1 = 1 and xc = x, whatever the order of runs.
  std::vector<float> x(n, 0.5f), y(n), xc(n);
  REQUIRE(tccrt_model_bind_input(model, 0, x.data(), 4 * n) == TCCRT_OK);
  REQUIRE(tccrt_model_bind_output(model, 0, y.data(), 4 * n) == TCCRT_OK);
  REQUIRE(tccrt_model_bind_output(model, 1, xc.data(), 4 * n) == TCCRT_OK);
  std::atomic<int> failures{0};
  auto hammer = [&](int id) {
    std::string missing = "missing-" + std::to_string(id) +
                          std::string(200, 'x'); // messages that allocate
    for (int i = 0; i < 300; ++i) {
      if (tccrt_model_run(model) != TCCRT_OK)
        ++failures;
      size_t index;
      if (tccrt_model_find_input(model, missing.c_str(), &index) !=
              TCCRT_ERROR_NOT_FOUND ||
          !contains(tccrt_last_error(), missing))
        ++failures;
      double ms[2];
      if (tccrt_model_time_runs(model, 2, ms) != TCCRT_OK)
        ++failures;
      if (tccrt_model_set_option(model, "cuda_graph", "0") != TCCRT_OK)
        ++failures;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back(hammer, t);
  for (std::thread &t : threads)
    t.join();
  CHECK(failures == 0);
  CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 1.0f; }));
  CHECK(std::all_of(xc.begin(), xc.end(), [](float v) { return v == 0.5f; }));
  CHECK(tccrt_model_destroy(model) == TCCRT_OK);
  CHECK(tccrt_context_destroy(ctx) == TCCRT_OK);
}

TEST_CASE("files that are not regular files are refused at once", "[bundle]") {
  TempDir dir;
  std::string fifo = makeFifo(dir);
  auto start = std::chrono::steady_clock::now();
  for (const std::string &path : {std::string("/dev/zero"), fifo, dir.root()}) {
    INFO(path);
    std::string err;
    std::vector<uint8_t> bytes;
    CHECK(!io::readRegularFile(path, bytes, err));
    CHECK(err == path + ": not a regular file");
    CHECK(!bundle::Bundle::readFile(path, err));
    CHECK(err == path + ": not a regular file");
    CHECK(!bundle::Bundle::readManifest(path, err));
    CHECK(err == path + ": not a regular file");
    npy::Array a;
    CHECK(!npy::readFile(path, a, err));
    CHECK(err == path + ": not a regular file");
    tccrt_context *ctx;
    REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
    tccrt_model *model = nullptr;
    CHECK(tccrt_model_load_file(ctx, path.c_str(), &model) == TCCRT_ERROR_IO);
    CHECK(tccrt_context_last_error(ctx) == path + ": not a regular file");
    CHECK(tccrt_context_destroy(ctx) == TCCRT_OK);
  }
  // Neither /dev/zero nor the FIFO was read or waited for.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  std::string err;
  std::vector<uint8_t> bytes;
  CHECK(!io::readRegularFile(dir.path("missing"), bytes, err));
  CHECK(err ==
        dir.path("missing") + ": cannot open: No such file or directory");
  test::writeText(dir.path("ten"), "0123456789");
  CHECK(!io::readRegularFile(dir.path("ten"), bytes, err, 9));
  CHECK(contains(err, "10 bytes is more than the limit of 9"));
  REQUIRE(io::readRegularFile(dir.path("ten"), bytes, err, 10));
  CHECK(std::string(bytes.begin(), bytes.end()) == "0123456789");
}

TEST_CASE("files are written atomically", "[bundle]") {
  TempDir dir;
  // A distinctive umask: the writers below must apply it and must never
  // change it (umask is process-wide, so reading it by setting it races).
  mode_t oldMask = ::umask(027);
  std::string path = dir.path("out.bin"), err;
  REQUIRE(io::writeFileAtomically(path, "abc", 3, err));
  CHECK(test::readBytes(path) == std::vector<uint8_t>{'a', 'b', 'c'});
  // Two writers racing to one path while a reader watches: the file always
  // holds one writer's complete bytes, never a mix or a prefix.
  const size_t size = 1 << 20;
  std::vector<char> a(size, 'a'), b(size, 'b');
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, writeFailures{0};
  auto writer = [&](const std::vector<char> &bytes) {
    std::string e;
    for (int i = 0; i < 40; ++i)
      if (!io::writeFileAtomically(path, bytes.data(), bytes.size(), e))
        ++writeFailures;
  };
  std::thread reader([&] {
    while (!done) {
      std::vector<uint8_t> got = test::readBytes(path);
      if (got.size() == 3)
        continue; // the first file, before any writer renamed
      if (got.size() != size ||
          std::count(got.begin(), got.end(), got[0]) != (ptrdiff_t)size)
        ++bad;
    }
  });
  std::thread wa(writer, std::cref(a)), wb(writer, std::cref(b));
  wa.join();
  wb.join();
  done = true;
  reader.join();
  CHECK(bad == 0);
  CHECK(writeFailures == 0);
  // No temp file is left behind.
  size_t files = 0;
  for (auto &e : std::filesystem::directory_iterator(dir.root()))
    files += e.is_regular_file();
  CHECK(files == 1);
  // The mode follows the umask for new files and is kept for old ones.
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  mode_t mask = ::umask(oldMask);
  CHECK(mask == 027);
  CHECK((st.st_mode & 0777) == 0640);
  REQUIRE(::chmod(path.c_str(), 0604) == 0);
  REQUIRE(io::writeFileAtomically(path, "x", 1, err));
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0604);
  // A symlink's target is replaced; /dev/null is written in place; a
  // directory is refused.
  REQUIRE(::symlink(path.c_str(), dir.path("link").c_str()) == 0);
  REQUIRE(io::writeFileAtomically(dir.path("link"), "yz", 2, err));
  CHECK(test::readBytes(path) == std::vector<uint8_t>{'y', 'z'});
  CHECK(std::filesystem::is_symlink(dir.path("link")));
  CHECK(io::writeFileAtomically("/dev/null", "q", 1, err));
  CHECK(!io::writeFileAtomically(dir.root(), "q", 1, err));
  CHECK(contains(err, "is a directory"));
  CHECK(!io::writeFileAtomically(dir.path("no/such/dir/f"), "q", 1, err));
  CHECK(contains(err, "cannot write '" + dir.path("no/such/dir/f") + "'"));
}

TEST_CASE("reading a bundle's manifest does not read its blobs", "[bundle]") {
  TempDir dir;
  auto bytes = hostBundle(gatherModel());
  auto write = [&](const std::string &name, const std::vector<uint8_t> &b) {
    std::ofstream(dir.path(name), std::ios::binary)
        .write((const char *)b.data(), (std::streamsize)b.size());
    return dir.path(name);
  };
  std::string err;
  auto good = bundle::Bundle::readManifest(write("g.tccb", bytes), err);
  INFO(err);
  REQUIRE(good);
  CHECK(good->model().model == "gather");
  CHECK(good->size() == bytes.size());
  CHECK(good->blob("host.so").first == nullptr);
  // A flipped byte in the code blob: only a full read notices.
  auto flipped = bytes;
  flipped[100] ^= 0xFF;
  std::string path = write("flipped.tccb", flipped);
  CHECK(bundle::Bundle::readManifest(path, err));
  CHECK(!bundle::Bundle::readFile(path, err));
  CHECK(contains(err, "checksum mismatch"));
  // A sparse file with 4 GiB of weights: the manifest is read from its end,
  // the weights before it are never touched.
  {
    json big = emptyManifest("big");
    const uint64_t n = uint64_t(1) << 30, wbytes = 4 * n;
    big["params"] = {tensor("w", "f32", {(int64_t)n}, 0)};
    big["params"][0]["blob"] = "param.w";
    big["buffers"] = {buffer(0, "param", wbytes)};
    big["blobs"] = {{{"name", "param.w"},
                     {"offset", 64},
                     {"size", wbytes},
                     {"fnv1a64", "0123456789abcdef"}}};
    std::string text = big.dump();
    uint64_t mOffset = 64 + wbytes, fileSize = mOffset + text.size();
    uint8_t h[64] = {0};
    auto put = [&](size_t at, uint64_t v) {
      for (int i = 0; i < 8; ++i)
        h[at + i] = (uint8_t)(v >> (8 * i));
    };
    std::memcpy(h, "TCCBUNDL", 8);
    put(8, 1); // version (4 bytes) and flags (4 bytes, zero)
    put(16, mOffset);
    put(24, text.size());
    put(32, bundle::fnv1a64((const uint8_t *)text.data(), text.size()));
    put(40, fileSize);
    put(56, bundle::fnv1a64(h, 56));
    std::string sparse = dir.path("sparse.tccb");
    {
      std::ofstream f(sparse, std::ios::binary);
      f.write((const char *)h, 64);
      f.seekp((std::streamoff)mOffset);
      f.write(text.data(), (std::streamsize)text.size());
    }
    auto start = std::chrono::steady_clock::now();
    auto b = bundle::Bundle::readManifest(sparse, err);
    INFO(err);
    REQUIRE(b);
    CHECK(b->size() == fileSize);
    CHECK(b->model().params[0].bytes == wbytes);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  }
  // Header, manifest, and truncations are all checked.
  auto manifestFlip = bytes;
  manifestFlip[bytes.size() - 3] ^= 0x01;
  CHECK(!bundle::Bundle::readManifest(write("m.tccb", manifestFlip), err));
  CHECK(contains(err, "manifest checksum mismatch"));
  for (size_t keep : {size_t(0), size_t(10), size_t(64), bytes.size() - 1}) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + (ptrdiff_t)keep);
    CHECK(!bundle::Bundle::readManifest(write("cut.tccb", cut), err));
    CHECK(contains(err, "truncated bundle"));
  }
  std::ostringstream out, errs;
  CHECK(runner::inspectBundleFile(path, out, errs) == 0);
  CHECK(json::parse(out.str())["model"] == "gather");
  std::ostringstream out2, errs2;
  CHECK(runner::inspectBundleFile("/dev/zero", out2, errs2) == 1);
  CHECK(errs2.str() == "tcc: error: /dev/zero: not a regular file\n");
}

TEST_CASE("run: long output names get safe file names, checked before the run",
          "[runner]") {
  TempDir dir;
  // The format allows names up to any length; Linux allows 255-byte file
  // names. Two 256-byte names that differ only at the end stay apart.
  json m = emptyManifest("long");
  std::vector<std::string> names = {
      std::string(252, 'a'), std::string(255, 'b'), std::string(255, 'c') + "1",
      std::string(255, 'c') + "2", "short"};
  m["inputs"] = {tensor("x", "f32", {2}, 0)};
  m["buffers"] = {buffer(0, "input", 8)};
  for (size_t i = 0; i < names.size(); ++i) {
    m["outputs"].push_back(tensor(names[i], "f32", {2}, (int)i + 1));
    m["buffers"].push_back(buffer((int)i + 1, "output", 8));
    m["launches"].push_back(
        {{"copy", {{"src", 0}, {"dst", (int)i + 1}, {"bytes", 8}}}});
  }
  auto bundle = makeBundle(m);
  std::string err;
  REQUIRE(npy::writeFile(dir.path("x.npy"), floats({1.5f, -2.0f}), err));
  runner::RunOptions opt;
  opt.inputSpecs = {"x=" + dir.path("x.npy")};
  opt.outputDir = dir.path("out");
  std::ostringstream out, errs;
  REQUIRE(runner::runBundle(bundle, "m", opt, out, errs) == 0);
  std::set<std::string> files;
  for (auto &e : std::filesystem::directory_iterator(dir.path("out"))) {
    std::string name = e.path().filename().string();
    CHECK(name.size() <= 255);
    files.insert(name);
    CHECK(loadFloats(e.path().string()) == std::vector<float>{1.5f, -2.0f});
  }
  CHECK(files.size() == names.size());
  CHECK(files.count(std::string(252, 'a').substr(0, 234) + "-" + [] {
    // FNV-1a-64 of 252 'a's, by the definition.
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 252; ++i)
      h = (h ^ 'a') * 0x100000001b3ull;
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)h);
    return std::string(buf);
  }() + ".npy"));
  CHECK(files.count("short.npy"));
  CHECK(runner::outputFileStem(std::string(251, 'z')) == std::string(251, 'z'));
  CHECK(runner::outputFileStem(std::string(252, 'z')).size() == 251);

  // A path taken by a directory fails before the run: no output written.
  std::filesystem::create_directories(dir.path("out2/short.npy"));
  opt.outputDir = dir.path("out2");
  std::ostringstream out2, errs2;
  CHECK(runner::runBundle(bundle, "m", opt, out2, errs2) == 1);
  std::string lastLine = errs2.str().substr(errs2.str().rfind("tcc: "));
  CHECK(lastLine == "tcc: error: output 'short': " + dir.path("out2") +
                        "/short.npy is a directory\n");
  auto entries =
      std::distance(std::filesystem::directory_iterator(dir.path("out2")),
                    std::filesystem::directory_iterator());
  CHECK(entries == 1); // short.npy, the directory
  CHECK(out2.str() == "");
}

TEST_CASE("run: input names and file names may hold '='", "[runner]") {
  TempDir dir;
  // Inputs "a" and "a=b": a spec is split after the longest input name it
  // starts with that is followed by '='.
  json m = emptyManifest("eq");
  m["inputs"] = {tensor("a", "f32", {1}, 0), tensor("a=b", "f32", {1}, 1)};
  m["outputs"] = {tensor("ya", "f32", {1}, 2), tensor("yab", "f32", {1}, 3)};
  m["buffers"] = {buffer(0, "input", 4), buffer(1, "input", 4),
                  buffer(2, "output", 4), buffer(3, "output", 4)};
  m["launches"] = {{{"copy", {{"src", 0}, {"dst", 2}, {"bytes", 4}}}},
                   {{"copy", {{"src", 1}, {"dst", 3}, {"bytes", 4}}}}};
  auto bundle = makeBundle(m);
  std::string err;
  REQUIRE(npy::writeFile(dir.path("c=1.npy"), floats({7}), err));
  REQUIRE(npy::writeFile(dir.path("b=2.npy"), floats({9}), err));
  runner::RunOptions opt;
  opt.inputSpecs = {"a=b=" + dir.path("c=1.npy"), "a=" + dir.path("b=2.npy")};
  opt.outputDir = dir.path("out");
  std::ostringstream out, errs;
  INFO(errs.str());
  REQUIRE(runner::runBundle(bundle, "m", opt, out, errs) == 0);
  CHECK(loadFloats(dir.path("out/yab.npy")) == std::vector<float>{7});
  CHECK(loadFloats(dir.path("out/ya.npy")) == std::vector<float>{9});

  std::string name, file, why;
  std::vector<std::string> names = {"a", "a=b", "x"};
  REQUIRE(runner::splitInputSpec("a=b=c", names, name, file, why));
  CHECK((name == "a=b" && file == "c"));
  REQUIRE(runner::splitInputSpec("a=bc", names, name, file, why));
  CHECK((name == "a" && file == "bc"));
  REQUIRE(runner::splitInputSpec("x==", names, name, file, why));
  CHECK((name == "x" && file == "="));
  CHECK(!runner::splitInputSpec("y=f", names, name, file, why));
  CHECK(why == "model has no input named 'y' (inputs: a, a=b, x)");
  CHECK(!runner::splitInputSpec("x=", names, name, file, why));
  CHECK(why == "--input x= names no file");
}

TEST_CASE("bench draws integer inputs valid for any gather", "[runner]") {
  // gatherModel indexes an 8-element axis: [0, 10) would go out of range.
  auto bundle = hostBundle(gatherModel());
  runner::BenchOptions opt;
  opt.warmup = 1;
  opt.iters = 3;
  std::ostringstream out, err;
  INFO(err.str());
  CHECK(runner::benchBundle(bundle, "g", opt, out, err) == 0);
  // run keeps its documented [0, 10): with seed 0 some index is >= 8.
  TempDir dir;
  runner::RunOptions ropt;
  ropt.outputDir = dir.path("out");
  std::ostringstream out2, err2;
  CHECK(runner::runBundle(bundle, "g", ropt, out2, err2) == 1);
  CHECK(contains(err2.str(), "index out of range"));
}

TEST_CASE("errors quoting names with control characters stay one line",
          "[bundle]") {
  // Two inputs named "a\nb": the duplicate is reported with the name
  // escaped, by the reader, the C API and the CLI alike.
  json m = emptyManifest("names");
  m["inputs"] = {tensor("a\nb", "f32", {1}, 0), tensor("a\nb", "f32", {1}, 1)};
  m["buffers"] = {buffer(0, "input", 4), buffer(1, "input", 4)};
  auto bytes = makeBundle(m);
  std::string err;
  CHECK(!bundle::Bundle::parse(bytes, err));
  CHECK(err == "invalid bundle: manifest: /inputs/1/name: duplicate name "
               "\"a\\x0ab\"");
  tccrt_context *ctx;
  REQUIRE(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);
  tccrt_model *model = nullptr;
  CHECK(tccrt_model_load_memory(ctx, bytes.data(), bytes.size(), &model) ==
        TCCRT_ERROR_INVALID_BUNDLE);
  CHECK(std::string(tccrt_context_last_error(ctx)) == err);
  CHECK(std::string(tccrt_last_error()) == err);
  CHECK(tccrt_context_destroy(ctx) == TCCRT_OK);
  std::ostringstream out, errs;
  CHECK(runner::inspectBundle(bytes, "m\tb", out, errs) == 1);
  CHECK(errs.str() == "tcc: error: m\\x09b: " + err + "\n");

  // A .npy header whose key holds a newline and NULs.
  using namespace std::string_literals; // the literal holds a NUL
  std::string header = "{'descr': '<f4', 'fortran_or\n\0': False, "
                       "'shape': (1,), }"s;
  header.resize(118, ' ');
  header += '\n';
  std::vector<uint8_t> npyBytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                   (uint8_t)header.size(), 0};
  npyBytes.insert(npyBytes.end(), header.begin(), header.end());
  npyBytes.insert(npyBytes.end(), 4, 0);
  npy::Array a;
  CHECK(!npy::parse(npyBytes, a, err));
  CHECK(err == "unexpected key 'fortran_or\\x0a\\x00' in the header");
}
