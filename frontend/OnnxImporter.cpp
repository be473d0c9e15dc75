//===- OnnxImporter.cpp - ONNX models to the tcc dialect ------------------===//
//
// The ONNX graph is walked once in node order. Each node's inputs resolve to
// MLIR values (graph inputs, params made from initializers on first use, or
// earlier results), and the node is expanded into model-format ops built by
// the format's own op builders (Ops.cpp, Composites.cpp), so that shapes,
// dtypes and limits are checked exactly as for a JSON model. Initializers and
// Constant outputs stay compile-time tensors until a node reads them as data:
// shapes, pads and clip bounds are read from them directly.
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxImporter.h"
#include "frontend/Importer.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#ifdef TCC_HAVE_ONNX
#include "onnx/onnx_pb.h"
#include <google/protobuf/stubs/logging.h>
#endif

namespace tcc {

using namespace mlir;

bool isOnnxPath(const std::string &path) {
  if (path.size() < 5)
    return false;
  std::string ext = path.substr(path.size() - 5);
  for (char &c : ext)
    c = (char)std::tolower((unsigned char)c);
  return ext == ".onnx";
}

std::string parseInputShape(const std::string &spec, InputShapes &out) {
  size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0)
    return "--input-shape expects NAME=D0xD1x... (e.g. x=1x3x224x224), got '" +
           spec + "'";
  std::string name = spec.substr(0, eq), dims = spec.substr(eq + 1);
  std::vector<int64_t> shape;
  size_t pos = 0;
  while (true) {
    size_t x = dims.find('x', pos);
    std::string d = dims.substr(pos, x == std::string::npos ? x : x - pos);
    bool digits = !d.empty() && d.size() <= 13;
    for (char c : d)
      digits &= c >= '0' && c <= '9';
    if (!digits || std::stoll(d) > kMaxElements)
      return "--input-shape " + spec +
             ": each size must be an integer in [0, 2^40], separated by 'x'";
    shape.push_back(std::stoll(d));
    if (x == std::string::npos)
      break;
    pos = x + 1;
  }
  if (std::string e = checkShapeLimits(shape); !e.empty())
    return "--input-shape " + spec + ": " + e;
  if (!out.emplace(name, shape).second)
    return "--input-shape gives \"" + name + "\" twice";
  return "";
}

#ifndef TCC_HAVE_ONNX

bool haveOnnxSupport() { return false; }

std::optional<ImportedModel> importOnnxBytes(std::string_view,
                                             const std::string &displayName,
                                             const std::string &, MLIRContext &,
                                             std::vector<std::string> &errors,
                                             const InputShapes &,
                                             const ImportLimits &) {
  errors.push_back(displayName + ": this tcc was built without ONNX support "
                                 "(install libonnx-dev and libprotobuf-dev)");
  return std::nullopt;
}

#else

bool haveOnnxSupport() { return true; }

namespace {

using Ints = std::vector<int64_t>;
constexpr int64_t kMinOpset = 13, kMaxOpset = 18;

/// `[2, 3]`, for errors.
std::string shapeStr(const Ints &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// The format's dtype of an ONNX element type, if it has one.
std::optional<DType> dtypeOfOnnx(int32_t t) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return DType::F32;
  case onnx::TensorProto::DOUBLE:
    return DType::F64;
  case onnx::TensorProto::FLOAT16:
    return DType::F16;
  case onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  case 17: // FLOAT8E4M3FN (ONNX 1.14; this protobuf predates the name)
    return DType::F8E4M3;
  case 19: // FLOAT8E5M2
    return DType::F8E5M2;
  case onnx::TensorProto::INT8:
    return DType::I8;
  case onnx::TensorProto::INT32:
    return DType::I32;
  case onnx::TensorProto::INT64:
    return DType::I64;
  case onnx::TensorProto::BOOL:
    return DType::Bool;
  default:
    return std::nullopt;
  }
}

std::string onnxTypeName(int32_t t) {
  if (onnx::TensorProto::DataType_IsValid(t))
    return onnx::TensorProto::DataType_Name((onnx::TensorProto::DataType)t);
  if (t == 17)
    return "FLOAT8E4M3FN";
  if (t == 19)
    return "FLOAT8E5M2";
  return "type " + std::to_string(t);
}

std::string attrTypeName(onnx::AttributeProto::AttributeType t) {
  if (onnx::AttributeProto::AttributeType_IsValid(t))
    return onnx::AttributeProto::AttributeType_Name(t);
  return "type " + std::to_string((int)t);
}

/// A tensor known at compile time: an initializer or a Constant's value.
struct ConstTensor {
  DType dtype;
  Shape shape;
  std::shared_ptr<std::vector<uint8_t>> bytes;
  /// The recipe an initializer's hint describes its bytes with, checked
  /// (--param-recipes=keep only): its param keeps the recipe, not the bytes.
  std::optional<ParamRecipe> recipe;
  /// UINT8 values, held as i32 0..255 (see OnnxImporter::isU8).
  bool u8 = false;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  /// Element `i` as an integer (integer and bool dtypes) or double.
  int64_t intAt(int64_t i) const {
    const uint8_t *p = bytes->data() + i * dtypeSize(dtype);
    switch (dtype) {
    case DType::I64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::I8:
      return (int8_t)*p;
    case DType::Bool:
      return *p;
    default:
      return (int64_t)decodeScalar(dtype, p);
    }
  }
  double floatAt(int64_t i) const {
    return decodeScalar(dtype, bytes->data() + i * dtypeSize(dtype));
  }
};

class OnnxImporter;

/// One node being imported: its attributes, inputs, and the ops it emits.
struct NodeCtx {
  OnnxImporter &o;
  size_t index;
  const onnx::NodeProto &n;
  int64_t opset;
  Location loc;
  std::vector<Value> outputs;

  bool fail(const std::string &reason);

  // Attributes. A missing one takes `dflt`; without a default it is an error.
  const onnx::AttributeProto *attr(const char *name) const {
    for (const onnx::AttributeProto &a : n.attribute())
      if (a.name() == name)
        return &a;
    return nullptr;
  }
  bool typed(const onnx::AttributeProto &a,
             onnx::AttributeProto::AttributeType want) {
    if (a.type() == want)
      return true;
    return fail("attribute \"" + a.name() + "\" must be " + attrTypeName(want) +
                ", got " + attrTypeName(a.type()));
  }
  /// Attribute `name`, which must have type `want`, read by `read` into
  /// `out`; when absent, `dflt` (and without one, an error).
  template <typename T, typename Read>
  bool getAttr(const char *name, onnx::AttributeProto::AttributeType want,
               T &out, std::optional<T> dflt, Read read) {
    const onnx::AttributeProto *a = attr(name);
    if (!a) {
      if (!dflt)
        return fail(std::string("missing attribute \"") + name + "\"");
      out = *dflt;
      return true;
    }
    if (!typed(*a, want))
      return false;
    out = read(*a);
    return true;
  }
  bool getInt(const char *name, int64_t &out,
              std::optional<int64_t> dflt = std::nullopt) {
    return getAttr(name, onnx::AttributeProto::INT, out, dflt,
                   [](const onnx::AttributeProto &a) { return a.i(); });
  }
  bool getFloat(const char *name, double &out, double dflt) {
    return getAttr(name, onnx::AttributeProto::FLOAT, out,
                   std::optional<double>(dflt),
                   [](const onnx::AttributeProto &a) { return (double)a.f(); });
  }
  bool getInts(const char *name, Ints &out,
               std::optional<Ints> dflt = std::nullopt) {
    return getAttr(name, onnx::AttributeProto::INTS, out, dflt,
                   [](const onnx::AttributeProto &a) {
                     return Ints(a.ints().begin(), a.ints().end());
                   });
  }
  bool getString(const char *name, std::string &out, const char *dflt) {
    return getAttr(name, onnx::AttributeProto::STRING, out,
                   std::optional<std::string>(dflt),
                   [](const onnx::AttributeProto &a) { return a.s(); });
  }

  // Inputs. An empty name is an omitted optional input.
  bool hasInput(int i) const {
    return i < n.input_size() && !n.input(i).empty();
  }
  /// Input `i` as a value (a compile-time tensor becomes a param).
  bool in(int i, Value &out);
  /// Input `i` as a compile-time tensor; an error when it is computed.
  bool constIn(int i, const ConstTensor *&out);
  bool constInts(int i, Ints &out);
  bool constScalar(int i, double &out);

  /// A tensor computed at compile time, as a param named after the node's
  /// first output and `suffix`.
  bool constValue(const std::string &suffix, ConstTensor t, Value &out);

  // Emission through the format's op builders.
  Value emit(const char *op, std::vector<Value> ins, Json attrs = Json());
  Value constant(DType t, double v) {
    return emit("constant", {}, Json{{"dtype", dtypeName(t)}, {"value", v}});
  }
  Shape shape(Value v) const {
    return Shape(cast<RankedTensorType>(v.getType()).getShape());
  }
  DType dtype(Value v) const {
    return *dtypeOfElement(
        cast<RankedTensorType>(v.getType()).getElementType());
  }
};

using Handler = std::function<bool(NodeCtx &)>;
struct OpEntry {
  std::set<std::string> attrs;
  Handler build;
  /// Outputs the op may name (the builder defines those that are named).
  int maxOutputs = 1;
};

class OnnxImporter {
public:
  OnnxImporter(MLIRContext &ctx, std::string path, std::string baseDir,
               std::vector<std::string> &errors, const InputShapes &shapes,
               const ImportLimits &limits)
      : ctx(ctx), path(path), baseDir(baseDir), errors(errors), shapes(shapes),
        limits(limits), diag(path, builderErrors, SIZE_MAX),
        im(ctx, diag, "", limits) {}

  std::optional<ImportedModel> run(const onnx::ModelProto &model);

  bool fail(const std::string &message) {
    if (errors.empty()) {
      std::string line = path + ": " + message;
      for (char &c : line)
        if ((unsigned char)c < 0x20 || c == 0x7f)
          c = '?';
      errors.push_back(line);
    }
    return false;
  }
  std::string describe(size_t index, const onnx::NodeProto &n) const {
    std::string s = "node " + std::to_string(index);
    if (!n.name().empty())
      s += " \"" + n.name() + "\"";
    return s + " (" + n.op_type() + ")";
  }

  MLIRContext &ctx;
  std::string path, baseDir;
  std::vector<std::string> &errors;
  const InputShapes &shapes;
  ImportLimits limits;
  std::vector<std::string> builderErrors;
  Diagnostics diag;
  Importer im;

  Block *entry = nullptr;
  /// The graph being imported, to name a later producer in errors.
  const onnx::GraphProto *graph = nullptr;
  std::unordered_map<std::string, Value> values;
  std::unordered_map<std::string, ConstTensor> consts;
  /// Arguments in order with their names and kinds.
  std::vector<std::pair<std::string, const char *>> args;
  std::vector<ParamData> params;
  uint64_t paramBytes = 0;

  bool decodeTensor(const onnx::TensorProto &t, const std::string &what,
                    ConstTensor &out);
  bool readExternal(const onnx::TensorProto &t, const std::string &what,
                    size_t bytes, std::vector<uint8_t> &out);
  bool readRecipeHint(const onnx::TensorProto &t, const std::string &what,
                      ConstTensor &c);
  bool valueOf(const std::string &name, const std::string &what, Value &out);
  /// `t` as positions where it is a triangle of two values (rank 2, or
  /// leading axes of size 1): iotas compared with its diagonal (selecting
  /// the values unless they are true and false); null otherwise.
  Value triangleOf(const ConstTensor &t, Location loc);
  bool checkName(const std::string &name, const std::string &what);
  bool importNode(size_t index, const onnx::NodeProto &n, int64_t opset);
  bool importNodeImpl(size_t index, const onnx::NodeProto &n, int64_t opset);
  /// UINT8 tensors (PyTorch 1.x's masks, `.type(torch.uint8)`) are held as
  /// i32 values 0..255, named here: only ops that keep them in that range
  /// read them (uint8 arithmetic wraps at 256, i32's does not).
  std::set<std::string> u8Values;
  bool isU8(const std::string &name) const {
    auto c = consts.find(name);
    return u8Values.count(name) || (c != consts.end() && c->second.u8);
  }
  bool foldIntegers(const onnx::NodeProto &n, const std::string &where,
                    bool &folded);
};

bool NodeCtx::fail(const std::string &reason) {
  return o.fail(o.describe(index, n) + ": " + reason);
}

bool NodeCtx::in(int i, Value &out) {
  if (!hasInput(i))
    return fail("input " + std::to_string(i) + " is required");
  return o.valueOf(n.input(i),
                   o.describe(index, n) + ": input " + std::to_string(i), out);
}

bool NodeCtx::constValue(const std::string &suffix, ConstTensor t, Value &out) {
  std::string name = n.output(0) + "." + suffix;
  while (o.consts.count(name) || o.values.count(name))
    name += "_";
  o.consts[name] = std::move(t);
  return o.valueOf(name, o.describe(index, n), out);
}

bool NodeCtx::constIn(int i, const ConstTensor *&out) {
  if (!hasInput(i))
    return fail("input " + std::to_string(i) + " is required");
  auto it = o.consts.find(n.input(i));
  if (it == o.consts.end()) {
    if (!o.values.count(n.input(i)))
      return fail("input " + std::to_string(i) + " \"" + n.input(i) +
                  "\" is not defined by an initializer, a graph input or an "
                  "earlier node");
    return fail("input " + std::to_string(i) + " \"" + n.input(i) +
                "\" must be a constant (an initializer or a Constant node); "
                "computed values are not supported here");
  }
  out = &it->second;
  return true;
}

bool NodeCtx::constInts(int i, Ints &out) {
  const ConstTensor *t;
  if (!constIn(i, t))
    return false;
  if (t->dtype != DType::I64 && t->dtype != DType::I32)
    return fail("input " + std::to_string(i) + " must be int64 or int32, got " +
                dtypeName(t->dtype));
  if (t->shape.size() > 1)
    return fail("input " + std::to_string(i) + " must be a 1-D list");
  out.clear();
  for (int64_t k = 0; k < t->numel(); ++k)
    out.push_back(t->intAt(k));
  return true;
}

bool NodeCtx::constScalar(int i, double &out) {
  const ConstTensor *t;
  if (!constIn(i, t))
    return false;
  if (t->numel() != 1)
    return fail("input " + std::to_string(i) + " must hold one value, got " +
                std::to_string(t->numel()));
  out = isFloat(t->dtype) ? t->floatAt(0) : (double)t->intAt(0);
  return true;
}

Value NodeCtx::emit(const char *op, std::vector<Value> ins, Json attrs) {
  const OpInfo *info = findOp(op);
  if (!info) {
    noteInternalImportError();
    fail(std::string("internal error: no op ") + op);
    return {};
  }
  if (attrs.is_null())
    attrs = Json::object();
  size_t before = o.builderErrors.size();
  NodeBuilder nb(o.im, index, op, &attrs, ins, loc);
  std::vector<Value> results;
  if (info->build(nb, results) && results.size() == 1 && results[0])
    return results[0];
  // The format's builders report at a JSON pointer of the node they were
  // given; for ONNX the node and the reason are what matter.
  std::string reason = "cannot build " + std::string(op);
  if (o.builderErrors.size() > before) {
    std::string line = o.builderErrors.back();
    line = line.substr(std::min(line.size(), o.path.size() + 2));
    if (!line.empty() && line[0] == '/') {
      size_t colon = line.find(": ");
      if (colon != std::string::npos)
        line = line.substr(colon + 2);
    }
    reason = line;
  }
  o.builderErrors.clear();
  fail(reason);
  return {};
}

