//===- ModelImporter.cpp - model JSON to the tcc dialect ------------------===//
//
// The top level of the import: the model's header, its declarations, the
// node loop with its name bookkeeping, the outputs, and the final verifier
// run. Ops are built by the op table (Ops.cpp, Composites.cpp), parameter
// initialisers in ParamInit.cpp.
//
//===----------------------------------------------------------------------===//
#include "frontend/Importer.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>

namespace tcc {

using namespace mlir;

namespace {
constexpr size_t kMaxNameLength = 256;
constexpr size_t kMaxModelNameLength = 64;
/// Model files above this are refused before reading: weights belong in
/// safetensors files, and a model description is kilobytes.
constexpr uint64_t kMaxModelFileBytes = uint64_t(1) << 30;
std::atomic<uint64_t> internalErrors{0};
} // namespace

uint64_t internalImportErrorCount() { return internalErrors.load(); }

void noteInternalImportError() { ++internalErrors; }

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

Type elementTypeOf(MLIRContext &ctx, DType t) {
  Builder b(&ctx);
  switch (t) {
  case DType::F64:
    return b.getF64Type();
  case DType::F32:
    return b.getF32Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::F8E4M3:
    return Float8E4M3FNType::get(&ctx);
  case DType::F8E5M2:
    return Float8E5M2Type::get(&ctx);
  case DType::I8:
    return b.getIntegerType(8);
  case DType::I32:
    return b.getIntegerType(32);
  case DType::I64:
    return b.getIntegerType(64);
  case DType::Bool:
    return b.getI1Type();
  }
  return {};
}

std::optional<DType> dtypeOfElement(Type t) {
  if (t.isF64())
    return DType::F64;
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (isa<Float8E4M3FNType>(t))
    return DType::F8E4M3;
  if (isa<Float8E5M2Type>(t))
    return DType::F8E5M2;
  if (t.isSignlessInteger(8))
    return DType::I8;
  if (t.isSignlessInteger(32))
    return DType::I32;
  if (t.isSignlessInteger(64))
    return DType::I64;
  if (t.isSignlessInteger(1))
    return DType::Bool;
  return std::nullopt;
}

std::string checkShapeLimits(const Shape &s) {
  if (s.size() > kMaxRank)
    return "rank " + std::to_string(s.size()) + " exceeds the limit of " +
           std::to_string(kMaxRank);
  // Sizes of 0 count as 1: an empty tensor must not hide a product that
  // overflows wherever strides are computed from the other sizes.
  Shape nonEmpty;
  for (int64_t d : s) {
    if (d < 0 || d > kMaxElements)
      return "shape " + shapeToString(s) + " has a size outside [0, 2^40]";
    nonEmpty.push_back(std::max<int64_t>(d, 1));
  }
  if (numElements(nonEmpty, kMaxElements) < 0)
    return "shape " + shapeToString(s) + " has more than 2^40 elements" +
           (numElements(s, kMaxElements) >= 0 ? " (counting sizes of 0 as 1)"
                                              : "");
  return "";
}

std::optional<Shape> readShape(const Json &v, const std::string &pointer,
                               Diagnostics &diag) {
  if (!v.is_array()) {
    diag.error(pointer,
               "expected a shape (a list of sizes), got " + jsonTypeName(v));
    return std::nullopt;
  }
  if (v.size() > kMaxRank) {
    diag.error(pointer, "rank " + std::to_string(v.size()) +
                            " exceeds the limit of " +
                            std::to_string(kMaxRank));
    return std::nullopt;
  }
  Shape s;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = pointerAppend(pointer, i);
    std::optional<int64_t> d = readInt(v[i], p, diag);
    if (!d)
      return std::nullopt;
    if (*d < 0 || *d > kMaxElements) {
      diag.error(p, "size " + std::to_string(*d) +
                        (*d < 0 ? " is negative" : " exceeds 2^40"));
      return std::nullopt;
    }
    s.push_back(*d);
  }
  std::string problem = checkShapeLimits(s);
  if (!problem.empty()) {
    diag.error(pointer, problem);
    return std::nullopt;
  }
  return s;
}

