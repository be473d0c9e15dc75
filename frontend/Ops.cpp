//===- Ops.cpp - the op table and the primitive ops' builders -------------===//
//
// One builder per operator of the format. A builder checks the operands'
// dtypes and ranks and the attributes (reporting at their pointers), turns
// the format's attributes into the dialect's normalised form (non-negative
// sorted axes, full per-axis lists, defaults filled in), computes the result
// type with ir/ShapeInference.h and emits the op.
//
//===----------------------------------------------------------------------===//
#include "frontend/Importer.h"

#include <algorithm>

namespace tcc {

using namespace mlir;
namespace T = mlir::tcc;
using Values = std::vector<Value>;
using Ints = std::vector<int64_t>;

namespace {

enum class Kind { Float, Numeric, Bool, Any };

bool requireKind(NodeBuilder &nb, size_t i, Kind k) {
  switch (k) {
  case Kind::Float:
    return nb.requireFloat(i);
  case Kind::Numeric:
    return nb.requireNumeric(i);
  case Kind::Bool:
    return nb.requireBool(i);
  case Kind::Any:
    return true;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <typename OpT, Kind K> bool buildUnary(NodeBuilder &nb, Values &r) {
  if (!requireKind(nb, 0, K))
    return false;
  r.push_back(nb.unary<OpT>(nb.inputs[0]));
  return true;
}

bool buildGelu(NodeBuilder &nb, Values &r) {
  std::string approx;
  if (!nb.requireFloat(0) || !nb.attrString("approximate", approx, "none"))
    return false;
  if (approx != "none" && approx != "tanh")
    return nb.fail(nb.attrPointer("approximate"),
                   "approximate must be \"none\" or \"tanh\", got \"" + approx +
                       "\"");
  Value x = nb.inputs[0];
  r.push_back(nb.create<T::GeluOp>(x.getType(), x, approx == "tanh"));
  return true;
}

bool buildClamp(NodeBuilder &nb, Values &r) {
  if (!nb.requireNumeric(0))
    return false;
  DType t = nb.dtype(nb.inputs[0]);
  // Bounds are stored as f64; for integer tensors they must be integers the
  // f64 holds exactly, so that clamping needs no rounding rule.
  std::optional<Scalar> lo, hi;
  if (const Json *v = nb.attr("min"))
    if (!(lo = readScalar(*v, t, nb.attrPointer("min"), nb.im.diag, true)))
      return false;
  if (const Json *v = nb.attr("max"))
    if (!(hi = readScalar(*v, t, nb.attrPointer("max"), nb.im.diag, true)))
      return false;
  if (lo && hi && lo->f > hi->f)
    return nb.fail(nb.attrPointer("max"), "max is below min");
  FloatAttr minAttr = lo ? nb.b.getF64FloatAttr(lo->f) : FloatAttr();
  FloatAttr maxAttr = hi ? nb.b.getF64FloatAttr(hi->f) : FloatAttr();
  Value x = nb.inputs[0];
  r.push_back(nb.create<T::ClampOp>(x.getType(), x, minAttr, maxAttr));
  return true;
}

template <typename OpT, Kind K, bool Compare>
bool buildBinary(NodeBuilder &nb, Values &r) {
  if (!requireKind(nb, 0, K) || !requireKind(nb, 1, K) ||
      !nb.requireSameDType(0, 1))
    return false;
  Value v = nb.binary<OpT>(nb.inputs[0], nb.inputs[1], nb.pointer + "/inputs",
                           Compare);
  if (!v)
    return false;
  r.push_back(v);
  return true;
}

bool buildSelect(NodeBuilder &nb, Values &r) {
  if (!nb.requireBool(0) || !nb.requireSameDType(1, 2))
    return false;
  ShapeOrError ab =
      broadcastShapes(nb.shape(nb.inputs[1]), nb.shape(nb.inputs[2]));
  if (!nb.checkResult(ab, nb.pointer + "/inputs"))
    return false;
  ShapeOrError s = broadcastShapes(nb.shape(nb.inputs[0]), ab.shape);
  if (!nb.checkResult(s, nb.pointer + "/inputs"))
    return false;
  r.push_back(
      nb.create<T::SelectOp>(nb.tensorType(s.shape, nb.dtype(nb.inputs[1])),
                             nb.inputs[0], nb.inputs[1], nb.inputs[2]));
  return true;
}

bool buildCast(NodeBuilder &nb, Values &r) {
  DType to;
  if (!nb.attrDType("to", to))
    return false;
  Value x = nb.inputs[0];
  // A cast to the same dtype is the identity: no op, so that lowerings never
  // see a conversion between equal types.
  if (nb.dtype(x) == to)
    r.push_back(x);
  else
    r.push_back(nb.create<T::CastOp>(nb.tensorType(nb.shape(x), to), x));
  return true;
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

bool buildConstant(NodeBuilder &nb, Values &r) {
  DType t;
  Shape s;
  if (!nb.attrDType("dtype", t))
    return false;
  if (nb.has("shape") && !nb.attrShape("shape", s))
    return false;
  const Json *v = nb.attr("value");
  if (!v)
    return nb.fail(nb.pointer + "/attrs", "constant needs attribute \"value\"");
  std::optional<Scalar> x =
      readScalar(*v, t, nb.attrPointer("value"), nb.im.diag);
  if (!x)
    return false;
  r.push_back(nb.constant(t, s, *x));
  return true;
}

bool buildIota(NodeBuilder &nb, Values &r) {
  DType t;
  Shape s;
  int64_t axis;
  if (!nb.attrDType("dtype", t) || !nb.attrShape("shape", s))
    return false;
  if (t == DType::Bool)
    return nb.fail(nb.attrPointer("dtype"), "iota needs a numeric dtype");
  if (!nb.attrAxis("axis", (int64_t)s.size(), axis))
    return false;
  // Integer iotas must hold their largest index exactly.
  int64_t top = s[axis] - 1;
  if ((t == DType::I8 && top > 127) || (t == DType::I32 && top > INT32_MAX))
    return nb.fail(nb.attrPointer("dtype"),
                   "iota along an axis of " + std::to_string(s[axis]) +
                       " counts beyond " + dtypeName(t));
  r.push_back(nb.create<T::IotaOp>(nb.tensorType(s, t), (uint64_t)axis));
  return true;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Reads `axes` (all axes when absent), normalised: non-negative, sorted,
/// without repeats.
bool readAxes(NodeBuilder &nb, int64_t rank, std::vector<int64_t> &axes) {
  if (!nb.has("axes")) {
    axes.clear();
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
    return true;
  }
  if (!nb.attrIntList("axes", axes, std::nullopt, kMaxRank))
    return false;
  if (axes.empty())
    return nb.fail(nb.attrPointer("axes"),
                   "axes is empty; leave it out to reduce over all axes");
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    std::string p = pointerAppend(nb.attrPointer("axes"), i);
    if (a < -rank || a >= rank)
      return nb.fail(p, "axis " + std::to_string(a) +
                            " out of range for rank " + std::to_string(rank));
    a = a < 0 ? a + rank : a;
    if (seen[a])
      return nb.fail(p, "axis " + std::to_string(a) + " repeated");
    seen[a] = true;
    axes[i] = a;
  }
  std::sort(axes.begin(), axes.end());
  return true;
}

template <typename OpT> bool buildReduce(NodeBuilder &nb, Values &r) {
  bool isMean = std::is_same_v<OpT, T::ReduceMeanOp>;
  bool isMinMax = std::is_same_v<OpT, T::ReduceMaxOp> ||
                  std::is_same_v<OpT, T::ReduceMinOp>;
  if (isMean ? !nb.requireFloat(0) : !nb.requireNumeric(0))
    return false;
  Shape in = nb.shape(nb.inputs[0]);
  std::vector<int64_t> axes;
  bool keepdims;
  if (!readAxes(nb, (int64_t)in.size(), axes) ||
      !nb.attrBool("keepdims", keepdims, false))
    return false;
  // max/min of nothing has no value (NumPy and PyTorch refuse it too).
  if (isMinMax)
    for (int64_t a : axes)
      if (in[a] == 0)
        return nb.fail(nb.inputPointer(0), nb.op + " over axis " +
                                               std::to_string(a) +
                                               " of size 0 has no value");
  Value v = nb.reduce<OpT>(nb.inputs[0], axes, keepdims);
  if (!v)
    return false;
  r.push_back(v);
  return true;
}

template <typename OpT> bool buildArg(NodeBuilder &nb, Values &r) {
  if (!nb.requireNumeric(0))
    return false;
  Shape in = nb.shape(nb.inputs[0]);
  int64_t axis;
  bool keepdims;
  if (!nb.attrAxis("axis", (int64_t)in.size(), axis, -1) ||
      !nb.attrBool("keepdims", keepdims, false))
    return false;
  if (in[axis] == 0)
    return nb.fail(nb.inputPointer(0), nb.op + " over axis " +
                                           std::to_string(axis) +
                                           " of size 0 has no value");
  ShapeOrError s = reduceShape(in, {axis}, keepdims);
  if (!nb.checkResult(s, nb.pointer))
    return false;
  r.push_back(nb.create<OpT>(nb.tensorType(s.shape, DType::I64), nb.inputs[0],
                             (uint64_t)axis, keepdims));
  return true;
}

bool buildTopk(NodeBuilder &nb, Values &r) {
  if (!nb.requireNumeric(0))
    return false;
  Shape in = nb.shape(nb.inputs[0]);
  int64_t k, axis;
  bool largest;
  if (!nb.attrInt("k", k) ||
      !nb.attrAxis("axis", (int64_t)in.size(), axis, -1) ||
      !nb.attrBool("largest", largest, true))
    return false;
  if (k < 0 || k > in[axis])
    return nb.fail(nb.attrPointer("k"),
                   "k = " + std::to_string(k) + " must be in [0, " +
                       std::to_string(in[axis]) + "], the size of axis " +
                       std::to_string(axis));
  Shape out = in;
  out[axis] = k;
  Value x = nb.inputs[0];
  auto op = nb.create<T::TopkOp>(nb.tensorType(out, nb.dtype(x)),
                                 nb.tensorType(out, DType::I64), x, (uint64_t)k,
                                 (uint64_t)axis, largest);
  r.push_back(op.getValues());
  r.push_back(op.getIndices());
  return true;
}

//===----------------------------------------------------------------------===//
// Contraction
//===----------------------------------------------------------------------===//

bool buildMatmul(NodeBuilder &nb, Values &r) {
  if (!nb.requireNumeric(0) || !nb.requireNumeric(1) ||
      !nb.requireSameDType(0, 1) || !nb.requireRank(0, 1, kMaxRank) ||
      !nb.requireRank(1, 1, kMaxRank))
    return false;
  bool ta, tb;
  if (!nb.attrBool("transpose_a", ta, false) ||
      !nb.attrBool("transpose_b", tb, false))
    return false;
  DType out = nb.dtype(nb.inputs[0]);
  if (nb.has("out_dtype")) {
    if (!nb.attrDType("out_dtype", out))
      return false;
    if (out == DType::Bool)
      return nb.fail(nb.attrPointer("out_dtype"),
                     "out_dtype must be a numeric dtype");
  }
  Value v = nb.matmul(nb.inputs[0], nb.inputs[1], ta, tb, out,
                      nb.pointer + "/inputs");
  if (!v)
    return false;
  r.push_back(v);
  return true;
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

bool buildReshape(NodeBuilder &nb, Values &r) {
  Shape in = nb.shape(nb.inputs[0]);
  std::vector<int64_t> s;
  if (!nb.attrIntList("shape", s, std::nullopt, kMaxRank))
    return false;
  std::string p = nb.attrPointer("shape");
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (inferred >= 0)
        return nb.fail(pointerAppend(p, i), "at most one -1 is allowed");
      inferred = (int64_t)i;
      continue;
    }
    if (s[i] < 0 || s[i] > kMaxElements)
      return nb.fail(pointerAppend(p, i), "size " + std::to_string(s[i]) +
                                              " is not -1 or in [0, "
                                              "2^40]");
    Shape one = {known, s[i]};
    known = numElements(one, kMaxElements);
    if (known < 0)
      return nb.fail(p, "shape has more than 2^40 elements");
  }
  int64_t n = numElements(in, kMaxElements);
  if (inferred >= 0) {
    if (known == 0 || n % known != 0)
      return nb.fail(p, "cannot infer the -1 in " + shapeToString(s) +
                            " for an input of " + std::to_string(n) +
                            " elements");
    s[inferred] = n / known;
  } else if (known != n) {
    return nb.fail(p, "cannot reshape " + shapeToString(in) + " (" +
                          std::to_string(n) + " elements) to " +
                          shapeToString(s) + " (" + std::to_string(known) +
                          ")");
  }
  r.push_back(nb.reshape(nb.inputs[0], s));
  return true;
}

bool buildTranspose(NodeBuilder &nb, Values &r) {
  Shape in = nb.shape(nb.inputs[0]);
  int64_t rank = (int64_t)in.size();
  std::vector<int64_t> perm;
  for (int64_t i = rank - 1; i >= 0; --i)
    perm.push_back(i);
  if (!nb.attrIntList("perm", perm, perm, kMaxRank))
    return false;
  for (int64_t &p : perm)
    if (p < 0 && p >= -rank)
      p += rank;
  ShapeOrError s = transposeShape(in, perm);
  if (!nb.checkResult(s, nb.attrPointer("perm")))
    return false;
  r.push_back(nb.create<T::TransposeOp>(
      nb.tensorType(s.shape, nb.dtype(nb.inputs[0])), nb.inputs[0], perm));
  return true;
}

bool buildBroadcastTo(NodeBuilder &nb, Values &r) {
  Shape in = nb.shape(nb.inputs[0]), target;
  if (!nb.attrShape("shape", target))
    return false;
  ShapeOrError s = broadcastShapes(in, target);
  if (!s.ok() || s.shape != target)
    return nb.fail(nb.attrPointer("shape"), "cannot broadcast " +
                                                shapeToString(in) + " to " +
                                                shapeToString(target));
  r.push_back(nb.create<T::BroadcastToOp>(
      nb.tensorType(target, nb.dtype(nb.inputs[0])), nb.inputs[0]));
  return true;
}

bool buildConcat(NodeBuilder &nb, Values &r) {
  int64_t rank = (int64_t)nb.shape(nb.inputs[0]).size();
  int64_t axis;
  if (!nb.requireRank(0, 1, kMaxRank) || !nb.attrAxis("axis", rank, axis))
    return false;
  std::vector<Shape> shapes;
  int64_t total = 0;
  for (size_t i = 0; i < nb.inputs.size(); ++i) {
    if (!nb.requireSameDType(0, i))
      return false;
    Shape s = nb.shape(nb.inputs[i]);
    if ((int64_t)s.size() != rank)
      return nb.fail(nb.inputPointer(i),
                     "concat input has shape " + shapeToString(s) +
                         ", rank differs from the first input's " +
                         shapeToString(shapes[0]));
    // Each size is <= 2^40: stopping at 2^40 keeps the sum from overflowing.
    total += s[axis];
    if (total > kMaxElements)
      return nb.fail(nb.pointer, "concatenated axis exceeds 2^40");
    shapes.push_back(s);
  }
  ShapeOrError s = concatShape(shapes, axis);
  if (!nb.checkResult(s, nb.pointer + "/inputs"))
    return false;
  r.push_back(
      nb.create<T::ConcatOp>(nb.tensorType(s.shape, nb.dtype(nb.inputs[0])),
                             ValueRange(nb.inputs), (uint64_t)axis));
  return true;
}

bool buildSlice(NodeBuilder &nb, Values &r) {
  Shape in = nb.shape(nb.inputs[0]);
  int64_t rank = (int64_t)in.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (!nb.attrIntList("starts", starts, std::nullopt, kMaxRank) ||
      !nb.attrIntList("ends", ends, std::nullopt, kMaxRank))
    return false;
  std::vector<int64_t> defaultAxes, defaultSteps(starts.size(), 1);
  for (size_t i = 0; i < starts.size(); ++i)
    defaultAxes.push_back((int64_t)i);
  if (!nb.attrIntList("axes", axes, defaultAxes, kMaxRank) ||
      !nb.attrIntList("steps", steps, defaultSteps, kMaxRank))
    return false;
  if (ends.size() != starts.size())
    return nb.fail(nb.attrPointer("ends"),
                   "ends has " + std::to_string(ends.size()) +
                       " entries, starts has " + std::to_string(starts.size()));
  if (axes.size() != starts.size())
    return nb.fail(nb.attrPointer("axes"),
                   "axes has " + std::to_string(axes.size()) +
                       " entries, starts has " + std::to_string(starts.size()));
  if (steps.size() != starts.size())
    return nb.fail(nb.attrPointer("steps"),
                   "steps has " + std::to_string(steps.size()) +
                       " entries, starts has " + std::to_string(starts.size()));
  std::vector<int64_t> outStarts(rank, 0), outSteps(rank, 1);
  Shape out = in;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i];
    std::string ap = nb.has("axes") ? pointerAppend(nb.attrPointer("axes"), i)
                                    : nb.attrPointer("starts");
    if (a < -rank || a >= rank)
      return nb.fail(ap, "axis " + std::to_string(a) +
                             " out of range for rank " + std::to_string(rank));
    a = a < 0 ? a + rank : a;
    if (seen[a])
      return nb.fail(ap, "axis " + std::to_string(a) + " repeated");
    seen[a] = true;
    int64_t d = in[a], st = starts[i], en = ends[i], step = steps[i];
    if (step == 0 || step == INT64_MIN)
      return nb.fail(pointerAppend(nb.attrPointer("steps"), i),
                     step == 0 ? "step 0 is not allowed" : "step out of range");
    // ONNX Slice: negative positions count from the end, then starts clamp
    // to [0, d] going forward and [0, d-1] going backward, ends to [0, d]
    // and [-1, d-1].
    if (st < 0)
      st += d;
    if (en < 0)
      en += d;
    int64_t count;
    if (step > 0) {
      st = std::clamp<int64_t>(st, 0, d);
      en = std::clamp<int64_t>(en, 0, d);
      count = en > st ? (en - st) / step + ((en - st) % step != 0) : 0;
    } else {
      st = std::clamp<int64_t>(st, 0, std::max<int64_t>(d - 1, 0));
      en = std::clamp<int64_t>(en, -1, d - 1);
      int64_t mag = -step;
      count = d > 0 && st > en ? (st - en) / mag + ((st - en) % mag != 0) : 0;
    }
    out[a] = count;
    outStarts[a] = count ? st : 0;
    outSteps[a] = step;
  }
  r.push_back(nb.create<T::SliceOp>(nb.tensorType(out, nb.dtype(nb.inputs[0])),
                                    nb.inputs[0], outStarts, outSteps));
  return true;
}

bool buildPad(NodeBuilder &nb, Values &r) {
  Value x = nb.inputs[0];
  Shape in = nb.shape(x);
  size_t rank = in.size();
  std::vector<int64_t> pads;
  if (!nb.attrIntList("pads", pads, std::nullopt, 2 * kMaxRank))
    return false;
  std::string pp = nb.attrPointer("pads");
  if (pads.size() != 2 * rank)
    return nb.fail(pp, "pads needs " + std::to_string(2 * rank) +
                           " entries ([begin_0.., end_0..]) for rank " +
                           std::to_string(rank) + ", got " +
                           std::to_string(pads.size()));
  for (size_t i = 0; i < pads.size(); ++i)
    if (pads[i] < -kMaxElements || pads[i] > kMaxElements)
      return nb.fail(pointerAppend(pp, i), "pad out of range [-2^40, 2^40]");
  Scalar value;
  if (const Json *v = nb.attr("value")) {
    std::optional<Scalar> s =
        readScalar(*v, nb.dtype(x), nb.attrPointer("value"), nb.im.diag, true);
    if (!s)
      return false;
    value = *s;
  }
  // Negative pads crop (as ONNX): a slice first, then the non-negative pads.
  std::vector<int64_t> starts(rank, 0), steps(rank, 1), pos(2 * rank, 0);
  Shape cropped = in;
  bool crop = false, pad = false;
  for (size_t i = 0; i < rank; ++i) {
    int64_t lo = pads[i], hi = pads[i + rank];
    if (lo < 0 || hi < 0) {
      crop = true;
      int64_t keep =
          in[i] + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0);
      if (keep < 0)
        return nb.fail(pp, "pads remove more than the " +
                               std::to_string(in[i]) + " elements of axis " +
                               std::to_string(i));
      starts[i] = keep ? -std::min<int64_t>(lo, 0) : 0;
      cropped[i] = keep;
    }
    pos[i] = std::max<int64_t>(lo, 0);
    pos[i + rank] = std::max<int64_t>(hi, 0);
    pad |= pos[i] || pos[i + rank];
  }
  if (crop)
    x = nb.create<T::SliceOp>(nb.tensorType(cropped, nb.dtype(x)), x, starts,
                              steps);
  if (pad) {
    ShapeOrError s = padShape(cropped, pos);
    if (!nb.checkResult(s, pp))
      return false;
    x = nb.create<T::PadOp>(nb.tensorType(s.shape, nb.dtype(x)), x,
                            nb.b.getDenseI64ArrayAttr(pos),
                            nb.b.getF64FloatAttr(value.f));
  }
  r.push_back(x);
  return true;
}

bool buildGather(NodeBuilder &nb, Values &r) {
  if (!nb.requireIndices(1) || !nb.requireRank(0, 1, kMaxRank))
    return false;
  Shape data = nb.shape(nb.inputs[0]), idx = nb.shape(nb.inputs[1]);
  int64_t axis;
  if (!nb.attrAxis("axis", (int64_t)data.size(), axis, 0))
    return false;
  ShapeOrError s = gatherShape(data, idx, axis);
  if (!nb.checkResult(s, nb.pointer + "/inputs"))
    return false;
  r.push_back(
      nb.create<T::GatherOp>(nb.tensorType(s.shape, nb.dtype(nb.inputs[0])),
                             nb.inputs[0], nb.inputs[1], (uint64_t)axis));
  nb.addIndexCheck(nb.inputs[1], data[axis]);
  return true;
}

bool buildTakeAlongAxis(NodeBuilder &nb, Values &r) {
  if (!nb.requireIndices(1) || !nb.requireRank(0, 1, kMaxRank))
    return false;
  Shape data = nb.shape(nb.inputs[0]), idx = nb.shape(nb.inputs[1]);
  int64_t axis;
  if (!nb.attrAxis("axis", (int64_t)data.size(), axis, 0))
    return false;
  if (idx.size() != data.size())
    return nb.fail(nb.inputPointer(1), "indices " + shapeToString(idx) +
                                           " must have the rank of data " +
                                           shapeToString(data));
  for (size_t d = 0; d < data.size(); ++d)
    if ((int64_t)d != axis && idx[d] != data[d])
      return nb.fail(nb.inputPointer(1),
                     "indices " + shapeToString(idx) + " must match data " +
                         shapeToString(data) + " on every axis but " +
                         std::to_string(axis));
  r.push_back(nb.create<T::TakeAlongAxisOp>(
      nb.tensorType(idx, nb.dtype(nb.inputs[0])), nb.inputs[0], nb.inputs[1],
      (uint64_t)axis));
  nb.addIndexCheck(nb.inputs[1], data[axis]);
  return true;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Checks x, w and the optional bias of a convolution: the weight's input
/// channels (axis 1 per group for conv2d, axis 0 for conv_transpose2d) must
/// match x's, and the bias must hold one value per output channel.
bool checkConvOperands(NodeBuilder &nb, bool transposed, int64_t groups) {
  if (!nb.requireFloat(0) || !nb.requireSameDType(0, 1) ||
      !nb.requireRank(0, 4, 4) || !nb.requireRank(1, 4, 4))
    return false;
  Shape x = nb.shape(nb.inputs[0]), w = nb.shape(nb.inputs[1]);
  std::string gp = nb.has("groups") ? nb.attrPointer("groups") : nb.pointer;
  if (x[1] % groups)
    return nb.fail(gp, "groups " + std::to_string(groups) +
                           " does not divide the " + std::to_string(x[1]) +
                           " input channels");
  if (!transposed && w[0] % groups)
    return nb.fail(gp, "groups " + std::to_string(groups) +
                           " does not divide the " + std::to_string(w[0]) +
                           " output channels");
  int64_t wantIn = transposed ? x[1] : x[1] / groups;
  int64_t gotIn = transposed ? w[0] : w[1];
  if (gotIn != wantIn)
    return nb.fail(nb.inputPointer(1),
                   "weight " + shapeToString(w) + " has " +
                       std::to_string(gotIn) + " input channels on axis " +
                       (transposed ? "0" : "1") + ", the input needs " +
                       std::to_string(wantIn));
  int64_t outChannels = transposed ? w[1] * groups : w[0];
  if (nb.inputs.size() == 3) {
    if (!nb.requireSameDType(0, 2))
      return false;
    if (nb.shape(nb.inputs[2]) != Shape{outChannels})
      return nb.fail(nb.inputPointer(2),
                     "bias must have shape [" + std::to_string(outChannels) +
                         "], got " + shapeToString(nb.shape(nb.inputs[2])));
  }
  return true;
}

bool buildConv2d(NodeBuilder &nb, Values &r) {
  std::vector<int64_t> strides, pads, dilations;
  int64_t groups;
  if (!nb.attrWindow("strides", strides, Ints{1, 1}, 2, 1) ||
      !nb.attrWindow("pads", pads, Ints{0, 0, 0, 0}, 4, 0) ||
      !nb.attrWindow("dilations", dilations, Ints{1, 1}, 2, 1) ||
      !nb.attrInt("groups", groups, 1))
    return false;
  if (groups < 1 || groups > kMaxWindowAttr)
    return nb.fail(nb.attrPointer("groups"), "groups must be in [1, 2^20]");
  if (!checkConvOperands(nb, false, groups))
    return false;
  ShapeOrError s = conv2dShape(nb.shape(nb.inputs[0]), nb.shape(nb.inputs[1]),
                               strides, pads, dilations, groups);
  if (!nb.checkResult(s, nb.pointer))
    return false;
  Value bias = nb.inputs.size() == 3 ? nb.inputs[2] : Value();
  r.push_back(nb.create<T::Conv2dOp>(
      nb.tensorType(s.shape, nb.dtype(nb.inputs[0])), nb.inputs[0],
      nb.inputs[1], bias, strides, pads, dilations, (uint64_t)groups));
  return true;
}

bool buildConvTranspose2d(NodeBuilder &nb, Values &r) {
  std::vector<int64_t> strides, pads, dilations, outPad;
  int64_t groups;
  if (!nb.attrWindow("strides", strides, Ints{1, 1}, 2, 1) ||
      !nb.attrWindow("pads", pads, Ints{0, 0, 0, 0}, 4, 0) ||
      !nb.attrWindow("dilations", dilations, Ints{1, 1}, 2, 1) ||
      !nb.attrWindow("output_padding", outPad, Ints{0, 0}, 2, 0) ||
      !nb.attrInt("groups", groups, 1))
    return false;
  if (groups < 1 || groups > kMaxWindowAttr)
    return nb.fail(nb.attrPointer("groups"), "groups must be in [1, 2^20]");
  if (!checkConvOperands(nb, true, groups))
    return false;
  for (int i = 0; i < 2; ++i)
    if (outPad[i] >= std::max(strides[i], dilations[i]))
      return nb.fail(pointerAppend(nb.attrPointer("output_padding"), i),
                     "output_padding must be smaller than the stride or the "
                     "dilation");
  ShapeOrError s =
      convTranspose2dShape(nb.shape(nb.inputs[0]), nb.shape(nb.inputs[1]),
                           strides, pads, dilations, outPad, groups);
  if (!nb.checkResult(s, nb.pointer))
    return false;
  Value bias = nb.inputs.size() == 3 ? nb.inputs[2] : Value();
  r.push_back(nb.create<T::ConvTranspose2dOp>(
      nb.tensorType(s.shape, nb.dtype(nb.inputs[0])), nb.inputs[0],
      nb.inputs[1], bias, strides, pads, dilations, outPad, (uint64_t)groups));
  return true;
}

template <bool IsAvg> bool buildPool(NodeBuilder &nb, Values &r) {
  if (!nb.requireFloat(0) || !nb.requireRank(0, 4, 4))
    return false;
  std::vector<int64_t> kernel, strides, pads;
  bool ceilMode, includePad = true;
  if (!nb.attrWindow("kernel", kernel, std::nullopt, 2, 1) ||
      !nb.attrWindow("strides", strides, kernel, 2, 1) ||
      !nb.attrWindow("pads", pads, Ints{0, 0, 0, 0}, 4, 0) ||
      !nb.attrBool("ceil_mode", ceilMode, false))
    return false;
  if (IsAvg && !nb.attrBool("count_include_pad", includePad, true))
    return false;
  for (int i = 0; i < 4; ++i)
    if (pads[i] > kernel[i % 2] / 2)
      return nb.fail(pointerAppend(nb.attrPointer("pads"), i),
                     "pads must be at most half the kernel (as PyTorch)");
  ShapeOrError s =
      pool2dShape(nb.shape(nb.inputs[0]), kernel, strides, pads, ceilMode);
  if (!nb.checkResult(s, nb.pointer))
    return false;
  Value x = nb.inputs[0];
  auto ty = nb.tensorType(s.shape, nb.dtype(x));
  if constexpr (IsAvg)
    r.push_back(nb.create<T::AvgPool2dOp>(ty, x, kernel, strides, pads,
                                          ceilMode, includePad));
  else
    r.push_back(
        nb.create<T::MaxPool2dOp>(ty, x, kernel, strides, pads, ceilMode));
  return true;
}

bool buildGlobalAvgPool(NodeBuilder &nb, Values &r) {
  if (!nb.requireFloat(0) || !nb.requireRank(0, 4, 4))
    return false;
  Shape in = nb.shape(nb.inputs[0]);
  r.push_back(nb.create<T::GlobalAvgPool2dOp>(
      nb.tensorType({in[0], in[1], 1, 1}, nb.dtype(nb.inputs[0])),
      nb.inputs[0]));
  return true;
}

bool buildBatchNorm(NodeBuilder &nb, Values &r) {
  if (!nb.requireFloat(0) || !nb.requireRank(0, 2, kMaxRank))
    return false;
  Shape in = nb.shape(nb.inputs[0]);
  for (size_t i = 1; i < 5; ++i) {
    if (!nb.requireSameDType(0, i))
      return false;
    if (nb.shape(nb.inputs[i]) != Shape{in[1]})
      return nb.fail(nb.inputPointer(i),
                     "must have shape [" + std::to_string(in[1]) +
                         "] (the channels of axis 1), got " +
                         shapeToString(nb.shape(nb.inputs[i])));
  }
  double eps;
  if (!nb.attrFloat("eps", eps, 1e-5))
    return false;
  if (eps < 0)
    return nb.fail(nb.attrPointer("eps"), "eps must be >= 0");
  Value x = nb.inputs[0];
  r.push_back(nb.create<T::BatchNormOp>(
      x.getType(), x, nb.inputs[1], nb.inputs[2], nb.inputs[3], nb.inputs[4],
      nb.b.getF64FloatAttr(eps)));
  return true;
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

constexpr unsigned kMany = ~0u;

const std::vector<OpInfo> &table() {
  static const std::vector<OpInfo> ops = {
      // Elementwise, one input.
      {"neg", 1, 1, 1, {}, buildUnary<T::NegOp, Kind::Numeric>},
      {"abs", 1, 1, 1, {}, buildUnary<T::AbsOp, Kind::Numeric>},
      {"exp", 1, 1, 1, {}, buildUnary<T::ExpOp, Kind::Float>},
      {"log", 1, 1, 1, {}, buildUnary<T::LogOp, Kind::Float>},
      {"sqrt", 1, 1, 1, {}, buildUnary<T::SqrtOp, Kind::Float>},
      {"rsqrt", 1, 1, 1, {}, buildUnary<T::RsqrtOp, Kind::Float>},
      {"reciprocal", 1, 1, 1, {}, buildUnary<T::ReciprocalOp, Kind::Float>},
      {"tanh", 1, 1, 1, {}, buildUnary<T::TanhOp, Kind::Float>},
      {"sigmoid", 1, 1, 1, {}, buildUnary<T::SigmoidOp, Kind::Float>},
      {"relu", 1, 1, 1, {}, buildUnary<T::ReluOp, Kind::Numeric>},
      {"silu", 1, 1, 1, {}, buildUnary<T::SiluOp, Kind::Float>},
      {"erf", 1, 1, 1, {}, buildUnary<T::ErfOp, Kind::Float>},
      {"floor", 1, 1, 1, {}, buildUnary<T::FloorOp, Kind::Float>},
      {"ceil", 1, 1, 1, {}, buildUnary<T::CeilOp, Kind::Float>},
      {"not", 1, 1, 1, {}, buildUnary<T::NotOp, Kind::Bool>},
      {"gelu", 1, 1, 1, {"approximate"}, buildGelu},
      {"clamp", 1, 1, 1, {"min", "max"}, buildClamp},
      {"cast", 1, 1, 1, {"to"}, buildCast},
      // Elementwise, two inputs.
      {"add", 2, 2, 1, {}, buildBinary<T::AddOp, Kind::Numeric, false>},
      {"sub", 2, 2, 1, {}, buildBinary<T::SubOp, Kind::Numeric, false>},
      {"mul", 2, 2, 1, {}, buildBinary<T::MulOp, Kind::Numeric, false>},
      {"div", 2, 2, 1, {}, buildBinary<T::DivOp, Kind::Numeric, false>},
      {"maximum", 2, 2, 1, {}, buildBinary<T::MaximumOp, Kind::Numeric, false>},
      {"minimum", 2, 2, 1, {}, buildBinary<T::MinimumOp, Kind::Numeric, false>},
      {"pow", 2, 2, 1, {}, buildBinary<T::PowOp, Kind::Numeric, false>},
      {"equal", 2, 2, 1, {}, buildBinary<T::EqualOp, Kind::Any, true>},
      {"not_equal", 2, 2, 1, {}, buildBinary<T::NotEqualOp, Kind::Any, true>},
      {"less", 2, 2, 1, {}, buildBinary<T::LessOp, Kind::Any, true>},
      {"less_equal", 2, 2, 1, {}, buildBinary<T::LessEqualOp, Kind::Any, true>},
      {"greater", 2, 2, 1, {}, buildBinary<T::GreaterOp, Kind::Any, true>},
      {"greater_equal",
       2,
       2,
       1,
       {},
       buildBinary<T::GreaterEqualOp, Kind::Any, true>},
      {"and", 2, 2, 1, {}, buildBinary<T::AndOp, Kind::Bool, false>},
      {"or", 2, 2, 1, {}, buildBinary<T::OrOp, Kind::Bool, false>},
      {"select", 3, 3, 1, {}, buildSelect},
      // Sources.
      {"constant", 0, 0, 1, {"dtype", "shape", "value"}, buildConstant},
      {"iota", 0, 0, 1, {"dtype", "shape", "axis"}, buildIota},
      // Reductions.
      {"reduce_sum",
       1,
       1,
       1,
       {"axes", "keepdims"},
       buildReduce<T::ReduceSumOp>},
      {"reduce_max",
       1,
       1,
       1,
       {"axes", "keepdims"},
       buildReduce<T::ReduceMaxOp>},
      {"reduce_min",
       1,
       1,
       1,
       {"axes", "keepdims"},
       buildReduce<T::ReduceMinOp>},
      {"reduce_mean",
       1,
       1,
       1,
       {"axes", "keepdims"},
       buildReduce<T::ReduceMeanOp>},
      {"argmax", 1, 1, 1, {"axis", "keepdims"}, buildArg<T::ArgmaxOp>},
      {"argmin", 1, 1, 1, {"axis", "keepdims"}, buildArg<T::ArgminOp>},
      {"topk", 1, 1, 2, {"k", "axis", "largest"}, buildTopk},
      // Contraction.
      {"matmul",
       2,
       2,
       1,
       {"transpose_a", "transpose_b", "out_dtype"},
       buildMatmul},
      // Shape and data movement.
      {"reshape", 1, 1, 1, {"shape"}, buildReshape},
      {"transpose", 1, 1, 1, {"perm"}, buildTranspose},
      {"broadcast_to", 1, 1, 1, {"shape"}, buildBroadcastTo},
      {"concat", 1, kMany, 1, {"axis"}, buildConcat},
      {"slice", 1, 1, 1, {"starts", "ends", "axes", "steps"}, buildSlice},
      {"pad", 1, 1, 1, {"pads", "value"}, buildPad},
      {"gather", 2, 2, 1, {"axis"}, buildGather},
      {"take_along_axis", 2, 2, 1, {"axis"}, buildTakeAlongAxis},
      // Convolution and pooling.
      {"conv2d",
       2,
       3,
       1,
       {"strides", "pads", "dilations", "groups"},
       buildConv2d},
      {"conv_transpose2d",
       2,
       3,
       1,
       {"strides", "pads", "dilations", "groups", "output_padding"},
       buildConvTranspose2d},
      {"max_pool2d",
       1,
       1,
       1,
       {"kernel", "strides", "pads", "ceil_mode"},
       buildPool<false>},
      {"avg_pool2d",
       1,
       1,
       1,
       {"kernel", "strides", "pads", "ceil_mode", "count_include_pad"},
       buildPool<true>},
      {"global_avg_pool2d", 1, 1, 1, {}, buildGlobalAvgPool},
      {"batch_norm", 5, 5, 1, {"eps"}, buildBatchNorm},
      // Composites.
      {"softmax", 1, 1, 1, {"axis"}, buildSoftmax},
      {"log_softmax", 1, 1, 1, {"axis"}, buildLogSoftmax},
      {"layer_norm", 1, 3, 1, {"axis", "eps"}, buildLayerNorm},
      {"rms_norm", 1, 2, 1, {"axis", "eps"}, buildRmsNorm},
      {"linear", 2, 3, 1, {}, buildLinear},
  };
  return ops;
}

} // namespace

const OpInfo *findOp(const std::string &name) {
  for (const OpInfo &op : table())
    if (name == op.name)
      return &op;
  return nullptr;
}

std::vector<std::string> allOpNames() {
  std::vector<std::string> names;
  for (const OpInfo &op : table())
    names.push_back(op.name);
  return names;
}

} // namespace tcc
