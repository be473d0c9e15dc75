//===- Importer.h - the frontend's internals ---------------------*- C++
//-*-===//
//
// Shared by the files of the frontend, not installed: the importer's state,
// the per-node builder that op builders use, and the op table.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_FRONTEND_IMPORTER_H
#define TCC_FRONTEND_IMPORTER_H

#include "frontend/Json.h"
#include "frontend/ModelImporter.h"
#include "frontend/Safetensors.h"
#include "ir/ShapeInference.h"
#include "ir/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseMap.h"

#include <map>
#include <unordered_map>

namespace tcc {

/// Limits every tensor of a model obeys (docs/model-format.md, "Limits").
constexpr size_t kMaxRank = 16;
constexpr int64_t kMaxElements = int64_t(1) << 40;
/// Bound on window-like attributes (strides, pads, dilations, kernel sizes,
/// groups): keeps the shape arithmetic far from int64 overflow.
constexpr int64_t kMaxWindowAttr = int64_t(1) << 20;

/// The builtin element type of a dtype, and back.
mlir::Type elementTypeOf(mlir::MLIRContext &ctx, DType t);

/// Counts one internal error (internalImportErrorCount); call it where an
/// importer reports one.
void noteInternalImportError();
std::optional<DType> dtypeOfElement(mlir::Type t);

/// Checks a computed or declared shape against the limits; returns "" or
/// the problem.
std::string checkShapeLimits(const Shape &s);

/// Reads a declared shape: a list of at most kMaxRank sizes in [0, 2^40]
/// holding at most 2^40 elements.
std::optional<Shape> readShape(const Json &v, const std::string &pointer,
                               Diagnostics &diag);

/// Reads a dtype name, suggesting the format's spelling for a near miss.
std::optional<DType> readDType(const Json &v, const std::string &pointer,
                               Diagnostics &diag);

/// A scalar read from JSON for a given dtype: integers exact, floats as
/// written, bools as 0/1.
struct Scalar {
  double f = 0;  ///< The value for float dtypes (and clamp/pad attributes).
  int64_t i = 0; ///< The value for integer and bool dtypes.
};

/// Reads a scalar meant for `dtype`: a number for floats, an integer in
/// range for integer dtypes, true/false (or 0/1) for bool. With
/// `exactInDouble`, integers must also be exact as a double (|v| <= 2^53),
/// for attributes the dialect stores as f64.
std::optional<Scalar> readScalar(const Json &v, DType dtype,
                                 const std::string &pointer, Diagnostics &diag,
                                 bool exactInDouble = false);

/// Reads a `fill` or `random` initialiser (docs/model-format.md) for a param
/// of `dtype` into its recipe; the ONNX importer reads initializers' recipe
/// hints (docs/onnx.md) with it too. Problems are reported at `pointer`.
std::optional<ParamRecipe> readRecipe(const Json &init,
                                      const std::string &pointer, DType dtype,
                                      Diagnostics &diag);

class Importer;

/// Builds the ops of one node. Op builders read attributes and inputs through
/// it, so that every problem is reported at the right pointer, and emit ops
/// through it, so that every op is tied to its node for later diagnostics.
class NodeBuilder {
public:
  NodeBuilder(Importer &im, size_t index, const std::string &op,
              const Json *attrs, std::vector<mlir::Value> inputs,
              mlir::Location loc);

  Importer &im;
  const size_t index;
  const std::string pointer; ///< "/nodes/<index>"
  const std::string op;
  std::vector<mlir::Value> inputs;
  mlir::Location loc;
  mlir::OpBuilder &b;

  std::string inputPointer(size_t i) const;
  std::string attrPointer(const char *name) const;
  /// Reports an error and returns false, so builders can `return fail(...)`.
  bool fail(const std::string &pointer, const std::string &message);

  // Attribute reads. A missing attribute takes `dflt`; without a default it
  // is an error. All return false after reporting a problem.
  bool has(const char *name) const;
  /// Reports a missing attribute without a default at the attrs object (or
  /// the node when it has none), where the key should be.
  bool missingAttr(const char *name);
  bool attrInt(const char *name, int64_t &out,
               std::optional<int64_t> dflt = std::nullopt);
  bool attrBool(const char *name, bool &out,
                std::optional<bool> dflt = std::nullopt);
  bool attrFloat(const char *name, double &out,
                 std::optional<double> dflt = std::nullopt);
  bool attrString(const char *name, std::string &out,
                  std::optional<std::string> dflt = std::nullopt);
  bool attrDType(const char *name, DType &out);
  /// A list of at most `maxLength` integers.
  bool attrIntList(const char *name, std::vector<int64_t> &out,
                   std::optional<std::vector<int64_t>> dflt, size_t maxLength);
  /// A list of exactly `length` integers in [lo, 2^20] (strides, pads...).
  bool attrWindow(const char *name, std::vector<int64_t> &out,
                  std::optional<std::vector<int64_t>> dflt, size_t length,
                  int64_t lo);
  /// An axis in [-rank, rank), returned non-negative.
  bool attrAxis(const char *name, int64_t rank, int64_t &out,
                std::optional<int64_t> dflt = std::nullopt);
  bool attrShape(const char *name, Shape &out);
  /// The raw attribute (null when absent).
  const Json *attr(const char *name) const;

  // Operand checks, reporting at the operand's pointer.
  DType dtype(mlir::Value v) const;
  Shape shape(mlir::Value v) const;
  bool requireFloat(size_t i);
  bool requireNumeric(size_t i);
  bool requireBool(size_t i);
  bool requireIndices(size_t i);
  bool requireRank(size_t i, int64_t minRank, int64_t maxRank);
  /// Inputs `i` and `j` have one dtype.
  bool requireSameDType(size_t i, size_t j);