bool OnnxImporter::checkName(const std::string &name, const std::string &what) {
  bool ok = !name.empty() && name.size() <= 256;
  for (unsigned char c : name)
    ok &= c >= 0x20 && c != 0x7f;
  if (!ok)
    return fail(what + ": a name must be 1 to 256 bytes without control "
                       "characters");
  return true;
}

Value OnnxImporter::triangleOf(const ConstTensor &t, Location loc) {
  size_t rank = t.shape.size();
  if (rank < 2 || t.recipe || t.numel() < 4 ||
      llvm::any_of(
          ArrayRef(t.shape).drop_back(2), [](int64_t d) { return d != 1; }))
    return {};
  int64_t rows = t.shape[rank - 2], cols = t.shape[rank - 1];
  size_t size = dtypeSize(t.dtype);
  const uint8_t *p = t.bytes->data();
  auto at = [&](int64_t r, int64_t c) { return p + (r * cols + c) * size; };
  auto same = [&](const uint8_t *a, const uint8_t *b) {
    return std::memcmp(a, b, size) == 0;
  };
  // Kept (the value at (0, 0)) on one side of a diagonal, col - row <= k
  // (lower) or >= k (upper), the other value elsewhere; both present.
  const uint8_t *kept = at(0, 0), *other = nullptr;
  for (int64_t i = 0; i < rows * cols && !other; ++i)
    if (!same(p + i * size, kept))
      other = p + i * size;
  if (!other)
    return {};
  bool lower = !same(at(0, cols - 1), kept);
  // k from the first row holding both values.
  std::optional<int64_t> k;
  for (int64_t r = 0; r < rows && !k; ++r)
    for (int64_t c = 1; c < cols && !k; ++c)
      if (!same(at(r, c), at(r, c - 1)))
        k = lower ? c - 1 - r : c - r;
  if (!k)
    return {};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      bool in = lower ? c - r <= *k : c - r >= *k;
      if (!same(at(r, c), in ? kept : other))
        return {};
    }
  OpBuilder &b = im.builder;
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  // In the tensor's own shape (no reshape: the positions stay positions).
  auto plane = [&](Type e) { return RankedTensorType::get(t.shape, e); };
  Value row = mlir::tcc::IotaOp::create(b, loc, plane(i64), uint64_t(rank - 2));
  Value col = mlir::tcc::IotaOp::create(b, loc, plane(i64), uint64_t(rank - 1));
  Value diff = mlir::tcc::SubOp::create(b, loc, plane(i64), col, row);
  Value kc = mlir::tcc::ConstantOp::create(
      b, loc, RankedTensorType::get({}, i64), b.getI64IntegerAttr(*k));
  Value cond =
      lower ? mlir::tcc::LessEqualOp::create(b, loc, plane(i1), diff, kc)
                  .getResult()
            : mlir::tcc::GreaterEqualOp::create(b, loc, plane(i1), diff, kc)
                  .getResult();
  Type et = elementTypeOf(ctx, t.dtype);
  Value v = cond;
  if (!et.isInteger(1) || decodeScalar(t.dtype, kept) == 0) {
    // Two values: a select of them (a 0 / -inf mask; a mask of false
    // where kept, its negation).
    auto scalar = [&](const uint8_t *e) -> Value {
      double d = decodeScalar(t.dtype, e);
      TypedAttr a =
          isa<FloatType>(et)
              ? TypedAttr(FloatAttr::get(et, d))
              : TypedAttr(IntegerAttr::get(
                    et, APInt(et.getIntOrFloatBitWidth(), uint64_t(int64_t(d)),
                              /*isSigned=*/!et.isInteger(1))));
      return mlir::tcc::ConstantOp::create(b, loc,
                                           RankedTensorType::get({}, et), a);
    };
    v = mlir::tcc::SelectOp::create(b, loc, plane(et), cond, scalar(kept),
                                    scalar(other));
  }
  return v;
}

bool OnnxImporter::valueOf(const std::string &name, const std::string &what,
                           Value &out) {
  auto it = values.find(name);
  if (it != values.end()) {
    out = it->second;
    return true;
  }
  auto c = consts.find(name);
  if (c == consts.end())
    return fail(what + " \"" + name +
                "\" is not defined by an initializer, a graph input or an "
                "earlier node");
  // A compile-time tensor read as data becomes a param holding its bytes.
  if (!checkName(name, what))
    return false;
  const ConstTensor &t = c->second;
  // One number (a scale, a mask's fill value, an epsilon) becomes a
  // constant instead: the passes that fold such numbers (a scale of Q moved
  // onto attention's scores, a 0/-inf mask read as a mask) see its value,
  // where a param is opaque to them.
  if (t.numel() == 1 && !t.recipe) {
    Type et = elementTypeOf(ctx, t.dtype);
    TypedAttr v;
    if (auto ft = dyn_cast<FloatType>(et))
      v = FloatAttr::get(ft, t.floatAt(0));
    else if (auto it = dyn_cast<IntegerType>(et))
      v = IntegerAttr::get(it, APInt(it.getWidth(), uint64_t(t.intAt(0)),
                                     /*isSigned=*/it.getWidth() > 1));
    if (v) {
      out = mlir::tcc::ConstantOp::create(
          im.builder, NameLoc::get(StringAttr::get(&ctx, name)),
          RankedTensorType::get(t.shape, et), v);
      values[name] = out;
      return true;
    }
  }
  // A triangle of two values (a causal mask an exporter folded into an
  // initializer: torch.tril(ones) sliced, full(-inf).triu(1)) becomes the
  // positions it is: the attention templates skip its masked tiles.
  if (Value v = triangleOf(t, NameLoc::get(StringAttr::get(&ctx, name)))) {
    values[name] = out = v;
    return true;
  }
  if (paramBytes + t.bytes->size() > limits.maxParamBytes)
    return fail(what + " \"" + name + "\": the params exceed " +
                std::to_string(limits.maxParamBytes) + " bytes");
  paramBytes += t.bytes->size();
  out = entry->addArgument(
      RankedTensorType::get(t.shape, elementTypeOf(ctx, t.dtype)),
      NameLoc::get(StringAttr::get(&ctx, name)));
  args.push_back({name, "param"});
  ParamData p;
  p.name = name;
  p.dtype = t.dtype;
  p.shape = t.shape;
  // A checked recipe stands for the bytes, as a JSON model's random param
  // does: they are computed from it where needed (ParamData::materialise).
  if (t.recipe)
    p.recipe = t.recipe;
  else
    p.bytes.setView(t.bytes, t.bytes->data(), t.bytes->size());
  params.push_back(std::move(p));
  values[name] = out;
  return true;
}

bool OnnxImporter::readExternal(const onnx::TensorProto &t,
                                const std::string &what, size_t bytes,
                                std::vector<uint8_t> &out) {
  std::string location;
  uint64_t offset = 0, length = 0;
  bool hasLength = false;
  for (const onnx::StringStringEntryProto &e : t.external_data()) {
    auto number = [&](uint64_t &v) {
      const std::string &s = e.value();
      bool ok = !s.empty() && s.size() <= 19;
      for (char ch : s)
        ok &= ch >= '0' && ch <= '9';
      if (ok)
        v = std::stoull(s);
      return ok || fail(what + ": external data " + e.key() + " \"" + s +
                        "\" is not a non-negative integer");
    };
    if (e.key() == "location")
      location = e.value();
    else if (e.key() == "offset" && !number(offset))
      return false;
    else if (e.key() == "length") {
      if (!number(length))
        return false;
      hasLength = true;
    }
  }
  namespace fs = std::filesystem;
  if (location.empty())
    return fail(what + ": external data without a location");
  fs::path rel(location);
  bool escapes = rel.is_absolute();
  for (const fs::path &part : rel)
    escapes |= part == "..";
  if (escapes)
    return fail(what + ": external data location \"" + location +
                "\" must be a relative path inside the model's folder");
  std::string file = (fs::path(baseDir) / rel).string();
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    return fail(what + ": external data file \"" + location +
                "\": no such file");
  uint64_t size = fs::file_size(file, ec);
  if (ec)
    return fail(what + ": external data file \"" + location +
                "\": cannot read");
  if (hasLength && length != bytes)
    return fail(what + ": external data length " + std::to_string(length) +
                " does not match the " + std::to_string(bytes) +
                " bytes of the tensor");
  if (offset > size || size - offset < bytes)
    return fail(what + ": external data file \"" + location + "\" holds " +
                std::to_string(size) + " bytes, too few for " +
                std::to_string(bytes) + " bytes at offset " +
                std::to_string(offset));
  std::ifstream f(file, std::ios::binary);
  out.resize(bytes);
  f.seekg((std::streamoff)offset);
  if (!f || (bytes && !f.read((char *)out.data(), (std::streamsize)bytes)))
    return fail(what + ": external data file \"" + location +
                "\": cannot read");
  return true;
}

/// Elements of a random recipe compared with the initializer's bytes.
constexpr uint64_t kRecipeSamples = 4096;

bool OnnxImporter::readRecipeHint(const onnx::TensorProto &t,
                                  const std::string &what, ConstTensor &c) {
  static constexpr std::string_view kPrefix = "tcc.recipe:";
  std::string_view doc = t.doc_string();
  size_t start = doc.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos ||
      doc.substr(start, kPrefix.size()) != kPrefix)
    return true; // Documentation, not a hint.
  std::vector<std::string> lines;
  Diagnostics diag(what + ": tcc.recipe hint", lines, 1);
  std::optional<Json> json =
      parseJson(doc.substr(start + kPrefix.size()), diag);
  std::optional<ParamRecipe> r;
  if (json)
    r = readRecipe(*json, "", c.dtype, diag);
  if (!r)
    return fail(lines.empty() ? what + ": malformed tcc.recipe hint"
                              : lines.front());

  // The bytes must be the recipe's. A fill is compared everywhere; a random
  // recipe at kRecipeSamples elements spread over the tensor, the first and
  // the last among them, each computed by jumping the generator to it (the
  // generator of the runtime, runtime/src/ParamRecipe.cpp): drawing all 89 M
  // normals of a large CNN would cost seconds per compile.
  size_t esize = dtypeSize(c.dtype);
  uint64_t n = (uint64_t)c.numel();
  const uint8_t *bytes = c.bytes->data();
  uint8_t want[8];
  bool fill = r->kind == ParamRecipe::Kind::Fill;
  if (fill)
    materialiseRecipe(*r, c.dtype, 0, 1, want);
  auto differs = [&](uint64_t i) {
    if (!fill)
      materialiseRecipe(*r, c.dtype, i, i + 1, want);
    if (std::memcmp(want, bytes + i * esize, esize) == 0)
      return false;
    std::ostringstream msg;
    msg.precision(9);
    msg << what << ": element " << i << " is " << c.floatAt((int64_t)i)
        << ", its tcc.recipe hint gives " << decodeScalar(c.dtype, want)
        << " (the bytes must be the recipe's)";
    return !fail(msg.str());
  };
  if (fill || n <= kRecipeSamples) {
    for (uint64_t i = 0; i < n; ++i)
      if (differs(i))
        return false;
  } else {
    // n <= 2^40 and k < 2^12: the products stay far below 2^64.
    for (uint64_t k = 0; k < kRecipeSamples; ++k)
      if (differs(k * (n - 1) / (kRecipeSamples - 1)))
        return false;
  }
  c.recipe = r;
  return true;
}

bool OnnxImporter::decodeTensor(const onnx::TensorProto &t,
                                const std::string &what, ConstTensor &out) {
  if (t.data_type() == onnx::TensorProto::UINT8) {
    // Widened to i32 (marked u8); a mask's constants, never large.
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      return fail(what + ": UINT8 tensors in external data are not supported");
    onnx::TensorProto w;
    w.set_data_type(onnx::TensorProto::INT32);
    *w.mutable_dims() = t.dims();
    if (t.has_raw_data()) {
      for (unsigned char v : t.raw_data())
        w.add_int32_data(v);
    } else {
      for (int32_t v : t.int32_data()) {
        if (v < 0 || v > 255)
          return fail(what + ": int32_data value " + std::to_string(v) +
                      " does not fit UINT8");
        w.add_int32_data(v);
      }
    }
    if (!decodeTensor(w, what, out))
      return false;
    out.u8 = true;
    return true;
  }
  std::optional<DType> dt = dtypeOfOnnx(t.data_type());
  if (!dt)
    return fail(what + ": unsupported dtype " + onnxTypeName(t.data_type()));
  if (t.has_segment())
    return fail(what + ": segmented tensors are not supported");
  if (t.dims_size() > (int)kMaxRank)
    return fail(what + ": rank " + std::to_string(t.dims_size()) +
                " exceeds 16");
  Shape shape;
  for (int64_t d : t.dims()) {
    if (d < 0)
      return fail(what + ": negative dimension " + std::to_string(d));
    shape.push_back(d);
  }
  if (std::string e = checkShapeLimits(shape); !e.empty())
    return fail(what + ": " + e);
  out.dtype = *dt;
  out.shape = shape;
  int64_t numel = out.numel();
  size_t esize = dtypeSize(*dt), bytes = (size_t)numel * esize;
  if (bytes > limits.maxParamBytes)
    return fail(what + ": " + std::to_string(bytes) + " bytes exceed " +
                std::to_string(limits.maxParamBytes));
  auto data = std::make_shared<std::vector<uint8_t>>();
  out.bytes = data;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    if (!readExternal(t, what, bytes, *data))
      return false;
  } else if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      return fail(what + ": raw_data holds " +
                  std::to_string(t.raw_data().size()) + " bytes, expected " +
                  std::to_string(bytes) + " for " + std::to_string(numel) +
                  " elements of " + dtypeName(*dt));
    data->assign(t.raw_data().begin(), t.raw_data().end());
  } else {
    // The typed fields: each element in the field its type uses.
    // Counts are checked before allocating, so that a tensor claiming
    // large dims without data costs nothing.
    int64_t count;
    const char *field;
    switch (*dt) {
    case DType::F32:
      count = t.float_data_size(), field = "float_data";
      break;
    case DType::F64:
      count = t.double_data_size(), field = "double_data";
      break;
    case DType::I64:
      count = t.int64_data_size(), field = "int64_data";
      break;
    default:
      count = t.int32_data_size(), field = "int32_data";
    }
    if (count != numel)
      return fail(what + ": " + (count == 0 ? "holds no data (" : "") + field +
                  " holds " + std::to_string(count) + " values, expected " +
                  std::to_string(numel) + (count == 0 ? ")" : ""));
    data->resize(bytes);
    uint8_t *p = data->data();
    switch (*dt) {
    case DType::F32:
      if (bytes)
        std::memcpy(p, t.float_data().data(), bytes);
      break;
    case DType::F64:
      if (bytes)
        std::memcpy(p, t.double_data().data(), bytes);
      break;
    case DType::I64:
      if (bytes)
        std::memcpy(p, t.int64_data().data(), bytes);
      break;
    default: {
      // int32_data carries i32, i8, bool, and the bit patterns of the
      // 16- and 8-bit floats.
      for (int64_t i = 0; i < numel; ++i) {
        int32_t v = t.int32_data((int)i);
        int64_t lo = *dt == DType::I8 ? -128 : 0, hi = *dt == DType::I8 ? 127
                                                       : esize == 2     ? 0xffff
                                                                        : 0xff;
        if (*dt != DType::I32 && (v < lo || v > hi))
          return fail(what + ": int32_data value " + std::to_string(v) +
                      " does not fit " + dtypeName(*dt));
        if (*dt == DType::I32) {
          std::memcpy(p + 4 * i, &v, 4);
        } else if (esize == 2) {
          uint16_t bits = (uint16_t)v;
          std::memcpy(p + 2 * i, &bits, 2);
        } else {
          p[i] = (uint8_t)v;
        }
      }
    }
    }
  }
  if (*dt == DType::Bool)
    for (uint8_t b : *data)
      if (b > 1)
        return fail(what + ": a bool tensor must hold only 0 and 1");
  return true;
}

