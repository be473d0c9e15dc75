#!/usr/bin/env bash
# GPU-free check of the attention kernel template: builds every case of
# cases.txt with tcc-flash-gen for sm_90 and sm_80, checks that the PTX holds
# the instructions the design relies on (mma.sync m16n8k16, ldmatrix and its
# .trans form, cp.async, quad shuffles, ex2.approx) and, where the CUDA
# toolkit's ptxas is found, that it assembles, without spills where the
# schedule is chooseAttentionSchedule's (a forced --schedule is an experiment:
# its spills are reported, not failed); prints the registers of each.
# Usage: check_ptx.sh TCC_FLASH_GEN CASES
set -uo pipefail
gen=$1 cases=$2
# shellcheck source=../template-ptx.sh
. "$(dirname "$0")/../template-ptx.sh"
ptxas=$(find_ptxas)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
want="mma.sync.aligned.m16n8k16.row.col.f32 ldmatrix.sync.aligned.m8n8.x4.shared.b16
ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 cp.async.cg.shared.global
cp.async.wait_group shfl.sync.bfly ex2.approx"
fail=0 passed=0
while read -r name role flags; do
  case "$name" in ''|'#'*) continue ;; esac
  for chip in sm_90 sm_80; do
    # shellcheck disable=SC2086
    if ! "$gen" --name "$name" --out-dir "$tmp" --chip $chip $flags > /dev/null; then
      echo "FAIL $name $chip: tcc-flash-gen failed"; fail=$((fail + 1)); continue
    fi
    ok=1
    for pat in $want; do
      grep -q -- "$pat" "$tmp/$name.ptx" || { echo "FAIL $name $chip: no $pat"; ok=0; }
    done
    regs=""
    if [ -n "$ptxas" ]; then
      rep=$("$ptxas" -arch=$chip -v "$tmp/$name.ptx" -o /dev/null 2>&1)
      regs=$(echo "$rep" | grep -o 'Used [0-9]* registers' | grep -o '[0-9]*')
      if ! no_spills "$rep"; then
        spill=$(echo "$rep" | grep -i 'spill\|error' | head -3 | tr -s ' \n' ' ')
        # The schedules chooseAttentionSchedule picks must not spill; a
        # forced schedule (an experiment) only reports it.
        case "$flags" in
          *--schedule*) echo "note $name $chip (forced schedule): $spill" ;;
          *) echo "FAIL $name $chip: ptxas: $spill"; ok=0 ;;
        esac
      fi
    fi
    [ $ok = 1 ] && { passed=$((passed + 1)); echo "ok   $name $chip ${regs:+$regs registers}"; } ||
      fail=$((fail + 1))
  done
done < "$cases"
[ -n "$ptxas" ] || echo "note: no ptxas found, PTX not assembled"
echo "$passed passed, $fail failed"
[ $fail = 0 ]
