#!/usr/bin/env bash
# The GEMM kernel's experiment, in one device call.
#
#   tests/gpu/matmul/run-on-gpu.sh prepare   here (LLVM/MLIR machine): builds
#       tcc-matmul-gen, writes a bundle and PTX per line of cases.txt into
#       .carry/gemm (git-ignored), checks every PTX with ptxas for sm_90 and
#       sm_80 (ptxas.log: registers, spills), and copies the nlohmann-json
#       package the GPU machine lacks
#   tests/gpu/matmul/run-on-gpu.sh           on the GPU machine (carry .carry):
#       builds the runtime-only tcc, checks the SASS for HMMA, then
#       check_gemm.py compares every case with a float64 reference and times
#       the bench cases against torch.matmul (cuBLAS) in the same run
#
# Logs go to $OUT (default ./out); the exit status is 0 only if all passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/matmul
carry=$root/.carry/gemm
# shellcheck source=../template-ptx.sh
. "$root/tests/gpu/template-ptx.sh"

if [ "${1:-}" = prepare ]; then
  set -e
  build=${GEMM_BUILD:-$root/build-gemm}
  ptxas=$(find_ptxas)
  cmake -G Ninja -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
  ninja -C "$build" -j2 tcc-matmul-gen
  rm -rf "$carry" && mkdir -p "$carry/deps/usr/include" "$carry/deps/usr/share/cmake"
  cp -r /usr/include/nlohmann "$carry/deps/usr/include/"
  cp -r /usr/share/cmake/nlohmann_json "$carry/deps/usr/share/cmake/"
  sm80=$(mktemp -d)
  : > "$carry/ptxas.log"
  grep -v '^#' "$here/cases.txt" | while read -r name role flags; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    "$build/tcc-matmul-gen" --name "$name" --out-dir "$carry" $flags \
      > "$carry/$name.json"
    # shellcheck disable=SC2086
    "$build/tcc-matmul-gen" --name "$name" --out-dir "$sm80" --chip sm_80 \
      $flags > /dev/null
    log_ptxas "$ptxas" "$name" "$carry/ptxas.log" "$carry" "$sm80" || exit 1
  done
  rm -rf "$sm80"
  cp "$here/cases.txt" "$carry/"
  echo "prepared $carry ($(du -sh "$carry" | cut -f1)); registers:"
  grep -o '^[^ ]* sm_[0-9]*:\|Used [0-9]* registers' "$carry/ptxas.log" |
    paste -d' ' - - | column -c 160
  exit 0
fi

out=${OUT:-$root/out}
mkdir -p "$out"
build=${TCC_GPU_BUILD:-/tmp/tcc-gemm-build}
[ -f "$carry/cases.txt" ] || { echo "no $carry: run '$0 prepare' first"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
build_runtime "$root" "$carry" "$out" "$build" || exit 1

echo "== SASS: tensor-core instructions per kernel"
sass_counts sm_90 "$carry" "$out" "HMMA LDSM LDGSTS FFMA" bf16_4k_def f16_4k_def tf32_4k_def simt_4k_def odd_bf16

echo "== check and bench"
PYTHONUNBUFFERED=1 python3 "$here/check_gemm.py" "$build/runtime/tcc" \
  "$carry" "$out" 2>&1 | tee "$out/check.log"
exit "${PIPESTATUS[0]}"
