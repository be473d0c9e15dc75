//===- TccDialect.cpp - tcc dialect ---------------------------------------===//
#include "ir/TccDialect.h"
#include "ir/TccOps.h"

using namespace mlir;
using namespace mlir::tcc;

#include "ir/TccDialect.cpp.inc"

void TccDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/TccOps.cpp.inc"
      >();
}
