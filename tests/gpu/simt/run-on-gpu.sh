#!/usr/bin/env bash
# The f32 SIMT attention kernel's experiment, in one device call.
#
#   tests/gpu/simt/run-on-gpu.sh prepare   here (LLVM/MLIR machine): builds
#       tcc-simt-gen (the main build, $SIMT_BUILD or build/), writes PTX, a
#       cubin (ptxas -arch=sm_90) and a JSON description per line of
#       cases.txt into .carry/simt (git-ignored), and checks every PTX with
#       ptxas for sm_90 and sm_80 (ptxas.log: registers, spills; a spill
#       fails the prepare, but for sm_80 under a forced --schedule)
#   tests/gpu/simt/run-on-gpu.sh [FILTER]  on the GPU machine (carry
#       .carry): counts FFMA, shared loads and the like in the SASS of the
#       bench kernels, then tests/gpu/flash/check_flash.py checks every case
#       against a float64 reference and times the bench cases beside torch
#       SDPA (efficient backend for f32) in the same process
#
# Logs go to $OUT (default ./out) as one tar; the exit status is 0 only if
# all passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/simt
carry=$root/.carry/simt
# shellcheck source=../template-ptx.sh
. "$root/tests/gpu/template-ptx.sh"

if [ "${1:-}" = prepare ]; then
  set -e
  build=${SIMT_BUILD:-$root/build}
  ptxas=$(find_ptxas)
  [ -n "$ptxas" ] || { echo "no ptxas found"; exit 1; }
  cmake --build "$build" -j2 --target tcc-simt-gen
  gen=$build/tests/gpu/simt/tcc-simt-gen
  rm -rf "$carry" && mkdir -p "$carry"
  sm80=$(mktemp -d)
  : > "$carry/ptxas.log"
  bad=0
  while read -r name role flags; do
    case "$name" in ''|'#'*) continue ;; esac
    # The lowering's stderr (a retried memory-space conversion) to a log.
    # shellcheck disable=SC2086
    "$gen" --ptx --name "$name" --out-dir "$carry" $flags 2>> "$carry/gen.log" |
      sed "s/^{/{\"role\":\"$role\",/" > "$carry/$name.json"
    "$ptxas" -arch=sm_90 "$carry/$name.ptx" -o "$carry/$name.cubin"
    # sm_80 too where its shared memory takes the schedule (not 128 x 64
    # with K and V apart at head dim 128: 169 KiB).
    # shellcheck disable=SC2086
    if "$gen" --ptx --name "$name" --out-dir "$sm80" --chip sm_80 $flags \
      > /dev/null 2>> "$carry/gen.log"; then
      # A forced schedule's sm_80 spills are noted (an experiment for
      # sm_90, as check_ptx.sh has it); sm_90's always fail.
      if ! log_ptxas "$ptxas" "$name" "$carry/ptxas.log" "$carry" "$sm80"; then
        case "$flags $(grep -c "$name sm_80" "$carry/ptxas.log")" in
          *--schedule*" 1") echo "note: $name: sm_80 spills (forced schedule)" ;;
          *) bad=$((bad + 1)) ;;
        esac
      fi
    else
      line=$("$ptxas" -arch=sm_90 -v "$carry/$name.ptx" -o /dev/null 2>&1 |
        grep -E "registers|spill" | tr -s ' \n' ' ')
      echo "$name sm_90: $line (sm_80: refused)" >> "$carry/ptxas.log"
      no_spills "$line" || { echo "ptxas: $name spills: $line"; bad=$((bad + 1)); }
    fi
  done < "$here/cases.txt"
  rm -rf "$sm80"
  cp "$here/cases.txt" "$carry/"
  cat "$carry/ptxas.log"
  echo "prepared $carry ($(du -sh "$carry" | cut -f1)), $bad spilling or failing"
  [ $bad = 0 ]
  exit
fi

out=${OUT:-$root/out}
mkdir -p "$out/simt"
[ -f "$carry/cases.txt" ] || { echo "no $carry: run '$0 prepare' first"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
cp "$carry/ptxas.log" "$out/simt/"
cuda_bin=$(dirname "$(command -v ptxas || ls -d /usr/local/cuda*/bin/ptxas | head -1)")
export PATH=$PATH:$cuda_bin
echo "== SASS of the bench kernels (whole kernel)"
for cubin in "$carry"/g_*.cubin; do
  n=$(basename "$cubin" .cubin)
  if cuobjdump -sass "$cubin" > "$out/simt/$n.sass" 2>&1; then
    printf '%-14s' "$n"
    for op in FFMA LDS.128 LDS STS LDGSTS MUFU.EX2 SHFL BAR LDL STL; do
      printf '%s %s  ' "$op" "$(grep -c "$op" "$out/simt/$n.sass")"
    done
    echo
  fi
done
echo "== check and bench"
PYTHONUNBUFFERED=1 timeout "${SIMT_TIMEOUT:-240}" python3 \
  "$root/tests/gpu/flash/check_flash.py" "$carry" "$out/simt" ${1:-} 2>&1 |
  tee "$out/simt/check.log"
rc=${PIPESTATUS[0]}
tar -C "$out" -czf "$out/simt.tgz" simt && rm -rf "$out/simt"
exit "$rc"
