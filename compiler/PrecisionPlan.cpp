//===- PrecisionPlan.cpp - --precision-plan files -------------------------===//
#include "compiler/PrecisionPlan.h"

#include "ir/TccOps.h"
#include "runtime/src/FileIO.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <nlohmann/json.hpp>

#include <map>
#include <set>

using namespace mlir;
using nlohmann::json;

namespace {

/// The format's dtype names a plan uses, as MLIR types.
Type precisionNamed(MLIRContext *ctx, const std::string &name) {
  Builder b(ctx);
  if (name == "f32")
    return b.getF32Type();
  if (name == "bf16")
    return b.getBF16Type();
  if (name == "f16")
    return b.getF16Type();
  if (name == "f8e4m3")
    return b.getType<Float8E4M3FNType>();
  if (name == "f8e5m2")
    return b.getType<Float8E5M2Type>();
  if (name == "i8")
    return b.getI8Type();
  return {};
}

constexpr const char *kKnown = "f32, bf16, f16, f8e4m3, f8e5m2, i8";

struct Entry {
  mlir::tcc::MatmulOp op;
  int64_t tileM = 0, tileN = 0;
  std::vector<Type> precisions; // those the tiles use, in first-use order
  std::vector<int8_t> codes;    // row-major [gm, gn], into `precisions`
};

} // namespace

/// The names a plan may give the node an op came from: the JSON format's
/// node pointer ("/nodes/3") and name, or the ONNX importer's
/// `node 3 "name" (MatMul)`, its "node 3" and its name.
auto ::tcc::planNodeKeys(Location loc) -> std::vector<std::string> {
  std::vector<std::string> keys;
  while (auto n = dyn_cast<NameLoc>(loc)) {
    std::string s = n.getName().str();
    keys.push_back(s);
    if (s.rfind("node ", 0) == 0) {
      size_t q = s.find(" \"");
      size_t space = s.find(' ', 5);
      keys.push_back(s.substr(0, std::min(q, space)));
      size_t end = s.rfind("\" (");
      if (q != std::string::npos && end != std::string::npos && end > q + 2)
        keys.push_back(s.substr(q + 2, end - q - 2));
    }
    loc = n.getChildLoc();
  }
  return keys;
}

