#!/usr/bin/env bash
# The wgmma attention kernel's experiment, in one device call.
#
#   tests/gpu/flash3/run-on-gpu.sh prepare   here (LLVM/MLIR machine): builds
#       tcc-flash3-gen, writes PTX, a cubin (ptxas -arch=sm_90a) and a JSON
#       description per line of cases.txt into .carry/flash3 (git-ignored),
#       with ptxas.log (registers, spills)
#   tests/gpu/flash3/run-on-gpu.sh [FILTER]  on the GPU machine (carry
#       .carry/flash3): counts the wgmma instructions in the SASS of one
#       kernel, then tests/gpu/flash/check_flash.py checks every case against
#       a float64 reference and times the bench cases beside SDPA's flash and
#       cuDNN backends and (its FLEX_CASES) FlexAttention, in one process
#
# The carry's case list puts the bench cases first, FlexAttention's first of
# all: check_flash.py compiles FlexAttention only while the run is young.
# Logs go to $OUT (default ./out) as one tar; the exit status is 0 only if
# all passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/flash3
carry=$root/.carry/flash3
# shellcheck source=../template-ptx.sh
. "$root/tests/gpu/template-ptx.sh"

if [ "${1:-}" = prepare ]; then
  set -e
  build=${FLASH3_BUILD:-$root/build-fa3}
  ptxas=$(find_ptxas)
  [ -n "$ptxas" ] || { echo "prepare needs ptxas (the CUDA toolkit)"; exit 1; }
  [ -f "$build/build.ninja" ] ||
    cmake -G Ninja -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
  ninja -C "$build" -j2 tcc-flash3-gen
  # Configured on its own (tests/gpu/flash3) or as part of the main project.
  gen=$build/tcc-flash3-gen
  [ -x "$gen" ] || gen=$build/tests/gpu/flash3/tcc-flash3-gen
  rm -rf "$carry" && mkdir -p "$carry"
  : > "$carry/ptxas.log"
  grep -v '^#' "$here/cases.txt" | while read -r name role flags; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    "$gen" --name "$name" --out-dir "$carry" $flags |
      sed "s/^{/{\"role\":\"$role\",/" > "$carry/$name.json"
    "$ptxas" -arch=sm_90a -v "$carry/$name.ptx" -o "$carry/$name.cubin" 2>&1 |
      grep -E "registers|spill|arning" | tr -s ' \n' ' ' |
      sed "s/^/$name sm_90a: /;s/\$/\n/" >> "$carry/ptxas.log"
  done
  flex='^(b1_causal|b1_gqa_64_8|b1_alibi_causal|b1_softcap_50|b1_window_4096) '
  { grep -E "$flex" "$here/cases.txt"
    grep -E '^[a-z0-9_]+ +bench ' "$here/cases.txt" | grep -vE "$flex"
    grep -E '^[a-z0-9_]+ +check ' "$here/cases.txt"; } > "$carry/cases.txt"
  echo "prepared $carry ($(du -sh "$carry" | cut -f1))"
  exit 0
fi

out=${OUT:-$root/out}
mkdir -p "$out/flash3"
[ -f "$carry/cases.txt" ] || { echo "no $carry: run '$0 prepare' first"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
cp "$carry/ptxas.log" "$out/flash3/"
cuda_bin=$(dirname "$(command -v ptxas || ls -d /usr/local/cuda*/bin/ptxas | head -1)")
export PATH=$PATH:$cuda_bin
echo "== SASS of b1_plain"
if cuobjdump -sass "$carry/b1_plain.cubin" > "$out/flash3/b1_plain.sass" 2>&1; then
  for op in HGMMA LDGSTS MUFU.EX2 SHFL BAR WARPGROUP LDL STL; do
    printf '%s %s  ' "$op" "$(grep -c "$op" "$out/flash3/b1_plain.sass")"
  done
  echo
fi
echo "== check and bench"
PYTHONUNBUFFERED=1 timeout "${FLASH3_TIMEOUT:-540}" python3 \
  "$root/tests/gpu/flash/check_flash.py" "$carry" "$out/flash3" ${1:-} 2>&1 |
  tee "$out/flash3/check.log"
rc=${PIPESTATUS[0]}
tar -C "$out" -czf "$out/flash3.tgz" flash3 && rm -rf "$out/flash3"
exit "$rc"
