#!/usr/bin/env bash
# tcc against its peers on a CUDA GPU, in one device call.
#
#   bench/run-on-gpu.sh prepare   on the build machine: writes the models and
#                                 compiles them for sm_90 with build/compiler/tcc
#                                 (or $TCC) into .carry/bench (git-ignored, a
#                                 few hundred KB), with the nlohmann-json
#                                 package the GPU machine lacks
#   bench/run-on-gpu.sh prepare-cnn [ARGS]   on the build machine: exports
#                                 and compiles CNNs into .carry/cnn (bench/
#                                 cnn_bench.py --prepare ARGS: --models,
#                                 --batch, --dtype, --target, --recipe-weights
#                                 for bundles that keep weight recipes,
#                                 -- tcc flags)
#   bench/run-on-gpu.sh prepare-rank [ARGS]   on the build machine: alternative
#                                 region groupings, a bundle each, into
#                                 .carry/rank (bench/region_rank.py --prepare
#                                 ARGS: --models, --alternatives, --seed)
#   bench/run-on-gpu.sh [ARGS]    on the GPU machine (carry .carry/bench):
#                                 builds the runtime-only tcc with g++ and runs
#                                 bench/gpu_bench.py ARGS (e.g. --only NAME,...)
#
# Logs, bench.json and bench-table.md go to $OUT (default ./out). The exit
# status is 0 only if the build worked and every case was correct.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
carry=$root/.carry/bench

if [ "${1:-}" = prepare-cnn ]; then
  shift
  cnn=${CNN_CARRY:-$root/.carry/cnn}
  mkdir -p "$cnn/deps/usr/include" "$cnn/deps/usr/share/cmake"
  cp -r /usr/include/nlohmann "$cnn/deps/usr/include/"
  cp -r /usr/share/cmake/nlohmann_json "$cnn/deps/usr/share/cmake/"
  exec /usr/bin/python3 "$root/bench/cnn_bench.py" --prepare \
    --tcc "${TCC:-$root/build/compiler/tcc}" --carry "$cnn" "$@"
fi
# prepare-rank [ARGS]: alternative region groupings compiled into
# .carry/rank (or $RANK_CARRY) by bench/region_rank.py --prepare ARGS
# (--models, --alternatives, --seed, --target; it copies nlohmann-json).
if [ "${1:-}" = prepare-rank ]; then
  shift
  exec /usr/bin/python3 "$root/bench/region_rank.py" --prepare \
    --tcc "${TCC:-$root/build/compiler/tcc}" --carry "${RANK_CARRY:-$root/.carry/rank}" "$@"
fi

if [ "${1:-}" = prepare ]; then
  set -e
  tcc=${TCC:-$root/build/compiler/tcc}
  [ -x "$tcc" ] || { echo "no compiler at $tcc (set TCC)"; exit 1; }
  rm -rf "$carry"
  mkdir -p "$carry/deps/usr/include" "$carry/deps/usr/share/cmake"
  /usr/bin/python3 "$root/bench/models.py" --out "$carry" --tcc "$tcc" --target sm_90
  cp -r /usr/include/nlohmann "$carry/deps/usr/include/"
  cp -r /usr/share/cmake/nlohmann_json "$carry/deps/usr/share/cmake/"
  echo "prepared $carry ($(du -sh "$carry" | cut -f1)); now, on the GPU machine with carry .carry/bench:"
  echo "  bash bench/run-on-gpu.sh"
  exit 0
fi

# BENCH=cnn: the CNNs of .carry/cnn or $CNN_CARRY (bench/cnn_bench.py)
# instead: a bundle embeds its weights, so big models go one call each.
[ "${BENCH:-}" = cnn ] || [ "${BENCH:-}" = profile ] && carry=${CNN_CARRY:-$root/.carry/cnn}
# BENCH=rank: the alternative groupings of .carry/rank (bench/region_rank.py).
[ "${BENCH:-}" = rank ] && carry=${RANK_CARRY:-$root/.carry/rank}
out=${OUT:-$root/out}
mkdir -p "$out"
build=${TCC_BENCH_BUILD:-/tmp/tcc-bench-build}
[ -f "$carry/manifest.json" ] || { echo "no $carry/manifest.json: run 'bench/run-on-gpu.sh prepare' (or prepare-cnn) first"; exit 1; }

echo "== environment"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
  g++ --version | head -1; cmake --version | head -1
  python3 -c 'import numpy, torch; print("numpy", numpy.__version__, "torch", torch.__version__)'
} 2>&1 | tee "$out/environment.log"

echo "== build the runtime-only tcc"
start=$SECONDS
# Only the tcc executable: no compiler, no tests (so no Catch2 needed).
if ! cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DTCC_BUILD_COMPILER=OFF \
    -DTCC_BUILD_TESTS=OFF -DCMAKE_PREFIX_PATH="$carry/deps/usr" > "$out/build.log" 2>&1 ||
   ! ninja -C "$build" tcc >> "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
grep "CUDA backend" "$out/build.log"
echo "built in $((SECONDS - start)) s"

# BENCH=attention runs bench/attention_bench.py (attention against SDPA,
# FlexAttention and plain PyTorch) instead of bench/gpu_bench.py.
script=gpu_bench.py
[ "${BENCH:-}" = attention ] && script=attention_bench.py
[ "${BENCH:-}" = cnn ] && script=cnn_bench.py
[ "${BENCH:-}" = rank ] && script=region_rank.py
# BENCH=profile: each CNN's kernels timed by Nsight Compute (profile_kernels.py).
[ "${BENCH:-}" = profile ] && script=profile_kernels.py
echo "== bench ($script)"
PYTHONUNBUFFERED=1 python3 "$root/bench/$script" --tcc "$build/runtime/tcc" \
  --carry "$carry" --out "$out" "$@" 2>&1 | tee "$out/bench.log"
exit "${PIPESTATUS[0]}"