/// Pads of a window op: explicit, or from auto_pad as ONNX defines it.
bool windowPads(NodeCtx &c, const Shape &x, const Ints &kernel,
                const Ints &strides, const Ints &dilations, Ints &pads) {
  std::string autoPad;
  if (!c.getString("auto_pad", autoPad, "NOTSET"))
    return false;
  if (autoPad == "NOTSET")
    return c.getInts("pads", pads, Ints{0, 0, 0, 0});
  if (c.attr("pads"))
    return c.fail("auto_pad " + autoPad + " and pads cannot both be given");
  pads.assign(4, 0);
  if (autoPad == "VALID")
    return true;
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return c.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, "
                  "got \"" +
                  autoPad + "\"");
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2)
    return c.fail("kernel, strides and dilations must have 2 entries");
  for (int i = 0; i < 2; ++i) {
    int64_t in = x[2 + i], s = strides[i];
    if (s < 1 || s > kMaxWindowAttr || kernel[i] < 1 ||
        kernel[i] > kMaxWindowAttr || dilations[i] < 1 ||
        dilations[i] > kMaxWindowAttr)
      return c.fail("kernel, strides and dilations must be in [1, 2^20]");
    int64_t out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>(
        0, (out - 1) * s + (kernel[i] - 1) * dilations[i] + 1 - in);
    int64_t small = total / 2;
    pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
    pads[2 + i] = total - pads[i];
  }
  return true;
}

bool rank4(NodeCtx &c, Value x) {
  if (c.shape(x).size() != 4)
    return c.fail("only 2-D windows on [N, C, H, W] inputs are supported, "
                  "got rank " +
                  std::to_string(c.shape(x).size()));
  return true;
}

bool unary(NodeCtx &c, const char *op) {
  Value x;
  if (!c.in(0, x))
    return false;
  Value y = c.emit(op, {x});
  c.outputs = {y};
  return (bool)y;
}

bool binary(NodeCtx &c, const char *op) {
  Value a, b;
  if (!c.in(0, a) || !c.in(1, b))
    return false;
  Value y = c.emit(op, {a, b});
  c.outputs = {y};
  return (bool)y;
}

/// Max and Min: variadic, folded pairwise.
bool variadic(NodeCtx &c, const char *op) {
  Value y;
  if (c.n.input_size() < 1 || !c.in(0, y))
    return c.n.input_size() < 1 ? c.fail("needs at least one input") : false;
  for (int i = 1; i < c.n.input_size(); ++i) {
    Value x;
    if (!c.in(i, x) || !(y = c.emit(op, {y, x})))
      return false;
  }
  c.outputs = {y};
  return true;
}

bool buildConv(NodeCtx &c) {
  Value x, w, b;
  if (!c.in(0, x) || !c.in(1, w) || (c.hasInput(2) && !c.in(2, b)))
    return false;
  if (!rank4(c, x))
    return false;
  Shape ws = c.shape(w);
  if (ws.size() != 4)
    return c.fail("weights must have rank 4, got " + std::to_string(ws.size()));
  Ints kernel, strides, dilations, pads;
  int64_t group;
  if (!c.getInts("kernel_shape", kernel, Ints{ws[2], ws[3]}) ||
      !c.getInts("strides", strides, Ints{1, 1}) ||
      !c.getInts("dilations", dilations, Ints{1, 1}) ||
      !c.getInt("group", group, 1))
    return false;
  if (kernel != Ints{ws[2], ws[3]})
    return c.fail("kernel_shape does not match the weights' shape");
  if (!windowPads(c, c.shape(x), kernel, strides, dilations, pads))
    return false;
  std::vector<Value> ins = {x, w};
  if (b)
    ins.push_back(b);
  Value y = c.emit("conv2d", ins,
                   Json{{"strides", strides},
                        {"pads", pads},
                        {"dilations", dilations},
                        {"groups", group}});
  c.outputs = {y};
  return (bool)y;
}

bool buildPool(NodeCtx &c, bool isMax) {
  Value x;
  if (!c.in(0, x) || !rank4(c, x))
    return false;
  Ints kernel, strides, dilations, pads;
  int64_t ceil, countPad = 0, order = 0;
  if (!c.getInts("kernel_shape", kernel) ||
      !c.getInts("strides", strides, Ints(kernel.size(), 1)) ||
      !c.getInts("dilations", dilations, Ints(kernel.size(), 1)) ||
      !c.getInt("ceil_mode", ceil, 0) ||
      (!isMax && !c.getInt("count_include_pad", countPad, 0)) ||
      (isMax && !c.getInt("storage_order", order, 0)))
    return false;
  for (int64_t d : dilations)
    if (d != 1)
      return c.fail("dilated pooling is not supported");
  if (order != 0)
    return c.fail("storage_order 1 is not supported");
  if (!windowPads(c, c.shape(x), kernel, strides, dilations, pads))
    return false;
  Json attrs{{"kernel", kernel},
             {"strides", strides},
             {"pads", pads},
             {"ceil_mode", ceil != 0}};
  if (!isMax)
    attrs["count_include_pad"] = countPad != 0;
  Value y = c.emit(isMax ? "max_pool2d" : "avg_pool2d", {x}, attrs);
  c.outputs = {y};
  return (bool)y;
}

bool buildBatchNorm(NodeCtx &c) {
  std::vector<Value> ins(5);
  for (int i = 0; i < 5; ++i)
    if (!c.in(i, ins[i]))
      return false;
  double eps, momentum;
  int64_t training;
  if (!c.getFloat("epsilon", eps, 1e-5) ||
      !c.getFloat("momentum", momentum, 0.9) ||
      !c.getInt("training_mode", training, 0))
    return false;
  if (training != 0)
    return c.fail("training_mode 1 is not supported (inference only)");
  Value y = c.emit("batch_norm", ins, Json{{"eps", eps}});
  c.outputs = {y};
  return (bool)y;
}

bool buildClip(NodeCtx &c) {
  Value x;
  if (!c.in(0, x))
    return false;
  Json attrs = Json::object();
  bool isInt = !isFloat(c.dtype(x));
  for (int i = 1; i <= 2; ++i) {
    if (!c.hasInput(i))
      continue;
    double v;
    if (!c.constScalar(i, v))
      return false;
    const char *key = i == 1 ? "min" : "max";
    if (!isInt) {
      attrs[key] = v;
      continue;
    }
    if (!(std::fabs(v) < 0x1p63) || v != std::trunc(v))
      return c.fail(std::string(key) +
                    " must be an integer for an integer tensor");
    attrs[key] = (int64_t)v;
  }
  Value y = attrs.empty() ? x : c.emit("clamp", {x}, attrs);
  c.outputs = {y};
  return (bool)y;
}

bool buildHardSwish(NodeCtx &c) {
  // x * relu6(x + 3) / 6, PyTorch's form of x * max(0, min(1, x/6 + 1/2)).
  Value x;
  if (!c.in(0, x))
    return false;
  if (!isFloat(c.dtype(x)))
    return c.fail("input must be a float tensor");
  DType t = c.dtype(x);
  Value three = c.constant(t, 3), six = c.constant(t, 6);
  Value y = three ? c.emit("add", {x, three}) : Value();
  if (y)
    y = c.emit("clamp", {y}, Json{{"min", 0.0}, {"max", 6.0}});
  if (y && six)
    y = c.emit("div", {y, six});
  if (y)
    y = c.emit("mul", {x, y});
  c.outputs = {y};
  return (bool)y;
}

bool buildGemm(NodeCtx &c) {
  Value a, b, bias;
  if (!c.in(0, a) || !c.in(1, b) || (c.hasInput(2) && !c.in(2, bias)))
    return false;
  double alpha, beta;
  int64_t ta, tb;
  if (!c.getFloat("alpha", alpha, 1.0) || !c.getFloat("beta", beta, 1.0) ||
      !c.getInt("transA", ta, 0) || !c.getInt("transB", tb, 0))
    return false;
  if (c.shape(a).size() != 2 || c.shape(b).size() != 2)
    return c.fail("A and B must be matrices");
  Value y = c.emit("matmul", {a, b},
                   Json{{"transpose_a", ta != 0}, {"transpose_b", tb != 0}});
  if (y && alpha != 1.0) {
    Value k = c.constant(c.dtype(y), alpha);
    y = k ? c.emit("mul", {y, k}) : Value();
  }
  if (y && bias) {
    if (beta != 1.0) {
      Value k = c.constant(c.dtype(bias), beta);
      bias = k ? c.emit("mul", {bias, k}) : Value();
    }
    y = bias ? c.emit("add", {y, bias}) : Value();
  }
  c.outputs = {y};
  return (bool)y;
}

/// Einsum of one or two operands, as the format's transposes, reshapes,
/// reduce_sum and one matmul. Each index of a two-operand equation is a
/// batch index (in both operands and the result), a free index of one
/// operand (and the result), contracted (in both, not the result) or summed
/// away first (in one operand only, not the result). The matmul reads an
/// operand whose axes already run [batch, free, contracted] or [batch,
/// contracted, free] through its transpose flags, so attention written
/// `einsum("bhid,bhjd->bhij", q, k)` is the matmul of Q and Kᵀ the
/// attention matcher knows. An ellipsis stands for the same leading axes
/// in every term, right-aligned. Refused with the reason: more than two
/// operands, an index repeated within a term (a diagonal), sizes that
/// differ for one index.
bool buildEinsum(NodeCtx &c) {
  std::string eq;
  if (!c.getString("equation", eq, ""))
    return false;
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.empty())
    return c.fail("missing attribute \"equation\"");
  int operands = c.n.input_size();
  if (operands < 1 || operands > 2)
    return c.fail("Einsum of " + std::to_string(operands) +
                  " operands is not supported (one or two)");
  std::vector<Value> xs(operands);
  for (int i = 0; i < operands; ++i)
    if (!c.in(i, xs[i]))
      return false;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if ((int)terms.size() != operands)
    return c.fail("equation \"" + eq + "\" has " +
                  std::to_string(terms.size()) + " terms for " +
                  std::to_string(operands) + " operands");
  // Indices as ints: a letter its code, the ellipsis' axes 1000 + k,
  // right-aligned over the longest ellipsis.
  constexpr int kEllipsis = 1000;
  auto ellipsisRank = [&](const std::string &t, int64_t rank) -> int64_t {
    int64_t letters = 0;
    for (char ch : t)
      letters += std::isalpha((unsigned char)ch) != 0;
    return rank - letters;
  };
  int64_t longest = 0;
  for (int i = 0; i < operands; ++i)
    if (terms[i].find("...") != std::string::npos)
      longest = std::max(
          longest, ellipsisRank(terms[i], (int64_t)c.shape(xs[i]).size()));
  auto parse = [&](const std::string &t, int64_t rank,
                   std::vector<int> &out) -> bool {
    out.clear();
    bool seen = false;
    for (size_t k = 0; k < t.size(); ++k) {
      if (t.compare(k, 3, "...") == 0) {
        if (seen)
          return c.fail("term \"" + t + "\" has two ellipses");
        seen = true;
        int64_t e = rank < 0 ? longest : ellipsisRank(t, rank);
        if (e < 0)
          return c.fail("term \"" + t + "\" has more indices than its " +
                        "operand's rank " + std::to_string(rank));
        for (int64_t j = 0; j < e; ++j)
          out.push_back(kEllipsis + (int)(longest - e + j));
        k += 2;
      } else if (std::isalpha((unsigned char)t[k])) {
        if (llvm::is_contained(out, (int)t[k]))
          return c.fail("index '" + std::string(1, t[k]) + "' repeats in \"" +
                        t + "\" (a diagonal): not supported");
        out.push_back(t[k]);
      } else {
        return c.fail("equation \"" + eq + "\": unexpected '" +
                      std::string(1, t[k]) + "'");
      }
    }
    if (rank >= 0 && (int64_t)out.size() != rank)
      return c.fail("term \"" + t + "\" has " + std::to_string(out.size()) +
                    " indices for an operand of rank " + std::to_string(rank));
    return true;
  };
  std::vector<std::vector<int>> in(operands);
  std::map<int, int64_t> size;
  for (int i = 0; i < operands; ++i) {
    Shape s = c.shape(xs[i]);
    if (!parse(terms[i], (int64_t)s.size(), in[i]))
      return false;
    for (size_t k = 0; k < s.size(); ++k) {
      auto [it, fresh] = size.insert({in[i][k], s[k]});
      if (!fresh && it->second != s[k])
        return c.fail("equation \"" + eq + "\": an index has sizes " +
                      std::to_string(it->second) + " and " +
                      std::to_string(s[k]));
    }
  }
  std::vector<int> out;
  if (arrow != std::string::npos) {
    if (!parse(eq.substr(arrow + 2), -1, out))
      return false;
    for (int idx : out)
      if (!size.count(idx))
        return c.fail("equation \"" + eq +
                      "\": the result has an index no operand has");
  } else {
    // Implicit: the ellipsis, then the indices used once, alphabetically.
    std::map<int, int> uses;
    for (const std::vector<int> &t : in)
      for (int idx : t)
        ++uses[idx];
    for (auto [idx, n] : uses)
      if (idx >= kEllipsis)
        out.push_back(idx);
    for (auto [idx, n] : uses)
      if (idx < kEllipsis && n == 1)
        out.push_back(idx);
  }
  auto has = [](const std::vector<int> &v, int idx) {
    return llvm::is_contained(v, idx);
  };
  // Sums away the indices of operand i that neither the result nor the
  // other operand has.
  auto sumAway = [&](int i) -> bool {
    Ints axes;
    std::vector<int> kept;
    for (size_t k = 0; k < in[i].size(); ++k) {
      int idx = in[i][k];
      bool other = operands == 2 && has(in[1 - i], idx);
      if (!has(out, idx) && !other)
        axes.push_back((int64_t)k);
      else
        kept.push_back(idx);
    }
    if (axes.empty())
      return true;
    xs[i] = c.emit("reduce_sum", {xs[i]},
                   Json{{"axes", axes}, {"keepdims", false}});
    in[i] = kept;
    return (bool)xs[i];
  };
  auto permute = [&](Value v, const std::vector<int> &from,
                     const std::vector<int> &to) -> Value {
    if (from == to)
      return v;
    Ints perm;
    for (int idx : to)
      perm.push_back(
          (int64_t)(std::find(from.begin(), from.end(), idx) - from.begin()));
    return c.emit("transpose", {v}, Json{{"perm", perm}});
  };
  for (int i = 0; i < operands; ++i)
    if (!sumAway(i))
      return false;
  if (operands == 1) {
    c.outputs = {permute(xs[0], in[0], out)};
    return (bool)c.outputs[0];
  }
  std::vector<int> batch, freeA, freeB, contracted;
  for (int idx : out) {
    bool a = has(in[0], idx), b = has(in[1], idx);
    (a && b ? batch : a ? freeA : freeB).push_back(idx);
  }
  for (int idx : in[0])
    if (!has(out, idx))
      contracted.push_back(idx);
  auto cat = [](std::initializer_list<const std::vector<int> *> parts) {
    std::vector<int> v;
    for (const std::vector<int> *p : parts)
      v.insert(v.end(), p->begin(), p->end());
    return v;
  };
  auto product = [&](const std::vector<int> &idxs) {
    int64_t p = 1;
    for (int idx : idxs)
      p *= size[idx];
    return p;
  };
  // Operand i as [batch, rows, cols] of the matmul, through its transpose
  // flag where its axes already run the other way.
  auto operand = [&](int i, const std::vector<int> &rows,
                     const std::vector<int> &cols, bool &transposed) -> Value {
    std::vector<int> straight = cat({&batch, &rows, &cols});
    std::vector<int> flipped = cat({&batch, &cols, &rows});
    transposed = in[i] == flipped && in[i] != straight;
    std::vector<int> order = transposed ? flipped : straight;
    Value v = permute(xs[i], in[i], order);
    if (!v)
      return v;
    Shape s;
    for (int idx : batch)
      s.push_back(size[idx]);
    int64_t r = product(rows), k = product(cols);
    s.push_back(transposed ? k : r);
    s.push_back(transposed ? r : k);
    if (s == c.shape(v))
      return v;
    return c.emit("reshape", {v}, Json{{"shape", s}});
  };
  bool ta, tb;
  Value a = operand(0, freeA, contracted, ta);
  Value b = a ? operand(1, contracted, freeB, tb) : Value();
  if (!b)
    return false;
  // operand() of B with rows = contracted: "transposed" means B's axes
  // run [batch, freeB, contracted], what transpose_b reads.
  Value y =
      c.emit("matmul", {a, b}, Json{{"transpose_a", ta}, {"transpose_b", tb}});
  if (!y)
    return false;
  std::vector<int> got = cat({&batch, &freeA, &freeB});
  Shape s;
  for (int idx : got)
    s.push_back(size[idx]);
  if (s != c.shape(y))
    y = c.emit("reshape", {y}, Json{{"shape", s}});
  y = y ? permute(y, got, out) : Value();
  c.outputs = {y};
  return (bool)y;
}