bool ::tcc::applyPrecisionPlan(::tcc::ImportedModel &model,
                               const std::string &path, std::string &error) {
  auto fail = [&](const std::string &msg) {
    error = path + ": " + msg;
    return false;
  };
  std::string text;
  if (!::tcc::io::readRegularFile(path, text, error))
    return false;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return fail("a precision plan is a JSON object");
  for (auto &[key, value] : j.items())
    if (key != "format" && key != "version" && key != "matmuls")
      return fail("unknown key \"" + key +
                  "\" (a plan holds format, version and matmuls)");
  // value() with a json default: a key of another type is no exception.
  if (j.value("format", json()) != json("tcc-precision-plan") ||
      !j.value("version", json()).is_number_integer() ||
      j["version"].get<int64_t>() != 1)
    return fail("not a precision plan: expected \"format\": "
                "\"tcc-precision-plan\" and \"version\": 1");
  if (!j.contains("matmuls") || !j["matmuls"].is_array())
    return fail("\"matmuls\" must be an array");

  ModuleOp module = *model.module;
  MLIRContext *ctx = module.getContext();
  func::FuncOp entry;
  module.walk([&](func::FuncOp f) {
    if (f->hasAttr("tcc.entry"))
      entry = f;
  });
  if (!entry)
    return fail("the model has no entry function");
  // The matmuls by the names of their nodes.
  std::map<std::string, std::vector<mlir::tcc::MatmulOp>> byKey;
  std::vector<std::string> firstKeys;
  entry.walk([&](mlir::tcc::MatmulOp op) {
    std::vector<std::string> keys = ::tcc::planNodeKeys(op.getLoc());
    if (!keys.empty())
      firstKeys.push_back(keys.front());
    for (const std::string &k : std::set<std::string>(keys.begin(), keys.end()))
      byKey[k].push_back(op);
  });
  auto known = [&] {
    std::string s;
    for (size_t i = 0; i < firstKeys.size() && i < 8; ++i)
      s += (i ? ", " : "") + firstKeys[i];
    if (firstKeys.size() > 8)
      s += ", ...";
    return firstKeys.empty() ? std::string("the model has none")
                             : "its matmuls: " + s;
  };

  std::vector<Entry> entries;
  std::set<Operation *> planned;
  for (auto [i, m] : llvm::enumerate(j["matmuls"])) {
    std::string at = "matmuls[" + std::to_string(i) + "]";
    if (!m.is_object())
      return fail(at + " must be an object");
    for (auto &[key, value] : m.items())
      if (key != "node" && key != "tile" && key != "precision" &&
          key != "precisions" && key != "tiles")
        return fail(at + ": unknown key \"" + key +
                    "\" (known: node, tile, precision, precisions, tiles)");
    if (!m.contains("node") || !m["node"].is_string())
      return fail(at + ": \"node\" (a string) names the matmul's node");
    std::string node = m["node"].get<std::string>();
    auto found = byKey.find(node);
    if (found == byKey.end())
      return fail(at + ": \"" + node + "\" names no matmul of the model (" +
                  known() + ")");
    if (found->second.size() != 1)
      return fail(at + ": \"" + node + "\" names " +
                  std::to_string(found->second.size()) +
                  " matmuls; a plan names one");
    Entry e;
    e.op = found->second.front();
    if (!planned.insert(e.op).second)
      return fail(at + ": \"" + node + "\" is planned twice");
    Type elt = e.op.getType().getElementType();
    if (!isa<FloatType>(elt) ||
        !isa<FloatType>(e.op.getA().getType().getElementType()))
      return fail(at + ": \"" + node +
                  "\" is not a matmul of float operands to a float result");
    if (e.op.getA().getType().getElementType() != elt)
      return fail(at + ": \"" + node +
                  "\" changes the dtype (out_dtype); a planned matmul keeps "
                  "its operands'");
    ArrayRef<int64_t> shape = e.op.getType().getShape();
    int64_t rows = shape[shape.size() - 2], cols = shape.back();
    const json &tile = m.value("tile", json());
    if (!tile.is_array() || tile.size() != 2 || !tile[0].is_number_integer() ||
        !tile[1].is_number_integer() || tile[0].get<int64_t>() < 1 ||
        tile[1].get<int64_t>() < 1 || tile[0].get<int64_t>() > (1 << 20) ||
        tile[1].get<int64_t>() > (1 << 20))
      return fail(at + ": \"tile\" must be [rows, columns], each 1 to 2^20");
    e.tileM = tile[0].get<int64_t>();
    e.tileN = tile[1].get<int64_t>();
    int64_t gm = llvm::divideCeil(rows, e.tileM);
    int64_t gn = llvm::divideCeil(cols, e.tileN);
    auto precision = [&](const json &name, const std::string &where,
                         Type &out) {
      if (!name.is_string() ||
          !(out = precisionNamed(ctx, name.get<std::string>())))
        return fail(at + ": " + where + ": unknown precision " + name.dump() +
                    " (known: " + kKnown + ")");
      return true;
    };
    if (m.contains("precision")) {
      // One precision for every tile.
      if (m.contains("precisions") || m.contains("tiles"))
        return fail(at + ": \"precision\" (every tile's) or \"precisions\" "
                         "and \"tiles\", not both");
      Type t;
      if (!precision(m["precision"], "precision", t))
        return false;
      e.precisions = {t};
      e.codes.assign(size_t(gm * gn), 0);
    } else {
      const json &names = m.value("precisions", json());
      if (!names.is_array() || names.empty() || names.size() > 127)
        return fail(at + ": \"precisions\" lists 1 to 127 precisions, and "
                         "\"tiles\" gives each tile's index into it");
      std::vector<Type> listed;
      for (auto [k, name] : llvm::enumerate(names)) {
        Type t;
        if (!precision(name, "precisions[" + std::to_string(k) + "]", t))
          return false;
        if (llvm::is_contained(listed, t))
          return fail(at + ": precision " + name.dump() + " is listed twice");
        listed.push_back(t);
      }
      const json &tiles = m.value("tiles", json());
      auto gridText = [&] {
        return "the output [" + std::to_string(rows) + ", " +
               std::to_string(cols) + "] in tiles of " +
               std::to_string(e.tileM) + " x " + std::to_string(e.tileN) +
               " is " + std::to_string(gm) + " x " + std::to_string(gn);
      };
      if (!tiles.is_array() || int64_t(tiles.size()) != gm)
        return fail(at + ": \"tiles\" must be " + std::to_string(gm) +
                    " rows of " + std::to_string(gn) + " codes: " + gridText());
      std::map<int64_t, int8_t> remap; // listed index -> used index
      for (int64_t r = 0; r < gm; ++r) {
        const json &row = tiles[r];
        if (!row.is_array() || int64_t(row.size()) != gn)
          return fail(at + ": tiles[" + std::to_string(r) + "] must hold " +
                      std::to_string(gn) + " codes: " + gridText());
        for (int64_t c = 0; c < gn; ++c) {
          const json &code = row[c];
          if (!code.is_number_integer() || code.get<int64_t>() < 0 ||
              code.get<int64_t>() >= int64_t(listed.size()))
            return fail(at + ": tiles[" + std::to_string(r) + "][" +
                        std::to_string(c) + "] = " + code.dump() +
                        " is not an index into \"precisions\" (0 to " +
                        std::to_string(listed.size() - 1) + ")");
          int64_t k = code.get<int64_t>();
          auto [it, added] = remap.try_emplace(k, int8_t(remap.size()));
          if (added)
            e.precisions.push_back(listed[k]);
          e.codes.push_back(it->second);
        }
      }
    }
    entries.push_back(std::move(e));
  }

  // Every entry checked: now the model changes. Each plan's codes become a
  // param after the last argument, named after the node, uniquely.
  std::set<std::string> names;
  for (unsigned i = 0; i < entry.getNumArguments(); ++i)
    if (auto n = entry.getArgAttrOfType<StringAttr>(i, "tcc.name"))
      names.insert(n.getValue().str());
  for (Entry &e : entries) {
    ArrayRef<int64_t> shape = e.op.getType().getShape();
    int64_t gm = llvm::divideCeil(shape[shape.size() - 2], e.tileM);
    int64_t gn = llvm::divideCeil(shape.back(), e.tileN);
    OpBuilder b(e.op);
    auto codesType = RankedTensorType::get({gm, gn}, b.getI8Type());
    unsigned argNo = entry.getNumArguments();
    // The node's name where it has one, else its pointer.
    std::string base =
        ::tcc::planNodeKeys(e.op.getLoc()).back() + ".precision_codes";
    std::string name = base;
    for (int k = 2; names.count(name); ++k)
      name = base + "." + std::to_string(k);
    names.insert(name);
    if (failed(entry.insertArgument(argNo, codesType, {}, e.op.getLoc())))
      return fail("could not add the plan's codes to the model");
    entry.setArgAttr(argNo, "tcc.name", b.getStringAttr(name));
    entry.setArgAttr(argNo, "tcc.kind", b.getStringAttr("param"));
    ::tcc::ParamData p;
    p.name = name;
    p.dtype = ::tcc::DType::I8;
    p.shape = {gm, gn};
    p.bytes.resize(e.codes.size());
    std::memcpy(p.bytes.mutableData(), e.codes.data(), e.codes.size());
    model.params.push_back(std::move(p));
    auto plan =
        mlir::tcc::PrecisionPlanAttr::get(ctx, e.tileM, e.tileN, e.precisions);
    auto planned = mlir::tcc::PlannedMatmulOp::create(
        b, e.op.getLoc(), e.op.getType(), e.op.getA(), e.op.getB(),
        entry.getArgument(argNo), plan, e.op.getTransposeAAttr(),
        e.op.getTransposeBAttr());
    e.op.replaceAllUsesWith(planned.getResult());
    e.op.erase();
  }
  return true;
}
