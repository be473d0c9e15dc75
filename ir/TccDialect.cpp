//===- TccDialect.cpp - tcc dialect ---------------------------------------===//
#include "ir/TccDialect.h"
#include "ir/TccAttrs.h"
#include "ir/TccOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tcc;

#include "ir/TccDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/TccAttrs.cpp.inc"

void TccDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/TccOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/TccAttrs.cpp.inc"
      >();
}
