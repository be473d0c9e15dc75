#!/usr/bin/env bash
# The wgmma GEMM's experiment, in one device call.
#
#   tests/gpu/wgmma/run-on-gpu.sh prepare   here (LLVM/MLIR machine): builds
#       tcc-wgmma-gen, writes a bundle and PTX per line of cases.txt into
#       .carry/wgmma (git-ignored), assembles every PTX with ptxas for sm_90a
#       (ptxas.log: registers, spills), and copies the nlohmann-json package
#       the GPU machine lacks
#   tests/gpu/wgmma/run-on-gpu.sh           on the H100/H200 (carry .carry):
#       builds the runtime-only tcc, counts HGMMA in the SASS, then
#       tests/gpu/matmul/check_gemm.py compares every case with a float64
#       reference and times the bench cases against torch.matmul (cuBLAS)
#
# Logs go to $OUT (default ./out); the exit status is 0 only if all passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/wgmma
carry=$root/.carry/wgmma
# shellcheck source=../template-ptx.sh
. "$root/tests/gpu/template-ptx.sh"

if [ "${1:-}" = prepare ]; then
  set -e
  build=${WGMMA_BUILD:-$root/build-wgmma}
  ptxas=$(find_ptxas)
  cmake -G Ninja -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
  ninja -C "$build" -j2 tcc-wgmma-gen
  rm -rf "$carry" && mkdir -p "$carry/deps/usr/include" "$carry/deps/usr/share/cmake"
  cp -r /usr/include/nlohmann "$carry/deps/usr/include/"
  cp -r /usr/share/cmake/nlohmann_json "$carry/deps/usr/share/cmake/"
  : > "$carry/ptxas.log"
  grep -v '^#' "$here/cases.txt" | while read -r name role flags; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    "$build/tcc-wgmma-gen" --name "$name" --out-dir "$carry" $flags \
      > "$carry/$name.json"
    line=$("$ptxas" -arch=sm_90a -v "$carry/$name.ptx" -o /dev/null 2>&1 |
      grep -E "registers|spill|warning" | tr -s ' \n' ' ')
    echo "$name sm_90a: $line" >> "$carry/ptxas.log"
    no_spills "$line" && ! grep -qi warning <<< "$line" ||
      { echo "ptxas: $name spills, warns or failed: $line"; exit 1; }
  done
  cp "$here/cases.txt" "$carry/"
  echo "prepared $carry ($(du -sh "$carry" | cut -f1)); registers:"
  grep -o '^[^ ]*\|Used [0-9]* registers' "$carry/ptxas.log" | paste -d' ' - - |
    column -c 160
  exit 0
fi

out=${OUT:-$root/out}
mkdir -p "$out"
build=${TCC_GPU_BUILD:-/tmp/tcc-wgmma-build}
[ -f "$carry/cases.txt" ] || { echo "no $carry: run '$0 prepare' first"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
build_runtime "$root" "$carry" "$out" "$build" || exit 1

echo "== SASS: warpgroup MMA (HGMMA) and other tensor-core instructions"
sass_counts sm_90a "$carry" "$out" "HGMMA HMMA LDGSTS" bf16_4k_256 rect_nt

echo "== check and bench"
PYTHONUNBUFFERED=1 python3 "$root/tests/gpu/matmul/check_gemm.py" \
  "$build/runtime/tcc" "$carry" "$out" 2>&1 | tee "$out/check.log"
exit "${PIPESTATUS[0]}"
