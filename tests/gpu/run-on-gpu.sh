#!/usr/bin/env bash
# The GPU tests on a machine with a CUDA GPU, in one go (one device call).
#
#   tests/gpu/run-on-gpu.sh prepare   on the build machine: fills .carry/gpu
#                                     (git-ignored) with the test PTX, made
#                                     by mlir-opt and checked by ptxas, the
#                                     nlohmann-json and Catch2 packages that
#                                     the GPU machine lacks, and, with
#                                     build/compiler/tcc, the op tests
#                                     (--quick; OPTEST_ARGS= for all, about
#                                     35 MB), the models and the examples
#                                     compiled for sm_90 (the bf16 decoder layer
#                                     also for sm_90a), ONNX cross-entropy
#                                     losses for sm_90a (onnx_losses.py);
#                                     and .carry/gpu-odd with
#                                     the odd-row op tests for sm_90 and sm_90a
#                                     (together they pass the 64 MiB a device
#                                     call carries: two calls)
#   tests/gpu/run-on-gpu.sh           on the GPU machine (carry .carry/gpu):
#                                     builds the runtime-only configuration
#                                     with g++ and runs ctest -L gpu (which
#                                     must pass there, not skip), the unit
#                                     tests, and the [cuda] cases under
#                                     compute-sanitizer when it is there
#
# QUICK=1 builds only the runtime's tcc and runs only the replays and the
# examples (a short check of a compiler change). CARRY=.carry/gpu-odd runs
# from that folder instead (with QUICK=1: the odd-row replays alone). Logs go to $OUT (default
# ./out), also packed in $OUT/logs.tar.gz; the exit status is 0 only if all
# passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
carry=$root/${CARRY:-.carry/gpu}
odd_carry=$root/.carry/gpu-odd