std::optional<DType> readDType(const Json &v, const std::string &pointer,
                               Diagnostics &diag) {
  std::optional<std::string> s = readString(v, pointer, diag);
  if (!s)
    return std::nullopt;
  if (std::optional<DType> t = parseDType(*s))
    return t;
  // PyTorch and NumPy spellings are the likely mistakes.
  static const std::pair<const char *, const char *> aliases[] = {
      {"float64", "f64"},
      {"double", "f64"},
      {"float32", "f32"},
      {"float", "f32"},
      {"float16", "f16"},
      {"half", "f16"},
      {"bfloat16", "bf16"},
      {"int8", "i8"},
      {"int32", "i32"},
      {"int", "i32"},
      {"int64", "i64"},
      {"long", "i64"},
      {"bool_", "bool"},
      {"boolean", "bool"},
      {"float8_e4m3fn", "f8e4m3"},
      {"float8_e5m2", "f8e5m2"}};
  std::string hint;
  for (const auto &a : aliases)
    if (*s == a.first)
      hint = a.second;
  std::vector<std::string> names;
  for (DType t :
       {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3,
        DType::F8E5M2, DType::I8, DType::I32, DType::I64, DType::Bool})
    names.push_back(dtypeName(t));
  if (hint.empty())
    hint = closestMatch(*s, names);
  std::string msg = "unknown dtype \"" + *s + "\"";
  if (!hint.empty()) {
    msg += "; did you mean \"" + hint + "\"?";
  } else {
    msg += " (expected one of";
    for (size_t i = 0; i < names.size(); ++i)
      msg += (i ? ", " : " ") + names[i];
    msg += ")";
  }
  diag.error(pointer, msg);
  return std::nullopt;
}

std::optional<Scalar> readScalar(const Json &v, DType dtype,
                                 const std::string &pointer, Diagnostics &diag,
                                 bool exactInDouble) {
  Scalar s;
  if (dtype == DType::Bool) {
    if (v.is_boolean()) {
      s.i = v.get<bool>();
    } else if (v.is_number_integer() && !v.is_number_unsigned() &&
               v.get<int64_t>() == 0) {
      s.i = 0;
    } else if (v.is_number_unsigned() && v.get<uint64_t>() <= 1) {
      s.i = (int64_t)v.get<uint64_t>();
    } else {
      diag.error(pointer, "expected true, false, 0 or 1 for a bool, got " +
                              (v.is_number() ? v.dump() : jsonTypeName(v)));
      return std::nullopt;
    }
    s.f = (double)s.i;
    return s;
  }
  if (isFloat(dtype)) {
    // JSON has no infinities or NaN, yet masks need -inf: float literals
    // may be the strings "inf", "-inf" and "nan".
    if (v.is_string()) {
      const std::string &text = v.get_ref<const std::string &>();
      if (text == "inf" || text == "+inf" || text == "-inf" || text == "nan") {
        s.f = text == "nan" ? std::numeric_limits<double>::quiet_NaN()
              : text == "-inf" ? -std::numeric_limits<double>::infinity()
                               : std::numeric_limits<double>::infinity();
        return s;
      }
      diag.error(pointer, "expected a number or \"inf\", \"-inf\", \"nan\", "
                          "got the string \"" + text.substr(0, 32) + "\"");
      return std::nullopt;
    }
    std::optional<double> d = readNumber(v, pointer, diag);
    if (!d)
      return std::nullopt;
    s.f = *d;
    return s;
  }
  std::optional<int64_t> i = readInt(v, pointer, diag);
  if (!i)
    return std::nullopt;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  if (dtype == DType::I8) {
    lo = -128;
    hi = 127;
  } else if (dtype == DType::I32) {
    lo = INT32_MIN;
    hi = INT32_MAX;
  }
  if (*i < lo || *i > hi) {
    diag.error(pointer, "value " + std::to_string(*i) + " out of range for " +
                            dtypeName(dtype));
    return std::nullopt;
  }
  if (exactInDouble && (*i > (int64_t(1) << 53) || *i < -(int64_t(1) << 53))) {
    diag.error(pointer, "value " + std::to_string(*i) +
                            " is beyond 2^53, which this attribute cannot "
                            "hold exactly");
    return std::nullopt;
  }
  s.i = *i;
  s.f = (double)*i;
  return s;
}

//===----------------------------------------------------------------------===//
// Importer
//===----------------------------------------------------------------------===//

Importer::Importer(MLIRContext &ctx, Diagnostics &diag, std::string baseDir,
                   const ImportLimits &limits)
    : ctx(ctx), diag(diag), builder(&ctx), baseDir(std::move(baseDir)),
      limits(limits) {}