bool buildReshape(NodeCtx &c) {
  Value x;
  Ints shape;
  int64_t allowZero;
  if (!c.in(0, x) || !c.constInts(1, shape) ||
      !c.getInt("allowzero", allowZero, 0))
    return false;
  Shape xs = c.shape(x);
  // ONNX's 0 copies the input's size (unless allowzero); the format's 0 is
  // a size of zero.
  for (size_t i = 0; i < shape.size() && !allowZero; ++i) {
    if (shape[i] != 0)
      continue;
    if (i >= xs.size())
      return c.fail("shape entry " + std::to_string(i) +
                    " is 0 (copy) but the input has rank " +
                    std::to_string(xs.size()));
    shape[i] = xs[i];
  }
  Value y = c.emit("reshape", {x}, Json{{"shape", shape}});
  c.outputs = {y};
  return (bool)y;
}

bool buildFlatten(NodeCtx &c) {
  Value x;
  int64_t axis;
  if (!c.in(0, x) || !c.getInt("axis", axis, 1))
    return false;
  Shape xs = c.shape(x);
  int64_t r = (int64_t)xs.size();
  if (axis < -r || axis > r)
    return c.fail("axis " + std::to_string(axis) + " out of range for rank " +
                  std::to_string(r));
  if (axis < 0)
    axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i)
    (i < axis ? outer : inner) *= xs[i];
  Value y = c.emit("reshape", {x}, Json{{"shape", Ints{outer, inner}}});
  c.outputs = {y};
  return (bool)y;
}

bool buildTranspose(NodeCtx &c) {
  Value x;
  if (!c.in(0, x))
    return false;
  Json attrs = Json::object();
  if (c.attr("perm")) {
    Ints perm;
    if (!c.getInts("perm", perm))
      return false;
    attrs["perm"] = perm;
  }
  Value y = c.emit("transpose", {x}, attrs);
  c.outputs = {y};
  return (bool)y;
}

bool buildAxisOp(NodeCtx &c, const char *op, int64_t dflt) {
  Value x;
  int64_t axis;
  if (!c.in(0, x) || !c.getInt("axis", axis, dflt))
    return false;
  Value y = c.emit(op, {x}, Json{{"axis", axis}});
  c.outputs = {y};
  return (bool)y;
}

bool buildConcat(NodeCtx &c) {
  std::vector<Value> ins(c.n.input_size());
  for (int i = 0; i < c.n.input_size(); ++i)
    if (!c.in(i, ins[i]))
      return false;
  int64_t axis;
  if (!c.getInt("axis", axis))
    return false;
  if (ins.empty())
    return c.fail("needs at least one input");
  Value y = c.emit("concat", ins, Json{{"axis", axis}});
  c.outputs = {y};
  return (bool)y;
}

bool buildSlice(NodeCtx &c) {
  Value x;
  Ints starts, ends, axes, steps;
  if (!c.in(0, x) || !c.constInts(1, starts) || !c.constInts(2, ends) ||
      (c.hasInput(3) && !c.constInts(3, axes)) ||
      (c.hasInput(4) && !c.constInts(4, steps)))
    return false;
  // ONNX writes "to the end" as INT64_MAX; the slice rule clamps anyway, and
  // a smaller bound keeps the format's integer arithmetic safe.
  constexpr int64_t big = int64_t(1) << 62;
  for (Ints *l : {&starts, &ends})
    for (int64_t &v : *l)
      v = std::clamp(v, -big, big);
  Json attrs{{"starts", starts}, {"ends", ends}};
  if (c.hasInput(3))
    attrs["axes"] = axes;
  if (c.hasInput(4))
    attrs["steps"] = steps;
  Value y = c.emit("slice", {x}, attrs);
  c.outputs = {y};
  return (bool)y;
}

/// Split: one slice along `axis` per output, sized by the `split` input,
/// else equal parts (opset 18's `num_outputs`: ceil(n / num_outputs) each,
/// the last what is left).
bool buildSplit(NodeCtx &c) {
  Value x;
  int64_t axis, numOutputs;
  if (!c.in(0, x) || !c.getInt("axis", axis, 0) ||
      !c.getInt("num_outputs", numOutputs, 0))
    return false;
  int64_t r = (int64_t)c.shape(x).size();
  if (axis < -r || axis >= r)
    return c.fail("axis " + std::to_string(axis) + " out of range for rank " +
                  std::to_string(r));
  if (axis < 0)
    axis += r;
  int64_t n = c.shape(x)[axis];
  int64_t outputs = c.n.output_size();
  Ints sizes;
  if (c.hasInput(1)) {
    if (!c.constInts(1, sizes))
      return false;
    if ((int64_t)sizes.size() != outputs)
      return c.fail("split has " + std::to_string(sizes.size()) +
                    " sizes for " + std::to_string(outputs) + " outputs");
    int64_t total = 0;
    for (int64_t v : sizes) {
      if (v < 0 || v > n)
        return c.fail("split size " + std::to_string(v) + " out of range");
      total += v;
    }
    if (total != n)
      return c.fail("split sizes add up to " + std::to_string(total) +
                    ", not the axis' " + std::to_string(n));
  } else if (numOutputs) {
    if (numOutputs != outputs || numOutputs > n)
      return c.fail("num_outputs " + std::to_string(numOutputs) +
                    " does not fit " + std::to_string(outputs) +
                    " outputs of an axis of " + std::to_string(n));
    int64_t part = (n + numOutputs - 1) / numOutputs;
    for (int64_t i = 0; i < numOutputs; ++i)
      sizes.push_back(std::min(part, n - i * part));
    if (sizes.back() < 1)
      return c.fail("num_outputs " + std::to_string(numOutputs) +
                    " leaves an output empty on an axis of " +
                    std::to_string(n));
  } else {
    if (n % outputs)
      return c.fail("an axis of " + std::to_string(n) +
                    " does not split into " + std::to_string(outputs) +
                    " equal parts");
    sizes.assign(outputs, n / outputs);
  }
  int64_t start = 0;
  for (int64_t size : sizes) {
    Value y = c.emit("slice", {x},
                     Json{{"starts", Ints{start}},
                          {"ends", Ints{start + size}},
                          {"axes", Ints{axis}}});
    if (!y)
      return false;
    c.outputs.push_back(y);
    start += size;
  }
  return true;
}

bool buildGather(NodeCtx &c) {
  Value x, idx;
  int64_t axis;
  if (!c.in(0, x) || !c.in(1, idx) || !c.getInt("axis", axis, 0))
    return false;
  Value y = c.emit("gather", {x, idx}, Json{{"axis", axis}});
  c.outputs = {y};
  return (bool)y;
}

bool buildPad(NodeCtx &c) {
  Value x;
  Ints pads, axes;
  std::string mode;
  if (!c.in(0, x) || !c.constInts(1, pads) ||
      !c.getString("mode", mode, "constant"))
    return false;
  if (mode != "constant")
    return c.fail("mode \"" + mode + "\" is not supported (only constant)");
  double value = 0;
  if (c.hasInput(2) && !c.constScalar(2, value))
    return false;
  int64_t r = (int64_t)c.shape(x).size();
  if (c.hasInput(3)) {
    // Opset 18: pads for the listed axes only.
    if (!c.constInts(3, axes))
      return false;
    if (pads.size() != 2 * axes.size())
      return c.fail("pads must have twice as many entries as axes");
    Ints full(2 * r, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
      if (a < 0 || a >= r)
        return c.fail("axis " + std::to_string(axes[i]) +
                      " out of range for rank " + std::to_string(r));
      full[a] = pads[i];
      full[r + a] = pads[axes.size() + i];
    }
    pads = full;
  }
  Json attrs{{"pads", pads}};
  if (isFloat(c.dtype(x)))
    attrs["value"] = value;
  else if (!(std::fabs(value) < 0x1p63) || value != std::trunc(value))
    return c.fail("the pad value must be an integer for an integer tensor");
  else
    attrs["value"] = (int64_t)value;
  Value y = c.emit("pad", {x}, attrs);
  c.outputs = {y};
  return (bool)y;
}

bool buildLayerNorm(NodeCtx &c) {
  std::vector<Value> ins(1);
  if (!c.in(0, ins[0]))
    return false;
  for (int i = 1; i <= 2; ++i) {
    if (!c.hasInput(i))
      break;
    Value v;
    if (!c.in(i, v))
      return false;
    ins.push_back(v);
  }
  int64_t axis, stash;
  double eps;
  if (!c.getInt("axis", axis, -1) || !c.getFloat("epsilon", eps, 1e-5) ||
      !c.getInt("stash_type", stash, 1))
    return false;
  Value y = c.emit("layer_norm", ins, Json{{"axis", axis}, {"eps", eps}});
  c.outputs = {y};
  return (bool)y;
}

/// ReduceMean, ReduceSum, ReduceMax, ReduceMin: `axes` an input from
/// `axesInputFrom` on (ReduceSum 13, the others 18), an attribute before.
bool buildReduce(NodeCtx &c, const char *op, int64_t axesInputFrom) {
  Value x;
  Ints axes;
  int64_t keep, noop;
  if (!c.in(0, x) || !c.getInt("keepdims", keep, 1) ||
      !c.getInt("noop_with_empty_axes", noop, 0))
    return false;
  if (c.opset >= axesInputFrom) {
    if (c.attr("axes"))
      return c.fail("attribute \"axes\" is an input from opset " +
                    std::to_string(axesInputFrom));
    if (c.hasInput(1) && !c.constInts(1, axes))
      return false;
  } else if (!c.getInts("axes", axes, Ints{})) {
    return false;
  }
  if (axes.empty() && noop) {
    c.outputs = {x};
    return true;
  }
  Json attrs{{"keepdims", keep != 0}};
  if (!axes.empty())
    attrs["axes"] = axes;
  Value y = c.emit(op, {x}, attrs);
  c.outputs = {y};
  return (bool)y;
}

/// Where(cond, x, y): the format's select.
bool buildWhere(NodeCtx &c) {
  Value cond, x, y;
  if (!c.in(0, cond) || !c.in(1, x) || !c.in(2, y))
    return false;
  c.outputs = {c.emit("select", {cond, x, y})};
  return (bool)c.outputs[0];
}

/// `t`'s first element as the format's constant value (infinities and NaN
/// as the strings JSON needs).
Json scalarJson(const ConstTensor &t) {
  if (t.dtype == DType::Bool)
    return t.intAt(0) != 0;
  if (!isFloat(t.dtype))
    return t.intAt(0);
  double f = t.floatAt(0);
  return std::isnan(f)   ? Json("nan")
         : std::isinf(f) ? Json(f < 0 ? "-inf" : "inf")
                         : Json(f);
}

/// ConstantOfShape's `value` (a one-element tensor; float 0 when absent)
/// into `out`.
bool constantOfShapeValue(NodeCtx &c, ConstTensor &out) {
  for (const onnx::AttributeProto &a : c.n.attribute()) {
    if (a.name() != "value")
      continue;
    if (a.type() != onnx::AttributeProto::TENSOR)
      return c.fail("attribute \"value\" must be TENSOR, got " +
                    attrTypeName(a.type()));
    if (!c.o.decodeTensor(a.t(), c.o.describe(c.index, c.n) + ": value", out))
      return false;
    if (out.numel() != 1)
      return c.fail("attribute \"value\" must hold one element, got " +
                    std::to_string(out.numel()));
    return true;
  }
  out.dtype = DType::F32;
  out.shape = {1};
  out.bytes = std::make_shared<std::vector<uint8_t>>(4, 0);
  return true;
}

/// ConstantOfShape: the constant shape given, every element `value` (a
/// constant op of that shape: no bytes of its own).
bool buildConstantOfShape(NodeCtx &c) {
  Ints shape;
  ConstTensor v;
  if (!c.constInts(0, shape) || !constantOfShapeValue(c, v))
    return false;
  c.outputs = {c.emit("constant", {},
                      Json{{"dtype", dtypeName(v.dtype)},
                           {"shape", shape},
                           {"value", scalarJson(v)}})};
  return (bool)c.outputs[0];
}

/// Expand: broadcast both ways (NumPy rules) to the constant shape.
bool buildExpand(NodeCtx &c) {
  Value x;
  Ints want;
  if (!c.in(0, x) || !c.constInts(1, want))
    return false;
  Shape have = c.shape(x);
  size_t rank = std::max(have.size(), want.size());
  Ints out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i + have.size() >= rank ? have[i + have.size() - rank] : 1;
    int64_t b = i + want.size() >= rank ? want[i + want.size() - rank] : 1;
    if (a != b && a != 1 && b != 1)
      return c.fail("shape " + shapeStr(want) + " does not broadcast with " +
                    shapeStr(have));
    out[i] = a == 1 ? b : a;
  }
  if (Shape(out) == have) {
    c.outputs = {x};
    return true;
  }
  c.outputs = {c.emit("broadcast_to", {x}, Json{{"shape", out}})};
  return (bool)c.outputs[0];
}