  mlir::RankedTensorType tensorType(const Shape &s, DType t) const;
  /// Checks a result shape (or its error) and reports at `errPointer`.
  bool checkResult(const ShapeOrError &s, const std::string &errPointer);

  /// Creates an op at the node's location.
  template <typename OpT, typename... Args> OpT create(Args &&...args) {
    return OpT::create(b, loc, std::forward<Args>(args)...);
  }

  // Building blocks shared by primitives and composites; each returns a null
  // Value after reporting a problem at `errPointer`.
  template <typename OpT>
  mlir::Value binary(mlir::Value a, mlir::Value c,
                     const std::string &errPointer, bool boolResult = false) {
    ShapeOrError s = broadcastShapes(shape(a), shape(c));
    if (!checkResult(s, errPointer))
      return {};
    DType t = boolResult ? DType::Bool : dtype(a);
    return create<OpT>(tensorType(s.shape, t), a, c);
  }
  template <typename OpT> mlir::Value unary(mlir::Value x) {
    return create<OpT>(x.getType(), x);
  }
  template <typename OpT>
  mlir::Value reduce(mlir::Value x, const std::vector<int64_t> &axes,
                     bool keepdims) {
    ShapeOrError s = reduceShape(shape(x), axes, keepdims);
    if (!checkResult(s, pointer))
      return {};
    return create<OpT>(tensorType(s.shape, dtype(x)), x, axes, keepdims);
  }
  /// A rank-0 (or given-shape) constant of dtype `t` holding `v`.
  mlir::Value constant(DType t, const Shape &s, Scalar v);
  mlir::Value reshape(mlir::Value x, const Shape &s);
  /// matmul with NumPy's rank-1 rules, via reshapes.
  mlir::Value matmul(mlir::Value a, mlir::Value c, bool transA, bool transB,
                     DType outType, const std::string &errPointer);
  /// Records a gather-like op's index check as a status result.
  void addIndexCheck(mlir::Value indices, int64_t bound);

private:
  const Json *attrs;
};

using BuildFn = bool (*)(NodeBuilder &, std::vector<mlir::Value> &);

/// One row of the op table: arity, attributes and builder of an op.
struct OpInfo {
  const char *name;
  unsigned minInputs, maxInputs, numOutputs;
  std::vector<std::string> attrs;
  BuildFn build;
};

/// The op, or null when the format has none of that name.
const OpInfo *findOp(const std::string &name);
std::vector<std::string> allOpNames();

/// Builders of the composite ops (Composites.cpp).
bool buildSoftmax(NodeBuilder &nb, std::vector<mlir::Value> &results);
bool buildLogSoftmax(NodeBuilder &nb, std::vector<mlir::Value> &results);
bool buildLayerNorm(NodeBuilder &nb, std::vector<mlir::Value> &results);
bool buildRmsNorm(NodeBuilder &nb, std::vector<mlir::Value> &results);
bool buildLinear(NodeBuilder &nb, std::vector<mlir::Value> &results);

/// Imports one parsed model.
class Importer {
public:
  Importer(mlir::MLIRContext &ctx, Diagnostics &diag, std::string baseDir,
           const ImportLimits &limits);

  std::optional<ImportedModel> run(const Json &root);

  mlir::MLIRContext &ctx;
  Diagnostics &diag;
  mlir::OpBuilder builder;

  /// Index checks to return as status results, in node order.
  struct Status {
    mlir::Value count;
    std::string message;
  };
  std::vector<Status> statuses;

private:
  /// A declared input or param.
  struct Decl {
    std::string name, pointer;
    DType dtype;
    Shape shape;
    bool ok = false;
  };
  /// A name in the model's one namespace. `value` is null when the tensor's
  /// definition failed: its uses are then skipped silently, because the
  /// problem was already reported where it is.
  struct Def {
    mlir::Value value;
    std::string pointer;
  };

  bool readHeader(const Json &root, std::string &name);
  void readDecl(const Json &v, const std::string &pointer, bool isParam,
                Decl &d);
  std::optional<std::string> readName(const Json &v,
                                      const std::string &pointer);
  /// Claims `name` for a definition at `pointer`; false if taken.
  bool define(const std::string &name, const std::string &pointer,
              mlir::Value value);
  bool materialise(const Json &init, const std::string &pointer, const Decl &d,
                   ParamData &out);
  bool readFileInit(const Json &init, const std::string &pointer, const Decl &d,
                    ParamData &out);
  void importNode(const Json &node, size_t index);
  /// Resolves a use; null Value and false when undefined (reported),
  /// null Value and true when poisoned (silent).
  bool resolve(const std::string &name, const std::string &pointer,
               size_t nodeIndex, mlir::Value &out);
  bool verifyModule(mlir::ModuleOp module);

  std::string baseDir;
  ImportLimits limits;
  uint64_t paramBytes = 0;
  std::unordered_map<std::string, Def> defs;
  /// First definition of each node output name, for "defined later" hints.
  std::unordered_map<std::string, std::pair<size_t, std::string>> nodeDefs;
  std::map<std::string, std::optional<SafetensorsFile>> files;
  std::map<std::string, std::string> fileErrors;
  llvm::DenseMap<mlir::Location, size_t> nodeOfLoc;
};

} // namespace tcc

#endif // TCC_FRONTEND_IMPORTER_H
