#!/usr/bin/env bash
# Builds the runtime-only configuration (-DTCC_BUILD_COMPILER=OFF) with g++ in
# a scratch folder, checks that nothing in it links LLVM or MLIR, and runs a
# bundle made by the full compiler through it.
#   runtime-only.sh SOURCE_DIR FULL_TCC SCRATCH_DIR
set -euo pipefail
src=$1 tcc=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cmake -G Ninja -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_COMPILER=gcc \
  -DTCC_BUILD_COMPILER=OFF -DTCC_BUILD_TESTS=OFF > "$work/configure.log"
cmake --build "$work/build" -j 2 > "$work/build.log"
rt=$work/build/runtime/tcc
for lib in "$rt" "$work/build/runtime/libtccrt.so"; do
  if ldd "$lib" | grep -Ei "llvm|mlir"; then
    echo "$lib links LLVM or MLIR"; exit 1
  fi
done
"$tcc" compile "$src/examples/softmax.json" -o "$work/softmax.tccb"
"$rt" run "$work/softmax.tccb" --output-dir "$work/out" > "$work/run.log" 2>&1
test -f "$work/out/y.npy"
"$rt" inspect "$work/softmax.tccb" > /dev/null
# Per-launch profiles: written by bench, read back by inspect.
"$rt" bench "$work/softmax.tccb" --iters 3 --profile "$work/profile.json" \
  > "$work/bench.log"
"$rt" inspect "$work/softmax.tccb" --profile "$work/profile.json" \
  | grep -q '"launch_total_us"'
# Random params kept as recipes: this runtime (g++) computes the bytes the
# compiler (clang) would have embedded, so the outputs are the same bits.
for mode in embed keep; do
  "$tcc" compile "$src/examples/cnn.json" -o "$work/cnn.$mode.tccb" \
    --param-recipes=$mode
done
"$tcc" run "$work/cnn.embed.tccb" --output-dir "$work/embed" > /dev/null 2>&1
"$rt" run "$work/cnn.keep.tccb" --output-dir "$work/keep" > /dev/null 2>&1
cmp "$work/embed/logits.npy" "$work/keep/logits.npy"
echo "runtime-only build OK"
