//===- TccAttrs.h - tcc attributes ------------------------------*- C++ -*-===//
#ifndef TCC_IR_TCCATTRS_H
#define TCC_IR_TCCATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#define GET_ATTRDEF_CLASSES
#include "ir/TccAttrs.h.inc"

#endif // TCC_IR_TCCATTRS_H