std::optional<std::string> Importer::readName(const Json &v,
                                              const std::string &pointer) {
  std::optional<std::string> s = readString(v, pointer, diag);
  if (!s)
    return std::nullopt;
  bool ok = !s->empty() && s->size() <= kMaxNameLength;
  for (unsigned char c : *s)
    ok &= c >= 0x20 && c != 0x7f;
  if (!ok) {
    diag.error(pointer, "a name must be 1 to " +
                            std::to_string(kMaxNameLength) +
                            " bytes without control characters");
    return std::nullopt;
  }
  return s;
}

bool Importer::define(const std::string &name, const std::string &pointer,
                      Value value) {
  auto [it, inserted] = defs.emplace(name, Def{value, pointer});
  if (!inserted) {
    diag.error(pointer,
               "\"" + name + "\" is already defined at " + it->second.pointer);
    return false;
  }
  return true;
}

bool Importer::resolve(const std::string &name, const std::string &pointer,
                       size_t nodeIndex, Value &out) {
  out = {};
  auto it = defs.find(name);
  if (it != defs.end()) {
    out = it->second.value;
    return true;
  }
  auto later = nodeDefs.find(name);
  if (later != nodeDefs.end() && later->second.first == nodeIndex) {
    diag.error(pointer, "node reads its own output \"" + name + "\"");
    return false;
  }
  if (later != nodeDefs.end() && later->second.first > nodeIndex) {
    diag.error(pointer, "\"" + name + "\" is used before its definition at " +
                            later->second.second +
                            " (nodes must be in topological order, so they "
                            "cannot form a cycle)");
    return false;
  }
  std::vector<std::string> known;
  for (const auto &d : defs)
    known.push_back(d.first);
  std::string hint = closestMatch(name, known);
  diag.error(pointer,
             "\"" + name + "\" is not defined" +
                 (hint.empty() ? "" : "; did you mean \"" + hint + "\"?"));
  return false;
}

bool Importer::readHeader(const Json &root, std::string &name) {
  std::vector<std::string> keys = {"format", "version", "name",   "inputs",
                                   "params", "nodes",   "outputs"};
  bool ok = checkKeys(root, "", keys, "the model", diag);
  if (!root.contains("format")) {
    diag.error("", "missing \"format\": \"tcc-model\"");
    return false;
  }
  std::optional<std::string> format =
      readString(root["format"], "/format", diag);
  if (!format)
    return false;
  if (*format != "tcc-model") {
    diag.error("/format",
               "format must be \"tcc-model\", got \"" + *format + "\"");
    return false;
  }
  if (!root.contains("version")) {
    diag.error("", "missing \"version\": 1");
    return false;
  }
  std::optional<int64_t> version = readInt(root["version"], "/version", diag);
  if (!version)
    return false;
  if (*version != 1) {
    diag.error("/version", "unsupported version " + std::to_string(*version) +
                               "; this tcc reads version 1");
    return false;
  }
  name = "model";
  if (root.contains("name")) {
    std::optional<std::string> n = readString(root["name"], "/name", diag);
    if (!n)
      return false;
    auto isIdent = [](char c, bool first) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
             (!first && c >= '0' && c <= '9');
    };
    bool valid = !n->empty() && n->size() <= kMaxModelNameLength;
    for (size_t i = 0; i < n->size(); ++i)
      valid &= isIdent((*n)[i], i == 0);
    if (!valid) {
      // The name becomes C symbols of the generated library.
      diag.error("/name", "a model name must be a C identifier of at most " +
                              std::to_string(kMaxModelNameLength) +
                              " characters ([A-Za-z_][A-Za-z0-9_]*)");
      return false;
    }
    name = *n;
  }
  for (const char *list : {"inputs", "params", "nodes", "outputs"})
    if (root.contains(list) && !root[list].is_array()) {
      diag.error(std::string("/") + list,
                 "expected a list, got " + jsonTypeName(root[list]));
      ok = false;
    }
  if (!root.contains("outputs")) {
    diag.error("", "missing \"outputs\"");
    ok = false;
  } else if (root["outputs"].is_array() && root["outputs"].empty()) {
    diag.error("/outputs", "a model needs at least one output");
    ok = false;
  }
  return ok;
}

