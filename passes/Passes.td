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

#endif // TCC_PASSES_TD
