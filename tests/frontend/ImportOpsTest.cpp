//===- ImportOpsTest.cpp - every op imports to the expected ops and types -===//
#include "TestUtil.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace tcc::test;

namespace {

struct OpCase {
  const char *what;
  std::string inputs;           ///< JSON list of input declarations.
  std::string node;             ///< One node, whose outputs the model returns.
  std::vector<std::string> ops; ///< Expected ops of @main, in order.
  std::vector<std::string> types;      ///< Expected result types, in order.
  std::vector<std::string> irHas = {}; ///< Substrings the printed IR holds.
};

std::string in(const std::string &name, const std::string &dtype,
               const std::string &shape) {
  return R"({"name": ")" + name + R"(", "dtype": ")" + dtype +
         R"(", "shape": )" + shape + "}";
}

std::string list(std::initializer_list<std::string> items) {
  std::string s = "[";
  for (const std::string &i : items)
    s += (s.size() > 1 ? ", " : "") + i;
  return s + "]";
}

/// Imports a one-node model returning the node's outputs and checks it.
void check(const OpCase &c) {
  INFO(c.what);
  mlir::MLIRContext ctx;
  nlohmann::json node = nlohmann::json::parse(c.node);
  std::string outputs = node["outputs"].dump();
  std::string json = modelJson(c.inputs, "[" + c.node + "]", outputs);
  Imported r = importJson(ctx, json);
  for (const std::string &e : r.errors)
    UNSCOPED_INFO(e);
  REQUIRE(r.ok);
  INFO(r.ir);
  CHECK(r.ops == c.ops);
  CHECK(r.resultTypes == c.types);
  for (const std::string &s : c.irHas)
    CHECK(r.ir.find(s) != std::string::npos);
}

const std::string X23 = list({in("x", "f32", "[2, 3]")});

} // namespace

TEST_CASE("unary elementwise ops", "[ops]") {
  for (const char *op : {"exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh",
                         "sigmoid", "silu", "erf", "floor", "ceil"})
    check({op,
           X23,
           std::string(R"({"op": ")") + op +
               R"(", "inputs": ["x"], "outputs": ["y"]})",
           {std::string("tcc.") + op},
           {"tensor<2x3xf32>"}});
  for (const char *op : {"neg", "abs", "relu"})
    check({op,
           list({in("x", "i32", "[4]")}),
           std::string(R"({"op": ")") + op +
               R"(", "inputs": ["x"], "outputs": ["y"]})",
           {std::string("tcc.") + op},
           {"tensor<4xi32>"}});
  check({"not",
         list({in("x", "bool", "[4]")}),
         R"({"op": "not", "inputs": ["x"], "outputs": ["y"]})",
         {"tcc.not"},
         {"tensor<4xi1>"}});
  check({"gelu tanh",
         list({in("x", "bf16", "[5]")}),
         R"({"op": "gelu", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"approximate": "tanh"}})",
         {"tcc.gelu"},
         {"tensor<5xbf16>"},
         {"tanh_approx = true"}});
  check({"gelu default",
         list({in("x", "f16", "[5]")}),
         R"({"op": "gelu", "inputs": ["x"], "outputs": ["y"]})",
         {"tcc.gelu"},
         {"tensor<5xf16>"}});
  check({"clamp int",
         list({in("x", "i8", "[5]")}),
         R"({"op": "clamp", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"min": -3, "max": 5}})",
         {"tcc.clamp"},
         {"tensor<5xi8>"},
         {"max = 5.000000e+00", "min = -3.000000e+00"}});
  check({"clamp min only",
         X23,
         R"({"op": "clamp", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"min": 0.5}})",
         {"tcc.clamp"},
         {"tensor<2x3xf32>"},
         {"{min = 5.000000e-01 : f64}"}});
  check({"cast",
         X23,
         R"({"op": "cast", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"to": "f8e4m3"}})",
         {"tcc.cast"},
         {"tensor<2x3xf8E4M3FN>"}});
  check({"cast to the same dtype is no op",
         X23,
         R"({"op": "cast", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"to": "f32"}})",
         {},
         {"tensor<2x3xf32>"}});
}

