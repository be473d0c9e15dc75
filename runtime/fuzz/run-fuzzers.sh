#!/bin/sh
# Runs the runtime's fuzzers (bundles given to libtccrt, .npy inputs) for a
# bounded time each and fails if one finds a crash.
#
#   runtime/fuzz/run-fuzzers.sh BUILD_DIR SECONDS [PYTHON]
#
# BUILD_DIR is a build configured with clang and -DTCC_BUILD_FUZZER=ON. The
# seed corpora are written by make_seeds.py into a scratch folder; crashing
# inputs are kept in BUILD_DIR/fuzz-artifacts/. Set TCC_FUZZ_CORPUS to a
# folder to keep the corpora between runs.
set -eu

if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS [PYTHON]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
python=${3:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
corpus=${TCC_FUZZ_CORPUS:-$scratch/corpus}
mkdir -p "$corpus/bundle" "$corpus/npy" "$build/fuzz-artifacts"
"$python" "$here/make_seeds.py" "$corpus/bundle" "$corpus/npy"

for name in bundle npy; do
  fuzzer=$build/runtime/tcc-fuzz-$name
  if [ ! -x "$fuzzer" ]; then
    echo "$0: $fuzzer not built (configure with clang and -DTCC_BUILD_FUZZER=ON)" >&2
    exit 2
  fi
  # -timeout: no input may take more than 10 s (a hang is a bug);
  # -rss_limit_mb: nor hold more than 2 GiB.
  "$fuzzer" "$corpus/$name" \
    -max_total_time="$seconds" \
    -max_len=16384 \
    -rss_limit_mb=2048 \
    -timeout=10 \
    -artifact_prefix="$build/fuzz-artifacts/$name-" \
    -print_final_stats=1
done
