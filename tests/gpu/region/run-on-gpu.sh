#!/usr/bin/env bash
# The region-fusion template's experiment, in one device call.
#
#   tests/gpu/region/run-on-gpu.sh prepare   here (LLVM/MLIR machine): builds
#       tcc-region-gen (standalone in build-region; REGION_GEN=PATH takes one
#       built already, e.g. build/tests/gpu/region/tcc-region-gen), writes a
#       bundle, PTX and JSON description per line of cases.txt into
#       .carry/region (git-ignored), checks every PTX with ptxas for sm_90
#       and sm_80 (ptxas.log: registers, spills), and copies the
#       nlohmann-json package the GPU machine lacks
#   tests/gpu/region/run-on-gpu.sh           on the GPU machine (carry .carry):
#       builds the runtime-only tcc, checks the SASS for HMMA, then
#       check_region.py compares every case with the chain in float64 (torch
#       on the GPU) and times the bench cases against the chain member by
#       member in torch (channels_last, cuDNN, one CUDA graph), one line a
#       case
#
# The bundles hold the template kernel alone (NHWC x, weights, biases ->
# NHWC y), so neither the compiler's passes nor the frontend are involved.
# Logs go to $OUT (default ./out); the exit status is 0 only if all passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/region
# REGION_CARRY=DIR: another carry folder (e.g. a baseline prepared before a change).
carry=${REGION_CARRY:-$root/.carry/region}
# REGION_CASES=FILE: another case list (the same format), e.g. one
# experiment's cases.
cases=${REGION_CASES:-$here/cases.txt}
# shellcheck source=../template-ptx.sh
. "$root/tests/gpu/template-ptx.sh"

if [ "${1:-}" = prepare ]; then
  set -e
  ptxas=$(find_ptxas)
  gen=${REGION_GEN:-}
  if [ -z "$gen" ]; then
    build=${REGION_BUILD:-$root/build-region}
    cmake -G Ninja -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
    ninja -C "$build" -j2 tcc-region-gen
    gen=$build/tcc-region-gen
  fi
  rm -rf "$carry" && mkdir -p "$carry/deps/usr/include" "$carry/deps/usr/share/cmake"
  cp -r /usr/include/nlohmann "$carry/deps/usr/include/"
  cp -r /usr/share/cmake/nlohmann_json "$carry/deps/usr/share/cmake/"
  sm80=$(mktemp -d)
  : > "$carry/ptxas.log"
  grep -v '^#' "$cases" | while read -r name role flags; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    "$gen" --name "$name" --out-dir "$carry" $flags > "$carry/$name.json"
    # Resident parameters of the wide chains do not fit sm_80 (check_ptx.sh).
    case "$flags" in
      *'--resident 1'*) ;;
      # shellcheck disable=SC2086
      *) "$gen" --name "$name" --out-dir "$sm80" --chip sm_80 $flags > /dev/null ;;
    esac
    log_ptxas "$ptxas" "$name" "$carry/ptxas.log" "$carry" "$sm80" || exit 1
  done
  rm -rf "$sm80"
  cp "$cases" "$carry/cases.txt"
  echo "prepared $carry ($(du -sh "$carry" | cut -f1)); registers:"
  grep -o '^[^ ]* sm_[0-9]*:\|Used [0-9]* registers' "$carry/ptxas.log" |
    paste -d' ' - - | column -c 160
  exit 0
fi

out=${OUT:-$root/out}
mkdir -p "$out"
build=${TCC_GPU_BUILD:-/tmp/tcc-region-build}
[ -f "$carry/cases.txt" ] || { echo "no $carry: run '$0 prepare' first"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
build_runtime "$root" "$carry" "$out" "$build" || exit 1

echo "== SASS: tensor-core instructions per kernel"
sass_counts sm_90 "$carry" "$out" "HMMA LDSM LDGSTS" mbv2_56 r50_56 unet_128

echo "== check and bench"
PYTHONUNBUFFERED=1 python3 "$here/check_region.py" "$build/runtime/tcc" \
  "$carry" "$out" 2>&1 | tee "$out/check.log"
exit "${PIPESTATUS[0]}"
