//===- Composites.cpp - composite ops as their primitive chains -----------===//
//
// The format defines softmax, log_softmax, layer_norm, rms_norm and linear by
// a chain of primitives; the frontend emits that chain, so a model that
// writes the chain by hand compiles to the same kernels (the graph passes
// recognise chains, never composite names). A composite over 16-bit or f8
// values is one op: it computes in f32 and rounds its result once, as the
// format's arithmetic rule says and PyTorch does. Its chain is emitted in
// f32 between two casts: the primitives written in f16 would round each
// partial result, and a sum of exponentials or a square past 65504 is inf
// in f16.
//
//===----------------------------------------------------------------------===//
#include "frontend/Importer.h"

namespace tcc {

using namespace mlir;
namespace T = mlir::tcc;
using Values = std::vector<Value>;

namespace {

/// Axes `axis..rank-1` for the norms, from attribute `axis` (default -1).
bool normAxes(NodeBuilder &nb, std::vector<int64_t> &axes) {
  int64_t rank = (int64_t)nb.shape(nb.inputs[0]).size(), axis;
  if (!nb.attrAxis("axis", rank, axis, -1))
    return false;
  axes.clear();
  for (int64_t a = axis; a < rank; ++a)
    axes.push_back(a);
  return true;
}

/// Reads `eps` (>= 0); the chain turns it into a rank-0 constant of x's
/// dtype where it is added, so the ops come in the spec's order.
bool readEps(NodeBuilder &nb, double dflt, Scalar &out) {
  double eps;
  if (!nb.attrFloat("eps", eps, dflt))
    return false;
  if (eps < 0)
    return nb.fail(nb.attrPointer("eps"), "eps must be >= 0");
  out.f = eps;
  return true;
}

/// Checks that the affine input `i` (gamma, beta) has x's dtype and
/// broadcasts to x's shape without growing it.
bool checkAffine(NodeBuilder &nb, size_t i) {
  if (!nb.requireSameDType(0, i))
    return false;
  Shape x = nb.shape(nb.inputs[0]), g = nb.shape(nb.inputs[i]);
  ShapeOrError s = broadcastShapes(x, g);
  if (!s.ok() || s.shape != x)
    return nb.fail(nb.inputPointer(i), "shape " + shapeToString(g) +
                                           " does not broadcast to the "
                                           "input's " +
                                           shapeToString(x));
  return true;
}

/// The type a composite over `t` computes in: f32 for narrower floats.
DType computeType(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3 ||
                 t == DType::F8E5M2
             ? DType::F32
             : t;
}

/// `x` cast to dtype `t` (itself when it has it).
Value castTo(NodeBuilder &nb, Value x, DType t) {
  if (nb.dtype(x) == t)
    return x;
  return nb.create<T::CastOp>(nb.tensorType(nb.shape(x), t), x);
}

/// The max of `x` along `axis` (keepdims) in type `t`: taken over `x`'s own
/// values and cast (exact: the widening is monotone), so the row is read
/// in its dtype up to the max, as the chain in x's dtype did.
Value rowMax(NodeBuilder &nb, Value x, int64_t axis, DType t) {
  Value m = nb.reduce<T::ReduceMaxOp>(x, {axis}, true);
  return m ? castTo(nb, m, t) : m;
}

/// A norm's gamma or beta `g` in type `t` for the product with `y`: widened
/// as `y`'s whole shape (a broadcast, then the cast), so that the cast is
/// computed where the row is, reading `g` as stored; cast alone, `g` would
/// become a derived param of twice the bytes, read once a row.
Value widenedAffine(NodeBuilder &nb, Value g, Value y, DType t) {
  if (nb.dtype(g) == t)
    return g;
  Shape ys = nb.shape(y);
  if (nb.shape(g) != ys)
    g = nb.create<T::BroadcastToOp>(nb.tensorType(ys, nb.dtype(g)), g);
  return castTo(nb, g, t);
}

} // namespace

// e = exp(x - reduce_max(x, axis, keepdims)); e / reduce_sum(e, axis, keepdims)
bool buildSoftmax(NodeBuilder &nb, Values &r) {
  int64_t axis;
  if (!nb.requireFloat(0) ||
      !nb.attrAxis("axis", (int64_t)nb.shape(nb.inputs[0]).size(), axis, -1))
    return false;
  DType t = nb.dtype(nb.inputs[0]), ct = computeType(t);
  Value m = rowMax(nb, nb.inputs[0], axis, ct);
  if (!m)
    return false;
  Value x = castTo(nb, nb.inputs[0], ct);
  Value d = nb.binary<T::SubOp>(x, m, nb.pointer);
  Value e = nb.unary<T::ExpOp>(d);
  Value s = nb.reduce<T::ReduceSumOp>(e, {axis}, true);
  r.push_back(castTo(nb, nb.binary<T::DivOp>(e, s, nb.pointer), t));
  return true;
}

// t = x - reduce_max(x); t - log(reduce_sum(exp(t)))
bool buildLogSoftmax(NodeBuilder &nb, Values &r) {
  int64_t axis;
  if (!nb.requireFloat(0) ||
      !nb.attrAxis("axis", (int64_t)nb.shape(nb.inputs[0]).size(), axis, -1))
    return false;
  DType type = nb.dtype(nb.inputs[0]), ct = computeType(type);
  Value m = rowMax(nb, nb.inputs[0], axis, ct);
  if (!m)
    return false;
  Value x = castTo(nb, nb.inputs[0], ct);
  Value t = nb.binary<T::SubOp>(x, m, nb.pointer);
  Value e = nb.unary<T::ExpOp>(t);
  Value s = nb.reduce<T::ReduceSumOp>(e, {axis}, true);
  Value l = nb.unary<T::LogOp>(s);
  r.push_back(castTo(nb, nb.binary<T::SubOp>(t, l, nb.pointer), type));
  return true;
}

// m = mean(x); v = mean((x-m)^2); (x-m) * rsqrt(v+eps) * gamma + beta
bool buildLayerNorm(NodeBuilder &nb, Values &r) {
  std::vector<int64_t> axes;
  Scalar eps;
  if (!nb.requireFloat(0) || !normAxes(nb, axes))
    return false;
  for (size_t i = 1; i < nb.inputs.size(); ++i)
    if (!checkAffine(nb, i))
      return false;
  if (!readEps(nb, 1e-5, eps))
    return false;
  DType t = nb.dtype(nb.inputs[0]), ct = computeType(t);
  Value x = castTo(nb, nb.inputs[0], ct);
  Value m = nb.reduce<T::ReduceMeanOp>(x, axes, true);
  Value d = nb.binary<T::SubOp>(x, m, nb.pointer);
  Value sq = nb.binary<T::MulOp>(d, d, nb.pointer);
  Value v = nb.reduce<T::ReduceMeanOp>(sq, axes, true);
  Value c = nb.constant(ct, {}, eps);
  Value ve = nb.binary<T::AddOp>(v, c, nb.pointer);
  Value rs = nb.unary<T::RsqrtOp>(ve);
  Value y = nb.binary<T::MulOp>(d, rs, nb.pointer);
  if (nb.inputs.size() > 1)
    y = nb.binary<T::MulOp>(y, widenedAffine(nb, nb.inputs[1], y, ct),
                            nb.pointer);
  if (nb.inputs.size() > 2)
    y = nb.binary<T::AddOp>(y, widenedAffine(nb, nb.inputs[2], y, ct),
                            nb.pointer);
  r.push_back(castTo(nb, y, t));
  return true;
}

// x * rsqrt(mean(x*x) + eps) * gamma
bool buildRmsNorm(NodeBuilder &nb, Values &r) {
  std::vector<int64_t> axes;
  Scalar eps;
  if (!nb.requireFloat(0) || !normAxes(nb, axes))
    return false;
  if (nb.inputs.size() > 1 && !checkAffine(nb, 1))
    return false;
  if (!readEps(nb, 1e-6, eps))
    return false;
  DType t = nb.dtype(nb.inputs[0]), ct = computeType(t);
  Value x = castTo(nb, nb.inputs[0], ct);
  Value sq = nb.binary<T::MulOp>(x, x, nb.pointer);
  Value ms = nb.reduce<T::ReduceMeanOp>(sq, axes, true);
  Value c = nb.constant(ct, {}, eps);
  Value a = nb.binary<T::AddOp>(ms, c, nb.pointer);
  Value rs = nb.unary<T::RsqrtOp>(a);
  Value y = nb.binary<T::MulOp>(x, rs, nb.pointer);
  if (nb.inputs.size() > 1)
    y = nb.binary<T::MulOp>(y, widenedAffine(nb, nb.inputs[1], y, ct),
                            nb.pointer);
  r.push_back(castTo(nb, y, t));
  return true;
}

// matmul(x, w, transpose_b=true) + bias, w: [out, in]
bool buildLinear(NodeBuilder &nb, Values &r) {
  if (!nb.requireNumeric(0) || !nb.requireSameDType(0, 1) ||
      !nb.requireRank(0, 1, kMaxRank) || !nb.requireRank(1, 2, 2))
    return false;
  Shape x = nb.shape(nb.inputs[0]), w = nb.shape(nb.inputs[1]);
  if (x.back() != w[1])
    return nb.fail(nb.inputPointer(1),
                   "weight " + shapeToString(w) + " expects " +
                       std::to_string(w[1]) + " input features, x " +
                       shapeToString(x) + " has " + std::to_string(x.back()));
  Value y = nb.matmul(nb.inputs[0], nb.inputs[1], false, true,
                      nb.dtype(nb.inputs[0]), nb.pointer + "/inputs");
  if (!y)
    return false;
  if (nb.inputs.size() > 2) {
    if (!nb.requireSameDType(0, 2))
      return false;
    Shape ys = nb.shape(y), bs = nb.shape(nb.inputs[2]);
    ShapeOrError s = broadcastShapes(ys, bs);
    if (!s.ok() || s.shape != ys)
      return nb.fail(nb.inputPointer(2), "bias " + shapeToString(bs) +
                                             " does not broadcast to the "
                                             "output's " +
                                             shapeToString(ys));
    y = nb.binary<T::AddOp>(y, nb.inputs[2], nb.pointer);
  }
  r.push_back(y);
  return true;
}

} // namespace tcc