/// GatherElements: the format's take_along_axis.
bool buildGatherElements(NodeCtx &c) {
  Value x, idx;
  int64_t axis;
  if (!c.in(0, x) || !c.in(1, idx) || !c.getInt("axis", axis, 0))
    return false;
  c.outputs = {c.emit("take_along_axis", {x, idx}, Json{{"axis", axis}})};
  return (bool)c.outputs[0];
}

/// Trilu: the input where col - row >= k (upper) or <= k (lower), zero
/// elsewhere; the mask from iotas, as a model would write it.
bool buildTrilu(NodeCtx &c) {
  Value x;
  int64_t upper;
  double k = 0;
  if (!c.getInt("upper", upper, 1) || (c.hasInput(1) && !c.constScalar(1, k)))
    return false;
  // A constant of one value (torch.ones(L, L).tril(), as exported) becomes
  // that value: the result is then a mask of iotas that the attention
  // templates analyse (fully masked tiles skipped), not a param they read.
  auto it = c.o.consts.find(c.n.input(0));
  if (it != c.o.consts.end() && it->second.bytes && it->second.numel() > 0) {
    const ConstTensor &t = it->second;
    size_t size = dtypeSize(t.dtype);
    const uint8_t *p = t.bytes->data();
    bool same = true;
    for (int64_t i = 1; i < t.numel() && same; ++i)
      same = std::memcmp(p, p + i * size, size) == 0;
    if (same) {
      x = c.emit("constant", {},
                 Json{{"dtype", dtypeName(t.dtype)}, {"value", scalarJson(t)}});
      if (!x)
        return false;
    }
  }
  if (!x && !c.in(0, x))
    return false;
  Shape s = it != c.o.consts.end() ? it->second.shape : c.shape(x);
  if (s.size() < 2)
    return c.fail("needs an input of rank 2 or more, got rank " +
                  std::to_string(s.size()));
  Ints plane{s[s.size() - 2], s[s.size() - 1]};
  auto iota = [&](int64_t axis) {
    return c.emit("iota", {},
                  Json{{"dtype", "i64"}, {"shape", plane}, {"axis", axis}});
  };
  Value row = iota(0), col = iota(1);
  Value diff = row && col ? c.emit("sub", {col, row}) : Value();
  Value kv =
      c.emit("constant", {}, Json{{"dtype", "i64"}, {"value", (int64_t)k}});
  Value keep = diff && kv
                   ? c.emit(upper ? "greater_equal" : "less_equal", {diff, kv})
                   : Value();
  DType dt = c.dtype(x);
  Json zv = dt == DType::Bool ? Json(false) : isFloat(dt) ? Json(0.0) : Json(0);
  Value zero =
      c.emit("constant", {}, Json{{"dtype", dtypeName(dt)}, {"value", zv}});
  Value y = keep && zero ? c.emit("select", {keep, x, zero}) : Value();
  if (y && c.shape(y) != s)
    y = c.emit("broadcast_to", {y}, Json{{"shape", Ints(s)}});
  c.outputs = {y};
  return (bool)y;
}

/// NegativeLogLikelihoodLoss (`logSoftmax` false: the input holds the
/// log-probabilities) and SoftmaxCrossEntropyLoss (true): input [N, C, d..],
/// target [N, d..] (class indices), optional weight [C]; `ignore_index`,
/// `reduction` (mean, sum, none), as the ONNX specs write them. The target's
/// entry is a take_along_axis along the class axis, kept [N, 1, d..] until a
/// reduction, which GPU targets then compute in the log-softmax's kernel.
bool buildNllLoss(NodeCtx &c, bool logSoftmax) {
  Value x, t, w;
  std::string reduction;
  if (!c.in(0, x) || !c.in(1, t) || (c.hasInput(2) && !c.in(2, w)) ||
      !c.getString("reduction", reduction, "mean"))
    return false;
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return c.fail("reduction must be mean, sum or none, got \"" + reduction +
                  "\"");
  Shape xs = c.shape(x), ts = c.shape(t);
  if (xs.size() < 2)
    return c.fail("the scores need rank 2 or more ([N, C, ...]), got rank " +
                  std::to_string(xs.size()));
  Shape want = xs;
  want.erase(want.begin() + 1);
  if (ts != want)
    return c.fail("the target's shape " + shapeStr(ts) + " must be " +
                  shapeStr(want) + " (the scores' without the class axis)");
  DType dt = c.dtype(x);
  Shape outShape = ts;
  // [N, C, d..] scores (a per-position loss) are taken as [N·d.., C] rows,
  // the class axis last, so that the loss is one row chain (a reduction
  // over the middle axis is a launch an op), for one transpose; unless
  // the log-probabilities are an output too, in their own layout.
  bool wantsLogp =
      logSoftmax && c.n.output_size() > 1 && !c.n.output(1).empty();
  if (xs.size() > 2 && !wantsLogp) {
    Ints perm = {0};
    for (int64_t i = 2; i < int64_t(xs.size()); ++i)
      perm.push_back(i);
    perm.push_back(1);
    int64_t rows = 1;
    for (int64_t d : ts)
      rows *= d;
    x = c.emit("transpose", {x}, Json{{"perm", perm}});
    x = x ? c.emit("reshape", {x}, Json{{"shape", Ints{rows, xs[1]}}})
          : Value();
    t = c.emit("reshape", {t}, Json{{"shape", Ints{rows}}});
    if (!x || !t)
      return false;
    xs = {rows, xs[1]};
    ts = {rows};
  }
  Value logp = logSoftmax ? c.emit("log_softmax", {x}, Json{{"axis", 1}}) : x;
  Shape picked = xs;
  picked[1] = 1;
  Value idx = c.emit("reshape", {t}, Json{{"shape", Ints(picked)}});
  if (!logp || !idx)
    return false;
  // Ignored targets read class 0 and count nothing.
  Value keep;
  if (c.attr("ignore_index")) {
    int64_t ignore;
    if (!c.getInt("ignore_index", ignore))
      return false;
    Value iv =
        c.emit("constant", {},
               Json{{"dtype", dtypeName(c.dtype(t))}, {"value", ignore}});
    Value zero = c.emit("constant", {},
                        Json{{"dtype", dtypeName(c.dtype(t))}, {"value", 0}});
    keep = iv ? c.emit("not_equal", {idx, iv}) : Value();
    idx = keep && zero ? c.emit("select", {keep, idx, zero}) : Value();
    if (!idx)
      return false;
  }
  Value entry = c.emit("take_along_axis", {logp, idx}, Json{{"axis", 1}});
  Value loss = entry ? c.emit("neg", {entry}) : Value();
  Value weight; // each entry's weight, where weights or ignored entries exist
  if (w) {
    if (c.shape(w) != Shape{xs[1]})
      return c.fail("the weight's shape " + shapeStr(c.shape(w)) +
                    " must be [" + std::to_string(xs[1]) + "]");
    weight = loss ? c.emit("gather", {w, idx}, Json{{"axis", 0}}) : Value();
    loss = weight ? c.emit("mul", {loss, weight}) : Value();
  }
  Value zero = c.constant(dt, 0.0);
  if (keep) {
    loss = loss && zero ? c.emit("select", {keep, loss, zero}) : Value();
    Value one = c.constant(dt, 1.0);
    weight = one && zero ? c.emit("select", {keep, weight ? weight : one, zero})
                         : Value();
  }
  if (!loss || ((w || keep) && !weight))
    return false;
  Value y;
  if (reduction == "none")
    y = c.emit("reshape", {loss}, Json{{"shape", Ints(outShape)}});
  else if (reduction == "sum" || !weight)
    y = c.emit(reduction == "sum" ? "reduce_sum" : "reduce_mean", {loss});
  else {
    // The weighted mean's two sums in f32 at least: in f16 a sum of the
    // losses overflows long before the mean does.
    bool narrow = dt == DType::F16 || dt == DType::BF16;
    auto wide = [&](Value v) {
      return narrow && v ? c.emit("cast", {v}, Json{{"to", "f32"}}) : v;
    };
    Value total = wide(loss), count = wide(weight);
    total = total ? c.emit("reduce_sum", {total}) : Value();
    count = count ? c.emit("reduce_sum", {count}) : Value();
    y = total && count ? c.emit("div", {total, count}) : Value();
    if (narrow && y)
      y = c.emit("cast", {y}, Json{{"to", dtypeName(dt)}});
  }
  c.outputs = {y};
  if (y && wantsLogp)
    c.outputs.push_back(logp);
  return (bool)y;
}

bool buildConvTranspose(NodeCtx &c) {
  Value x, w, b;
  if (!c.in(0, x) || !c.in(1, w) || (c.hasInput(2) && !c.in(2, b)))
    return false;
  if (!rank4(c, x))
    return false;
  Shape ws = c.shape(w);
  if (ws.size() != 4)
    return c.fail("weights must have rank 4, got " + std::to_string(ws.size()));
  Ints kernel, strides, dilations, pads, outPad;
  int64_t group;
  std::string autoPad;
  if (!c.getInts("kernel_shape", kernel, Ints{ws[2], ws[3]}) ||
      !c.getInts("strides", strides, Ints{1, 1}) ||
      !c.getInts("dilations", dilations, Ints{1, 1}) ||
      !c.getInts("pads", pads, Ints{0, 0, 0, 0}) ||
      !c.getInts("output_padding", outPad, Ints{0, 0}) ||
      !c.getInt("group", group, 1) ||
      !c.getString("auto_pad", autoPad, "NOTSET"))
    return false;
  if (kernel != Ints{ws[2], ws[3]})
    return c.fail("kernel_shape does not match the weights' shape");
  if (c.attr("output_shape"))
    return c.fail("output_shape is not supported; give pads and "
                  "output_padding");
  if (autoPad != "NOTSET" && autoPad != "VALID")
    return c.fail("auto_pad " + autoPad + " is not supported");
  std::vector<Value> ins = {x, w};
  if (b)
    ins.push_back(b);
  Value y = c.emit("conv_transpose2d", ins,
                   Json{{"strides", strides},
                        {"pads", pads},
                        {"dilations", dilations},
                        {"output_padding", outPad},
                        {"groups", group}});
  c.outputs = {y};
  return (bool)y;
}

