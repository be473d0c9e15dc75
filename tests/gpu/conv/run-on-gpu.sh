#!/usr/bin/env bash
# The implicit-GEMM convolution's experiment, in one device call.
#
#   tests/gpu/conv/run-on-gpu.sh prepare   here (LLVM/MLIR machine): builds
#       tcc-conv-gen (standalone in build-conv; CONV_GEN=PATH takes one
#       built already, e.g. build/tests/gpu/conv/tcc-conv-gen), writes a
#       bundle and PTX per line of cases.txt into
#       .carry/conv (git-ignored), checks every PTX with ptxas for sm_90 and
#       sm_80 (ptxas.log: registers, spills), and copies the nlohmann-json
#       package the GPU machine lacks
#   tests/gpu/conv/run-on-gpu.sh           on the GPU machine (carry .carry):
#       builds the runtime-only tcc, checks the SASS for HMMA, then
#       check_conv.py compares every case with a float64 torch conv2d and
#       times the bench cases against torch conv2d channels_last (cuDNN) in
#       the same run, one line a case
#
# The bundles hold the template kernel alone (NHWC x, OHWI w, bias -> NHWC
# y), so neither the layout pass nor the frontend is involved.
# Logs go to $OUT (default ./out); the exit status is 0 only if all passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$root/tests/gpu/conv
# CONV_CARRY and CONV_CASES: another carry and case list (experiments).
carry=${CONV_CARRY:-$root/.carry/conv}
cases=${CONV_CASES:-$here/cases.txt}
# shellcheck source=../template-ptx.sh
. "$root/tests/gpu/template-ptx.sh"

if [ "${1:-}" = prepare ]; then
  set -e
  ptxas=$(find_ptxas)
  gen=${CONV_GEN:-}
  if [ -z "$gen" ]; then
    build=${CONV_BUILD:-$root/build-conv}
    cmake -G Ninja -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
    ninja -C "$build" -j2 tcc-conv-gen
    gen=$build/tcc-conv-gen
  fi
  rm -rf "$carry" && mkdir -p "$carry/deps/usr/include" "$carry/deps/usr/share/cmake"
  cp -r /usr/include/nlohmann "$carry/deps/usr/include/"
  cp -r /usr/share/cmake/nlohmann_json "$carry/deps/usr/share/cmake/"
  sm80=$(mktemp -d)
  : > "$carry/ptxas.log"
  grep -v '^#' "$cases" | while read -r name role flags; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    "$gen" --name "$name" --out-dir "$carry" $flags \
      > "$carry/$name.json"
    # wgmma cases are sm_90a only.
    case " $flags " in
      *" --wgmma "*) ;;
      *) # shellcheck disable=SC2086
        "$gen" --name "$name" --out-dir "$sm80" --chip sm_80 \
          $flags > /dev/null ;;
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
build=${TCC_GPU_BUILD:-/tmp/tcc-conv-build}
[ -f "$carry/cases.txt" ] || { echo "no $carry: run '$0 prepare' first"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
build_runtime "$root" "$carry" "$out" "$build" || exit 1

echo "== SASS: tensor-core instructions per kernel"
sass_counts sm_90 "$carry" "$out" "HMMA LDSM LDGSTS" r50_stem r50_l1_3x3 r50_l4_red

echo "== check and bench"
PYTHONUNBUFFERED=1 python3 "$here/check_conv.py" "$build/runtime/tcc" \
  "$carry" "$out" 2>&1 | tee "$out/check.log"
exit "${PIPESTATUS[0]}"