TEST_CASE("binary elementwise ops broadcast", "[ops]") {
  std::string ab =
      list({in("a", "f32", "[2, 1, 3]"), in("b", "f32", "[4, 1]")});
  for (const char *op :
       {"add", "sub", "mul", "div", "maximum", "minimum", "pow"})
    check({op,
           ab,
           std::string(R"({"op": ")") + op +
               R"(", "inputs": ["a", "b"], "outputs": ["y"]})",
           {std::string("tcc.") + op},
           {"tensor<2x4x3xf32>"}});
  std::string ij = list({in("a", "i64", "[3]"), in("b", "i64", "[]")});
  for (const char *op :
       {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})
    check({op,
           ij,
           std::string(R"({"op": ")") + op +
               R"(", "inputs": ["a", "b"], "outputs": ["y"]})",
           {std::string("tcc.") + op},
           {"tensor<3xi1>"}});
  std::string bb = list({in("a", "bool", "[3]"), in("b", "bool", "[2, 1]")});
  for (const char *op : {"and", "or"})
    check({op,
           bb,
           std::string(R"({"op": ")") + op +
               R"(", "inputs": ["a", "b"], "outputs": ["y"]})",
           {std::string("tcc.") + op},
           {"tensor<2x3xi1>"}});
  check({"select",
         list({in("c", "bool", "[3]"), in("a", "f16", "[2, 3]"),
               in("b", "f16", "[]")}),
         R"({"op": "select", "inputs": ["c", "a", "b"], "outputs": ["y"]})",
         {"tcc.select"},
         {"tensor<2x3xf16>"}});
}

TEST_CASE("sources", "[ops]") {
  check({"constant bf16",
         "[]",
         R"({"op": "constant", "outputs": ["y"],
             "attrs": {"dtype": "bf16", "shape": [2], "value": 1.5}})",
         {"tcc.constant"},
         {"tensor<2xbf16>"},
         {"1.500000e+00 : bf16"}});
  check({"constant scalar by default; i64 exact",
         "[]",
         R"({"op": "constant", "outputs": ["y"],
             "attrs": {"dtype": "i64", "value": 9007199254740993}})",
         {"tcc.constant"},
         {"tensor<i64>"},
         {"9007199254740993 : i64"}});
  check({"constant bool",
         "[]",
         R"({"op": "constant", "outputs": ["y"],
             "attrs": {"dtype": "bool", "shape": [1], "value": true}})",
         {"tcc.constant"},
         {"tensor<1xi1>"},
         {"value = true"}});
  check({"constant f16 overflows to -inf, as a PyTorch fill",
         "[]",
         R"({"op": "constant", "outputs": ["y"],
             "attrs": {"dtype": "f16", "value": -1e9}})",
         {"tcc.constant"},
         {"tensor<f16>"},
         {"0xFC00 : f16"}});
  check({"constant f8e4m3 saturates",
         "[]",
         R"({"op": "constant", "outputs": ["y"],
             "attrs": {"dtype": "f8e4m3", "value": 1000}})",
         {"tcc.constant"},
         {"tensor<f8E4M3FN>"},
         {"4.480000e+02 : f8E4M3FN"}});
  check({"constant -inf from the string (JSON has no infinities)",
         "[]",
         R"({"op": "constant", "outputs": ["y"],
             "attrs": {"dtype": "f32", "value": "-inf"}})",
         {"tcc.constant"},
         {"tensor<f32>"},
         {"0xFF800000 : f32"}});
  check({"constant nan from the string",
         "[]",
         R"({"op": "constant", "outputs": ["y"],
             "attrs": {"dtype": "bf16", "value": "nan"}})",
         {"tcc.constant"},
         {"tensor<bf16>"},
         {"0x7FC0 : bf16"}});
  check({"iota",
         "[]",
         R"({"op": "iota", "outputs": ["y"],
             "attrs": {"dtype": "i32", "shape": [3, 4], "axis": -1}})",
         {"tcc.iota"},
         {"tensor<3x4xi32>"},
         {"axis = 1 : i64"}});
}

