//===- Passes.td - tcc passes ------------------------------*- tablegen -*-===//
#ifndef TCC_PASSES_TD
#define TCC_PASSES_TD

include "mlir/Pass/PassBase.td"

def TccFormGroups : Pass<"tcc-form-groups", "func::FuncOp"> {
  let summary = "Wrap the ops of each future kernel in a tcc.group";
  let description = [{
    Decides what becomes one kernel, for every target: chains of elementwise
    and data-movement ops fuse into one group; a reduction takes in the
    elementwise ops that only feed it; heavy ops (matmul, convolution,
    pooling, gathers, top-k) take in the elementwise ops that only consume
    them.
  }];
  let dependentDialects = ["::mlir::tcc::TccDialect"];
}

def TccOutlineGroups : Pass<"tcc-outline-groups", "ModuleOp"> {
  let summary = "Turn each tcc.group into a kernel function and a call";
  let description = [{
    Each `tcc.group` in a function marked `tcc.entry` becomes a private
    `func.func` marked `tcc.kernel` (captured values become arguments, in
    order of first use), and the group becomes a `func.call` to it. The entry
    function is then the launch sequence the bundle writer reads.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TccLowerToLinalg : Pass<"tcc-lower-to-linalg", "func::FuncOp"> {
  let summary = "Lower tcc ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Target-independent lowering of every tcc op. f16, bf16 and f8 arithmetic
    computes in f32 and rounds each op's result to its dtype; reductions and
    contractions accumulate in f32 (i32/i64 for integers). The output uses
    only ops that one-shot bufferization and the host and GPU code generators
    handle.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::bufferization::BufferizationDialect"
  ];
}

#endif // TCC_PASSES_TD
