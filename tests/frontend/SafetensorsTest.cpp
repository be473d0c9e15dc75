//===- SafetensorsTest.cpp - params from safetensors files, honest or not -===//
//
// Files are written at test time by the small writer below; the model file
// sits in a fresh temporary folder and names its weights relatively.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

using namespace tcc::test;
namespace fs = std::filesystem;

namespace {

struct StTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

void writeBytes(const fs::path &p, const std::vector<uint8_t> &bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write((const char *)bytes.data(), (std::streamsize)bytes.size());
  REQUIRE(out.good());
}

/// A file with the given header text, size field and data section.
std::vector<uint8_t> rawFile(const std::string &header,
                             const std::vector<uint8_t> &data,
                             std::optional<uint64_t> sizeField = std::nullopt) {
  uint64_t n = sizeField ? *sizeField : header.size();
  std::string f;
  for (int i = 0; i < 8; ++i)
    f += (char)(n >> (8 * i));
  f += header;
  f.append(data.begin(), data.end());
  return std::vector<uint8_t>(f.begin(), f.end());
}

/// An honest file holding `tensors` back to back.
std::vector<uint8_t> stFile(const std::vector<StTensor> &tensors) {
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  std::vector<uint8_t> data;
  for (const StTensor &t : tensors) {
    header[t.name] = {
        {"dtype", t.dtype},
        {"shape", t.shape},
        {"data_offsets", {data.size(), data.size() + t.data.size()}}};
    data.insert(data.end(), t.data.begin(), t.data.end());
  }
  return rawFile(header.dump(), data);
}

std::vector<uint8_t> randomBytes(size_t n, std::mt19937 &rng) {
  std::vector<uint8_t> b(n);
  for (uint8_t &x : b)
    x = (uint8_t)rng();
  return b;
}

/// A fresh folder for one test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tcc-fe-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// A model of one param per (dtype, shape, tensor) read from `file`.
std::string paramsModel(
    const std::vector<std::tuple<std::string, std::string, std::string>> &ps,
    const std::string &file = "weights/w.safetensors") {
  std::string params = "[";
  for (size_t i = 0; i < ps.size(); ++i) {
    auto [dtype, shape, tensor] = ps[i];
    params += std::string(i ? ", " : "") + R"({"name": "p)" +
              std::to_string(i) + R"(", "dtype": ")" + dtype +
              R"(", "shape": )" + shape + R"(, "init": {"file": ")" + file +
              R"(", "tensor": ")" + tensor + R"("}})";
  }
  params += "]";
  return modelJson("[]", "[]", R"(["p0"])", params);
}

struct FileImport {
  std::optional<tcc::ImportedModel> model;
  std::vector<std::string> errors;
};

FileImport importIn(const TempDir &dir, const std::string &json,
                    mlir::MLIRContext &ctx) {
  fs::path modelPath = dir.path / "model.json";
  std::ofstream(modelPath) << json;
  FileImport r;
  r.model = tcc::importModelFile(modelPath.string(), ctx, r.errors);
  return r;
}

} // namespace

