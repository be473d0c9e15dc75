# What the kernel template generators (tests/gpu/matmul, tests/gpu/flash)
# share. Configured on their own (run-on-gpu.sh prepare) they set up MLIR
# here and compile the templates they build; as part of the main project
# MLIR is set up already and they link the templates from TccGpu and the
# tests' helpers from one library, so that no source is compiled twice (a
# fifth of a fresh build, once). `tcc_root` is the repository; each
# generator is declared with tcc_template_gen() below. Include it after
# project().
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

# tcc_template_gen(NAME SOURCES its own sources
#                  TEMPLATES compiler/gpu sources (names) it builds
#                  HELPERS tests/gpu sources (names) it shares with others
#                  LIBS what else it links)
function(tcc_template_gen name)
  cmake_parse_arguments(G "" "" "SOURCES;TEMPLATES;HELPERS;LIBS" ${ARGN})
  if(tcc_standalone)
    list(TRANSFORM G_TEMPLATES PREPEND ${tcc_root}/compiler/gpu/)
    list(TRANSFORM G_HELPERS PREPEND ${tcc_root}/tests/gpu/)
    add_executable(${name} ${G_SOURCES} ${G_TEMPLATES} ${G_HELPERS}
      ${template_gen_srcs})
    target_link_libraries(${name} PRIVATE nlohmann_json::nlohmann_json
      ${G_LIBS} ${TCC_MLIR_LIBS})
  else()
    if(NOT TARGET TccTemplateGenHelpers)
      add_library(TccTemplateGenHelpers STATIC
        ${tcc_root}/tests/gpu/TemplateGen.cpp
        ${tcc_root}/tests/gpu/AttentionGen.cpp
        ${tcc_root}/tests/gpu/MatmulBundle.cpp)
      target_link_libraries(TccTemplateGenHelpers PUBLIC TccGpu TccBundle
        nlohmann_json::nlohmann_json ${TCC_MLIR_LIBS})
      tcc_precompile_headers(TccTemplateGenHelpers)
    endif()
    add_executable(${name} ${G_SOURCES})
    target_link_libraries(${name} PRIVATE TccTemplateGenHelpers ${G_LIBS})
    tcc_precompile_headers(${name})
  endif()
endfunction()