/// Resize in nearest mode: the source index of every output row and column
/// is computed here, as ONNX defines it, and read with two gathers.
bool buildResize(NodeCtx &c) {
  Value x;
  std::string mode, ctm, nearest;
  double extrapolation, cubicA;
  int64_t exclude, antialias = 0;
  if (!c.in(0, x) || !c.getString("mode", mode, "nearest") ||
      !c.getString("coordinate_transformation_mode", ctm, "half_pixel") ||
      !c.getString("nearest_mode", nearest, "round_prefer_floor") ||
      !c.getFloat("extrapolation_value", extrapolation, 0) ||
      !c.getFloat("cubic_coeff_a", cubicA, -0.75) ||
      !c.getInt("exclude_outside", exclude, 0) ||
      !c.getInt("antialias", antialias, 0))
    return false;
  if (mode != "nearest")
    return c.fail("mode \"" + mode + "\" is not supported (only nearest)");
  if (antialias)
    return c.fail("antialias is not supported");
  if (c.attr("axes") || c.attr("keep_aspect_ratio_policy"))
    return c.fail("axes and keep_aspect_ratio_policy are not supported");
  static const std::set<std::string> modes = {
      "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
      "tf_half_pixel_for_nn"};
  if (!modes.count(ctm))
    return c.fail("coordinate_transformation_mode \"" + ctm +
                  "\" is not supported");
  static const std::set<std::string> nearestModes = {
      "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (!nearestModes.count(nearest))
    return c.fail("nearest_mode \"" + nearest + "\" is not supported");
  Shape xs = c.shape(x);
  int64_t r = (int64_t)xs.size();
  std::vector<double> scales(r, 1.0);
  Shape out = xs;
  const ConstTensor *t;
  bool haveSizes = c.hasInput(3);
  if (haveSizes) {
    Ints sizes;
    if (!c.constInts(3, sizes))
      return false;
    if ((int64_t)sizes.size() != r)
      return c.fail("sizes must have one entry per axis");
    for (int64_t i = 0; i < r; ++i) {
      if (sizes[i] < 0 || sizes[i] > kMaxElements)
        return c.fail("sizes must be in [0, 2^40]");
      out[i] = sizes[i];
      scales[i] = xs[i] ? (double)sizes[i] / (double)xs[i] : 1.0;
    }
  } else {
    if (!c.hasInput(2))
      return c.fail("needs scales or sizes");
    if (!c.constIn(2, t))
      return false;
    if (!isFloat(t->dtype) || t->numel() != r)
      return c.fail("scales must be floats, one per axis");
    for (int64_t i = 0; i < r; ++i) {
      scales[i] = t->floatAt(i);
      if (!(scales[i] > 0) || scales[i] * (double)xs[i] > (double)kMaxElements)
        return c.fail("scales must be positive and keep sizes within 2^40");
      out[i] = (int64_t)std::floor((double)xs[i] * scales[i]);
    }
  }
  if (std::string e = checkShapeLimits(out); !e.empty())
    return c.fail("the result's " + e);
  Value y = x;
  for (int64_t axis = 0; axis < r; ++axis) {
    int64_t n = xs[axis], m = out[axis];
    if (m == n && scales[axis] == 1.0)
      continue;
    if (n == 0)
      return c.fail("cannot resize an empty axis");
    if ((uint64_t)m * 8 > c.o.limits.maxParamBytes - c.o.paramBytes)
      return c.fail("the indices of axis " + std::to_string(axis) +
                    " exceed the params' limit");
    ConstTensor idx;
    idx.dtype = DType::I64;
    idx.shape = {m};
    idx.bytes = std::make_shared<std::vector<uint8_t>>(m * 8);
    double s = scales[axis];
    for (int64_t o = 0; o < m; ++o) {
      double src;
      if (ctm == "asymmetric")
        src = o / s;
      else if (ctm == "align_corners")
        src = m > 1 ? (double)o * (double)(n - 1) / (double)(m - 1) : 0;
      else if (ctm == "tf_half_pixel_for_nn")
        src = (o + 0.5) / s;
      else if (ctm == "pytorch_half_pixel" && m <= 1)
        src = 0;
      else
        src = (o + 0.5) / s - 0.5;
      // Within [-1, n] the rounding below is exact and the cast defined.
      src = std::clamp(src, -1.0, (double)n);
      double fl = std::floor(src);
      int64_t k;
      if (nearest == "floor")
        k = (int64_t)fl;
      else if (nearest == "ceil")
        k = (int64_t)std::ceil(src);
      else if (src - fl == 0.5)
        k = (int64_t)(nearest == "round_prefer_floor" ? fl : fl + 1);
      else
        k = (int64_t)std::round(src);
      k = std::clamp<int64_t>(k, 0, n - 1);
      std::memcpy(idx.bytes->data() + 8 * o, &k, 8);
    }
    Value iv;
    if (!c.constValue("resize" + std::to_string(axis), std::move(idx), iv))
      return false;
    y = c.emit("gather", {y, iv}, Json{{"axis", axis}});
    if (!y)
      return false;
  }
  c.outputs = {y};
  return true;
}

/// Squeeze and Unsqueeze: a reshape to the shape the axes give.
bool buildSqueeze(NodeCtx &c, bool unsqueeze) {
  Value x;
  Ints axes;
  if (!c.in(0, x))
    return false;
  if (c.hasInput(1) && !c.constInts(1, axes))
    return false;
  Shape xs = c.shape(x);
  int64_t r = (int64_t)xs.size() + (unsqueeze ? (int64_t)axes.size() : 0);
  std::vector<bool> marked(r, false);
  if (unsqueeze && !c.hasInput(1))
    return c.fail("input 1 (axes) is required");
  for (int64_t a : axes) {
    if (a < -r || a >= r)
      return c.fail("axis " + std::to_string(a) + " out of range for rank " +
                    std::to_string(r));
    if (a < 0)
      a += r;
    if (marked[a])
      return c.fail("axis " + std::to_string(a) + " is repeated");
    marked[a] = true;
  }
  Ints shape;
  if (unsqueeze) {
    size_t k = 0;
    for (int64_t i = 0; i < r; ++i)
      shape.push_back(marked[i] ? 1 : xs[k++]);
  } else {
    for (int64_t i = 0; i < r; ++i) {
      bool drop = axes.empty() ? xs[i] == 1 : (bool)marked[i];
      if (drop && xs[i] != 1)
        return c.fail("axis " + std::to_string(i) + " has size " +
                      std::to_string(xs[i]) + ", not 1");
      if (!drop)
        shape.push_back(xs[i]);
    }
  }
  Value y = c.emit("reshape", {x}, Json{{"shape", shape}});
  c.outputs = {y};
  return (bool)y;
}

bool buildCast(NodeCtx &c) {
  Value x;
  int64_t to;
  if (!c.in(0, x) || !c.getInt("to", to))
    return false;
  if (to == onnx::TensorProto::UINT8) {
    // i32 values 0..255 (OnnxImporter::isU8): a bool as 0 or 1; anything
    // else wrapped modulo 256 (a float's integer part first, as a C cast
    // takes it in range), computed in f64, exact below 2^53.
    DType from = c.dtype(x);
    auto as = [&](Value v, DType t) {
      return v ? c.emit("cast", {v}, Json{{"to", dtypeName(t)}}) : Value();
    };
    if (from == DType::Bool) {
      c.outputs = {as(x, DType::I32)};
      return (bool)c.outputs[0];
    }
    Value v = as(isFloat(from) ? as(x, DType::I64) : x, DType::F64);
    Value k = c.constant(DType::F64, 256.0);
    Value q = v && k ? c.emit("div", {v, k}) : Value();
    q = q ? c.emit("floor", {q}) : Value();
    q = q ? c.emit("mul", {q, k}) : Value();
    Value y = q ? c.emit("sub", {v, q}) : Value();
    c.outputs = {as(y, DType::I32)};
    return (bool)c.outputs[0];
  }
  std::optional<DType> t = dtypeOfOnnx((int32_t)to);
  if (!t)
    return c.fail("unsupported dtype " + onnxTypeName((int32_t)to));
  Value y = c.emit("cast", {x}, Json{{"to", dtypeName(*t)}});
  c.outputs = {y};
  return (bool)y;
}

const std::map<std::string, OpEntry> &opTable() {
  using S = std::set<std::string>;
  static const std::map<std::string, OpEntry> table = [] {
    std::map<std::string, OpEntry> t;
    for (auto [onnxName, op] :
         std::vector<std::pair<const char *, const char *>>{
             {"Relu", "relu"},
             {"Sigmoid", "sigmoid"},
             {"Tanh", "tanh"},
             {"Erf", "erf"},
             {"Exp", "exp"},
             {"Log", "log"},
             {"Sqrt", "sqrt"},
             {"Reciprocal", "reciprocal"},
             {"Neg", "neg"},
             {"Abs", "abs"},
             {"Floor", "floor"},
             {"Ceil", "ceil"}})
      t[onnxName] = {S{}, [op = op](NodeCtx &c) { return unary(c, op); }};
    for (auto [onnxName, op] :
         std::vector<std::pair<const char *, const char *>>{{"Add", "add"},
                                                            {"Sub", "sub"},
                                                            {"Mul", "mul"},
                                                            {"Div", "div"},
                                                            {"Pow", "pow"}})
      t[onnxName] = {S{}, [op = op](NodeCtx &c) { return binary(c, op); }};
    t["Max"] = {S{}, [](NodeCtx &c) { return variadic(c, "maximum"); }};
    t["Min"] = {S{}, [](NodeCtx &c) { return variadic(c, "minimum"); }};
    t["MatMul"] = {S{}, [](NodeCtx &c) { return binary(c, "matmul"); }};
    t["Einsum"] = {S{"equation"}, buildEinsum};
    t["Conv"] = {
        S{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
        buildConv};
    t["MaxPool"] = {S{"auto_pad", "ceil_mode", "dilations", "kernel_shape",
                      "pads", "storage_order", "strides"},
                    [](NodeCtx &c) { return buildPool(c, true); }};
    t["AveragePool"] = {S{"auto_pad", "ceil_mode", "count_include_pad",
                          "kernel_shape", "pads", "strides"},
                        [](NodeCtx &c) { return buildPool(c, false); }};
    t["GlobalAveragePool"] = {S{}, [](NodeCtx &c) {
                                Value x;
                                if (!c.in(0, x) || !rank4(c, x))
                                  return false;
                                c.outputs = {c.emit("global_avg_pool2d", {x})};
                                return (bool)c.outputs[0];
                              }};
    t["BatchNormalization"] = {S{"epsilon", "momentum", "training_mode"},
                               buildBatchNorm};
    t["Clip"] = {S{}, buildClip};
    t["HardSwish"] = {S{}, buildHardSwish};
    t["Gemm"] = {S{"alpha", "beta", "transA", "transB"}, buildGemm};
    t["Reshape"] = {S{"allowzero"}, buildReshape};
    t["Flatten"] = {S{"axis"}, buildFlatten};
    t["Transpose"] = {S{"perm"}, buildTranspose};
    t["Softmax"] = {S{"axis"},
                    [](NodeCtx &c) { return buildAxisOp(c, "softmax", -1); }};
    t["LogSoftmax"] = {S{"axis"}, [](NodeCtx &c) {
                         return buildAxisOp(c, "log_softmax", -1);
                       }};
    t["Concat"] = {S{"axis"}, buildConcat};
    t["Slice"] = {S{}, buildSlice};
    t["Split"] = {S{"axis", "num_outputs"}, buildSplit, 1 << 16};
    t["Gather"] = {S{"axis"}, buildGather};
    t["Pad"] = {S{"mode"}, buildPad};
    t["LayerNormalization"] = {S{"axis", "epsilon", "stash_type"},
                               buildLayerNorm};
    for (auto [onnxName, op, from] :
         std::vector<std::tuple<const char *, const char *, int64_t>>{
             {"ReduceMean", "reduce_mean", 18},
             {"ReduceSum", "reduce_sum", 13},
             {"ReduceMax", "reduce_max", 18},
             {"ReduceMin", "reduce_min", 18}})
      t[onnxName] = {S{"axes", "keepdims", "noop_with_empty_axes"},
                     [op = op, from = from](NodeCtx &c) {
                       return buildReduce(c, op, from);
                     }};
    for (auto [onnxName, op] :
         std::vector<std::pair<const char *, const char *>>{
             {"Equal", "equal"},
             {"Less", "less"},
             {"LessOrEqual", "less_equal"},
             {"Greater", "greater"},
             {"GreaterOrEqual", "greater_equal"},
             {"And", "and"},
             {"Or", "or"}})
      t[onnxName] = {S{}, [op = op](NodeCtx &c) { return binary(c, op); }};
    t["Not"] = {S{}, [](NodeCtx &c) { return unary(c, "not"); }};
    t["Where"] = {S{}, buildWhere};
    t["Expand"] = {S{}, buildExpand};
    t["ConstantOfShape"] = {S{"value"}, buildConstantOfShape};
    t["GatherElements"] = {S{"axis"}, buildGatherElements};
    t["Trilu"] = {S{"upper"}, buildTrilu};
    t["NegativeLogLikelihoodLoss"] = {
        S{"ignore_index", "reduction"},
        [](NodeCtx &c) { return buildNllLoss(c, false); }};
    t["SoftmaxCrossEntropyLoss"] = {
        S{"ignore_index", "reduction"},
        [](NodeCtx &c) { return buildNllLoss(c, true); }, 2};
    t["Cast"] = {S{"to"}, buildCast};
    t["ConvTranspose"] = {S{"auto_pad", "dilations", "group", "kernel_shape",
                            "output_padding", "output_shape", "pads",
                            "strides"},
                          buildConvTranspose};
    t["Resize"] = {S{"antialias", "axes", "coordinate_transformation_mode",
                     "cubic_coeff_a", "exclude_outside", "extrapolation_value",
                     "keep_aspect_ratio_policy", "mode", "nearest_mode"},
                   buildResize};
    t["Squeeze"] = {S{}, [](NodeCtx &c) { return buildSqueeze(c, false); }};
    t["Unsqueeze"] = {S{}, [](NodeCtx &c) { return buildSqueeze(c, true); }};
    return t;
  }();
  return table;
}

/// Shape arithmetic on small integer tensors known at compile time, as
/// exporters write it around Reshape, Expand and Slice (Shape, Gather,
/// Slice, Div, Split, Concat, Expand...): computed here, so that the op
/// reading it still sees a constant. Only well-formed instances of these
/// forms are folded; anything else is left to the op table, which reports
/// what is wrong with it. Integer Div truncates toward zero (as ONNX
/// Runtime's); Mod takes the divisor's sign unless `fmod`.
bool OnnxImporter::foldIntegers(const onnx::NodeProto &n,
                                const std::string &where, bool &folded) {
  using Attrs = std::set<std::string>;
  static const std::map<std::string, Attrs> foldable = {
      {"Gather", {"axis"}},
      {"Concat", {"axis"}},
      {"Unsqueeze", {}},
      {"Squeeze", {}},
      {"Cast", {"to"}},
      {"Add", {}},
      {"Sub", {}},
      {"Mul", {}},
      {"Div", {}},
      {"Mod", {"fmod"}},
      {"Min", {}},
      {"Max", {}},
      {"Neg", {}},
      {"Abs", {}},
      {"Equal", {}},
      {"Less", {}},
      {"Greater", {}},
      {"LessOrEqual", {}},
      {"GreaterOrEqual", {}},
      {"Not", {}},
      {"And", {}},
      {"Or", {}},
      {"Where", {}},
      {"ConstantOfShape", {"value"}},
      {"Slice", {}},
      {"Split", {"axis", "num_outputs"}},
      {"Expand", {}},
      {"Reshape", {"allowzero"}},
      {"Range", {}}};
  constexpr int64_t kMaxFolded = 1024;
  folded = false;
  const std::string &op = n.op_type();
  auto entry = foldable.find(op);
  if (entry == foldable.end() || n.input_size() < 1 || n.output_size() < 1 ||
      (op != "Split" && n.output_size() != 1))
    return true;
  for (const onnx::AttributeProto &a : n.attribute())
    if (!entry->second.count(a.name()))
      return true;
  auto isInt = [](DType d) { return d == DType::I64 || d == DType::I32; };
  // Bool operands: Where's condition (PyTorch's Expand writes its shape as
  // Where(Equal(shape, -1), 1, shape)), logic, comparisons, casts.
  bool boolOk =
      op == "Not" || op == "And" || op == "Or" || op == "Equal" || op == "Cast";
  std::vector<const ConstTensor *> ins;
  for (int i = 0; i < n.input_size(); ++i) {
    const std::string &in = n.input(i);
    if (in.empty()) {
      // Slice's optional axes and steps may be skipped.
      if (op != "Slice" || i < 3)
        return true;
      ins.push_back(nullptr);
      continue;
    }
    auto it = consts.find(in);
    if (it == consts.end())
      return true;
    const ConstTensor &t = it->second;
    bool cond = op == "Where" && i == 0;
    if (!(isInt(t.dtype) || (t.dtype == DType::Bool && (boolOk || cond))) ||
        (cond && t.dtype != DType::Bool) || t.shape.size() > 1 ||
        t.numel() > kMaxFolded)
      return true;
    ins.push_back(&t);
  }
  auto ints = [](const ConstTensor &t) {
    Ints v;
    for (int64_t i = 0; i < t.numel(); ++i)
      v.push_back(t.intAt(i));
    return v;
  };
  auto findInt = [&](const char *name, int64_t dflt) -> std::optional<int64_t> {
    for (const onnx::AttributeProto &a : n.attribute())
      if (a.name() == name)
        return a.type() == onnx::AttributeProto::INT
                   ? std::optional<int64_t>(a.i())
                   : std::nullopt;
    return dflt;
  };
  // One folded output: its values, shape and dtype.
  struct Out {
    Ints values;
    Shape shape;
    DType dtype;
  };
  std::vector<Out> outs(1);
  Ints &out = outs[0].values;
  Shape &shape = outs[0].shape;
  DType dt = ins[0]->dtype;
  // Elementwise over equal sizes or a one-element operand: the size, and
  // the shape of the larger (or of higher rank).
  auto sizes = [&](ArrayRef<const ConstTensor *> ts) -> std::optional<size_t> {
    size_t size = 1;
    for (const ConstTensor *t : ts) {
      size_t n = (size_t)t->numel();
      if (n == 0 || (n != 1 && size != 1 && n != size))
        return std::nullopt;
      size = std::max(size, n);
    }
    for (const ConstTensor *t : ts)
      if ((size_t)t->numel() == size && t->shape.size() >= shape.size())
        shape = t->shape;
    return size;
  };
  auto at = [](const ConstTensor *t, size_t i) {
    return t->intAt(t->numel() == 1 ? 0 : (int64_t)i);
  };
  auto sameDtype = [&] {
    return llvm::all_of(ins,
                        [&](const ConstTensor *t) { return t->dtype == dt; });
  };
  // Keeps `v` in dt's range, as the integer arithmetic of that width would.
  auto wrap = [&](uint64_t v) {
    return dt == DType::I32 ? (int64_t)(int32_t)v : (int64_t)v;
  };
  static const std::map<std::string, std::function<bool(int64_t, int64_t)>>
      compare = {{"Equal", std::equal_to<int64_t>()},
                 {"Less", std::less<int64_t>()},
                 {"Greater", std::greater<int64_t>()},
                 {"LessOrEqual", std::less_equal<int64_t>()},
                 {"GreaterOrEqual", std::greater_equal<int64_t>()}};
  if (op == "ConstantOfShape") {
    // A small integer tensor (the shape arithmetic around Expand).
    // (An ill-formed value is left to the op, which reports it.)
    const onnx::AttributeProto *value = nullptr;
    for (const onnx::AttributeProto &a : n.attribute())
      value = a.name() == "value" ? &a : value;
    ConstTensor v;
    if (!value || value->type() != onnx::AttributeProto::TENSOR ||
        ins[0]->shape.size() != 1 || ins[0]->numel() != 1 ||
        ins[0]->intAt(0) < 0 || ins[0]->intAt(0) > kMaxFolded)
      return true;
    if (!decodeTensor(value->t(), where + ": value", v))
      return false;
    if (!isInt(v.dtype) || v.numel() != 1)
      return true;
    dt = v.dtype;
    out.assign(ins[0]->intAt(0), v.intAt(0));
    shape = {ins[0]->intAt(0)};
  } else if (compare.count(op)) {
    std::optional<size_t> size = sizes(ins);
    if (ins.size() != 2 || !sameDtype() || !size)
      return true;
    for (size_t i = 0; i < *size; ++i)
      out.push_back(compare.at(op)(at(ins[0], i), at(ins[1], i)));
    dt = DType::Bool;
  } else if (op == "Not" || op == "And" || op == "Or") {
    std::optional<size_t> size = sizes(ins);
    if (ins.size() != (op == "Not" ? 1u : 2u) || dt != DType::Bool ||
        !sameDtype() || !size)
      return true;
    for (size_t i = 0; i < *size; ++i)
      out.push_back(op == "Not"   ? !at(ins[0], i)
                    : op == "And" ? at(ins[0], i) && at(ins[1], i)
                                  : at(ins[0], i) || at(ins[1], i));
  } else if (op == "Where") {
    std::optional<size_t> size = sizes(ins);
    if (ins.size() != 3 || ins[1]->dtype != ins[2]->dtype || !size)
      return true;
    dt = ins[1]->dtype;
    for (size_t i = 0; i < *size; ++i)
      out.push_back(at(ins[0], i) ? at(ins[1], i) : at(ins[2], i));
  } else if (op == "Gather") {
    std::optional<int64_t> axis = findInt("axis", 0);
    if (ins.size() != 2 || !axis || *axis != 0 || ins[0]->shape.size() != 1 ||
        !isInt(ins[1]->dtype))
      return true;
    Ints data = ints(*ins[0]);
    for (int64_t i : ints(*ins[1])) {
      int64_t d = (int64_t)data.size();
      if (i < -d || i >= d)
        return fail(where + ": index " + std::to_string(i) +
                    " out of range for " + std::to_string(d) + " entries");
      out.push_back(data[i < 0 ? i + d : i]);
    }
    shape = ins[1]->shape;
  } else if (op == "Concat") {
    std::optional<int64_t> axis = findInt("axis", 0);
    if (!axis || (*axis != 0 && *axis != -1) || !sameDtype())
      return true;
    for (const ConstTensor *t : ins) {
      if (t->shape.size() != 1)
        return true;
      Ints v = ints(*t);
      out.insert(out.end(), v.begin(), v.end());
    }
    if ((int64_t)out.size() > kMaxFolded)
      return true;
    shape = {(int64_t)out.size()};
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    // A scalar becoming [1] and back: the values stay.
    if (ins.size() != 2 || ins[1]->numel() != 1 || !isInt(ins[1]->dtype) ||
        (ins[1]->intAt(0) != 0 && ins[1]->intAt(0) != -1))
      return true;
    bool unsq = op == "Unsqueeze";
    if (unsq ? !ins[0]->shape.empty() : ins[0]->shape != Shape{1})
      return true;
    out = ints(*ins[0]);
    shape = unsq ? Shape{1} : Shape{};
  } else if (op == "Cast") {
    std::optional<int64_t> to = findInt("to", -1);
    if (ins.size() != 1 || !to ||
        (*to != onnx::TensorProto::INT64 && *to != onnx::TensorProto::INT32 &&
         *to != onnx::TensorProto::BOOL && *to != onnx::TensorProto::UINT8))
      return true;
    bool u8 = *to == onnx::TensorProto::UINT8;
    dt = *to == onnx::TensorProto::INT64  ? DType::I64
         : *to == onnx::TensorProto::BOOL ? DType::Bool
                                          : DType::I32;
    for (int64_t v : ints(*ins[0]))
      out.push_back(dt == DType::Bool ? v != 0
                    : u8              ? v & 0xff
                                      : wrap((uint64_t)v));
    shape = ins[0]->shape;
  } else if (op == "Neg" || op == "Abs") {
    if (ins.size() != 1 || !isInt(dt))
      return true;
    for (int64_t v : ints(*ins[0]))
      out.push_back(wrap(op == "Neg" || v < 0 ? 0 - (uint64_t)v : v));
    shape = ins[0]->shape;
  } else if (op == "Slice") {
    // A 1-D list: starts, ends, axes (0 or -1 only) and steps, clamped as
    // ONNX clamps them.
    if (ins.size() < 3 || ins[0]->shape.size() != 1)
      return true;
    for (size_t i = 1; i < ins.size(); ++i)
      if (ins[i] && (!isInt(ins[i]->dtype) || ins[i]->numel() != 1))
        return true;
    if (ins.size() > 3 && ins[3] && ins[3]->intAt(0) != 0 &&
        ins[3]->intAt(0) != -1)
      return true;
    int64_t d = ins[0]->numel();
    int64_t step = ins.size() > 4 && ins[4] ? ins[4]->intAt(0) : 1;
    if (step == 0)
      return true;
    auto bound = [&](int64_t v, bool isEnd) {
      if (v < 0)
        v += d;
      return step > 0 ? std::clamp<int64_t>(v, 0, d)
                      : std::clamp<int64_t>(v, isEnd ? -1 : 0, d - 1);
    };
    int64_t start = bound(ins[1]->intAt(0), false);
    int64_t end = bound(ins[2]->intAt(0), true);
    Ints data = ints(*ins[0]);
    for (int64_t i = start; step > 0 ? i < end : i > end; i += step)
      out.push_back(data[i]);
    shape = {(int64_t)out.size()};
  } else if (op == "Split") {
    std::optional<int64_t> axis = findInt("axis", 0);
    std::optional<int64_t> parts = findInt("num_outputs", 0);
    if (!axis || (*axis != 0 && *axis != -1) || !parts ||
        ins[0]->shape.size() != 1)
      return true;
    int64_t d = ins[0]->numel(), count = n.output_size();
    Ints sizes;
    if (ins.size() > 1) {
      if (ins.size() != 2 || !isInt(ins[1]->dtype))
        return true;
      sizes = ints(*ins[1]);
    } else {
      // Equal parts, ceil(d / outputs) each, the last what is left.
      int64_t part = (d + count - 1) / count;
      for (int64_t i = 0; i < count; ++i)
        sizes.push_back(std::max<int64_t>(0, std::min(part, d - i * part)));
    }
    int64_t total = 0;
    for (int64_t s : sizes)
      total += s < 0 ? d + 1 : s;
    if ((int64_t)sizes.size() != count || total != d ||
        (*parts && *parts != count))
      return true;
    for (const std::string &name : n.output())
      if (name.empty())
        return true;
    Ints data = ints(*ins[0]);
    outs.assign(count, Out{});
    int64_t first = 0;
    for (int64_t i = 0; i < count; ++i) {
      outs[i].values.assign(data.begin() + first,
                            data.begin() + first + sizes[i]);
      outs[i].shape = {sizes[i]};
      outs[i].dtype = dt;
      first += sizes[i];
    }
  } else if (op == "Expand") {
    // Small results only; the operand broadcast along the last axis.
    if (ins.size() != 2 || !isInt(ins[1]->dtype) || ins[1]->shape.size() != 1)
      return true;
    Shape s = ins[0]->shape;
    Ints to = ints(*ins[1]);
    size_t r = std::max(s.size(), to.size());
    Shape result(r);
    int64_t count = 1;
    for (size_t i = 0; i < r; ++i) {
      int64_t a = i + s.size() >= r ? s[i + s.size() - r] : 1;
      int64_t b = i + to.size() >= r ? to[i + to.size() - r] : 1;
      if (b < 0 || (a != b && a != 1 && b != 1))
        return true;
      result[i] = a == 1 ? b : a;
      count *= result[i];
      if (count > kMaxFolded)
        return true;
    }
    int64_t last = s.empty() ? 1 : s.back();
    for (int64_t i = 0; i < count; ++i)
      out.push_back(ins[0]->intAt(last == 1 ? 0 : i % last));
    shape = result;
  } else if (op == "Reshape") {
    std::optional<int64_t> allowZero = findInt("allowzero", 0);
    if (ins.size() != 2 || !isInt(ins[1]->dtype) || !allowZero)
      return true;
    Ints to = ints(*ins[1]);
    int64_t known = 1, unknown = -1;
    for (size_t i = 0; i < to.size(); ++i) {
      if (to[i] == 0 && !*allowZero) {
        if (i >= ins[0]->shape.size())
          return true;
        to[i] = ins[0]->shape[i];
      }
      if (to[i] == -1) {
        if (unknown >= 0)
          return true;
        unknown = (int64_t)i;
      } else if (to[i] < 0) {
        return true;
      } else {
        known *= to[i];
      }
    }
    int64_t total = ins[0]->numel();
    if (unknown >= 0) {
      if (known == 0 || total % known)
        return true;
      to[unknown] = total / known;
    } else if (known != total) {
      return true;
    }
    out = ints(*ins[0]);
    shape = to;
  } else if (op == "Range") {
    if (ins.size() != 3 || !sameDtype() || !isInt(dt) ||
        llvm::any_of(ins, [](const ConstTensor *t) { return t->numel() != 1; }))
      return true;
    int64_t start = ins[0]->intAt(0), limit = ins[1]->intAt(0),
            delta = ins[2]->intAt(0);
    if (delta == 0)
      return fail(where + ": delta must not be 0");
    // max(ceil((limit - start) / delta), 0) elements.
    double count = std::ceil(((double)limit - (double)start) / (double)delta);
    if (count > kMaxFolded)
      return true;
    for (int64_t i = 0; i < (int64_t)count; ++i)
      out.push_back(start + i * delta);
    shape = {(int64_t)out.size()};
  } else {
    // Add, Sub, Mul, Div, Mod, Min, Max: equal sizes or a one-element
    // operand.
    std::optional<size_t> size = sizes(ins);
    if (ins.size() != 2 || !sameDtype() || !isInt(dt) || !size)
      return true;
    std::optional<int64_t> fmod = findInt("fmod", 0);
    if (!fmod)
      return true;
    for (size_t i = 0; i < *size; ++i) {
      // Shape arithmetic stays far from overflow; wrap like the dtype if not.
      int64_t a = at(ins[0], i), b = at(ins[1], i);
      uint64_t x = (uint64_t)a, y = (uint64_t)b;
      if ((op == "Div" || op == "Mod") && b == 0)
        return fail(where + ": integer division by zero");
      int64_t r;
      if (op == "Add")
        r = wrap(x + y);
      else if (op == "Sub")
        r = wrap(x - y);
      else if (op == "Mul")
        r = wrap(x * y);
      else if (op == "Min")
        r = std::min(a, b);
      else if (op == "Max")
        r = std::max(a, b);
      else if (a == INT64_MIN && b == -1)
        r = op == "Div" ? a : 0; // the one quotient int64 cannot hold
      else if (op == "Div")
        r = wrap((uint64_t)(a / b));
      else {
        r = a % b;
        if (!*fmod && r != 0 && ((r < 0) != (b < 0)))
          r += b;
      }
      out.push_back(r);
    }
  }
  if (outs.size() == 1)
    outs[0].dtype = dt;
  for (size_t i = 0; i < outs.size(); ++i) {
    const Out &o = outs[i];
    ConstTensor t;
    t.dtype = o.dtype;
    t.shape = o.shape;
    t.bytes = std::make_shared<std::vector<uint8_t>>(o.values.size() *
                                                     dtypeSize(o.dtype));
    for (size_t k = 0; k < o.values.size(); ++k)
      encodeInteger(o.dtype, o.values[k],
                    t.bytes->data() + k * dtypeSize(o.dtype));
    consts[n.output((int)i)] = std::move(t);
  }
  folded = true;
  return true;
}

bool OnnxImporter::importNode(size_t index, const onnx::NodeProto &n,
                              int64_t opset) {
  // Ops that move UINT8 values without changing them (their results are
  // UINT8 too), and ops that read them as they are.
  static const std::set<std::string> keeps = {
      "Identity", "Dropout", "Reshape", "Transpose", "Unsqueeze",
      "Squeeze",  "Expand",  "Slice",   "Gather",    "GatherElements",
      "Concat",   "Flatten", "Split",   "Trilu",     "Where",
      "Min",      "Max"};
  static const std::set<std::string> reads = {
      "Cast",        "Equal",          "Less", "Greater",
      "LessOrEqual", "GreaterOrEqual", "Shape"};
  const std::string &op = n.op_type();
  bool u8In = llvm::any_of(n.input(), [&](const std::string &in) {
    return !in.empty() && isU8(in);
  });
  if (u8In && !keeps.count(op) && !reads.count(op))
    return fail(describe(index, n) +
                ": UINT8 operands are not supported by this op (uint8 "
                "arithmetic wraps at 256): cast them to a wider type first");
  if (!importNodeImpl(index, n, opset))
    return false;
  bool toU8 = false;
  if (op == "Cast")
    for (const onnx::AttributeProto &a : n.attribute())
      toU8 |= a.name() == "to" && a.i() == onnx::TensorProto::UINT8;
  if ((u8In && keeps.count(op)) || toU8)
    for (const std::string &out : n.output())
      if (!out.empty())
        u8Values.insert(out);
  return true;
}

bool OnnxImporter::importNodeImpl(size_t index, const onnx::NodeProto &n,
                                  int64_t opset) {
  std::string where = describe(index, n);
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    return fail(where + ": unsupported op (domain \"" + n.domain() + "\")");
  for (int i = 0; i < n.output_size(); ++i)
    if (!n.output(i).empty() &&
        (values.count(n.output(i)) || consts.count(n.output(i))))
      return fail(where + ": output \"" + n.output(i) +
                  "\" is already defined");
  for (int i = 0; i < n.input_size(); ++i) {
    const std::string &in = n.input(i);
    if (in.empty() || values.count(in) || consts.count(in))
      continue;
    std::string what = where + ": input " + std::to_string(i) + " \"" + in;
    // A later producer means the nodes are out of order, or form a cycle.
    for (int j = (int)index; graph && j < graph->node_size(); ++j)
      if (llvm::is_contained(graph->node(j).output(), in))
        return fail(what + "\" is produced by " +
                    ((size_t)j == index ? std::string("this node itself")
                                        : describe(j, graph->node(j)) +
                                              ", which comes later") +
                    ": ONNX nodes must be in topological order (is there a "
                    "cycle?)");
    return fail(what + "\" is not defined by an initializer, a graph input or "
                       "an earlier node");
  }

  // Identity and Constant only name values.
  if (n.op_type() == "Identity" || n.op_type() == "Dropout") {
    if (n.input_size() < 1 || n.input(0).empty() || n.output_size() < 1)
      return fail(where + ": needs one input and one output");
    if (n.op_type() == "Dropout" && n.input_size() > 2 && !n.input(2).empty()) {
      auto t = consts.find(n.input(2));
      if (t == consts.end() || t->second.numel() != 1 ||
          t->second.intAt(0) != 0)
        return fail(where + ": training_mode must be a constant false");
    }
    if (n.output_size() > 1 && !n.output(1).empty())
      return fail(where + ": output 1 (the mask) is not supported");
    auto c = consts.find(n.input(0));
    if (c != consts.end())
      consts[n.output(0)] = c->second;
    else
      values[n.output(0)] = values[n.input(0)];
    return true;
  }
  if (n.op_type() == "Constant") {
    if (n.attribute_size() != 1 || n.output_size() != 1)
      return fail(where + ": needs exactly one attribute and one output");
    const onnx::AttributeProto &a = n.attribute(0);
    ConstTensor t;
    auto fromList = [&](DType dt, size_t count, auto get) {
      t.dtype = dt;
      t.bytes = std::make_shared<std::vector<uint8_t>>(count * dtypeSize(dt));
      for (size_t i = 0; i < count; ++i)
        get(i, t.bytes->data() + i * dtypeSize(dt));
    };
    if (a.name() == "value") {
      if (a.type() != onnx::AttributeProto::TENSOR)
        return fail(where + ": attribute \"value\" must be TENSOR, got " +
                    attrTypeName(a.type()));
      if (!decodeTensor(a.t(), where + ": value", t))
        return false;
    } else if (a.name() == "value_float" || a.name() == "value_floats" ||
               a.name() == "value_int" || a.name() == "value_ints") {
      bool isFloat = a.name().rfind("value_float", 0) == 0;
      bool list = a.name().back() == 's';
      onnx::AttributeProto::AttributeType want =
          isFloat
              ? (list ? onnx::AttributeProto::FLOATS
                      : onnx::AttributeProto::FLOAT)
              : (list ? onnx::AttributeProto::INTS : onnx::AttributeProto::INT);
      if (a.type() != want)
        return fail(where + ": attribute \"" + a.name() + "\" must be " +
                    attrTypeName(want) + ", got " + attrTypeName(a.type()));
      size_t count =
          list ? (size_t)(isFloat ? a.floats_size() : a.ints_size()) : 1;
      fromList(isFloat ? DType::F32 : DType::I64, count,
               [&](size_t i, uint8_t *p) {
                 if (isFloat) {
                   float v = list ? a.floats((int)i) : a.f();
                   std::memcpy(p, &v, 4);
                 } else {
                   int64_t v = list ? a.ints((int)i) : a.i();
                   std::memcpy(p, &v, 8);
                 }
               });
      if (list)
        t.shape = {(int64_t)count};
    } else {
      return fail(where + ": attribute \"" + a.name() + "\" is not supported");
    }
    consts[n.output(0)] = std::move(t);
    return true;
  }

  bool folded = false;
  if (!foldIntegers(n, where, folded))
    return false;
  if (folded)
    return true;

  if (n.op_type() == "Shape") {
    // Shapes are static, so Shape is a compile-time tensor.
    if (n.input_size() != 1 || n.output_size() != 1 || n.input(0).empty())
      return fail(where + ": needs one input and one output");
    int64_t start = 0, end = INT64_MAX;
    for (const onnx::AttributeProto &a : n.attribute()) {
      if ((a.name() != "start" && a.name() != "end"))
        return fail(where + ": attribute \"" + a.name() +
                    "\" is not supported");
      if (a.type() != onnx::AttributeProto::INT)
        return fail(where + ": attribute \"" + a.name() +
                    "\" must be INT, got " + attrTypeName(a.type()));
      (a.name() == "start" ? start : end) = a.i();
    }
    auto c = consts.find(n.input(0));
    Shape s = c != consts.end()
                  ? c->second.shape
                  : Shape(cast<RankedTensorType>(values[n.input(0)].getType())
                              .getShape());
    int64_t r = (int64_t)s.size();
    auto clampAxis = [&](int64_t a) {
      return std::clamp<int64_t>(a < 0 ? a + r : a, 0, r);
    };
    start = clampAxis(start);
    end = std::max(start, clampAxis(end));
    ConstTensor t;
    t.dtype = DType::I64;
    t.shape = {end - start};
    t.bytes = std::make_shared<std::vector<uint8_t>>(8 * (end - start));
    if (end > start) // an empty range: no bytes, and no pointer to copy
      std::memcpy(t.bytes->data(), s.data() + start, 8 * (end - start));
    consts[n.output(0)] = std::move(t);
    return true;
  }

  auto it = opTable().find(n.op_type());
  if (it == opTable().end())
    return fail(where + ": unsupported op");
  for (const onnx::AttributeProto &a : n.attribute())
    if (!it->second.attrs.count(a.name()))
      return fail(where + ": attribute \"" + a.name() + "\" is not supported");
  // Outputs past those the op defines must be left unnamed.
  for (int i = it->second.maxOutputs; i < n.output_size(); ++i)
    if (!n.output(i).empty())
      return fail(where + ": output " + std::to_string(i) + " (\"" +
                  n.output(i) + "\") is not supported");
  if (n.output_size() < 1 || n.output(0).empty())
    return fail(where + ": the first output must be named");

  Location loc = NameLoc::get(StringAttr::get(&ctx, where));
  NodeCtx c{*this, index, n, opset, loc, {}};
  size_t statusesBefore = im.statuses.size();
  if (!it->second.build(c))
    return false;
  if (c.outputs.empty() || c.outputs.size() > (size_t)n.output_size() ||
      llvm::any_of(c.outputs, [](Value v) { return !v; }))
    return noteInternalImportError(),
           fail(where + ": internal error: no result");
  for (size_t s = statusesBefore; s < im.statuses.size(); ++s)
    im.statuses[s].message = "index out of range in " + where;
  for (size_t i = 0; i < c.outputs.size(); ++i)
    if (!n.output((int)i).empty())
      values[n.output((int)i)] = c.outputs[i];
  return true;
}

std::optional<ImportedModel> OnnxImporter::run(const onnx::ModelProto &model) {
  if (!model.has_graph())
    return fail("not an ONNX model (no graph; truncated or not an ONNX "
                "protobuf?)"),
           std::nullopt;
  int64_t opset = -1;
  for (const onnx::OperatorSetIdProto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      opset = o.version();
  if (opset < kMinOpset || opset > kMaxOpset)
    return fail(opset < 0
                    ? "the model imports no default-domain opset"
                    : "opset " + std::to_string(opset) +
                          " is not supported (tcc reads opsets 13 to 18)"),
           std::nullopt;
  const onnx::GraphProto &g = model.graph();

  for (int i = 0; i < g.sparse_initializer_size(); ++i)
    return fail("sparse initializers are not supported"), std::nullopt;
  for (int i = 0; i < g.initializer_size(); ++i) {
    const onnx::TensorProto &t = g.initializer(i);
    std::string what = "initializer \"" + t.name() + "\"";
    if (t.name().empty())
      return fail("initializer " + std::to_string(i) + " has no name"),
             std::nullopt;
    if (consts.count(t.name()))
      return fail(what + " is defined twice"), std::nullopt;
    ConstTensor c;
    if (!decodeTensor(t, what, c))
      return std::nullopt;
    // Hints matter only where the bundle may keep recipes.
    if (limits.deferRecipes && !readRecipeHint(t, what, c))
      return std::nullopt;
    consts[t.name()] = std::move(c);
  }

  ImportedModel out;
  std::string name;
  for (char ch : g.name())
    name += std::isalnum((unsigned char)ch) ? ch : '_';
  if (name.empty() || std::isdigit((unsigned char)name[0]))
    name = "model" + (name.empty() ? "" : "_" + name);
  out.name = name.substr(0, 64);

  Location fileLoc = FileLineColLoc::get(&ctx, path, 0, 0);
  OpBuilder &b = im.builder;
  out.module = ModuleOp::create(fileLoc);
  out.module->getOperation()->setAttr("tcc.model", b.getStringAttr(out.name));
  b.setInsertionPointToEnd(out.module->getBody());
  auto func =
      func::FuncOp::create(b, fileLoc, "main", b.getFunctionType({}, {}));
  func->setAttr("tcc.entry", b.getUnitAttr());
  entry = func.addEntryBlock();

  // Graph inputs; those with an initializer are weights (params).
  std::set<std::string> graphInputs;
  for (const onnx::ValueInfoProto &v : g.input())
    if (!consts.count(v.name()))
      graphInputs.insert(v.name());
  for (const auto &s : shapes)
    if (!graphInputs.count(s.first))
      return fail("--input-shape names \"" + s.first +
                  "\", which is not a graph input" +
                  (consts.count(s.first) ? " (it is an initializer)" : "")),
             std::nullopt;
  for (const onnx::ValueInfoProto &v : g.input()) {
    if (consts.count(v.name()))
      continue;
    std::string what = "graph input \"" + v.name() + "\"";
    if (!checkName(v.name(), "graph input"))
      return std::nullopt;
    if (values.count(v.name()))
      return fail(what + " is declared twice"), std::nullopt;
    if (!v.type().has_tensor_type())
      return fail(what + ": only tensor inputs are supported"), std::nullopt;
    const onnx::TypeProto::Tensor &tt = v.type().tensor_type();
    std::optional<DType> dt = dtypeOfOnnx(tt.elem_type());
    if (!dt)
      return fail(what + ": unsupported dtype " + onnxTypeName(tt.elem_type())),
             std::nullopt;
    Shape shape;
    auto fixed = shapes.find(v.name());
    if (fixed != shapes.end()) {
      shape = fixed->second;
      if (tt.has_shape()) {
        if (tt.shape().dim_size() != (int)shape.size())
          return fail(what + " has rank " +
                      std::to_string(tt.shape().dim_size()) +
                      ", --input-shape gives rank " +
                      std::to_string(shape.size())),
                 std::nullopt;
        for (int d = 0; d < tt.shape().dim_size(); ++d)
          if (tt.shape().dim(d).has_dim_value() &&
              tt.shape().dim(d).dim_value() != shape[d])
            return fail(what + ": dimension " + std::to_string(d) + " is " +
                        std::to_string(tt.shape().dim(d).dim_value()) +
                        ", --input-shape gives " + std::to_string(shape[d])),
                   std::nullopt;
      }
    } else {
      if (!tt.has_shape())
        return fail(what + " has no shape; fix it with --input-shape " +
                    v.name() + "=D0xD1x..."),
               std::nullopt;
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const auto &dim = tt.shape().dim(d);
        if (!dim.has_dim_value() || dim.dim_value() < 0)
          return fail(what + ": dimension " + std::to_string(d) +
                      (dim.has_dim_param()
                           ? " is symbolic (\"" + dim.dim_param() + "\")"
                           : std::string(" is unknown")) +
                      "; fix it with --input-shape " + v.name() + "=D0xD1x..."),
                 std::nullopt;
        shape.push_back(dim.dim_value());
      }
      if (std::string e = checkShapeLimits(shape); !e.empty())
        return fail(what + ": " + e), std::nullopt;
    }
    values[v.name()] = entry->addArgument(
        RankedTensorType::get(shape, elementTypeOf(ctx, *dt)),
        NameLoc::get(StringAttr::get(&ctx, v.name())));
    args.push_back({v.name(), "input"});
  }

  b.setInsertionPointToEnd(entry);
  graph = &g;
  for (int i = 0; i < g.node_size(); ++i)
    if (!importNode((size_t)i, g.node(i), opset))
      return std::nullopt;

  std::vector<Value> results;
  if (g.output_size() == 0)
    return fail("the graph has no outputs"), std::nullopt;
  std::set<std::string> outputNames;
  for (const onnx::ValueInfoProto &v : g.output()) {
    if (!outputNames.insert(v.name()).second)
      return fail("graph output \"" + v.name() + "\" is listed twice"),
             std::nullopt;
    Value r;
    if (isU8(v.name()))
      return fail("graph output \"" + v.name() +
                  "\" is UINT8, which tcc does not output (cast it to "
                  "INT32 in the model)"),
             std::nullopt;
    if (!checkName(v.name(), "graph output") ||
        !valueOf(v.name(), "graph output", r))
      return std::nullopt;
    results.push_back(r);
  }
  size_t numOutputs = results.size();
  for (const Importer::Status &s : im.statuses)
    results.push_back(s.count);
  func::ReturnOp::create(b, fileLoc, results);
  std::vector<Type> argTypes(entry->getArgumentTypes().begin(),
                             entry->getArgumentTypes().end());
  std::vector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setType(b.getFunctionType(argTypes, resultTypes));
  for (size_t i = 0; i < args.size(); ++i) {
    func.setArgAttr(i, "tcc.name", b.getStringAttr(args[i].first));
    func.setArgAttr(i, "tcc.kind", b.getStringAttr(args[i].second));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (i < numOutputs) {
      func.setResultAttr(i, "tcc.name", b.getStringAttr(g.output(i).name()));
      continue;
    }
    const Importer::Status &s = im.statuses[i - numOutputs];
    func.setResultAttr(i, "tcc.kind", b.getStringAttr("status"));
    func.setResultAttr(i, "tcc.message", b.getStringAttr(s.message));
  }

  std::string verifyError;
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && verifyError.empty()) {
        verifyError = d.str();
        if (auto nl = dyn_cast<NameLoc>(d.getLocation()))
          verifyError = nl.getName().str() + ": " + verifyError;
      }
      return success();
    });
    if (failed(mlir::verify(*out.module)))
      return noteInternalImportError(),
             fail("internal check failed: " +
                  (verifyError.empty() ? std::string("the module does not "
                                                     "verify")
                                       : verifyError)),
             std::nullopt;
  }
  out.params = std::move(params);
  return out;
}

} // namespace

