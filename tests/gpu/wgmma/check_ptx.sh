#!/usr/bin/env bash
# GPU-free check of the wgmma GEMM template: builds a few problems with
# tcc-wgmma-gen, checks that the PTX targets sm_90a and holds the wgmma,
# proxy-fence and cp.async instructions, and, where the CUDA toolkit's ptxas
# is found, that it assembles for sm_90a with no spills and without
# serialising the wgmmas (ptxas warns when it must). Also checks that bad
# input is refused with one line and status 1.
# Usage: check_ptx.sh TCC_WGMMA_GEN
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
  # shellcheck disable=SC2086
  if ! "$gen" --name "$name" --out-dir "$tmp" $flags > /dev/null; then
    echo "FAIL $name: tcc-wgmma-gen failed"; fail=$((fail + 1)); continue
  fi
  ok=1
  for pat in ".target sm_90a" fence.proxy.async.shared::cta wgmma.fence.sync.aligned \
      wgmma.commit_group.sync.aligned wgmma.wait_group.sync.aligned \
      cp.async.cg.shared.global $want; do
    grep -q -- "$pat" "$tmp/$name.ptx" || { echo "FAIL $name: no $pat"; ok=0; }
  done
  if [ -n "$ptxas" ]; then
    rep=$("$ptxas" -arch=sm_90a -v "$tmp/$name.ptx" -o /dev/null 2>&1)
    no_spills "$rep" && ! grep -qi "warning" <<< "$rep" ||
      { echo "FAIL $name: ptxas: $rep" | head -5; ok=0; }
    echo "$name: $(grep -o 'Used [0-9]* registers' <<< "$rep")"
  fi
  [ $ok = 1 ] && passed=$((passed + 1)) || fail=$((fail + 1))
done <<'CASES'
nn256|--m 4096 --n 4096 --k 4096 --schedule 128,256,2,4|wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
nt128|--m 1024 --n 4096 --k 2048 --trans-b --schedule 128,128,2,3|wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
f16|--m 512 --n 768 --k 320 --type f16 --schedule 128,128,1,3 --out-type bf16|wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
edges|--m 1000 --n 1001 --k 200 --trans-b --batch 2 --shared-b --out-type f16|wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
e4m3|--m 1000 --n 1000 --k 1040 --trans-b --type e4m3 --out-type bf16|wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
e5m2|--m 512 --n 768 --k 256 --trans-b --type e5m2 --schedule 128,256,2,4|wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e5m2
CASES
# Refusals: one line on stderr, status 1.
while read -r flags; do
  # shellcheck disable=SC2086
  err=$("$gen" --out-dir "$tmp" $flags 2>&1 > /dev/null); rc=$?
  if [ $rc = 1 ] && [ "$(wc -l <<< "$err")" = 1 ]; then
    passed=$((passed + 1))
  else
    echo "FAIL refusal '$flags': status $rc: $err"; fail=$((fail + 1))
  fi
done <<'BAD'
--m 128 --n 100 --k 64
--m 128 --n 128 --k 100
--m 128 --n 128 --k 64 --batch 70000
--m 128 --n 128 --k 64 --schedule 128,256,1,4
--m 128 --n 128 --k 64 --schedule 128,128,2,2
--m 128 --n 128 --k 64 --chip sm_90
--m 128 --n 128 --k 64 --type f32
--m 128 --n 128 --k 64 --type e4m3
--m 128 --n 128 --k 40 --trans-b --type e5m2
BAD
[ -n "$ptxas" ] || echo "note: no ptxas found, PTX not assembled"
echo "$passed passed, $fail failed"
[ $fail = 0 ]