TEST_CASE("params read from safetensors", "[safetensors]") {
  std::mt19937 rng(std::random_device{}());
  TempDir dir;
  std::vector<StTensor> ts = {
      {"a.weight", "F32", {2, 3}, randomBytes(24, rng)},
      {"b", "BF16", {4}, randomBytes(8, rng)},
      {"c", "I64", {2}, randomBytes(16, rng)},
      {"d", "BOOL", {3}, {1, 0, 1}},
      {"e", "F8_E4M3", {2}, randomBytes(2, rng)},
      {"unused", "U8", {5}, randomBytes(5, rng)},
      {"f", "F64", {}, randomBytes(8, rng)},
      {"g", "F16", {0, 3}, {}},
  };
  writeBytes(dir.path / "weights" / "w.safetensors", stFile(ts));
  mlir::MLIRContext ctx;
  FileImport r = importIn(dir,
                          paramsModel({{"f32", "[2, 3]", "a.weight"},
                                       {"bf16", "[4]", "b"},
                                       {"i64", "[2]", "c"},
                                       {"bool", "[3]", "d"},
                                       {"f8e4m3", "[2]", "e"},
                                       {"f64", "[]", "f"},
                                       {"f16", "[0, 3]", "g"},
                                       {"f32", "[2, 3]", "a.weight"}}),
                          ctx);
  for (const std::string &e : r.errors)
    UNSCOPED_INFO(e);
  REQUIRE(r.model);
  std::vector<size_t> which = {0, 1, 2, 3, 4, 6, 7, 0};
  REQUIRE(r.model->params.size() == which.size());
  for (size_t i = 0; i < which.size(); ++i) {
    INFO("param " << i);
    CHECK(r.model->params[i].bytes == ts[which[i]].data);
    CHECK(r.model->params[i].shape == ts[which[i]].shape);
  }
}

TEST_CASE("safetensors files that lie", "[safetensors][bad]") {
  std::mt19937 rng(std::random_device{}());
  std::vector<uint8_t> data24 = randomBytes(24, rng);
  auto header = [](const std::string &entry) {
    return R"({"__metadata__": {"k": "v"}, "t": )" + entry + "}";
  };
  const std::string good =
      R"({"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]})";

  struct Case {
    const char *what;
    std::vector<uint8_t> file;
    std::string pointer, message;
    std::string dtype = "f32", shape = "[2, 3]";
  };
  std::string tooDeep =
      R"({"t": )" + std::string(80, '[') + std::string(80, ']') + "}";
  std::vector<Case> cases = {
      {"shorter than the size field",
       {1, 2, 3},
       "/params/0/init/file",
       "only 3 bytes"},
      {"header size beyond the file", rawFile(header(good), data24, 1000),
       "/params/0/init/file", "header size 1000 exceeds the file"},
      {"header size near 2^64", rawFile(header(good), data24, ~uint64_t(0) - 3),
       "/params/0/init/file", "exceeds the file"},
      {"header not JSON", rawFile(R"({"t": {"dtype": )", data24),
       "/params/0/init/file", "invalid JSON"},
      {"header not an object", rawFile("[1, 2]", data24), "/params/0/init/file",
       "expected a JSON object"},
      {"header nested too deep", rawFile(tooDeep, data24),
       "/params/0/init/file", "nested deeper than 64"},
      {"duplicate tensor names",
       rawFile(R"({"t": )" + good + R"(, "t": )" + good + "}", data24),
       "/params/0/init/file", "duplicate key \"t\""},
      {"data truncated",
       rawFile(header(good),
               std::vector<uint8_t>(data24.begin(), data24.begin() + 20)),
       "/params/0/init/file", "[0, 24] is not within the 20-byte data section"},
      {"offsets reversed",
       rawFile(
           header(
               R"({"dtype": "F32", "shape": [2, 3], "data_offsets": [24, 0]})"),
           data24),
       "/params/0/init/file", "is not within"},
      {"span not the tensor's size",
       rawFile(
           header(
               R"({"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]})"),
           data24),
       "/params/0/init/file",
       "span 20 bytes, but a F32 tensor of this shape "
       "needs 24"},
      {"shape whose byte size wraps to 0 in 64 bits",
       rawFile(
           header(
               R"({"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 0]})"),
           data24),
       "/params/0/init/file", "needs more than the data section"},
      {"negative size",
       rawFile(
           header(
               R"({"dtype": "F32", "shape": [-2, 3], "data_offsets": [0, 24]})"),
           data24),
       "/params/0/init/file", "negative size"},
      {"offsets as floats",
       rawFile(
           header(
               R"({"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24.0]})"),
           data24),
       "/params/0/init/file", "data_offsets: expected [begin, end]"},
      {"unknown key in an entry",
       rawFile(
           header(
               R"({"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24], "x": 1})"),
           data24),
       "/params/0/init/file", "/t/x: unknown key"},
      {"missing data_offsets",
       rawFile(header(R"({"dtype": "F32", "shape": [2, 3]})"), data24),
       "/params/0/init/file", "missing \"data_offsets\""},
      {"metadata not strings",
       rawFile(R"({"__metadata__": {"k": 1}, "t": )" + good + "}", data24),
       "/params/0/init/file", "metadata values must be strings"},
      {"another entry lying",
       rawFile(
           R"({"t": )" + good +
               R"(, "u": {"dtype": "F32", "shape": [9], "data_offsets": [0, 36]}})",
           data24),
       "/params/0/init/file", "/u/data_offsets"},
      {"dtype the format lacks",
       rawFile(
           header(
               R"({"dtype": "X99", "shape": [2, 3], "data_offsets": [0, 24]})"),
           data24),
       "/params/0/init/tensor", "has dtype X99"},
      {"dtype differs from the declaration", rawFile(header(good), data24),
       "/params/0/init/tensor", "has dtype F32, the param is declared f16",
       "f16"},
      {"shape differs from the declaration", rawFile(header(good), data24),
       "/params/0/init/tensor",
       "has shape [2, 3], the param is declared [3, 2]", "f32", "[3, 2]"},
      {"bool holding other bytes",
       rawFile(
           header(R"({"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]})"),
           {1, 2, 0}),
       "/params/0/init/tensor", "holds byte 2 at element 1", "bool", "[3]"},
  };
  for (const Case &c : cases) {
    INFO(c.what);
    TempDir dir;
    writeBytes(dir.path / "weights" / "w.safetensors", c.file);
    mlir::MLIRContext ctx;
    FileImport r = importIn(dir, paramsModel({{c.dtype, c.shape, "t"}}), ctx);
    for (const std::string &e : r.errors)
      UNSCOPED_INFO(e);
    REQUIRE_FALSE(r.model);
    REQUIRE(r.errors.size() == 1);
    std::string prefix =
        (dir.path / "model.json").string() + ": " + c.pointer + ": ";
    CHECK(r.errors[0].rfind(prefix, 0) == 0);
    CHECK(r.errors[0].find(c.message) != std::string::npos);
  }
}

