//===- TccBase.td - tcc dialect definition -----------------*- tablegen -*-===//
//
// The tcc dialect holds a model as the format describes it: whole-tensor ops
// on static ranked tensors, with NumPy broadcasting where the format allows.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_BASE_TD
#define TCC_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Tcc_Dialect : Dialect {
  let name = "tcc";
  let cppNamespace = "::mlir::tcc";
  let summary = "tcc's tensor-level dialect";
  let description = [{
    Ops of the tcc model format on statically shaped ranked tensors, and the
    region ops that graph passes use to group ops into kernels and reduction
    chains.
  }];
  let useDefaultAttributePrinterParser = 1;
}

// The element types of the model format.
def Tcc_Float : AnyTypeOf<[F64, F32, F16, BF16, F8E4M3FN, F8E5M2]>;
def Tcc_Int : AnyTypeOf<[I8, I32, I64]>;
def Tcc_Element : AnyTypeOf<[F64, F32, F16, BF16, F8E4M3FN, F8E5M2, I8, I32,
                              I64, I1]>;

def Tcc_Tensor : StaticShapeTensorOf<[Tcc_Element]>;
def Tcc_FloatTensor : StaticShapeTensorOf<[Tcc_Float]>;
def Tcc_NumTensor : StaticShapeTensorOf<[Tcc_Float, Tcc_Int]>;
def Tcc_BoolTensor : StaticShapeTensorOf<[I1]>;
def Tcc_IndexTensor : StaticShapeTensorOf<[I32, I64]>;

class Tcc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tcc_Dialect, mnemonic, traits>;

#endif // TCC_BASE_TD