void Importer::readDecl(const Json &v, const std::string &pointer, bool isParam,
                        Decl &d) {
  d.pointer = pointer;
  if (!v.is_object()) {
    diag.error(pointer, "expected an object, got " + jsonTypeName(v));
    return;
  }
  std::vector<std::string> keys = {"name", "dtype", "shape"};
  if (isParam)
    keys.push_back("init");
  bool ok = checkKeys(v, pointer, keys, isParam ? "a param" : "an input", diag);
  for (const std::string &k : keys) {
    if (!v.contains(k)) {
      diag.error(pointer, "missing \"" + k + "\"" +
                              (k == "init" ? ": every param needs an "
                                             "initialiser"
                                           : ""));
      ok = false;
    }
  }
  if (v.contains("name")) {
    if (std::optional<std::string> n = readName(v["name"], pointer + "/name"))
      d.name = *n;
    else
      ok = false;
  }
  if (v.contains("dtype")) {
    if (std::optional<DType> t =
            readDType(v["dtype"], pointer + "/dtype", diag))
      d.dtype = *t;
    else
      ok = false;
  }
  if (v.contains("shape")) {
    if (std::optional<Shape> s =
            readShape(v["shape"], pointer + "/shape", diag))
      d.shape = *s;
    else
      ok = false;
  }
  d.ok = ok;
}

void Importer::importNode(const Json &node, size_t index) {
  std::string ptr = pointerAppend("/nodes", index);
  if (!node.is_object()) {
    diag.error(ptr, "expected a node object, got " + jsonTypeName(node));
    return;
  }
  bool ok = checkKeys(node, ptr, {"op", "inputs", "outputs", "attrs", "name"},
                      "a node", diag);

  const OpInfo *info = nullptr;
  if (!node.contains("op")) {
    diag.error(ptr, "missing \"op\"");
  } else if (std::optional<std::string> op =
                 readString(node["op"], ptr + "/op", diag)) {
    info = findOp(*op);
    if (!info) {
      std::string hint = closestMatch(*op, allOpNames());
      diag.error(ptr + "/op",
                 "unknown op \"" + *op + "\"" +
                     (hint.empty() ? "" : "; did you mean \"" + hint + "\"?"));
    }
  }
  ok &= info != nullptr;

  std::string nodeName;
  if (node.contains("name")) {
    if (std::optional<std::string> n = readName(node["name"], ptr + "/name"))
      nodeName = *n;
    else
      ok = false;
  }

  // Output names, claimed even when the node fails, so that later uses of
  // them are skipped instead of reported again.
  std::vector<std::pair<std::string, std::string>> outs;
  if (!node.contains("outputs")) {
    diag.error(ptr, "missing \"outputs\"");
    ok = false;
  } else if (!node["outputs"].is_array()) {
    diag.error(ptr + "/outputs", "expected a list of names, got " +
                                     jsonTypeName(node["outputs"]));
    ok = false;
  } else {
    const Json &list = node["outputs"];
    for (size_t j = 0; j < list.size(); ++j) {
      std::string p = pointerAppend(ptr + "/outputs", j);
      if (std::optional<std::string> n = readName(list[j], p))
        outs.push_back({*n, p});
      else
        ok = false;
    }
    if (info && list.size() != info->numOutputs) {
      diag.error(ptr + "/outputs",
                 std::string(info->name) + " has " +
                     std::to_string(info->numOutputs) + " output" +
                     (info->numOutputs == 1 ? "" : "s") + ", got " +
                     std::to_string(list.size()) + " names");
      ok = false;
    }
  }

  std::vector<Value> inputs;
  bool poisoned = false;
  if (node.contains("inputs")) {
    const Json &list = node["inputs"];
    if (!list.is_array()) {
      diag.error(ptr + "/inputs",
                 "expected a list of names, got " + jsonTypeName(list));
      ok = false;
    } else {
      if (info &&
          (list.size() < info->minInputs || list.size() > info->maxInputs)) {
        std::string want =
            info->minInputs == info->maxInputs
                ? std::to_string(info->minInputs)
                : std::to_string(info->minInputs) +
                      (info->maxInputs == ~0u
                           ? " or more"
                           : " to " + std::to_string(info->maxInputs));
        diag.error(ptr + "/inputs", std::string(info->name) + " takes " + want +
                                        " inputs, got " +
                                        std::to_string(list.size()));
        ok = false;
      }
      for (size_t j = 0; j < list.size(); ++j) {
        std::string p = pointerAppend(ptr + "/inputs", j);
        std::optional<std::string> n = readString(list[j], p, diag);
        Value v;
        if (!n || !resolve(*n, p, index, v))
          ok = false;
        else if (!v)
          poisoned = true;
        inputs.push_back(v);
      }
    }
  } else if (info && info->minInputs > 0) {
    diag.error(ptr, "missing \"inputs\"");
    ok = false;
  }

  const Json *attrs = nullptr;
  if (node.contains("attrs")) {
    attrs = &node["attrs"];
    if (!attrs->is_object()) {
      diag.error(ptr + "/attrs",
                 "expected an object, got " + jsonTypeName(*attrs));
      ok = false;
    } else if (info) {
      ok &= checkKeys(*attrs, ptr + "/attrs", info->attrs,
                      (std::string("the attributes of ") + info->name).c_str(),
                      diag);
    }
  }

  std::vector<Value> results;
  if (ok && !poisoned) {
    // Every op of the node carries the node's pointer (and name) as its
    // location: later diagnostics and profiles find the node from it.
    Location loc = NameLoc::get(StringAttr::get(&ctx, ptr));
    if (!nodeName.empty())
      loc = NameLoc::get(StringAttr::get(&ctx, ptr),
                         NameLoc::get(StringAttr::get(&ctx, nodeName)));
    nodeOfLoc[loc] = index;
    size_t before = diag.errorCount();
    NodeBuilder nb(*this, index, info->name, attrs, inputs, loc);
    if (!info->build(nb, results) || results.size() != info->numOutputs ||
        llvm::is_contained(results, Value())) {
      if (diag.errorCount() == before) {
        noteInternalImportError();
        diag.error(ptr, std::string("internal error: building ") + info->name +
                            " failed without a message");
      }
      results.clear();
    }
  }
  for (size_t j = 0; j < outs.size(); ++j)
    define(outs[j].first, outs[j].second,
           j < results.size() ? results[j] : Value());
}

