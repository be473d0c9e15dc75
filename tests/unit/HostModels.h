//===- HostModels.h - host kernels and bundles for the tests ----*- C++ -*-===//
//
// Kernels written in C, compiled with the system C compiler when a test first
// needs them, and manifests that use them. Shared by the C API and runner
// tests.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_HOSTMODELS_H
#define TCC_TESTS_UNIT_HOSTMODELS_H

#include "tests/unit/TestUtil.h"

namespace tcc::test {

inline const char *kKernels = R"(
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

void exp_mul(void **a, int64_t b, int64_t e) {
  const float *x = a[0], *w = a[1];
  float *y = a[2];
  for (int64_t i = b; i < e; ++i)
    y[i] = expf(x[i]) * w[i];
}
void add_one(void **a, int64_t b, int64_t e) {
  const float *y = a[0];
  float *o = a[1];
  for (int64_t i = b; i < e; ++i)
    o[i] = y[i] + 1.0f;
}
void record(void **a, int64_t b, int64_t e) {
  int64_t *begins = a[0];
  int32_t *hits = a[1], *calls = a[2];
  for (int64_t i = b; i < e; ++i) {
    begins[i] = b;
    __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);
  }
  __atomic_fetch_add(calls, 1, __ATOMIC_RELAXED);
}
void thread_id(void **a, int64_t b, int64_t e) {
  ((int64_t *)a[0])[0] = (int64_t)syscall(SYS_gettid);
}
void gather(void **a, int64_t b, int64_t e) {
  const float *data = a[0];
  const int32_t *idx = a[1];
  float *out = a[2];
  int32_t *status = a[3];
  for (int64_t i = b; i < e; ++i) {
    int32_t j = idx[i];
    if (j < 0 || j >= 8) {
      __atomic_fetch_add(status, 1, __ATOMIC_RELAXED);
      j = j < 0 ? 0 : 7;
    }
    out[i] = data[j];
  }
}
)";

inline nlohmann::json buffer(int id, const char *kind, uint64_t bytes) {
  return {{"id", id}, {"kind", kind}, {"bytes", bytes}};
}
inline nlohmann::json temp(int id, uint64_t bytes, uint64_t offset) {
  return {{"id", id}, {"kind", "temp"}, {"bytes", bytes}, {"offset", offset}};
}
inline nlohmann::json kernel(const char *symbol) {
  return {{"name", symbol}, {"symbol", symbol}, {"code", "host.so"}};
}

/// y = exp(x) * w + 1 through a temp, plus xc, a copy of x.
inline nlohmann::json expModel(int64_t n) {
  nlohmann::json m = test::emptyManifest("exp_mul");
  uint64_t bytes = 4 * n;
  m["inputs"] = {test::tensor("x", "f32", {n}, 0)};
  m["params"] = {test::tensor("w", "f32", {n}, 1)};
  m["params"][0]["blob"] = "param.w";
  m["outputs"] = {test::tensor("y", "f32", {n}, 3),
                  test::tensor("xc", "f32", {n}, 4)};
  m["buffers"] = {buffer(0, "input", bytes), buffer(1, "param", bytes),
                  temp(2, bytes, 0), buffer(3, "output", bytes),
                  buffer(4, "output", bytes)};
  m["arena_bytes"] = bytes;
  m["kernels"] = {kernel("exp_mul"), kernel("add_one")};
  m["code"] = {{{"target", "host"}, {"blob", "host.so"}}};
  m["launches"] = {{{"kernel", 0}, {"args", {0, 1, 2}}, {"grid", n}},
                   {{"kernel", 1}, {"args", {2, 3}}, {"grid", n}},
                   {{"copy", {{"src", 0}, {"dst", 4}, {"bytes", bytes}}}}};
  return m;
}