TEST_CASE("reductions", "[ops]") {
  std::string x = list({in("x", "f32", "[2, 3, 4]")});
  check({"reduce_sum negative axes sorted",
         x,
         R"({"op": "reduce_sum", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"axes": [-1, 0]}})",
         {"tcc.reduce_sum"},
         {"tensor<3xf32>"},
         {"axes = array<i64: 0, 2>", "keepdims = false"}});
  check({"reduce_max keepdims",
         x,
         R"({"op": "reduce_max", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"axes": [2, 0], "keepdims": true}})",
         {"tcc.reduce_max"},
         {"tensor<1x3x1xf32>"}});
  check({"reduce_mean over all axes by default",
         list({in("x", "f16", "[2, 3]")}),
         R"({"op": "reduce_mean", "inputs": ["x"], "outputs": ["y"]})",
         {"tcc.reduce_mean"},
         {"tensor<f16>"},
         {"axes = array<i64: 0, 1>"}});
  check({"reduce_min int",
         list({in("x", "i32", "[5]")}),
         R"({"op": "reduce_min", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"axes": [0]}})",
         {"tcc.reduce_min"},
         {"tensor<i32>"}});
  check({"argmax",
         x,
         R"({"op": "argmax", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"axis": 1, "keepdims": true}})",
         {"tcc.argmax"},
         {"tensor<2x1x4xi64>"}});
  check({"argmin default axis -1",
         x,
         R"({"op": "argmin", "inputs": ["x"], "outputs": ["y"]})",
         {"tcc.argmin"},
         {"tensor<2x3xi64>"},
         {"axis = 2 : i64"}});
  check({"topk",
         x,
         R"({"op": "topk", "inputs": ["x"], "outputs": ["v", "i"],
             "attrs": {"k": 2, "axis": 1, "largest": false}})",
         {"tcc.topk"},
         {"tensor<2x2x4xf32>", "tensor<2x2x4xi64>"},
         {"largest = false"}});
}

TEST_CASE("matmul", "[ops]") {
  check({"batched with broadcast",
         list({in("a", "f32", "[2, 3, 4]"), in("b", "f32", "[4, 5]")}),
         R"({"op": "matmul", "inputs": ["a", "b"], "outputs": ["y"]})",
         {"tcc.matmul"},
         {"tensor<2x3x5xf32>"}});
  check({"transposes",
         list({in("a", "f32", "[4, 3]"), in("b", "f32", "[5, 4]")}),
         R"({"op": "matmul", "inputs": ["a", "b"], "outputs": ["y"],
             "attrs": {"transpose_a": true, "transpose_b": true}})",
         {"tcc.matmul"},
         {"tensor<3x5xf32>"},
         {"transpose_a = true", "transpose_b = true"}});
  check({"out_dtype",
         list({in("a", "bf16", "[3, 4]"), in("b", "bf16", "[4, 5]")}),
         R"({"op": "matmul", "inputs": ["a", "b"], "outputs": ["y"],
             "attrs": {"out_dtype": "f32"}})",
         {"tcc.matmul"},
         {"tensor<3x5xf32>"}});
  check({"rank-1 a is a row, dropped from the result",
         list({in("a", "f32", "[4]"), in("b", "f32", "[2, 4, 5]")}),
         R"({"op": "matmul", "inputs": ["a", "b"], "outputs": ["y"]})",
         {"tcc.reshape", "tcc.matmul", "tcc.reshape"},
         {"tensor<2x5xf32>"},
         {"tensor<4xf32> -> tensor<1x4xf32>"}});
  check({"rank-1 b is a column",
         list({in("a", "f32", "[3, 4]"), in("b", "f32", "[4]")}),
         R"({"op": "matmul", "inputs": ["a", "b"], "outputs": ["y"]})",
         {"tcc.reshape", "tcc.matmul", "tcc.reshape"},
         {"tensor<3xf32>"},
         {"tensor<4xf32> -> tensor<4x1xf32>"}});
  check({"vector dot vector is a scalar",
         list({in("a", "i8", "[4]"), in("b", "i8", "[4]")}),
         R"({"op": "matmul", "inputs": ["a", "b"], "outputs": ["y"],
             "attrs": {"out_dtype": "i32"}})",
         {"tcc.reshape", "tcc.reshape", "tcc.matmul", "tcc.reshape"},
         {"tensor<i32>"}});
}

