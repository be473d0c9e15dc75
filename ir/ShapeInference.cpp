//===- ShapeInference.cpp - result shapes of tcc ops
//------------------------===//
#include "ir/ShapeInference.h"

#include <algorithm>
#include <sstream>

namespace tcc {

int64_t numElements(const Shape &shape, int64_t limit) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && n > limit / d)
      return -1;
    n *= d;
  }
  return n;
}

std::string shapeToString(const Shape &s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i)
    os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

ShapeOrError broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return ShapeOrError::fail("shapes " + shapeToString(a) + " and " +
                                shapeToString(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return {out, ""};
}

ShapeOrError reduceShape(const Shape &in, const std::vector<int64_t> &axes,
                         bool keepdims) {
  std::vector<bool> reduced(in.size(), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= (int64_t)in.size())
      return ShapeOrError::fail("axis " + std::to_string(a) +
                                " out of range for rank " +
                                std::to_string(in.size()));
    if (reduced[a])
      return ShapeOrError::fail("axis " + std::to_string(a) + " repeated");
    reduced[a] = true;
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i])
      out.push_back(in[i]);
    else if (keepdims)
      out.push_back(1);
  }
  return {out, ""};
}

ShapeOrError matmulShape(const Shape &a, const Shape &b, bool transA,
                         bool transB) {
  if (a.size() < 2 || b.size() < 2)
    return ShapeOrError::fail("matmul operands need rank >= 2, got " +
                              shapeToString(a) + " and " + shapeToString(b));
  int64_t m = a[a.size() - 2], ka = a[a.size() - 1];
  if (transA)
    std::swap(m, ka);
  int64_t kb = b[b.size() - 2], n = b[b.size() - 1];
  if (transB)
    std::swap(kb, n);
  if (ka != kb)
    return ShapeOrError::fail("matmul contraction sizes differ: " +
                              std::to_string(ka) + " vs " + std::to_string(kb));
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  ShapeOrError batch = broadcastShapes(ba, bb);
  if (!batch.ok())
    return ShapeOrError::fail("matmul batch dimensions: " + batch.error);
  batch.shape.push_back(m);
  batch.shape.push_back(n);
  return batch;
}

ShapeOrError transposeShape(const Shape &in, const std::vector<int64_t> &perm) {
  if (perm.size() != in.size())
    return ShapeOrError::fail("perm has " + std::to_string(perm.size()) +
                              " entries for rank " + std::to_string(in.size()));
  std::vector<bool> seen(in.size(), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= (int64_t)in.size() || seen[p])
      return ShapeOrError::fail("perm is not a permutation of 0.." +
                                std::to_string((int64_t)in.size() - 1));
    seen[p] = true;
    out.push_back(in[p]);
  }
  return {out, ""};
}

ShapeOrError concatShape(const std::vector<Shape> &ins, int64_t axis) {
  if (ins.empty())
    return ShapeOrError::fail("concat needs at least one input");
  Shape out = ins[0];
  if (axis < 0 || axis >= (int64_t)out.size())
    return ShapeOrError::fail("axis " + std::to_string(axis) +
                              " out of range for rank " +
                              std::to_string(out.size()));
  for (size_t i = 1; i < ins.size(); ++i) {
    if (ins[i].size() != out.size())
      return ShapeOrError::fail("concat inputs have different ranks");
    for (size_t d = 0; d < out.size(); ++d) {
      if ((int64_t)d == axis)
        continue;
      if (ins[i][d] != out[d])
        return ShapeOrError::fail("concat input " + std::to_string(i) +
                                  " has shape " + shapeToString(ins[i]) +
                                  ", incompatible with " +
                                  shapeToString(ins[0]));
    }
    out[axis] += ins[i][axis];
  }
  return {out, ""};
}

ShapeOrError padShape(const Shape &in, const std::vector<int64_t> &pads) {
  if (pads.size() != 2 * in.size())
    return ShapeOrError::fail("pads needs " + std::to_string(2 * in.size()) +
                              " entries for rank " + std::to_string(in.size()));
  Shape out(in);
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] += pads[i] + pads[i + in.size()];
    if (out[i] < 0)
      return ShapeOrError::fail("pads make axis " + std::to_string(i) +
                                " negative");
  }
  return {out, ""};
}

ShapeOrError gatherShape(const Shape &data, const Shape &indices,
                         int64_t axis) {
  if (axis < 0 || axis >= (int64_t)data.size())
    return ShapeOrError::fail("axis " + std::to_string(axis) +
                              " out of range for rank " +
                              std::to_string(data.size()));
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return {out, ""};
}

