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

def TccPartitionGrid : Pass<"tcc-partition-grid", "func::FuncOp"> {
  let summary = "Split a bufferized kernel's work into a grid of row ranges";
  let description = [{
    On a kernel function (`tcc.kernel`) after bufferization: appends two
    `index` arguments, `begin` and `end`, and sets `tcc.grid = N`, so that a
    call with [begin, end) computes rows begin..end-1 of one loop dimension
    and calls on disjoint ranges may run at once. Every linalg op that writes
    a kernel argument is restricted to the range along a parallel loop
    dimension that reaches each of its operands as a plain index; ops that
    write only kernel-local buffers run whole in every call. The choice is
    refused (grid 1, the whole range ignored) when a restricted op's output
    is read along another dimension, when an op writes a view of an
    argument, when the kernel holds ops other than linalg, allocations and
    views, or when the work is below `min-work` iterations.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"32768",
           "Smallest iteration count worth splitting">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // TCC_PASSES_TD
