#!/usr/bin/env bash
# GPU-free check of the GEMM kernel template: builds a few problems (each
# path, transposes, odd sizes) with tcc-matmul-gen, and checks that the PTX
# holds the instructions each path is meant to use and, where the CUDA
# toolkit's ptxas is found, that it assembles for sm_90 and sm_80 with no
# spills. Usage: check_ptx.sh TCC_MATMUL_GEN
set -uo pipefail
gen=$1
# shellcheck source=../template-ptx.sh
. "$(dirname "$0")/../template-ptx.sh"
ptxas=$(find_ptxas)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 passed=0
# NAME: flags | patterns the PTX must contain
while IFS='|' read -r name flags want; do
  for chip in sm_90 sm_80; do
    # shellcheck disable=SC2086
    if check_case "$gen" "$ptxas" "$tmp" $chip "$name" "$want" $flags; then
      passed=$((passed + 1))
    else
      fail=$((fail + 1))
    fi
  done
done <<'CASES'
bf16|--m 4096 --n 4096 --k 4096|mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 cp.async.cg.shared.global cp.async.wait_group
f16tt|--m 300 --n 264 --k 136 --type f16 --trans-a --trans-b --out-type f16|mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 cp.async.cg.shared.global
odd|--m 1000 --n 3001 --k 77|mma.sync.aligned.m16n8k16 ldmatrix
tf32|--m 512 --n 512 --k 512 --type f32 --tf32 --batch 2|mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 cp.async.cg.shared.global
simt|--m 512 --n 512 --k 512 --type f32|fma.rn.f32 cp.async.cg.shared.global
CASES
[ -n "$ptxas" ] || echo "note: no ptxas found, PTX not assembled"
echo "$passed passed, $fail failed"
[ $fail = 0 ]