int64_t windowOutSize(int64_t in, int64_t kernel, int64_t stride,
                      int64_t padBegin, int64_t padEnd, int64_t dilation,
                      bool ceilMode) {
  if (stride <= 0 || kernel <= 0 || dilation <= 0 || padBegin < 0 || padEnd < 0)
    return -1;
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t avail = in + padBegin + padEnd - span;
  if (avail < 0)
    return -1;
  int64_t out = (ceilMode ? (avail + stride - 1) / stride : avail / stride) + 1;
  // As PyTorch: the last window must start inside the input or the leading
  // padding.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

static bool checkPairs(const std::vector<int64_t> &v, size_t n, int64_t min,
                       const char *what, std::string &err) {
  if (v.size() != n) {
    err = std::string(what) + " needs " + std::to_string(n) + " entries";
    return false;
  }
  for (int64_t x : v)
    if (x < min) {
      err = std::string(what) + " entries must be >= " + std::to_string(min);
      return false;
    }
  return true;
}

ShapeOrError conv2dShape(const Shape &x, const Shape &w,
                         const std::vector<int64_t> &strides,
                         const std::vector<int64_t> &pads,
                         const std::vector<int64_t> &dilations,
                         int64_t groups, bool nhwc) {
  std::string err;
  if (x.size() != 4 || w.size() != 4)
    return ShapeOrError::fail("conv2d needs rank-4 input and weight, got " +
                              shapeToString(x) + " and " + shapeToString(w));
  if (!checkPairs(strides, 2, 1, "strides", err) ||
      !checkPairs(pads, 4, 0, "pads", err) ||
      !checkPairs(dilations, 2, 1, "dilations", err))
    return ShapeOrError::fail(err);
  if (nhwc) {
    // The NCHW rule on the permuted shapes, its result permuted back.
    ShapeOrError s = conv2dShape({x[0], x[3], x[1], x[2]},
                                 {w[0], w[3], w[1], w[2]}, strides, pads,
                                 dilations, groups, false);
    if (!s.error.empty())
      return s;
    return {{s.shape[0], s.shape[2], s.shape[3], s.shape[1]}, ""};
  }
  if (groups < 1 || x[1] % groups || w[0] % groups)
    return ShapeOrError::fail("groups " + std::to_string(groups) +
                              " must divide the input channels " +
                              std::to_string(x[1]) + " and output channels " +
                              std::to_string(w[0]));
  if (w[1] * groups != x[1])
    return ShapeOrError::fail("weight " + shapeToString(w) + " expects " +
                              std::to_string(w[1] * groups) +
                              " input channels, input has " +
                              std::to_string(x[1]));
  int64_t oh = windowOutSize(x[2], w[2], strides[0], pads[0], pads[2],
                             dilations[0], false);
  int64_t ow = windowOutSize(x[3], w[3], strides[1], pads[1], pads[3],
                             dilations[1], false);
  if (oh <= 0 || ow <= 0)
    return ShapeOrError::fail("kernel does not fit the padded input");
  return {{x[0], w[0], oh, ow}, ""};
}

ShapeOrError convTranspose2dShape(const Shape &x, const Shape &w,
                                  const std::vector<int64_t> &strides,
                                  const std::vector<int64_t> &pads,
                                  const std::vector<int64_t> &dilations,
                                  const std::vector<int64_t> &outputPadding,
                                  int64_t groups) {
  std::string err;
  if (x.size() != 4 || w.size() != 4)
    return ShapeOrError::fail(
        "conv_transpose2d needs rank-4 input and weight, got " +
        shapeToString(x) + " and " + shapeToString(w));
  if (!checkPairs(strides, 2, 1, "strides", err) ||
      !checkPairs(pads, 4, 0, "pads", err) ||
      !checkPairs(dilations, 2, 1, "dilations", err) ||
      !checkPairs(outputPadding, 2, 0, "output_padding", err))
    return ShapeOrError::fail(err);
  if (groups < 1 || x[1] % groups)
    return ShapeOrError::fail("groups must divide the input channels");
  if (w[0] != x[1])
    return ShapeOrError::fail(
        "weight " + shapeToString(w) + " expects " + std::to_string(w[0]) +
        " input channels, input has " + std::to_string(x[1]));
  for (int i = 0; i < 2; ++i)
    if (outputPadding[i] >= std::max(strides[i], dilations[i]))
      return ShapeOrError::fail(
          "output_padding must be smaller than stride or dilation");
  Shape out{x[0], w[1] * groups, 0, 0};
  for (int i = 0; i < 2; ++i) {
    out[2 + i] = (x[2 + i] - 1) * strides[i] - pads[i] - pads[i + 2] +
                 dilations[i] * (w[2 + i] - 1) + outputPadding[i] + 1;
    if (out[2 + i] <= 0)
      return ShapeOrError::fail("padding leaves no output");
  }
  return {out, ""};
}

ShapeOrError pool2dShape(const Shape &x, const std::vector<int64_t> &kernel,
                         const std::vector<int64_t> &strides,
                         const std::vector<int64_t> &pads, bool ceilMode,
                         bool nhwc) {
  std::string err;
  if (x.size() != 4)
    return ShapeOrError::fail("pooling needs a rank-4 input, got " +
                              shapeToString(x));
  if (nhwc) {
    ShapeOrError s = pool2dShape({x[0], x[3], x[1], x[2]}, kernel, strides,
                                 pads, ceilMode, false);
    if (!s.error.empty())
      return s;
    return {{s.shape[0], s.shape[2], s.shape[3], s.shape[1]}, ""};
  }
  if (!checkPairs(kernel, 2, 1, "kernel", err) ||
      !checkPairs(strides, 2, 1, "strides", err) ||
      !checkPairs(pads, 4, 0, "pads", err))
    return ShapeOrError::fail(err);
  for (int i = 0; i < 2; ++i)
    if (pads[i] > kernel[i] / 2 || pads[i + 2] > kernel[i] / 2)
      return ShapeOrError::fail("pads must be at most half the kernel");
  int64_t oh =
      windowOutSize(x[2], kernel[0], strides[0], pads[0], pads[2], 1, ceilMode);
  int64_t ow =
      windowOutSize(x[3], kernel[1], strides[1], pads[1], pads[3], 1, ceilMode);
  if (oh <= 0 || ow <= 0)
    return ShapeOrError::fail("kernel does not fit the padded input");
  return {{x[0], x[1], oh, ow}, ""};
}

} // namespace tcc