TEST_CASE("shape ops", "[ops]") {
  std::string x = list({in("x", "f32", "[2, 3, 4]")});
  check({"reshape with -1",
         x,
         R"({"op": "reshape", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"shape": [4, -1]}})",
         {"tcc.reshape"},
         {"tensor<4x6xf32>"}});
  check({"transpose reverses by default",
         x,
         R"({"op": "transpose", "inputs": ["x"], "outputs": ["y"]})",
         {"tcc.transpose"},
         {"tensor<4x3x2xf32>"},
         {"perm = array<i64: 2, 1, 0>"}});
  check({"transpose negative perm",
         x,
         R"({"op": "transpose", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"perm": [0, -1, 1]}})",
         {"tcc.transpose"},
         {"tensor<2x4x3xf32>"},
         {"perm = array<i64: 0, 2, 1>"}});
  check({"broadcast_to",
         list({in("x", "i64", "[3]")}),
         R"({"op": "broadcast_to", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"shape": [2, 3]}})",
         {"tcc.broadcast_to"},
         {"tensor<2x3xi64>"}});
  check({"concat",
         list({in("a", "f32", "[2, 3]"), in("b", "f32", "[2, 5]")}),
         R"({"op": "concat", "inputs": ["a", "b", "a"], "outputs": ["y"],
             "attrs": {"axis": -1}})",
         {"tcc.concat"},
         {"tensor<2x11xf32>"},
         {"axis = 1 : i64"}});
  check({"slice clamps ends",
         x,
         R"({"op": "slice", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"starts": [1, -3], "ends": [1000, 2], "axes": [0, 2]}})",
         {"tcc.slice"},
         {"tensor<1x3x1xf32>"},
         {"starts = array<i64: 1, 0, 1>", "steps = array<i64: 1, 1, 1>"}});
  check({"slice negative step",
         list({in("x", "f32", "[10]")}),
         R"({"op": "slice", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"starts": [-1], "ends": [-1000], "steps": [-3]}})",
         {"tcc.slice"},
         {"tensor<4xf32>"},
         {"starts = array<i64: 9>", "steps = array<i64: -3>"}});
  check({"slice to nothing",
         list({in("x", "f32", "[10]")}),
         R"({"op": "slice", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"starts": [5], "ends": [2]}})",
         {"tcc.slice"},
         {"tensor<0xf32>"}});
  check({"pad",
         list({in("x", "i32", "[2, 3]")}),
         R"({"op": "pad", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"pads": [1, 0, 2, 3], "value": -7}})",
         {"tcc.pad"},
         {"tensor<5x6xi32>"},
         {"value = -7.000000e+00"}});
  check({"negative pads crop first",
         list({in("x", "f32", "[5, 6]")}),
         R"({"op": "pad", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"pads": [-1, 2, 0, -3]}})",
         {"tcc.slice", "tcc.pad"},
         {"tensor<4x5xf32>"},
         {"starts = array<i64: 1, 0>", "pads = array<i64: 0, 2, 0, 0>"}});
  check({"only negative pads is a slice",
         list({in("x", "f32", "[5, 6]")}),
         R"({"op": "pad", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"pads": [0, -1, -2, 0]}})",
         {"tcc.slice"},
         {"tensor<3x5xf32>"}});
  check({"gather returns a status",
         list({in("d", "f32", "[10, 4]"), in("i", "i32", "[2, 3]")}),
         R"({"op": "gather", "inputs": ["d", "i"], "outputs": ["y"]})",
         {"tcc.gather", "tcc.index_check"},
         {"tensor<2x3x4xf32>", "tensor<i32>"},
         {"bound = 10", "tcc.kind = \"status\"",
          "tcc.message = \"index out of range in /nodes/0 (gather)\""}});
  check({"take_along_axis",
         list({in("d", "f32", "[3, 4]"), in("i", "i64", "[3, 7]")}),
         R"({"op": "take_along_axis", "inputs": ["d", "i"], "outputs": ["y"],
             "attrs": {"axis": 1}})",
         {"tcc.take_along_axis", "tcc.index_check"},
         {"tensor<3x7xf32>", "tensor<i32>"},
         {"bound = 4", "index out of range in /nodes/0 (take_along_axis)"}});
}

