// Forced groupings that cannot be applied: one-line errors at the function.
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:3" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:4" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:5" 2>&1 | FileCheck %s --check-prefix=SINGLE
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:6" 2>&1 | FileCheck %s --check-prefix=ILLEGAL
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:7" 2>&1 | FileCheck %s --check-prefix=NOTSTRING
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:8" 2>&1 | FileCheck %s --check-prefix=NOGROUPS
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:42" 2>&1 | FileCheck %s --check-prefix=NOID
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json" 2>&1 | FileCheck %s --check-prefix=WHICH
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force-bad.json" 2>&1 | FileCheck %s --check-prefix=KEYS
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%s:0" 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/no-such-file.json:0" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:0 mode=off" 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: not tcc-opt %s "--tcc-region-fusion=alternatives=4" 2>&1 | FileCheck %s --check-prefix=NOOUT
// RUN: tcc-opt %s "--tcc-region-fusion=force=%S/Inputs/region-fusion-force.json:0 target=sm_86 remarks=true" 2>&1 | FileCheck %s --check-prefix=COUNT

// UNKNOWN: error: tcc-region-fusion: {{.*}}region-fusion-force.json: group 0: unknown member 'nope' (no region op of @main has that name)
// TWICE: error: tcc-region-fusion: {{.*}}region-fusion-force.json: member 'c2' is in groups 0 and 1
// SINGLE: error: tcc-region-fusion: {{.*}}region-fusion-force.json: group 0 has 1 member; a group needs two or more
// ILLEGAL: error: tcc-region-fusion: {{.*}}region-fusion-force.json: group 0 (c1, c3) is illegal: a member that does not read the chain's last value
// NOTSTRING: error: tcc-region-fusion: {{.*}}region-fusion-force.json: malformed: group 0 has a member that is not a string
// NOGROUPS: error: tcc-region-fusion: {{.*}}region-fusion-force.json: malformed: alternative 8 has no "groups" list
// NOID: error: tcc-region-fusion: {{.*}}region-fusion-force.json: no alternative with id 42
// WHICH: error: tcc-region-fusion: {{.*}}region-fusion-force.json: holds 10 alternatives: name one (FILE:ID)
// KEYS: error: tcc-region-fusion: {{.*}}region-fusion-force-bad.json: malformed: needs "function", "target" and "alternatives"
// JSON: error: tcc-region-fusion: {{.*}}region-fusion-force-errors.mlir: malformed JSON: {{.+}}
// MISSING: error: tcc-region-fusion: {{.*}}no-such-file.json: cannot read: {{.+}}
// OFF: error: tcc-region-fusion: force goes with neither out nor mode=off
// NOOUT: error: tcc-region-fusion: alternatives (a positive count) and out (a file) go together
// A target the file does not name either: the compile's target has a cost
// model or the file's is used; sm_86 has none, the file's h200 is used.
// COUNT: remark: region fusion on h200
func.func @main(%x: tensor<1x64x64x32xf16>, %w1: tensor<32x3x3x32xf16>, %w2: tensor<32x3x3x32xf16>, %w3: tensor<32x3x3x32xf16>) -> tensor<1x64x64x32xf16> {
  %0 = tcc.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16> loc("c1")
  %1 = tcc.conv2d %0, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16> loc("c2")
  %2 = tcc.conv2d %1, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : tensor<1x64x64x32xf16>, tensor<32x3x3x32xf16> -> tensor<1x64x64x32xf16> loc("c3")
  return %2 : tensor<1x64x64x32xf16>
}
