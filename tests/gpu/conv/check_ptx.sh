#!/usr/bin/env bash
# GPU-free check of the implicit-GEMM convolution template: builds
# ResNet-50 / MobileNetV2-like and odd convolutions with tcc-conv-gen and
# checks that the PTX holds the instructions of the tensor-core path and,
# where the CUDA toolkit's ptxas is found, that it assembles for sm_90 and
# sm_80 with no spills. Usage: check_ptx.sh TCC_CONV_GEN
set -uo pipefail
gen=$1
# shellcheck source=../template-ptx.sh
. "$(dirname "$0")/../template-ptx.sh"
ptxas=$(find_ptxas)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 passed=0
mma16='mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 ldmatrix.sync.aligned.m8n8.x4.shared.b16'
cp16='cp.async.cg.shared.global'
# NAME|flags|patterns the PTX must contain (cp.async of 16 bytes for A
# wherever C is a multiple of 8; element loads otherwise)
while IFS='|' read -r name flags want; do
  for chip in sm_90 sm_80; do
    # shellcheck disable=SC2086
    if check_case "$gen" "$ptxas" "$tmp" $chip "$name" "$want" $flags; then
      passed=$((passed + 1))
    else
      fail=$((fail + 1))
    fi
  done
done <<CASES
stem_c3|--n 1 --h 224 --w 224 --c 3 --o 64 --kernel 7,7 --stride 2,2 --pad 3,3,3,3 --bias --relu --type f16 --out-type f16|$mma16 cp.async.wait_group ld.global.b16
r3x3|--n 1 --h 56 --w 56 --c 64 --o 64 --kernel 3,3 --pad 1,1,1,1 --bias --relu --type f16 --out-type f16|$mma16 $cp16 max.NaN.f32
r1x1s2|--n 1 --h 56 --w 56 --c 256 --o 512 --kernel 1,1 --stride 2,2 --bias --type f16 --out-type f16|$mma16 $cp16
r1x1|--n 1 --h 7 --w 7 --c 2048 --o 512 --kernel 1,1 --bias --relu --type f16 --out-type f16|$mma16 $cp16
odd_bf16|--n 2 --h 17 --w 13 --c 40 --o 72 --kernel 3,5 --stride 1,2 --pad 1,2,0,1 --dilation 2,1 --bias --relu --type bf16|mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 $cp16
tf32|--n 2 --h 13 --w 13 --c 12 --o 40 --kernel 3,3 --pad 1,1,1,1 --type f32 --tf32|mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 $cp16
CASES
[ -n "$ptxas" ] || echo "note: no ptxas found, PTX not assembled"
echo "$passed passed, $fail failed"
[ $fail = 0 ]
