#!/usr/bin/env bash
# GPU-free check of the wgmma attention template: builds every case of
# cases.txt with tcc-flash3-gen, checks that the PTX targets sm_90a and
# holds the instructions the design relies on (wgmma from shared memory for
# Q K^T, wgmma with a register A operand for P V, its fences and groups, the
# proxy fence, cp.async, quad shuffles, ex2.approx) and, where the CUDA
# toolkit's ptxas is found, that it assembles for sm_90a with no spills and
# no warning (ptxas warns when it must serialise the wgmmas); prints the
# registers of each. Also checks that bad input is refused with one line
# and status 1.
# Usage: check_ptx.sh TCC_FLASH3_GEN CASES
set -uo pipefail
gen=$1 cases=$2
# shellcheck source=../template-ptx.sh
. "$(dirname "$0")/../template-ptx.sh"
ptxas=$(find_ptxas)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
want=".target sm_90a|wgmma.fence.sync.aligned|wgmma.commit_group.sync.aligned
wgmma.wait_group.sync.aligned|fence.proxy.async.shared::cta|cp.async.cg.shared.global
cp.async.wait_group|shfl.sync.bfly|ex2.approx"
fail=0 passed=0
while read -r name role flags; do
  case "$name" in ''|'#'*) continue ;; esac
  # shellcheck disable=SC2086
  if ! json=$("$gen" --name "$name" --out-dir "$tmp" $flags); then
    echo "FAIL $name: tcc-flash3-gen failed"; fail=$((fail + 1)); continue
  fi
  ok=1
  ptx=$tmp/$name.ptx
  while IFS= read -r pat; do
    grep -qF -- "$pat" "$ptx" || { echo "FAIL $name: no $pat"; ok=0; }
  done < <(tr '|' '\n' <<< "$want")
  # Q K^T from two descriptors (K transposed, the last immediate, when given
  # [B, HKV, D, LK]); P V from four A registers and a descriptor, V
  # transposed.
  transK=0
  case " $flags " in *" --k-transposed "*) transK=1 ;; esac
  grep -qE 'wgmma.mma_async.sync.aligned.m64n(64|128)k16.f32.(bf16|f16)' "$ptx" &&
    grep -qE "\\}, %rd[0-9]+, %rd[0-9]+, p, 1, +1, 0, +$transK;" "$ptx" ||
    { echo "FAIL $name: no shared-memory wgmma"; ok=0; }
  grep -qE '\}, \{%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+\}, %rd[0-9]+, p, 1, 1, 1;' "$ptx" ||
    { echo "FAIL $name: no register-A wgmma"; ok=0; }
  regs=""
  # The experimental producer schedule (fields 5-6) may spill in its copy
  # warpgroup on odd sizes (it has 64 registers); the others may not.
  spills_ok=0
  grep -qE -- '--schedule [0-9]+,[0-9]+,[0-9]+,[01],1,' <<< "$flags" && spills_ok=1
  if [ -n "$ptxas" ]; then
    rep=$("$ptxas" -arch=sm_90a -v "$ptx" -o /dev/null 2>&1)
    regs=$(grep -o 'Used [0-9]* registers' <<< "$rep" | grep -o '[0-9]*')
    if { [ $spills_ok = 0 ] && ! no_spills "$rep"; } ||
        grep -qi "warning\|error\|serialized\|performance loss" <<< "$rep"; then
      echo "FAIL $name: ptxas: $(grep -i 'spill\|warning\|error' <<< "$rep" | head -3 | tr -s ' \n' ' ')"
      ok=0
    fi
  fi
  sched=$(grep -o '"schedule":\[[0-9,]*\]' <<< "$json" | grep -o '\[.*\]')
  [ $ok = 1 ] && { passed=$((passed + 1)); echo "ok   $name $sched ${regs:+$regs registers}"; } ||
    fail=$((fail + 1))
done < "$cases"
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
--lq 128 --lk 128 --d 96
--lq 128 --lk 128 --d 256
--lq 128 --lk 128 --d 128 --schedule 4,64,2,0
--lq 128 --lk 128 --d 128 --schedule 2,32,2,0
--lq 128 --lk 128 --d 128 --schedule 2,128,2,1
--lq 128 --lk 128 --d 128 --schedule 3,128,4,0
--lq 128 --lk 128 --d 128 --schedule 2,128,3,2
--lq 128 --lk 128 --d 128 --schedule 2,128,3
--lq 128 --lk 128 --d 128 --schedule 2,128,2,0,0,1
--lq 128 --lk 128 --d 128 --schedule 1,128,2,1,1,1
--lq 128 --lk 128 --d 128 --schedule 3,64,2,0,1,1
--lq 128 --lk 128 --d 128 --schedule 3,64,2,0,1,0
--lq 128 --lk 128 --d 128 --hq 3 --hkv 2
--lq 0 --lk 128 --d 128
--lq 128 --lk 128 --d 128 --chip sm_90
--lq 128 --lk 128 --d 128 --type f32
--lq 128 --lk 128 --d 128 --hq 2 --q-strides 1,16388,128,1
BAD
[ -n "$ptxas" ] || echo "note: no ptxas found, PTX not assembled"
echo "$passed passed, $fail failed"
[ $fail = 0 ]