std::optional<ImportedModel>
importOnnxBytes(std::string_view bytes, const std::string &displayName,
                const std::string &baseDir, MLIRContext &ctx,
                std::vector<std::string> &errors,
                const InputShapes &inputShapes, const ImportLimits &limits) {
  // Protobuf messages are limited to 2 GiB; weights beyond that belong in
  // external data files.
  if (bytes.size() >= (size_t(2) << 30)) {
    errors.push_back(displayName + ": 2 GiB or larger; keep weights in "
                                   "external data files");
    return std::nullopt;
  }
  try {
    ctx.getOrLoadDialect<mlir::tcc::TccDialect>();
    ctx.getOrLoadDialect<func::FuncDialect>();
    // Protobuf would log parse problems to stderr; the one line below says it.
    google::protobuf::SetLogHandler(nullptr);
    onnx::ModelProto model;
    if (!model.ParseFromArray(bytes.data(), (int)bytes.size())) {
      errors.push_back(displayName + ": not a valid ONNX model (the protobuf "
                                     "is truncated or malformed)");
      return std::nullopt;
    }
    OnnxImporter importer(ctx, displayName, baseDir, errors, inputShapes,
                          limits);
    std::optional<ImportedModel> out = importer.run(model);
    if (out && errors.empty())
      return out;
    if (errors.empty())
      errors.push_back(displayName + ": import failed");
  } catch (const std::bad_alloc &) {
    errors.assign(1, displayName + ": out of memory while importing");
  } catch (const std::exception &e) {
    noteInternalImportError();
    errors.assign(1, displayName + ": internal error: " + e.what());
  }
  return std::nullopt;
}

#endif // TCC_HAVE_ONNX

std::optional<ImportedModel> importOnnxFile(const std::string &path,
                                            MLIRContext &ctx,
                                            std::vector<std::string> &errors,
                                            const InputShapes &inputShapes,
                                            const ImportLimits &limits) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    errors.push_back(
        path + ": " +
        (fs::exists(path, ec) ? "not a regular file" : "no such file"));
    return std::nullopt;
  }
  uint64_t size = fs::file_size(path, ec);
  if (ec || size >= (uint64_t(2) << 30)) {
    errors.push_back(path + ": " +
                     (ec ? "cannot read: " + ec.message()
                         : std::string("2 GiB or larger; keep weights in "
                                       "external data files")));
    return std::nullopt;
  }
  std::string bytes(size, '\0');
  std::ifstream in(path, std::ios::binary);
  if (!in || (size && !in.read(bytes.data(), (std::streamsize)size))) {
    errors.push_back(path + ": cannot read");
    return std::nullopt;
  }
  std::string baseDir = fs::path(path).parent_path().string();
  if (baseDir.empty())
    baseDir = ".";
  return importOnnxBytes(bytes, path, baseDir, ctx, errors, inputShapes,
                         limits);
}

} // namespace tcc
