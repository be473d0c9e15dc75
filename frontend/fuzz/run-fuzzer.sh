#!/bin/sh
# Runs the frontend fuzzer for a bounded time and fails if it finds a crash.
#
#   frontend/fuzz/run-fuzzer.sh BUILD_DIR SECONDS
#
# BUILD_DIR is a build configured with clang and -DTCC_BUILD_FUZZER=ON (see
# frontend/CMakeLists.txt). The corpus starts from examples/*.json and
# tests/frontend/models/*.json in a scratch copy; crashing inputs are kept in
# BUILD_DIR/fuzz-artifacts/. Set TCC_FUZZ_CORPUS to a folder to keep the
# corpus between runs.
set -eu

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
fuzzer=$build/frontend/tcc-fuzz-frontend
if [ ! -x "$fuzzer" ]; then
  echo "$0: $fuzzer not built (configure with clang and -DTCC_BUILD_FUZZER=ON)" >&2
  exit 2
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
corpus=${TCC_FUZZ_CORPUS:-$scratch/corpus}
mkdir -p "$corpus" "$build/fuzz-artifacts"
for f in "$root"/examples/*.json "$root"/tests/frontend/models/*.json \
         "$root"/frontend/fuzz/seeds/*.json; do
  [ -f "$f" ] && cp "$f" "$corpus/"
done

# -timeout: no input may take more than 10 s (a hang is a bug);
# -rss_limit_mb: nor hold more than 2 GiB.
"$fuzzer" "$corpus" \
  -max_total_time="$seconds" \
  -max_len=65536 \
  -rss_limit_mb=2048 \
  -timeout=10 \
  -dict="$root/frontend/fuzz/model.dict" \
  -artifact_prefix="$build/fuzz-artifacts/" \
  -print_final_stats=1
