#!/usr/bin/env bash
# The attention kernel's experiment, in one device call.
#
#   tests/gpu/flash/run-on-gpu.sh prepare   here (LLVM/MLIR machine): builds
#       tcc-flash-gen, writes PTX, a cubin (ptxas -arch=sm_90) and a JSON
#       description per line of cases.txt into .carry/flash (git-ignored),
#       and checks every PTX with ptxas for sm_90 and sm_80 (ptxas.log:
#       registers, spills)
#   tests/gpu/flash/run-on-gpu.sh [FILTER]  on the GPU machine (carry .carry):
#       counts the tensor-core instructions in the SASS of one kernel, then
#       check_flash.py checks every case against a float64 reference and
#       times the bench cases beside torch SDPA in the same process
#
# Logs go to $OUT (default ./out) as one tar; the exit status is 0 only if
# all passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/flash
carry=$root/.carry/flash
# shellcheck source=../template-ptx.sh
. "$root/tests/gpu/template-ptx.sh"

if [ "${1:-}" = prepare ]; then
  set -e
  build=${FLASH_BUILD:-$root/build-flash}
  ptxas=$(find_ptxas)
  [ -f "$build/build.ninja" ] ||
    cmake -G Ninja -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
  ninja -C "$build" -j2 tcc-flash-gen
  # Configured on its own (tests/gpu/flash) or as part of the main project.
  gen=$build/tcc-flash-gen
  [ -x "$gen" ] || gen=$build/tests/gpu/flash/tcc-flash-gen
  rm -rf "$carry" && mkdir -p "$carry"
  sm80=$(mktemp -d)
  : > "$carry/ptxas.log"
  grep -v '^#' "$here/cases.txt" | while read -r name role flags; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    "$gen" --name "$name" --out-dir "$carry" $flags |
      sed "s/^{/{\"role\":\"$role\",/" > "$carry/$name.json"
    # shellcheck disable=SC2086
    "$gen" --name "$name" --out-dir "$sm80" --chip sm_80 \
      $flags > /dev/null
    "$ptxas" -arch=sm_90 "$carry/$name.ptx" -o "$carry/$name.cubin"
    # Spills are reported here, not fatal: check_ptx.sh judges them.
    log_ptxas "$ptxas" "$name" "$carry/ptxas.log" "$carry" "$sm80" || true
  done
  rm -rf "$sm80"
  cp "$here/cases.txt" "$carry/"
  echo "prepared $carry ($(du -sh "$carry" | cut -f1))"
  exit 0
fi

out=${OUT:-$root/out}
mkdir -p "$out/flash"
[ -f "$carry/cases.txt" ] || { echo "no $carry: run '$0 prepare' first"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
cp "$carry/ptxas.log" "$out/flash/"
cuda_bin=$(dirname "$(command -v ptxas || ls -d /usr/local/cuda*/bin/ptxas | head -1)")
export PATH=$PATH:$cuda_bin
echo "== SASS of b1_plain (per loop body and whole kernel)"
if cuobjdump -sass "$carry/b1_plain.cubin" > "$out/flash/b1_plain.sass" 2>&1; then
  for op in HMMA LDSM LDGSTS MUFU.EX2 SHFL BAR LDL STL; do
    printf '%s %s  ' "$op" "$(grep -c "$op" "$out/flash/b1_plain.sass")"
  done
  echo
fi
echo "== check and bench"
PYTHONUNBUFFERED=1 timeout "${FLASH_TIMEOUT:-180}" python3 "$here/check_flash.py" "$carry" "$out/flash" \
  ${1:-} 2>&1 | tee "$out/flash/check.log"
rc=${PIPESTATUS[0]}
tar -C "$out" -czf "$out/flash.tgz" flash && rm -rf "$out/flash"
exit "$rc"