if [ "${1:-}" = prepare ]; then
  set -e
  mlir_opt=${MLIR_OPT:-/usr/lib/llvm-22/bin/mlir-opt}
  ptxas=${PTXAS:-$(command -v ptxas || ls -d /usr/local/cuda*/bin/ptxas | head -1)}
  rm -rf "$carry" && mkdir -p "$carry/deps/usr/include" \
    "$carry/deps/usr/share/cmake" "$carry/deps/usr/lib/cmake"
  /usr/bin/python3 "$root/tests/gpu/make_ptx.py" "$mlir_opt" \
    "$root/tests/gpu/kernels.mlir" "$carry/kernels.ptx" --ptxas "$ptxas"
  cp -r /usr/include/nlohmann /usr/include/catch2 "$carry/deps/usr/include/"
  cp -r /usr/share/cmake/nlohmann_json "$carry/deps/usr/share/cmake/"
  cp -r /usr/lib/cmake/Catch2 "$carry/deps/usr/lib/cmake/"
  cp /usr/lib/libCatch2WithMain.a "$carry/deps/usr/lib/"
  # Every op of the format, compiled here for sm_90 (fresh random cases),
  # run and checked there; and the examples.
  tcc=${TCC:-$root/build/compiler/tcc}
  if [ -x "$tcc" ]; then
    /usr/bin/python3 "$root/tests/e2e/optest.py" --tcc "$tcc" --target sm_90 \
      --record "$carry/optest" ${OPTEST_ARGS---quick}
    # The quick set again with a launch per op (--gpu-row-fusion=false).
    /usr/bin/python3 "$root/tests/e2e/optest.py" --tcc "$tcc" --target sm_90 \
      --compile-arg=--gpu-row-fusion=false --record "$carry/optest-rowfusion" --quick
    # Rows of 1, 3, 1001, 3001, 5003 elements and inputs at offsets that are
    # not 16-byte aligned, on sm_90 and sm_90a (one seed for both).
    # A folder of their own, with the deps and the test PTX the run needs.
    odd_seed=${E2E_SEED:-$RANDOM}
    rm -rf "$odd_carry" && mkdir -p "$odd_carry"
    cp -r "$carry/deps" "$carry/kernels.ptx" "$odd_carry/"
    for t in sm_90 sm_90a; do
      /usr/bin/python3 "$root/tests/e2e/optest.py" --tcc "$tcc" --target $t \
        --record "$odd_carry/optest-odd-$t" --odd --seed "$odd_seed"
    done
    # The hand-written models (params and manifests checked here).
    /usr/bin/python3 "$root/tests/e2e/models.py" --tcc "$tcc" --target sm_90 \
      --record "$carry/models"
    # The bf16 decoder layer again on sm_90a, where its matmuls and its
    # attention take the wgmma templates.
    /usr/bin/python3 "$root/tests/e2e/models.py" --tcc "$tcc" --target sm_90a \
      --record "$carry/models-sm90a" --only decoder_block
    # On sm_90a too, where a convolution of each runs on wgmma: the
    # Inception block (storing into the concat, tcc-concat-in-place) and the
    # convolutions storing their values before and after the ReLU.
    for m in inception conv_relu_both unet_stage; do
      /usr/bin/python3 "$root/tests/e2e/models.py" --tcc "$tcc" --target sm_90a \
        --record "$carry/models-sm90a-$m" --only $m
    done
    # Attention through the fused template (--gpu-attention), with references.
    /usr/bin/python3 "$root/tests/gpu/attention_test.py" --tcc "$tcc" \
      --record "$carry/attention"
    # The same on Hopper's warpgroup MMA (sm_90a).
    /usr/bin/python3 "$root/tests/gpu/attention_test.py" --tcc "$tcc" \
      --record "$carry/attention-sm90a" --target sm_90a
    # Row chains over a cluster of blocks, and chains reading tensors
    # broadcast along their leading axes (masks, per-head scales, biases).
    /usr/bin/python3 "$root/tests/gpu/long_rows_test.py" record "$tcc" \
      --out "$carry/long-rows"
    /usr/bin/python3 "$root/tests/gpu/row_broadcast_test.py" record "$tcc" \
      --out "$carry/row-broadcast"
    # ONNX cross-entropy losses (ignore_index, weights, vocabulary-length
    # rows over a cluster of blocks) for sm_90a; inputs made there.
    /usr/bin/python3 "$root/tests/gpu/onnx_losses.py" prepare --tcc "$tcc" \
      --dir "$carry/onnx-losses" || echo "ONNX losses left out (python3-onnx?)"
    mkdir -p "$carry/examples"
    for m in "$root"/examples/*.json; do
      "$tcc" compile "$m" -o "$carry/examples/$(basename "$m" .json).tccb" \
        --target sm_90
    done
  else
    echo "no compiler at $tcc: the op tests and examples are left out"
  fi
  echo "prepared $carry ($(du -sh "$carry" | cut -f1)); now run, with carry .carry/gpu:"
  echo "  bash tests/gpu/run-on-gpu.sh"
  [ -d "$odd_carry" ] && echo "and, with carry .carry/gpu-odd ($(du -sh "$odd_carry" | cut -f1)):" &&
    echo "  QUICK=1 CARRY=.carry/gpu-odd bash tests/gpu/run-on-gpu.sh"
  exit 0
fi

out=${OUT:-$root/out}
mkdir -p "$out"
build=${TCC_GPU_BUILD:-/tmp/tcc-gpu-build}
status=0 summary=
step() { echo "== $*"; }
# Records a step's result for the summary; any failure fails the script.
result() {
  summary="$summary $1: $([ "$2" -eq 0 ] && echo passed || echo FAILED);"
  [ "$2" -eq 0 ] || status=1
}

step environment
{ nvidia-smi; g++ --version | head -1; cmake --version | head -1
  python3 -c 'import numpy; print("numpy", numpy.__version__)'; } \
  > "$out/environment.log" 2>&1
head -20 "$out/environment.log"
[ -f "$carry/kernels.ptx" ] || { echo "no $carry: run 'tests/gpu/run-on-gpu.sh prepare' first"; exit 1; }

step configure and build
quick=${QUICK:-}
if ! cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DTCC_BUILD_COMPILER=OFF \
    -DCMAKE_PREFIX_PATH="$carry/deps/usr" -DTCC_PYTHON="$(command -v python3)" \
    -DTCC_BUILD_TESTS=$([ -n "$quick" ] && echo OFF || echo ON) \
    -DTCC_GPU_TEST_PTX="$carry/kernels.ptx" > "$out/build.log" 2>&1 ||
   ! ninja -C "$build" ${quick:+tcc} >> "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
grep "CUDA backend" "$out/build.log"

pack() { tar -czf "$out/logs.tar.gz" -C "$out" --exclude logs.tar.gz . 2>/dev/null; }
if [ -z "$quick" ]; then
step ctest -L gpu
(cd "$build" && ctest -L gpu --output-on-failure) > "$out/ctest-gpu.log" 2>&1
rc=$?
cat "$out/ctest-gpu.log"
# A build left by a QUICK run (tests off) would find no tests at all.
grep -q "No tests were found" "$out/ctest-gpu.log" && rc=1
# A CUDA test skipped here means the runtime found no GPU on a GPU machine
# (the HIP tests skip: this machine has no AMD GPU).
if grep "(Skipped)" "$out/ctest-gpu.log" | grep -vq "gpu-hip"; then
  echo "CUDA tests skipped"; rc=1
fi
result "ctest -L gpu" $rc

step the [cuda] cases, verbose
"$build/tests/gpu/tcc-gpu-tests" --ptx "$carry/kernels.ptx" "[cuda]" -s \
  > "$out/cuda-cases.log" 2>&1
result "[cuda] cases" $?
grep -E "random inputs|^  message:|test cases|assertions" "$out/cuda-cases.log"

step ctest -L unit
(cd "$build" && ctest -L unit --output-on-failure) > "$out/ctest-unit.log" 2>&1
result "ctest -L unit" $?
grep -E "tests passed|Failed|FAILED|\*\*\*" "$out/ctest-unit.log"

step compute-sanitizer
[ -n "${SKIP_SANITIZER:-}" ] && echo "skipped (SKIP_SANITIZER)"
# The tests' deliberate API failures (bad PTX, huge allocations) are not
# reported; kernel memory errors and races are.
if [ -n "${SKIP_SANITIZER:-}" ]; then
  :
elif command -v compute-sanitizer > /dev/null; then
  : > "$out/sanitizer.log"
  for tool in memcheck racecheck; do
    timeout 240 compute-sanitizer --tool $tool --report-api-errors no \
      --error-exitcode 3 "$build/tests/gpu/tcc-gpu-tests" \
      --ptx "$carry/kernels.ptx" "[cuda]~[timing]" > "$out/$tool.tmp" 2>&1
    rc=$?
    echo "$tool: exit $rc"; tail -4 "$out/$tool.tmp"
    cat "$out/$tool.tmp" >> "$out/sanitizer.log"; rm -f "$out/$tool.tmp"
    result "compute-sanitizer $tool" $rc
  done
else
  echo "no compute-sanitizer"
fi

fi

# replay NAME SCRIPT DIR WHAT: runs what `prepare` recorded in DIR with
# SCRIPT --replay, checked against NumPy here.
replay() {
  [ -e "$3" ] || return 0
  step "$4"
  python3 "$root/tests/e2e/$2" --replay "$3" --tcc "$build/runtime/tcc" \
    > "$out/$1.log" 2>&1
  local rc=$?
  grep -E "^FAIL" "$out/$1.log" | head -40
  tail -1 "$out/$1.log"
  result "$4" $rc
}
replay optest optest.py "$carry/optest" "every op on the GPU (optest)"
replay optest-rowfusion optest.py "$carry/optest-rowfusion" \
  "every op, compiled with --gpu-row-fusion=false"
replay optest-odd-sm_90 optest.py "$carry/optest-odd-sm_90" \
  "every op on odd rows and offsets (sm_90)"
replay optest-odd-sm_90a optest.py "$carry/optest-odd-sm_90a" \
  "every op on odd rows and offsets (sm_90a)"
replay models models.py "$carry/models" "the hand-written models on the GPU"
replay models-sm90a models.py "$carry/models-sm90a" \
  "the hand-written models on the GPU, compiled for sm_90a"
for m in inception conv_relu_both unet_stage; do
  replay models-sm90a-$m models.py "$carry/models-sm90a-$m" \
    "$m on the GPU, compiled for sm_90a"
done
for a in attention attention-sm90a; do
  [ -d "$carry/$a" ] || continue
  step "$a with --gpu-attention"
  python3 "$root/tests/gpu/attention_test.py" --replay "$carry/$a" \
    --tcc "$build/runtime/tcc" > "$out/$a.log" 2>&1
  rc=$?
  cat "$out/$a.log"
  result "$a with --gpu-attention" $rc
done

for t in long_rows row_broadcast; do
  d="$carry/$(echo $t | tr _ -)"
  [ -d "$d" ] || continue
  step "$t on the GPU"
  python3 "$root/tests/gpu/${t}_test.py" replay "$build/runtime/tcc" --dir "$d" \
    > "$out/$t.log" 2>&1
  rc=$?
  tail -3 "$out/$t.log"
  result "$t" $rc
done

if [ -d "$carry/onnx-losses" ]; then
  step "ONNX cross-entropy losses on the GPU (sm_90a)"
  python3 "$root/tests/gpu/onnx_losses.py" check --tcc "$build/runtime/tcc" \
    --dir "$carry/onnx-losses" > "$out/onnx-losses.log" 2>&1
  rc=$?
  grep -E "^FAIL" "$out/onnx-losses.log" | head -20
  tail -1 "$out/onnx-losses.log"
  result "ONNX losses" $rc
fi

if [ -d "$carry/examples" ]; then
  step "the examples on the GPU"
  for b in "$carry"/examples/*.tccb; do
    "$build/runtime/tcc" run "$b" --output-dir "$out/examples/$(basename "$b" .tccb)" \
      > "$out/example.log" 2>&1
    rc=$?
    echo "$(basename "$b"): exit $rc $(head -c 300 "$out/example.log" | tr '\n' ' ')"
    result "example $(basename "$b")" $rc
  done
fi

if [ -n "$quick" ]; then
  echo "== summary:$summary"; pack; exit $status
fi
step bench: the chain model, 1000 runs, device events
bundles=$(mktemp -d)
"$build/tests/gpu/tcc-gpu-bundles" "$carry/kernels.ptx" "$bundles" &&
  for graph in "" --cuda-graph; do
    "$build/runtime/tcc" bench "$bundles/chain.tccb" --iters 1000 $graph ||
      exit 1
  done 2>&1 | tee "$out/bench.log"
result bench "${PIPESTATUS[0]}"
echo "== summary:$summary"
pack
exit $status