bool Importer::verifyModule(ModuleOp module) {
  bool reported = false;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() != DiagnosticSeverity::Error)
      return success();
    std::string ptr;
    auto it = nodeOfLoc.find(d.getLocation());
    if (it != nodeOfLoc.end())
      ptr = pointerAppend("/nodes", it->second);
    noteInternalImportError();
    diag.error(ptr, "internal check failed: " + d.str());
    reported = true;
    return success();
  });
  if (succeeded(mlir::verify(module)))
    return true;
  if (!reported) {
    noteInternalImportError();
    diag.error("", "internal check failed: the built module does not verify");
  }
  return false;
}

std::optional<ImportedModel> Importer::run(const Json &root) {
  if (!root.is_object()) {
    diag.error("", "expected a JSON object at the top level, got " +
                       jsonTypeName(root));
    return std::nullopt;
  }
  ImportedModel model;
  if (!readHeader(root, model.name) || diag.full())
    return std::nullopt;
  static const Json empty = Json::array();
  auto list = [&](const char *key) -> const Json & {
    return root.contains(key) && root[key].is_array() ? root[key] : empty;
  };
  const Json &inputs = list("inputs"), &params = list("params"),
             &nodes = list("nodes"), &outputs = list("outputs");

  // Declarations, with each param's initial value.
  std::vector<Decl> decls(inputs.size() + params.size());
  for (size_t i = 0; i < inputs.size() && !diag.full(); ++i)
    readDecl(inputs[i], pointerAppend("/inputs", i), false, decls[i]);
  for (size_t i = 0; i < params.size() && !diag.full(); ++i) {
    Decl &d = decls[inputs.size() + i];
    readDecl(params[i], pointerAppend("/params", i), true, d);
    if (!d.ok)
      continue;
    ParamData data;
    if (materialise(params[i]["init"], d.pointer + "/init", d, data))
      model.params.push_back(std::move(data));
    else
      d.ok = false;
  }
  if (diag.full())
    return std::nullopt;

  Location fileLoc = FileLineColLoc::get(&ctx, diag.fileName(), 0, 0);
  model.module = ModuleOp::create(fileLoc);
  model.module->getOperation()->setAttr("tcc.model",
                                        builder.getStringAttr(model.name));
  builder.setInsertionPointToEnd(model.module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc, "main",
                                   builder.getFunctionType({}, {}));
  func->setAttr("tcc.entry", builder.getUnitAttr());
  Block *entry = func.addEntryBlock();
  std::vector<Type> argTypes;
  for (size_t i = 0; i < decls.size(); ++i) {
    Decl &d = decls[i];
    Value arg;
    if (d.ok) {
      arg = entry->addArgument(
          RankedTensorType::get(d.shape, elementTypeOf(ctx, d.dtype)),
          NameLoc::get(StringAttr::get(&ctx, d.pointer)));
      argTypes.push_back(arg.getType());
    }
    if (!d.name.empty())
      define(d.name, d.pointer, arg);
  }
  func.setType(builder.getFunctionType(argTypes, {}));
  {
    unsigned argNo = 0;
    for (size_t i = 0; i < decls.size(); ++i) {
      if (!decls[i].ok)
        continue;
      func.setArgAttr(argNo, "tcc.name", builder.getStringAttr(decls[i].name));
      func.setArgAttr(
          argNo, "tcc.kind",
          builder.getStringAttr(i < inputs.size() ? "input" : "param"));
      ++argNo;
    }
  }

  // Nodes. Where each node output is first defined, for messages about
  // names used too early.
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Json &n = nodes[i];
    if (!n.is_object() || !n.contains("outputs") || !n["outputs"].is_array())
      continue;
    const Json &outs = n["outputs"];
    for (size_t j = 0; j < outs.size(); ++j)
      if (outs[j].is_string())
        nodeDefs.emplace(
            outs[j].get<std::string>(),
            std::make_pair(
                i, pointerAppend(pointerAppend("/nodes", i) + "/outputs", j)));
  }
  builder.setInsertionPointToEnd(entry);
  for (size_t i = 0; i < nodes.size() && !diag.full(); ++i)
    importNode(nodes[i], i);

  std::vector<Value> results;
  std::vector<std::string> resultNames;
  for (size_t i = 0; i < outputs.size() && !diag.full(); ++i) {
    std::string p = pointerAppend("/outputs", i);
    std::optional<std::string> n = readString(outputs[i], p, diag);
    Value v;
    if (n && resolve(*n, p, nodes.size(), v) && v) {
      results.push_back(v);
      resultNames.push_back(*n);
    }
  }
  if (diag.hasErrors())
    return std::nullopt;

  size_t numOutputs = results.size();
  for (const Status &s : statuses)
    results.push_back(s.count);
  func::ReturnOp::create(builder, fileLoc, results);
  std::vector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setType(builder.getFunctionType(argTypes, resultTypes));
  for (size_t i = 0; i < results.size(); ++i) {
    if (i < numOutputs) {
      func.setResultAttr(i, "tcc.name", builder.getStringAttr(resultNames[i]));
      continue;
    }
    const Status &s = statuses[i - numOutputs];
    func.setResultAttr(i, "tcc.kind", builder.getStringAttr("status"));
    func.setResultAttr(i, "tcc.message", builder.getStringAttr(s.message));
  }
  if (!verifyModule(*model.module))
    return std::nullopt;
  return model;
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

