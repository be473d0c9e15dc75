//===- ShapeInference.h - result shapes of tcc ops ----------------*- C++
//-*-===//
//
// The one place that knows how each op's result shape follows from its
// operands and attributes. The frontend uses it to build result types, the
// verifiers to check them. Functions return an error message instead of a
// shape when the inputs are invalid; they never assert, because their inputs
// come from users.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_IR_SHAPEINFERENCE_H
#define TCC_IR_SHAPEINFERENCE_H

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tcc {

using Shape = std::vector<int64_t>;

/// A shape, or why there is none.
struct ShapeOrError {
  Shape shape;
  std::string error;
  bool ok() const { return error.empty(); }
  static ShapeOrError fail(std::string msg) { return {{}, std::move(msg)}; }
};

/// Elements in a shape, or -1 when the count overflows the limit.
int64_t numElements(const Shape &shape, int64_t limit = (int64_t(1) << 40));

ShapeOrError broadcastShapes(const Shape &a, const Shape &b);
ShapeOrError reduceShape(const Shape &in, const std::vector<int64_t> &axes,
                         bool keepdims);
ShapeOrError matmulShape(const Shape &a, const Shape &b, bool transA,
                         bool transB);
ShapeOrError transposeShape(const Shape &in, const std::vector<int64_t> &perm);
ShapeOrError concatShape(const std::vector<Shape> &ins, int64_t axis);
ShapeOrError padShape(const Shape &in, const std::vector<int64_t> &pads);
ShapeOrError gatherShape(const Shape &data, const Shape &indices, int64_t axis);
/// Output spatial size of a convolution or pooling window along one axis.
/// Returns -1 when the window does not fit.
int64_t windowOutSize(int64_t in, int64_t kernel, int64_t stride,
                      int64_t padBegin, int64_t padEnd, int64_t dilation,
                      bool ceilMode);
/// NCHW: x [N, C, H, W], w [O, C/groups, KH, KW] -> [N, O, OH, OW];
/// nhwc (channels last): x [N, H, W, C], w [O, KH, KW, C/groups] ->
/// [N, OH, OW, O].
ShapeOrError conv2dShape(const Shape &x, const Shape &w,
                         const std::vector<int64_t> &strides,
                         const std::vector<int64_t> &pads,
                         const std::vector<int64_t> &dilations, int64_t groups,
                         bool nhwc = false);
ShapeOrError convTranspose2dShape(const Shape &x, const Shape &w,
                                  const std::vector<int64_t> &strides,
                                  const std::vector<int64_t> &pads,
                                  const std::vector<int64_t> &dilations,
                                  const std::vector<int64_t> &outputPadding,
                                  int64_t groups);
/// [N, C, H, W] -> [N, C, OH, OW]; nhwc: [N, H, W, C] -> [N, OH, OW, C].
ShapeOrError pool2dShape(const Shape &x, const std::vector<int64_t> &kernel,
                         const std::vector<int64_t> &strides,
                         const std::vector<int64_t> &pads, bool ceilMode,
                         bool nhwc = false);

std::string shapeToString(const Shape &s);

} // namespace tcc

#endif // TCC_IR_SHAPEINFERENCE_H
