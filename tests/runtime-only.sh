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
echo "runtime-only build OK"