TEST_CASE("convolution and pooling", "[ops]") {
  check({"conv2d with bias and groups",
         list({in("x", "f32", "[1, 4, 9, 9]"), in("w", "f32", "[6, 2, 3, 3]"),
               in("b", "f32", "[6]")}),
         R"({"op": "conv2d", "inputs": ["x", "w", "b"], "outputs": ["y"],
             "attrs": {"strides": [2, 2], "pads": [1, 1, 1, 1], "groups": 2}})",
         {"tcc.conv2d"},
         {"tensor<1x6x5x5xf32>"},
         {"dilations = array<i64: 1, 1>", "groups = 2"}});
  check({"conv_transpose2d",
         list({in("x", "f16", "[1, 4, 5, 5]"), in("w", "f16", "[4, 3, 3, 3]")}),
         R"({"op": "conv_transpose2d", "inputs": ["x", "w"], "outputs": ["y"],
             "attrs": {"strides": [2, 2], "pads": [1, 1, 1, 1],
                       "output_padding": [1, 1]}})",
         {"tcc.conv_transpose2d"},
         {"tensor<1x3x10x10xf16>"}});
  std::string x = list({in("x", "f32", "[1, 2, 7, 7]")});
  check({"max_pool2d strides default to the kernel",
         x,
         R"({"op": "max_pool2d", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"kernel": [2, 2], "ceil_mode": true}})",
         {"tcc.max_pool2d"},
         {"tensor<1x2x4x4xf32>"},
         {"strides = array<i64: 2, 2>", "ceil_mode = true"}});
  check({"avg_pool2d",
         x,
         R"({"op": "avg_pool2d", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"kernel": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1],
                       "count_include_pad": false}})",
         {"tcc.avg_pool2d"},
         {"tensor<1x2x7x7xf32>"},
         {"count_include_pad = false", "ceil_mode = false"}});
  check({"global_avg_pool2d",
         x,
         R"({"op": "global_avg_pool2d", "inputs": ["x"], "outputs": ["y"]})",
         {"tcc.global_avg_pool2d"},
         {"tensor<1x2x1x1xf32>"}});
  check({"batch_norm",
         list({in("x", "f32", "[2, 3, 4, 4]"), in("s", "f32", "[3]"),
               in("b", "f32", "[3]"), in("m", "f32", "[3]"),
               in("v", "f32", "[3]")}),
         R"({"op": "batch_norm", "inputs": ["x", "s", "b", "m", "v"],
             "outputs": ["y"], "attrs": {"eps": 0.001}})",
         {"tcc.batch_norm"},
         {"tensor<2x3x4x4xf32>"},
         {"eps = 1.000000e-03"}});
}