inline nlohmann::json recordModel(int64_t grid) {
  nlohmann::json m = test::emptyManifest("record");
  m["outputs"] = {test::tensor("begins", "i64", {grid}, 0),
                  test::tensor("hits", "i32", {grid}, 1),
                  test::tensor("calls", "i32", {}, 2),
                  test::tensor("tid", "i64", {}, 3)};
  m["buffers"] = {buffer(0, "output", 8 * grid), buffer(1, "output", 4 * grid),
                  buffer(2, "output", 4), buffer(3, "output", 8)};
  m["kernels"] = {kernel("record"), kernel("thread_id")};
  m["code"] = {{{"target", "host"}, {"blob", "host.so"}}};
  m["launches"] = {{{"kernel", 0}, {"args", {0, 1, 2}}, {"grid", grid}},
                   {{"kernel", 1}, {"args", {3}}, {"grid", 1}}};
  return m;
}

inline nlohmann::json gatherModel() {
  nlohmann::json m = test::emptyManifest("gather");
  m["inputs"] = {test::tensor("data", "f32", {8}, 0),
                 test::tensor("idx", "i32", {5}, 1)};
  m["outputs"] = {test::tensor("out", "f32", {5}, 2)};
  m["status"] = {
      {{"buffer", 3}, {"message", "index out of range in /nodes/3 (gather)"}}};
  m["buffers"] = {buffer(0, "input", 32), buffer(1, "input", 20),
                  buffer(2, "output", 20), temp(3, 4, 0)};
  m["arena_bytes"] = 64;
  m["kernels"] = {kernel("gather")};
  m["code"] = {{{"target", "host"}, {"blob", "host.so"}}};
  m["launches"] = {{{"kernel", 0}, {"args", {0, 1, 2, 3}}, {"grid", 5}}};
  return m;
}

/// Compiles the kernels once per process.
inline const std::vector<uint8_t> &kernelObject() {
  static std::vector<uint8_t> so = [] {
    test::TempDir dir;
    return test::buildSharedObject(dir, kKernels);
  }();
  return so;
}

/// No kernels: copies each input to an output, for dtype conversions and
/// output file names. Outputs "q/out" (bf16), "k" (i32), "b" (bool),
/// "h" (f16), "../e" (f8e4m3), "a_b" and "a/b" (f64).
inline nlohmann::json copyModel() {
  nlohmann::json m = test::emptyManifest("copies");
  struct T {
    const char *in, *out, *dtype;
    std::vector<int64_t> shape;
    uint64_t bytes;
  };
  std::vector<T> ts = {
      {"q", "q/out", "bf16", {3, 4}, 24}, {"k", "k", "i32", {5}, 20},
      {"b", "b", "bool", {3}, 3},         {"h", "h", "f16", {2}, 4},
      {"e", "../e", "f8e4m3", {4}, 4},    {"d", "a_b", "f64", {2}, 16}};
  int id = 0;
  for (const T &t : ts) {
    m["inputs"].push_back(test::tensor(t.in, t.dtype, t.shape, id));
    m["outputs"].push_back(test::tensor(t.out, t.dtype, t.shape, id + 1));
    m["buffers"].push_back(buffer(id, "input", t.bytes));
    m["buffers"].push_back(buffer(id + 1, "output", t.bytes));
    m["launches"].push_back(
        {{"copy", {{"src", id}, {"dst", id + 1}, {"bytes", t.bytes}}}});
    id += 2;
  }
  // A second output whose file name collides with "a_b".
  m["outputs"].push_back(test::tensor("a/b", "f64", {2}, id));
  m["buffers"].push_back(buffer(id, "output", 16));
  m["launches"].push_back(
      {{"copy", {{"src", id - 2}, {"dst", id}, {"bytes", 16}}}});
  return m;
}

/// The bundle bytes of `manifest` with the test kernels as "host.so".
inline std::vector<uint8_t> hostBundle(
    const nlohmann::json &manifest,
    std::vector<std::pair<std::string, std::vector<uint8_t>>> extra = {}) {
  extra.emplace_back("host.so", kernelObject());
  return test::makeBundle(manifest, std::move(extra));
}

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_HOSTMODELS_H
