# What the kernel template generators (tests/gpu/matmul, tests/gpu/flash)
# share. Configured on their own (run-on-gpu.sh prepare) they set up MLIR
# here; as part of the main project it is set up already. Either way
# `tcc_root` is the repository and `template_gen_srcs` the sources every
# generator builds beside its own: the templates' shared helpers and
# TemplateGen.cpp. Include it after project().
if(NOT DEFINED TCC_MLIR_LIBS)
  set(CMAKE_CXX_STANDARD 17)
  set(CMAKE_CXX_STANDARD_REQUIRED ON)
  find_package(MLIR REQUIRED CONFIG HINTS /usr/lib/llvm-22/lib/cmake/mlir)
  include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  add_definitions(${LLVM_DEFINITIONS})
  if(NOT LLVM_ENABLE_RTTI)
    add_compile_options(-fno-rtti)
  endif()
  set(TCC_MLIR_LIBS MLIR LLVM)
  get_filename_component(tcc_root ${CMAKE_CURRENT_LIST_DIR}/../.. ABSOLUTE)
  include_directories(${tcc_root})
  set(tcc_standalone ON)
else()
  set(tcc_root ${CMAKE_SOURCE_DIR})
  set(tcc_standalone OFF)
endif()
find_package(nlohmann_json 3 REQUIRED)
set(template_gen_srcs ${tcc_root}/compiler/gpu/TemplateUtils.cpp
  ${tcc_root}/compiler/gpu/GemmParts.cpp
  ${tcc_root}/compiler/Target.cpp
  ${tcc_root}/tests/gpu/TemplateGen.cpp)