TEST_CASE("composites expand to the spec's chains", "[ops][composites]") {
  std::string x = list({in("x", "f32", "[2, 3, 8]")});
  check({"softmax",
         x,
         R"({"op": "softmax", "inputs": ["x"], "outputs": ["y"]})",
         {"tcc.reduce_max", "tcc.sub", "tcc.exp", "tcc.reduce_sum", "tcc.div"},
         {"tensor<2x3x8xf32>"},
         {"axes = array<i64: 2>, keepdims = true"}});
  check({"log_softmax",
         x,
         R"({"op": "log_softmax", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"axis": 1}})",
         {"tcc.reduce_max", "tcc.sub", "tcc.exp", "tcc.reduce_sum", "tcc.log",
          "tcc.sub"},
         {"tensor<2x3x8xf32>"},
         {"axes = array<i64: 1>, keepdims = true"}});
  // Over bf16: the chain in f32 between casts, eps an f32 constant (the
  // composite computes in f32 and rounds its result once); softmax's max
  // in the input's dtype, then cast (exact); gamma and beta broadcast to
  // the row's shape, then cast (converted where the row is read).
  check(
      {"layer_norm",
       list({in("x", "bf16", "[2, 3, 8]"), in("g", "bf16", "[3, 8]"),
             in("b", "bf16", "[8]")}),
       R"({"op": "layer_norm", "inputs": ["x", "g", "b"], "outputs": ["y"],
             "attrs": {"axis": 1, "eps": 0.001}})",
       {"tcc.cast", "tcc.reduce_mean", "tcc.sub", "tcc.mul", "tcc.reduce_mean",
        "tcc.constant", "tcc.add", "tcc.rsqrt", "tcc.mul", "tcc.broadcast_to",
        "tcc.cast", "tcc.mul", "tcc.broadcast_to", "tcc.cast", "tcc.add",
        "tcc.cast"},
       {"tensor<2x3x8xbf16>"},
       {"axes = array<i64: 1, 2>", "1.000000e-03 : f32", "tensor<2x3x8xf32>"}});
  check({"softmax over f16",
         list({in("x", "f16", "[4, 8]")}),
         R"({"op": "softmax", "inputs": ["x"], "outputs": ["y"]})",
         {"tcc.reduce_max", "tcc.cast", "tcc.cast", "tcc.sub", "tcc.exp",
          "tcc.reduce_sum", "tcc.div", "tcc.cast"},
         {"tensor<4x8xf16>"},
         {"tensor<4x1xf32>"}});
  check({"layer_norm without affine",
         x,
         R"({"op": "layer_norm", "inputs": ["x"], "outputs": ["y"]})",
         {"tcc.reduce_mean", "tcc.sub", "tcc.mul", "tcc.reduce_mean",
          "tcc.constant", "tcc.add", "tcc.rsqrt", "tcc.mul"},
         {"tensor<2x3x8xf32>"},
         {"9.99999974E-6 : f32"}});
  check({"rms_norm",
         list({in("x", "f32", "[2, 8]"), in("g", "f32", "[8]")}),
         R"({"op": "rms_norm", "inputs": ["x", "g"], "outputs": ["y"]})",
         {"tcc.mul", "tcc.reduce_mean", "tcc.constant", "tcc.add", "tcc.rsqrt",
          "tcc.mul", "tcc.mul"},
         {"tensor<2x8xf32>"},
         {"9.99999997E-7 : f32"}});
  check({"linear",
         list({in("x", "f32", "[2, 3, 4]"), in("w", "f32", "[5, 4]"),
               in("b", "f32", "[5]")}),
         R"({"op": "linear", "inputs": ["x", "w", "b"], "outputs": ["y"]})",
         {"tcc.matmul", "tcc.add"},
         {"tensor<2x3x5xf32>"},
         {"transpose_b = true"}});
  check({"linear on a vector",
         list({in("x", "f32", "[4]"), in("w", "f32", "[5, 4]")}),
         R"({"op": "linear", "inputs": ["x", "w"], "outputs": ["y"]})",
         {"tcc.reshape", "tcc.matmul", "tcc.reshape"},
         {"tensor<5xf32>"}});
}