std::optional<ImportedModel>
importModelText(std::string_view json, const std::string &displayName,
                const std::string &baseDir, MLIRContext &ctx,
                std::vector<std::string> &errors, const ImportLimits &limits) {
  Diagnostics diag(displayName, errors, std::max<size_t>(1, limits.maxErrors));
  try {
    ctx.getOrLoadDialect<mlir::tcc::TccDialect>();
    ctx.getOrLoadDialect<func::FuncDialect>();
    std::optional<Json> root = parseJson(json, diag);
    if (!root)
      return std::nullopt;
    Importer importer(ctx, diag, baseDir, limits);
    std::optional<ImportedModel> model = importer.run(*root);
    if (model && !diag.hasErrors())
      return model;
    if (!diag.hasErrors())
      diag.error("", "import failed");
  } catch (const std::bad_alloc &) {
    diag.error("", "out of memory while importing");
  } catch (const std::exception &e) {
    noteInternalImportError();
    diag.error("", std::string("internal error: ") + e.what());
  }
  return std::nullopt;
}

std::optional<ImportedModel> importModelFile(const std::string &path,
                                             MLIRContext &ctx,
                                             std::vector<std::string> &errors,
                                             const ImportLimits &limits) {
  std::error_code ec;
  namespace fs = std::filesystem;
  if (!fs::is_regular_file(path, ec)) {
    errors.push_back(
        path + ": " +
        (fs::exists(path, ec) ? "not a regular file" : "no such file"));
    return std::nullopt;
  }
  uint64_t size = fs::file_size(path, ec);
  if (ec || size > kMaxModelFileBytes) {
    errors.push_back(path + ": " +
                     (ec ? "cannot read: " + ec.message()
                         : std::string("larger than 1 GiB; keep weights in "
                                       "safetensors files")));
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(size, '\0');
  if (!in || (size && !in.read(text.data(), (std::streamsize)size))) {
    errors.push_back(path + ": cannot read");
    return std::nullopt;
  }
  std::string baseDir = fs::path(path).parent_path().string();
  if (baseDir.empty())
    baseDir = ".";
  return importModelText(text, path, baseDir, ctx, errors, limits);
}

} // namespace tcc