TEST_CASE("missing tensors and files", "[safetensors][bad]") {
  TempDir dir;
  std::mt19937 rng(1);
  writeBytes(dir.path / "weights" / "w.safetensors",
             stFile({{"layer.weight", "F32", {2}, randomBytes(8, rng)}}));
  fs::create_directories(dir.path / "adir");
  struct Case {
    std::string model, pointer, message;
  };
  std::vector<Case> cases = {
      {paramsModel({{"f32", "[2]", "layer.weigth"}}), "/params/0/init/tensor",
       "no tensor \"layer.weigth\" in weights/w.safetensors; did you mean "
       "\"layer.weight\"?"},
      {paramsModel({{"f32", "[2]", "x"}}, "weights/v.safetensors"),
       "/params/0/init/file", "weights/v.safetensors: no such file"},
      {paramsModel({{"f32", "[2]", "x"}}, "adir"), "/params/0/init/file",
       "adir: not a regular file"},
      {paramsModel({{"f32", "[2]", "x"}}, ""), "/params/0/init/file",
       "empty file name"},
  };
  for (const Case &c : cases) {
    INFO(c.model);
    mlir::MLIRContext ctx;
    FileImport r = importIn(dir, c.model, ctx);
    REQUIRE_FALSE(r.model);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0] == (dir.path / "model.json").string() + ": " + c.pointer +
                             ": " + c.message);
  }
  // A missing model file is one line too.
  mlir::MLIRContext ctx;
  std::vector<std::string> errors;
  CHECK_FALSE(
      tcc::importModelFile((dir.path / "nope.json").string(), ctx, errors));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] == (dir.path / "nope.json").string() + ": no such file");
}
