#!/usr/bin/env bash
# GPU-free check of the region-fusion template: builds every case of
# cases.txt with tcc-region-gen for sm_90 and sm_80 and checks that the PTX
# holds the tensor-core path's instructions (mma.sync, ldmatrix, cp.async;
# the bf16 mma for bf16 chains) and, where the CUDA toolkit's ptxas is
# found, assembles with no spills; then that chains the template cannot run
# are refused with a reason. Usage: check_ptx.sh TCC_REGION_GEN
set -uo pipefail
gen=$1
here=$(dirname "$0")
# shellcheck source=../template-ptx.sh
. "$here/../template-ptx.sh"
ptxas=$(find_ptxas)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 passed=0
while read -r name role flags; do
  case "$name" in ''|'#'*) continue ;; esac
  want='cp.async.cg.shared.global cp.async.wait_group bar.sync'
  case "$flags" in *conv:*)
    dt=f16; case "$flags" in *'--type bf16'*) dt=bf16 ;; esac
    want="$want mma.sync.aligned.m16n8k16.row.col.f32.$dt.$dt.f32 ldmatrix.sync.aligned.m8n8.x4.shared.b16" ;;
  esac
  chips='sm_90 sm_80'
  # Resident parameters of the wide chains exceed sm_80's 163 KiB of shared
  # memory a block (its schedule streams them there).
  case "$flags" in *'--resident 1'*) chips=sm_90 ;; esac
  for chip in $chips; do
    # shellcheck disable=SC2086
    if check_case "$gen" "$ptxas" "$tmp" $chip "$name" "$want" $flags; then
      passed=$((passed + 1))
    else
      fail=$((fail + 1))
    fi
  done
done < "$here/cases.txt"
# Refusals: NAME|flags|the reason's words.
while IFS='|' read -r name flags reason; do
  # shellcheck disable=SC2086
  err=$("$gen" --name "$name" --out-dir "$tmp" $flags 2>&1 > /dev/null)
  if [ $? = 0 ] || ! grep -q -- "$reason" <<< "$err"; then
    echo "FAIL $name: expected a refusal naming '$reason', got: $err"
    fail=$((fail + 1))
  else
    passed=$((passed + 1))
  fi
done <<CASES
c20|--input 1,8,8,20 --member conv:o=16,k=1|multiples of 8
o12|--input 1,8,8,16 --member conv:o=12,k=1|multiple of 8
huge_tile|--input 1,64,64,512 --member conv:o=512,k=3,p=1 --member conv:o=512,k=3,p=1 --tile 32,32|KiB of shared memory
res_shape|--input 1,8,8,16 --member conv:o=32,k=1,res=0|residual's shape
res_stride|--input 1,16,16,16 --member conv:o=16,k=1 --member conv:o=16,k=1,s=2,p=8 --member conv:o=16,k=1,res=1|does not cover
res_later|--input 1,8,8,16 --member conv:o=16,k=1,res=2|earlier member
pool_pad|--input 1,8,8,16 --member maxpool:k=2,p=2|smaller than its window
f32|--input 1,8,8,16 --member conv:o=16,k=1 --type f32|f16 or bf16
CASES
[ -n "$ptxas" ] || echo "note: no ptxas found, PTX not assembled"
echo "$passed passed, $fail failed"
[ $fail = 0 ]
