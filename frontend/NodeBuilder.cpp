//===- NodeBuilder.cpp - attribute reads and op emission for one node -----===//
#include "frontend/Importer.h"

namespace tcc {

using namespace mlir;

NodeBuilder::NodeBuilder(Importer &im, size_t index, const std::string &op,
                         const Json *attrs, std::vector<Value> inputs,
                         Location loc)
    : im(im), index(index), pointer(pointerAppend("/nodes", index)), op(op),
      inputs(std::move(inputs)), loc(loc), b(im.builder), attrs(attrs) {}

std::string NodeBuilder::inputPointer(size_t i) const {
  return pointerAppend(pointer + "/inputs", i);
}

std::string NodeBuilder::attrPointer(const char *name) const {
  return pointerAppend(pointer + "/attrs", name);
}

bool NodeBuilder::fail(const std::string &p, const std::string &message) {
  im.diag.error(p, message);
  return false;
}

const Json *NodeBuilder::attr(const char *name) const {
  if (!attrs)
    return nullptr;
  auto it = attrs->find(name);
  return it == attrs->end() ? nullptr : &*it;
}

bool NodeBuilder::has(const char *name) const { return attr(name) != nullptr; }

bool NodeBuilder::missingAttr(const char *name) {
  return fail(attrs ? pointer + "/attrs" : pointer,
              op + " needs attribute \"" + std::string(name) + "\"");
}

/// Reads attribute `name` with `read`, or takes `dflt` when it is absent;
/// an absent attribute without a default is an error.
template <typename T, typename Reader>
static bool readAttr(NodeBuilder &nb, const char *name, T &out,
                     const std::optional<T> &dflt, Reader read) {
  const Json *v = nb.attr(name);
  if (!v) {
    if (!dflt)
      return nb.missingAttr(name);
    out = *dflt;
    return true;
  }
  std::optional<T> x = read(*v, nb.attrPointer(name), nb.im.diag);
  if (!x)
    return false;
  out = *x;
  return true;
}

bool NodeBuilder::attrInt(const char *name, int64_t &out,
                          std::optional<int64_t> dflt) {
  return readAttr(*this, name, out, dflt, readInt);
}

bool NodeBuilder::attrBool(const char *name, bool &out,
                           std::optional<bool> dflt) {
  return readAttr(*this, name, out, dflt, readBool);
}

bool NodeBuilder::attrFloat(const char *name, double &out,
                            std::optional<double> dflt) {
  return readAttr(*this, name, out, dflt, readNumber);
}

bool NodeBuilder::attrString(const char *name, std::string &out,
                             std::optional<std::string> dflt) {
  return readAttr(*this, name, out, dflt, readString);
}

bool NodeBuilder::attrDType(const char *name, DType &out) {
  const Json *v = attr(name);
  if (!v)
    return missingAttr(name);
  std::optional<DType> t = readDType(*v, attrPointer(name), im.diag);
  if (!t)
    return false;
  out = *t;
  return true;
}

bool NodeBuilder::attrIntList(const char *name, std::vector<int64_t> &out,
                              std::optional<std::vector<int64_t>> dflt,
                              size_t maxLength) {
  const Json *v = attr(name);
  if (!v) {
    if (!dflt)
      return missingAttr(name);
    out = *dflt;
    return true;
  }
  std::optional<std::vector<int64_t>> x =
      readIntList(*v, attrPointer(name), im.diag, maxLength);
  if (!x)
    return false;
  out = *x;
  return true;
}

bool NodeBuilder::attrWindow(const char *name, std::vector<int64_t> &out,
                             std::optional<std::vector<int64_t>> dflt,
                             size_t length, int64_t lo) {
  if (!attrIntList(name, out, dflt, length))
    return false;
  if (out.size() != length)
    return fail(attrPointer(name),
                std::string(name) + " needs " + std::to_string(length) +
                    " entries, got " + std::to_string(out.size()));
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] < lo || out[i] > kMaxWindowAttr)
      return fail(pointerAppend(attrPointer(name), i),
                  std::string(name) + " entries must be in [" +
                      std::to_string(lo) + ", 2^20], got " +
                      std::to_string(out[i]));
  return true;
}

bool NodeBuilder::attrAxis(const char *name, int64_t rank, int64_t &out,
                           std::optional<int64_t> dflt) {
  int64_t a;
  if (!attrInt(name, a, dflt))
    return false;
  if (a < -rank || a >= rank) {
    std::string p = has(name) ? attrPointer(name) : pointer;
    return fail(p, std::string(name) + " " + std::to_string(a) +
                       " out of range for rank " + std::to_string(rank) +
                       (has(name) ? "" : " (the default)"));
  }
  out = a < 0 ? a + rank : a;
  return true;
}

bool NodeBuilder::attrShape(const char *name, Shape &out) {
  const Json *v = attr(name);
  if (!v)
    return missingAttr(name);
  std::optional<Shape> s = readShape(*v, attrPointer(name), im.diag);
  if (!s)
    return false;
  out = *s;
  return true;
}

DType NodeBuilder::dtype(Value v) const {
  return *dtypeOfElement(cast<RankedTensorType>(v.getType()).getElementType());
}

