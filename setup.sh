#!/usr/bin/env bash
# Sets up tcc on a fresh Debian 12 machine: installs the packages it needs,
# builds it, and runs the attention example on the host target.
#   ./setup.sh            (as root, or with sudo available)
#   BUILD_DIR=... JOBS=... to change the defaults.
set -euo pipefail
cd "$(dirname "$0")"
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
# python3-torch and python3-torchvision export the seven CNNs the tests
# import (tests/e2e/cnn_models.py) and compute their references.
PACKAGES="cmake ninja-build g++ clang-22 libclang-rt-22-dev lld-22 llvm-22-dev
  llvm-22-tools libmlir-22-dev mlir-22-tools nlohmann-json3-dev catch2
  python3-numpy rocm-device-libs libamdhip64-dev
  libonnx-dev libprotobuf-dev protobuf-compiler python3-onnx
  python3-torch python3-torchvision"
if ! dpkg -s $PACKAGES >/dev/null 2>&1; then
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $PACKAGES
fi

# clang-22 builds everything, so that the frontend's libFuzzer target is part
# of the same build (and of the test suite).
cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DTCC_BUILD_FUZZER=ON
cmake --build "$BUILD_DIR" -j "$JOBS"

echo
echo "== tcc run examples/attention.json (host) =="
"$BUILD_DIR/compiler/tcc" run examples/attention.json --output-dir "$BUILD_DIR/example-out"
