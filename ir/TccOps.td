//===- TccOps.td - tcc dialect ops -------------------------*- tablegen -*-===//
//
// One op per operator of the model format (../docs/model-format.md), except
// the composites, which the frontend expands. Attributes are stored in a
// normalised form (non-negative axes, full per-axis lists) so that passes never
// re-derive the format's defaults.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_OPS_TD
#define TCC_OPS_TD

include "ir/TccBase.td"
include "ir/TccAttrs.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

// Ops whose every result element depends only on input elements at the same
// (broadcast) position: kernel grouping fuses chains of them.
def Tcc_Elementwise : NativeOpTrait<"ElementwiseMap"> {
  let cppNamespace = "::mlir::OpTrait::tcc";
}
// Ops that only move elements (views, permutations, copies).
def Tcc_DataMovement : NativeOpTrait<"DataMovement"> {
  let cppNamespace = "::mlir::OpTrait::tcc";
}
// Ops that reduce along axes.
def Tcc_Reduction : NativeOpTrait<"Reduction"> {
  let cppNamespace = "::mlir::OpTrait::tcc";
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Tcc_UnaryOp<string mnemonic, Type tensorTy, list<Trait> traits = []>
    : Tcc_Op<mnemonic, !listconcat(traits, [Pure, Tcc_Elementwise,
                                            SameOperandsAndResultType])> {
  let summary = "elementwise " # mnemonic;
  let arguments = (ins tensorTy:$input);
  let results = (outs tensorTy:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Tcc_NegOp : Tcc_UnaryOp<"neg", Tcc_NumTensor>;
def Tcc_AbsOp : Tcc_UnaryOp<"abs", Tcc_NumTensor>;
def Tcc_ExpOp : Tcc_UnaryOp<"exp", Tcc_FloatTensor>;
def Tcc_LogOp : Tcc_UnaryOp<"log", Tcc_FloatTensor>;
def Tcc_SqrtOp : Tcc_UnaryOp<"sqrt", Tcc_FloatTensor>;
def Tcc_RsqrtOp : Tcc_UnaryOp<"rsqrt", Tcc_FloatTensor>;
def Tcc_ReciprocalOp : Tcc_UnaryOp<"reciprocal", Tcc_FloatTensor>;
def Tcc_TanhOp : Tcc_UnaryOp<"tanh", Tcc_FloatTensor>;
def Tcc_SigmoidOp : Tcc_UnaryOp<"sigmoid", Tcc_FloatTensor>;
def Tcc_ReluOp : Tcc_UnaryOp<"relu", Tcc_NumTensor>;
def Tcc_SiluOp : Tcc_UnaryOp<"silu", Tcc_FloatTensor>;
def Tcc_ErfOp : Tcc_UnaryOp<"erf", Tcc_FloatTensor>;
def Tcc_FloorOp : Tcc_UnaryOp<"floor", Tcc_FloatTensor>;
def Tcc_CeilOp : Tcc_UnaryOp<"ceil", Tcc_FloatTensor>;
def Tcc_NotOp : Tcc_UnaryOp<"not", Tcc_BoolTensor>;

def Tcc_GeluOp : Tcc_UnaryOp<"gelu", Tcc_FloatTensor> {
  let arguments = (ins Tcc_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "false">:$tanh_approx);
}

def Tcc_ClampOp : Tcc_UnaryOp<"clamp", Tcc_NumTensor> {
  let arguments = (ins Tcc_NumTensor:$input, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
}

class Tcc_BinaryOp<string mnemonic, Type operandTy, Type resultTy,
                   list<Trait> traits = []>
    : Tcc_Op<mnemonic, !listconcat(traits, [Pure, Tcc_Elementwise])> {
  let summary = "elementwise " # mnemonic # " with NumPy broadcasting";
  let arguments = (ins operandTy:$lhs, operandTy:$rhs);
  let results = (outs resultTy:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

// x + neg(y) is x - y (exactly, in every dtype): the form the softmax and
// attention matches read (exp(s + neg(max s)), as some exporters write it).
def Tcc_AddOp : Tcc_BinaryOp<"add", Tcc_NumTensor, Tcc_NumTensor> {
  let hasCanonicalizer = 1;
}
def Tcc_SubOp : Tcc_BinaryOp<"sub", Tcc_NumTensor, Tcc_NumTensor>;
// A product or quotient by the constant 1 that broadcasts nothing is its
// operand (exact: x * 1 is x, signed zeros and NaN included).
def Tcc_MulOp : Tcc_BinaryOp<"mul", Tcc_NumTensor, Tcc_NumTensor> {
  let hasFolder = 1;
}
def Tcc_DivOp : Tcc_BinaryOp<"div", Tcc_NumTensor, Tcc_NumTensor> {
  let hasFolder = 1;
}
def Tcc_MaximumOp : Tcc_BinaryOp<"maximum", Tcc_NumTensor, Tcc_NumTensor>;
def Tcc_MinimumOp : Tcc_BinaryOp<"minimum", Tcc_NumTensor, Tcc_NumTensor>;
def Tcc_PowOp : Tcc_BinaryOp<"pow", Tcc_NumTensor, Tcc_NumTensor>;

def Tcc_EqualOp : Tcc_BinaryOp<"equal", Tcc_Tensor, Tcc_BoolTensor>;
def Tcc_NotEqualOp : Tcc_BinaryOp<"not_equal", Tcc_Tensor, Tcc_BoolTensor>;
def Tcc_LessOp : Tcc_BinaryOp<"less", Tcc_Tensor, Tcc_BoolTensor>;
def Tcc_LessEqualOp : Tcc_BinaryOp<"less_equal", Tcc_Tensor, Tcc_BoolTensor>;
def Tcc_GreaterOp : Tcc_BinaryOp<"greater", Tcc_Tensor, Tcc_BoolTensor>;
def Tcc_GreaterEqualOp
    : Tcc_BinaryOp<"greater_equal", Tcc_Tensor, Tcc_BoolTensor>;

def Tcc_AndOp : Tcc_BinaryOp<"and", Tcc_BoolTensor, Tcc_BoolTensor>;
def Tcc_OrOp : Tcc_BinaryOp<"or", Tcc_BoolTensor, Tcc_BoolTensor>;

def Tcc_SelectOp : Tcc_Op<"select", [Pure, Tcc_Elementwise]> {
  let summary = "cond ? a : b, with NumPy broadcasting of all three";
  let arguments = (ins Tcc_BoolTensor:$cond, Tcc_Tensor:$a, Tcc_Tensor:$b);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = [{
    $cond `,` $a `,` $b attr-dict `:` type($cond) `,` type($a) `,` type($b)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tcc_CastOp : Tcc_Op<"cast", [Pure, Tcc_Elementwise]> {
  let summary = "dtype conversion";
  let description = [{
    Float to int truncates toward zero (NaN gives 0, out-of-range values
    saturate); float to f8 rounds to nearest even and saturates to the largest
    finite value; anything to bool is `x != 0`.

    Folds: a cast back to the type of a cast's input is that input where the
    first cast is exact (to a float type holding every value of the input's,
    f16 to f32 and back; an integer to a wider one): attention's P·V kept in
    f32 and cast back to f16 costs no kernel.
  }];
  let arguments = (ins Tcc_Tensor:$input);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

def Tcc_ConstantOp : Tcc_Op<"constant", [Pure]> {
  let summary = "a tensor holding one scalar everywhere";
  let arguments = (ins TypedAttrInterface:$value);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tcc_IotaOp : Tcc_Op<"iota", [Pure]> {
  let summary = "y[i0..in] = i_axis";
  let arguments = (ins I64Attr:$axis);
  let results = (outs Tcc_NumTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Tcc_ReduceOp<string mnemonic>
    : Tcc_Op<mnemonic, [Pure, Tcc_Reduction]> {
  let summary = mnemonic # " over `axes` (sorted, non-negative)";
  let arguments = (ins Tcc_NumTensor:$input, DenseI64ArrayAttr:$axes,
                       BoolAttr:$keepdims);
  let results = (outs Tcc_NumTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  // Over axes of extent 1: the input (folded), or its reshape where the
  // axes are dropped (canonicalized).
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tcc_ReduceSumOp : Tcc_ReduceOp<"reduce_sum">;
def Tcc_ReduceMaxOp : Tcc_ReduceOp<"reduce_max">;
def Tcc_ReduceMinOp : Tcc_ReduceOp<"reduce_min">;
def Tcc_ReduceMeanOp : Tcc_ReduceOp<"reduce_mean">;

class Tcc_ArgOp<string mnemonic> : Tcc_Op<mnemonic, [Pure, Tcc_Reduction]> {
  let summary = "index of the " # mnemonic # " along `axis`, first on ties";
  let arguments = (ins Tcc_NumTensor:$input, I64Attr:$axis,
                       BoolAttr:$keepdims);
  let results = (outs TensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tcc_ArgmaxOp : Tcc_ArgOp<"argmax">;
def Tcc_ArgminOp : Tcc_ArgOp<"argmin">;

def Tcc_TopkOp : Tcc_Op<"topk", [Pure]> {
  let summary = "k largest (or smallest) along `axis`; ties keep lower index";
  let arguments = (ins Tcc_NumTensor:$input, I64Attr:$k, I64Attr:$axis,
                       BoolAttr:$largest);
  let results = (outs Tcc_NumTensor:$values, TensorOf<[I64]>:$indices);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($values) `,` type($indices)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contraction
//===----------------------------------------------------------------------===//

def Tcc_MatmulOp : Tcc_Op<"matmul", [Pure]> {
  let summary = "batched matrix product with broadcast batch dimensions";
  let description = [{
    `a: [..., M, K]`, `b: [..., K, N]` after the optional transposes of the
    last two dimensions; rank-1 operands are not allowed (the frontend
    reshapes them). The result element type is the accumulation's output.
  }];
  let arguments = (ins Tcc_NumTensor:$a, Tcc_NumTensor:$b,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b);
  let results = (outs Tcc_NumTensor:$result);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tcc_PlannedMatmulOp : Tcc_Op<"planned_matmul", [Pure]> {
  let summary = "a matmul whose output tiles compute in planned precisions";
  let description = [{
    `tcc.matmul` of float operands under a precision plan (`plan`, see
    #tcc.precision_plan): `codes` [ceil(M/tile_m), ceil(N/tile_n)] holds each
    output tile's index into the plan's precisions (a param the driver
    makes from `--precision-plan`). The result has the operands' element
    type. tcc-expand-precision-plans rewrites it into the quantizations
    and matmuls it stands for (docs/precision.md).
  }];
  let arguments = (ins Tcc_FloatTensor:$a, Tcc_FloatTensor:$b,
                       TensorOf<[I8]>:$codes, Tcc_PrecisionPlanAttr:$plan,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $codes attr-dict `:` type($a) `,` type($b) `,` type($codes)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tcc_TileMatmulOp : Tcc_Op<"tile_matmul", [Pure, AttrSizedOperandSegments]> {
  let summary = "a matmul of one precision class's tiles, scaled";
  let description = [{
    One precision of a planned matmul (tcc-expand-precision-plans with
    tile kernels): `result[.., i, j] = (sum_k op(a)[i, k] op(b)[k, j]) *
    row_scale[i] * col_scale[j]` in f32 (the sum exact in i32 for i8) for
    the elements of the output tiles of `tile = [tile_m, tile_n]` whose code
    in `codes` is `code`; elsewhere the result is unspecified (a select of
    the plan's precisions reads only this class's tiles). The scales are
    [M, 1] and [1, N] f32 (absent: 1). GPU code generation computes only
    the class's tiles, once each (the wgmma template's tile mask).
  }];
  let arguments = (ins Tcc_NumTensor:$a, Tcc_NumTensor:$b,
                       TensorOf<[I8]>:$codes,
                       Optional<TensorOf<[F32]>>:$row_scale,
                       Optional<TensorOf<[F32]>>:$col_scale,
                       I64Attr:$code, I64Attr:$tile_m, I64Attr:$tile_n,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b);
  let results = (outs TensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $codes (`row_scale` $row_scale^)? (`col_scale` $col_scale^)?
    attr-dict `:` type($a) `,` type($b) `,` type($codes)
    (`,` type($row_scale)^)? (`,` type($col_scale)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Tcc_ReshapeOp : Tcc_Op<"reshape", [Pure, Tcc_DataMovement]> {
  let summary = "row-major reshape to the result type";
  let arguments = (ins Tcc_Tensor:$input);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tcc_TransposeOp : Tcc_Op<"transpose", [Pure, Tcc_DataMovement]> {
  let summary = "result dim i is input dim perm[i]";
  let description = [{
    Folds: the identity permutation is its input; a transpose of a transpose
    is one transpose by the composed permutation (its input when that is the
    identity), so a layout changed and changed back costs no kernel.
  }];
  let arguments = (ins Tcc_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tcc_BroadcastToOp : Tcc_Op<"broadcast_to", [Pure, Tcc_DataMovement]> {
  let summary = "NumPy broadcast to the result type";
  let description = [{
    Canonicalized: an element-wise op whose other operands broadcast to its
    result's shape without it reads the input instead (NumPy broadcasting
    within the op), so a mask expanded to the scores' shape (PyTorch's
    `expand`) is read where it is, not copied to its full size.
  }];
  let arguments = (ins Tcc_Tensor:$input);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tcc_ConcatOp : Tcc_Op<"concat", [Pure, Tcc_DataMovement]> {
  let summary = "concatenation along `axis`";
  let arguments = (ins Variadic<Tcc_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tcc_SliceOp : Tcc_Op<"slice", [Pure, Tcc_DataMovement]> {
  let summary = "strided slice: out[i] = in[starts + i * steps] per axis";
  let description = [{
    The normalised form of ONNX Slice: one start (in range) and one non-zero
    step per axis; the result type gives the counts. Negative steps walk
    backwards.
  }];
  let arguments = (ins Tcc_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tcc_PadOp : Tcc_Op<"pad", [Pure, Tcc_DataMovement]> {
  let summary = "constant padding: pads = [begin_0.., end_0..], all >= 0";
  let arguments = (ins Tcc_Tensor:$input, DenseI64ArrayAttr:$pads,
                       F64Attr:$value);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tcc_GatherOp : Tcc_Op<"gather", [Pure]> {
  let summary = "ONNX Gather along `axis`; out-of-range indices are an error";
  let arguments = (ins Tcc_Tensor:$data, Tcc_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` type($data) `,` type($indices) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Tcc_TakeAlongAxisOp : Tcc_Op<"take_along_axis", [Pure]> {
  let summary = "ONNX GatherElements along `axis`";
  let description = [{
    Canonicalization moves the gather ahead of an elementwise op whose
    operands each have the op's shape (gathered the same way) or size 1
    along `axis` (one value a row, read as it is): the op then computes only
    the gathered entries, and what it computed is no longer a whole tensor
    to write. A cross-entropy's picked log-probabilities become
    `x[r, t[r]] - max_r - log(sum_r)`, the log-softmax never written out.
  }];
  let arguments = (ins Tcc_Tensor:$data, Tcc_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` type($data) `,` type($indices) `->`
    type($result)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tcc_IndexCheckOp : Tcc_Op<"index_check", [Pure, Tcc_Reduction]> {
  let summary = "counts indices outside [-bound, bound)";
  let description = [{
    Gathers clamp their indices so that no read leaves the data; the frontend
    pairs each gather with an index_check whose count becomes a hidden status
    result, and the runtime reports a run whose count is non-zero as an error.
  }];
  let arguments = (ins Tcc_IndexTensor:$indices, I64Attr:$bound);
  let results = (outs TensorOf<[I32]>:$count);
  let assemblyFormat = "$indices attr-dict `:` type($indices) `->` type($count)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling: NCHW, or channels last (NHWC) where the unit
// attribute `nhwc` says so. The frontend builds NCHW (the model format's
// layout); tcc-conv-layout moves tensor-core convolutions to NHWC.
//===----------------------------------------------------------------------===//

def Tcc_Conv2dOp : Tcc_Op<"conv2d", [Pure]> {
  let summary = "2-D convolution, NCHW / OIHW or NHWC / OHWI, optional bias";
  let description = [{
    NCHW: input [N, C, H, W], weight [O, C/groups, KH, KW], result
    [N, O, OH, OW]. With `nhwc`: input [N, H, W, C], weight
    [O, KH, KW, C/groups], result [N, OH, OW, O]. Pads are [top, left,
    bottom, right] in both.
  }];
  let arguments = (ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$weight,
                       Optional<Tcc_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$groups,
                       UnitAttr:$nhwc);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tcc_ConvTranspose2dOp : Tcc_Op<"conv_transpose2d", [Pure]> {
  let summary = "2-D transposed convolution, weight [C, O/groups, KH, KW]";
  let arguments = (ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$weight,
                       Optional<Tcc_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$output_padding, I64Attr:$groups);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

class Tcc_Pool2dOp<string mnemonic> : Tcc_Op<mnemonic, [Pure]> {
  let arguments = (ins Tcc_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       BoolAttr:$ceil_mode, UnitAttr:$nhwc);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tcc_MaxPool2dOp : Tcc_Pool2dOp<"max_pool2d"> {
  let summary = "2-D max pooling; padding never wins";
}

def Tcc_AvgPool2dOp : Tcc_Pool2dOp<"avg_pool2d"> {
  let summary = "2-D average pooling";
  let arguments = (ins Tcc_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       BoolAttr:$ceil_mode, BoolAttr:$count_include_pad,
                       UnitAttr:$nhwc);
}

def Tcc_GlobalAvgPool2dOp : Tcc_Op<"global_avg_pool2d", [Pure]> {
  let summary = "[N, C, H, W] -> [N, C, 1, 1]; nhwc: [N, H, W, C] -> [N, 1, 1, C]";
  let arguments = (ins Tcc_FloatTensor:$input, UnitAttr:$nhwc);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tcc_BatchNormOp : Tcc_Op<"batch_norm", [Pure]> {
  let summary = "inference batch norm over channel axis 1";
  let arguments = (ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$scale,
                       Tcc_FloatTensor:$bias, Tcc_FloatTensor:$mean,
                       Tcc_FloatTensor:$var, F64Attr:$eps);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Grouping
//===----------------------------------------------------------------------===//

def Tcc_YieldOp : Tcc_Op<"yield", [Pure, Terminator, ReturnLike,
                                   ParentOneOf<["GroupOp", "ChainOp",
                                               "AttentionOp"]>]> {
  let summary = "the values a group, chain or attention region returns";
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ValueRange()); }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def Tcc_GroupOp : Tcc_Op<"group", [SingleBlockImplicitTerminator<"YieldOp">,
                                   RecursiveMemoryEffects]> {
  let summary = "ops that become one kernel";
  let description = [{
    The kernel-grouping pass wraps the ops of each future kernel in one
    `tcc.group`; values from outside are captured, and the results are those
    used after the group. Every target outlines groups the same way, so the
    host and GPU targets share one grouping.
  }];
  let arguments = (ins StrAttr:$kind);
  let results = (outs Variadic<Tcc_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$kind attr-dict-with-keyword (`->` type($results)^)? $body";
  let hasVerifier = 1;
}

def Tcc_ChainOp : Tcc_Op<"chain", [SingleBlockImplicitTerminator<"YieldOp">,
                                   RecursiveMemoryEffects]> {
  let summary = "a reduction chain along one axis";
  let description = [{
    Reductions over one axis where later reductions read earlier results,
    with the elementwise ops between them (softmax, attention, layer norm).
    Reduction-chain fusion rewrites its body into a rolling or split-K form.
  }];
  let arguments = (ins I64Attr:$axis);
  let results = (outs Variadic<Tcc_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword (`->` type($results)^)? $body";
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Tcc_AttentionOp : Tcc_Op<"attention", [IsolatedFromAbove,
                                           RecursiveMemoryEffects]> {
  let summary = "attention, the score change and mask as regions";
  let description = [{
    softmax(change(Q·Kᵀ)) · V over the last two axes, as the GPU attention
    templates compute it (compiler/gpu/AttentionKernel.h, AttentionProblem):
    formed from a chain matched as attention (passes/AttentionMatch.h) by
    tcc-form-attention, in the compiler's pipeline right after planning;
    GpuCodegen builds the planned templates from it.

    Q [.., lq, head_dim], K [.., lk, head_dim] (`k_transposed`: [.., head_dim,
    lk]) and V [.., lk, value_dim] are the tensors as the model gives them
    (`value_dim`, V's and the result's head size, is head_dim unless given:
    DeepSeek's MLA scores over 192 and sums values of 128):
    a layout the chain transposed them from is read with `q_strides`,
    `k_strides`, `v_strides` (element strides of attention's axes, as the
    scores read them; empty: packed), and the result is written with
    `o_strides`. Where Q, K or V is a view the model cut from a larger
    tensor (a slice of a packed QKV projection, reshaped and transposed),
    the operand is that tensor and the view is read through: the strides
    are over its packed layout, starting `q_offset`, `k_offset`,
    `v_offset` elements in (0 unless strides are given); the operand must
    hold every element the view reaches. Leading axes are (batch, heads)
    as far as the rank has them; K and V have `kv_heads` heads (GQA, MQA: a
    divisor of `heads`).

    `score` changes the score: its block takes the score S (f32), then the
    batch, head, query and key indices (i32), then one argument per
    captured tensor (a bias, a mask, per-head slopes: any tensor
    broadcastable to the scores), read by `tensor.extract` at clamped
    indices; it yields the changed score (f32). `captured_views` lists the
    captured tensors the model reshaped (adding or dropping axes of size
    1) before reading them, which the regions read through the view: their
    own last two axes are not the scores' (a [B, lk] padding mask read as
    [B, 1, 1, lk] while lq is B), so no template takes them for a
    [lq, lk] plane. Empty when the change is
    the `scale` factor alone. `key_keep` (batch, head, key index, captured
    tensors) yields whether a key is kept for every query (a padding mask
    applied with -inf; `key_mask_per_head`: it reads the head index;
    `key_mask_alone`: the change is `scale` and this mask only, so a
    template may apply it per key, and `score` is then the same change as
    score code). The templates instantiate the regions per score and key,
    a captured tensor as a load from the kernel's buffer or as the element
    a template staged.

    `mask` holds linear constraints of positions (a, b, c): query q and key
    k are kept where a * q + b * k + c >= 0 for each. `masked_to_infinity`:
    a score may become -inf, and a row of them is NaN (else zero).
  }];
  let arguments = (ins Tcc_Tensor:$q, Tcc_Tensor:$k, Tcc_Tensor:$v,
                       Variadic<Tcc_Tensor>:$captured,
                       I64Attr:$batch, I64Attr:$heads, I64Attr:$kv_heads,
                       I64Attr:$lq, I64Attr:$lk, I64Attr:$head_dim,
                       OptionalAttr<I64Attr>:$value_dim,
                       UnitAttr:$k_transposed,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$q_strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$k_strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$v_strides,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$o_strides,
                       DefaultValuedAttr<I64Attr, "0">:$q_offset,
                       DefaultValuedAttr<I64Attr, "0">:$k_offset,
                       DefaultValuedAttr<I64Attr, "0">:$v_offset,
                       OptionalAttr<F64Attr>:$scale,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$mask,
                       UnitAttr:$key_mask_per_head, UnitAttr:$key_mask_alone,
                       UnitAttr:$masked_to_infinity,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$captured_views);
  let results = (outs Tcc_Tensor:$result);
  let regions = (region AnyRegion:$score, AnyRegion:$key_keep);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`captures` `(` $captured^ `:` type($captured) `)`)?
    attr-dict-with-keyword `:` type($q) `,` type($k) `,` type($v) `->`
    type($result) `score` $score `key_keep` $key_keep
  }];
  let hasVerifier = 1;
}

#endif // TCC_OPS_TD