Shape NodeBuilder::shape(Value v) const {
  ArrayRef<int64_t> s = cast<RankedTensorType>(v.getType()).getShape();
  return Shape(s.begin(), s.end());
}

bool NodeBuilder::requireFloat(size_t i) {
  DType t = dtype(inputs[i]);
  if (isFloat(t))
    return true;
  return fail(inputPointer(i), op + " needs a float input, got " +
                                   dtypeName(t) + "; insert a cast");
}

bool NodeBuilder::requireNumeric(size_t i) {
  DType t = dtype(inputs[i]);
  if (t != DType::Bool)
    return true;
  return fail(inputPointer(i),
              op + " needs a numeric input, got bool; insert a cast");
}

bool NodeBuilder::requireBool(size_t i) {
  DType t = dtype(inputs[i]);
  if (t == DType::Bool)
    return true;
  return fail(inputPointer(i), op + " needs a bool input, got " + dtypeName(t));
}

bool NodeBuilder::requireIndices(size_t i) {
  DType t = dtype(inputs[i]);
  if (t == DType::I32 || t == DType::I64)
    return true;
  return fail(inputPointer(i),
              op + " needs i32 or i64 indices, got " + dtypeName(t));
}

bool NodeBuilder::requireRank(size_t i, int64_t minRank, int64_t maxRank) {
  int64_t r = (int64_t)shape(inputs[i]).size();
  if (r >= minRank && r <= maxRank)
    return true;
  std::string want = minRank == maxRank ? "rank " + std::to_string(minRank)
                                        : "rank >= " + std::to_string(minRank);
  return fail(inputPointer(i), op + " needs an input of " + want +
                                   ", got shape " +
                                   shapeToString(shape(inputs[i])));
}

bool NodeBuilder::requireSameDType(size_t i, size_t j) {
  DType a = dtype(inputs[i]), c = dtype(inputs[j]);
  if (a == c)
    return true;
  return fail(inputPointer(j), "operands of " + op + " have dtypes " +
                                   dtypeName(a) + " and " + dtypeName(c) +
                                   "; insert a cast");
}

RankedTensorType NodeBuilder::tensorType(const Shape &s, DType t) const {
  return RankedTensorType::get(s, elementTypeOf(im.ctx, t));
}

bool NodeBuilder::checkResult(const ShapeOrError &s,
                              const std::string &errPointer) {
  if (!s.ok())
    return fail(errPointer, s.error);
  std::string problem = checkShapeLimits(s.shape);
  if (!problem.empty())
    return fail(pointer, "the result's " + problem);
  return true;
}

Value NodeBuilder::constant(DType t, const Shape &s, Scalar v) {
  Type elt = elementTypeOf(im.ctx, t);
  TypedAttr value;
  if (isFloat(t)) {
    // Round through the format's own encoder so that narrow floats get its
    // documented rounding and saturation, then store the exact result.
    uint8_t bytes[8];
    encodeScalar(t, v.f, bytes);
    value = FloatAttr::get(elt, decodeScalar(t, bytes));
  } else {
    unsigned width = elt.getIntOrFloatBitWidth();
    value = IntegerAttr::get(elt, APInt(width, (uint64_t)v.i,
                                        /*isSigned=*/width > 1,
                                        /*implicitTrunc=*/true));
  }
  return create<mlir::tcc::ConstantOp>(tensorType(s, t), value);
}

Value NodeBuilder::reshape(Value x, const Shape &s) {
  return create<mlir::tcc::ReshapeOp>(tensorType(s, dtype(x)), x);
}

Value NodeBuilder::matmul(Value a, Value c, bool transA, bool transB,
                          DType outType, const std::string &errPointer) {
  // NumPy's rules for vectors: a rank-1 `a` is a row [1, K], a rank-1 `b` a
  // column [K, 1]; the added dimension is dropped from the result. A vector
  // has no orientation, so a transpose flag on it has no effect.
  Shape sa = shape(a), sc = shape(c);
  bool vecA = sa.size() == 1, vecB = sc.size() == 1;
  if (vecA) {
    a = reshape(a, {1, sa[0]});
    transA = false;
  }
  if (vecB) {
    c = reshape(c, {sc[0], 1});
    transB = false;
  }
  ShapeOrError s = matmulShape(shape(a), shape(c), transA, transB);
  if (!checkResult(s, errPointer))
    return {};
  Value r = create<mlir::tcc::MatmulOp>(tensorType(s.shape, outType), a, c,
                                        transA, transB);
  if (!vecA && !vecB)
    return r;
  Shape out = s.shape;
  if (vecB)
    out.erase(out.end() - 1);
  if (vecA)
    out.erase(out.end() - 1 - (vecB ? 0 : 1));
  return reshape(r, out);
}

void NodeBuilder::addIndexCheck(Value indices, int64_t bound) {
  Value count = create<mlir::tcc::IndexCheckOp>(tensorType({}, DType::I32),
                                                indices, (uint64_t)bound);
  im.statuses.push_back(
      {count, "index out of range in " + pointer + " (" + op + ")"});
}

} // namespace tcc
