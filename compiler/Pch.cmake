# Precompiled MLIR and LLVM headers. A source of the compiler spends most of
# its compile time parsing them (11 of FormChains.cpp's 16 s, clang 22 at
# -O3); from a precompiled set it compiles in half the time. Two sets, each
# built once by an empty target of its own (so that no real target waits for
# another): one for libraries and one for executables, which clang keeps
# apart (-fPIC, -fPIE). The set is included ahead of every C++ source of the
# targets that call tcc_precompile_headers(); a source still includes what
# it uses (configure with -DTCC_PCH=OFF to check).
option(TCC_PCH "Precompile the MLIR/LLVM headers of the compiler's sources" ON)
set(TCC_PCH_HEADERS
  <mlir/Dialect/Arith/IR/Arith.h>
  <mlir/Dialect/Func/IR/FuncOps.h>
  <mlir/Dialect/GPU/IR/GPUDialect.h>
  <mlir/Dialect/LLVMIR/LLVMDialect.h>
  <mlir/Dialect/LLVMIR/NVVMDialect.h>
  <mlir/Dialect/Linalg/IR/Linalg.h>
  <mlir/Dialect/Math/IR/Math.h>
  <mlir/Dialect/MemRef/IR/MemRef.h>
  <mlir/Dialect/NVGPU/IR/NVGPUDialect.h>
  <mlir/Dialect/SCF/IR/SCF.h>
  <mlir/Dialect/Tensor/IR/Tensor.h>
  <mlir/Dialect/Vector/IR/VectorOps.h>
  <mlir/IR/Builders.h>
  <mlir/IR/BuiltinTypes.h>
  <mlir/IR/IRMapping.h>
  <mlir/IR/PatternMatch.h>
  <mlir/IR/SymbolTable.h>
  <mlir/Pass/Pass.h>
  <mlir/Pass/PassManager.h>
  <mlir/Transforms/GreedyPatternRewriteDriver.h>
  <llvm/ADT/DenseMap.h>
  <llvm/ADT/MapVector.h>
  <llvm/ADT/SetVector.h>
  <llvm/Support/raw_ostream.h>
  <functional>
  <optional>
  <string>
  <vector>)
if(TCC_PCH)
  set(_tcc_pch_dir ${CMAKE_BINARY_DIR}/pch)
  file(WRITE ${_tcc_pch_dir}/lib.cpp "")
  file(WRITE ${_tcc_pch_dir}/exe.cpp "int main() { return 0; }\n")
  add_library(TccPchLib STATIC ${_tcc_pch_dir}/lib.cpp)
  add_executable(TccPchExe ${_tcc_pch_dir}/exe.cpp)
  target_link_libraries(TccPchExe PRIVATE ${TCC_MLIR_LIBS})
  foreach(base TccPchLib TccPchExe)
    target_precompile_headers(${base} PRIVATE ${TCC_PCH_HEADERS})
    # ccache may reuse what it compiled against a precompiled header only
    # without the header's timestamp in it (and with
    # CCACHE_SLOPPINESS=pch_defines,time_macros).
    if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      target_compile_options(${base} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
    endif()
  endforeach()
endif()

# The C++ sources of `target` (a library or an executable, C++ only, with
# the project's usual flags) start from the precompiled headers.
function(tcc_precompile_headers target)
  if(NOT TCC_PCH)
    return()
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    target_precompile_headers(${target} REUSE_FROM TccPchExe)
  else()
    target_precompile_headers(${target} REUSE_FROM TccPchLib)
  endif()
endfunction()
