//===- TestUtil.h - helpers shared by the runtime unit tests ----*- C++ -*-===//
#ifndef TCC_TESTS_UNIT_TESTUTIL_H
#define TCC_TESTS_UNIT_TESTUTIL_H

#include "runtime/src/Bundle.h"
#include "tests/unit/JsonPointers.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/wait.h>

namespace tcc::test {

/// A fresh directory, removed with its contents at the end of the test.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/tcc-unit-XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    dir = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string path(const std::string &name) const { return dir + "/" + name; }
  const std::string &root() const { return dir; }

private:
  std::string dir;
};

inline std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in),
                              std::istreambuf_iterator<char>());
}

inline void writeText(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// Runs a shell command; returns its exit status.
inline int shell(const std::string &command) {
  int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/// Compiles C `source` into a shared object with the C compiler CMake found
/// (no -lm on purpose: the runtime must provide libm) and returns its bytes.
inline std::vector<uint8_t> buildSharedObject(const TempDir &dir,
                                              const std::string &source,
                                              const std::string &flags = "") {
  writeText(dir.path("kernels.c"), source);
  std::string cmd = std::string(TCC_TEST_CC) + " -std=c99 -O2 -fPIC -shared " +
                    flags + " -o " + dir.path("kernels.so") + " " +
                    dir.path("kernels.c");
  INFO(cmd);
  REQUIRE(shell(cmd) == 0);
  return readBytes(dir.path("kernels.so"));
}

/// Runs a Python snippet with the NumPy-enabled interpreter; returns its exit
/// status.
inline int python(const TempDir &dir, const std::string &script) {
  writeText(dir.path("script.py"), script);
  return shell(std::string(TCC_TEST_PYTHON) + " " + dir.path("script.py"));
}

/// A manifest tensor entry.
inline nlohmann::json tensor(const std::string &name, const std::string &dtype,
                             std::vector<int64_t> shape, int buffer) {
  return {
      {"name", name}, {"dtype", dtype}, {"shape", shape}, {"buffer", buffer}};
}

/// A manifest skeleton with the required keys and no content.
inline nlohmann::json emptyManifest(const std::string &model = "m") {
  return {{"format_version", 1},
          {"model", model},
          {"targets", {"host"}},
          {"inputs", nlohmann::json::array()},
          {"outputs", nlohmann::json::array()},
          {"params", nlohmann::json::array()},
          {"buffers", nlohmann::json::array()},
          {"arena_bytes", 0},
          {"kernels", nlohmann::json::array()},
          {"code", nlohmann::json::array()},
          {"launches", nlohmann::json::array()}};
}

inline std::vector<uint8_t> makeBundle(
    const nlohmann::json &manifest,
    std::vector<std::pair<std::string, std::vector<uint8_t>>> blobs = {}) {
  bundle::BundleWriter w;
  for (auto &[name, bytes] : blobs)
    w.addBlob(name, std::move(bytes));
  w.setManifest(manifest);
  return w.serialize();
}

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_TESTUTIL_H