TEST_CASE("module structure", "[module]") {
  mlir::MLIRContext ctx;
  std::string json =
      modelJson(list({in("x", "f32", "[3]"), in("y", "f32", "[3]")}),
                R"([{"op": "add", "inputs": ["x", "w"], "outputs": ["s"],
           "name": "the_add"},
          {"op": "gather", "inputs": ["w", "i"], "outputs": ["g"]},
          {"op": "constant", "outputs": ["i"],
           "attrs": {"dtype": "i32", "value": 1}}])",
                R"(["s", "x", "x", "w"])",
                R"([{"name": "w", "dtype": "f32", "shape": [3],
           "init": {"value": [1, 2, 3]}}])");
  // "i" is used before its definition: fix the order and import again.
  Imported bad = importJson(ctx, json);
  REQUIRE_FALSE(bad.ok);
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors[0].rfind("test.json: /nodes/1/inputs/1: ", 0) == 0);

  json = modelJson(list({in("x", "f32", "[3]"), in("y", "f32", "[3]")}),
                   R"([{"op": "add", "inputs": ["x", "w"], "outputs": ["s"],
                        "name": "the_add"},
                       {"op": "constant", "outputs": ["i"],
                        "attrs": {"dtype": "i32", "value": 1}},
                       {"op": "gather", "inputs": ["w", "i"],
                        "outputs": ["g"]}])",
                   R"(["s", "x", "x", "w"])",
                   R"([{"name": "w", "dtype": "f32", "shape": [3],
                        "init": {"value": [1, 2, 3]}}])");
  Imported r = importJson(ctx, json);
  for (const std::string &e : r.errors)
    UNSCOPED_INFO(e);
  REQUIRE(r.ok);
  INFO(r.ir);
  CHECK(r.model->name == "t");
  CHECK(r.ir.find("module attributes {tcc.model = \"t\"}") !=
        std::string::npos);
  CHECK(r.ir.find("attributes {tcc.entry}") != std::string::npos);
  // Inputs then params, all kept (even unused ones).
  CHECK(r.ir.find("%arg0: tensor<3xf32> {tcc.kind = \"input\", tcc.name = "
                  "\"x\"}, %arg1: tensor<3xf32> {tcc.kind = \"input\", "
                  "tcc.name = \"y\"}, %arg2: tensor<3xf32> {tcc.kind = "
                  "\"param\", tcc.name = \"w\"}") != std::string::npos);
  // Outputs in order (an input twice, a param directly), then the status.
  CHECK(r.ir.find("return %0, %arg0, %arg0, %arg2, %3") != std::string::npos);
  CHECK(r.resultTypes.size() == 5);
  CHECK(r.ir.find("tensor<3xf32> {tcc.name = \"s\"}, tensor<3xf32> {tcc.name "
                  "= \"x\"}, tensor<3xf32> {tcc.name = \"x\"}") !=
        std::string::npos);
  REQUIRE(r.model->params.size() == 1);
  const tcc::ParamData &w = r.model->params[0];
  CHECK(w.name == "w");
  CHECK(w.dtype == tcc::DType::F32);
  CHECK(w.shape == std::vector<int64_t>{3});
  REQUIRE(w.bytes.size() == 12);
  float vals[3];
  std::memcpy(vals, w.bytes.data(), 12);
  CHECK(vals[0] == 1.0f);
  CHECK(vals[2] == 3.0f);
  // Each op carries its node's pointer (and name) as location.
  auto func = *r.model->module->getOps<mlir::func::FuncOp>().begin();
  mlir::Operation &first = func.getBody().front().front();
  std::string loc;
  llvm::raw_string_ostream os(loc);
  first.getLoc().print(os);
  CHECK(loc == "loc(\"/nodes/0\"(\"the_add\"))");
}

TEST_CASE("the model files beside the tests import", "[models]") {
  namespace fs = std::filesystem;
  int count = 0;
  for (const auto &entry : fs::directory_iterator(TCC_FRONTEND_MODELS_DIR)) {
    if (entry.path().extension() != ".json")
      continue;
    INFO(entry.path().string());
    mlir::MLIRContext ctx;
    std::vector<std::string> errors;
    auto m = tcc::importModelFile(entry.path().string(), ctx, errors);
    for (const std::string &e : errors)
      UNSCOPED_INFO(e);
    CHECK(m.has_value());
    ++count;
  }
  CHECK(count >= 3);
}
