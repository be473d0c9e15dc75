#!/usr/bin/env python3
"""Lowers tests/gpu/kernels.mlir to PTX with mlir-opt and writes the PTX text.

    make_ptx.py MLIR_OPT KERNELS.mlir OUT.ptx [--chip sm_90] [--ptxas PTXAS]

The PTX is ISA version 8.0 (+ptx80), the first with the TMA instructions
(cp.async.bulk.tensor, mbarrier expect_tx) of kernels.mlir's tma_tile_f32;
every CUDA 12 driver, the runtime's minimum, reads it.

gpu-module-to-binary{format=isa} keeps the PTX as the `assembly` string of a
gpu.object; MLIR prints it with \\XX hex escapes, which are undone here. With
--ptxas the result is also assembled (and thrown away), so that PTX the driver
would refuse is caught on a machine without a GPU.
"""
import argparse
import re
import subprocess
import sys
import tempfile


def lower(mlir_opt, source, chip):
    pipeline = (
        "builtin.module("
        f"nvvm-attach-target{{chip={chip} features=+ptx80 O=3}},"
        "gpu.module(convert-scf-to-cf,"
        "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},"
        "reconcile-unrealized-casts),"
        "gpu-module-to-binary{format=isa})")
    done = subprocess.run([mlir_opt, source, "--pass-pipeline=" + pipeline],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("make_ptx.py: mlir-opt failed:\n" + done.stderr)
    return done.stdout


def unescape(text):
    # MLIR escapes '\\' as "\\\\" and everything unprintable as "\\XX".
    return re.sub(r"\\(\\|[0-9A-Fa-f]{2})",
                  lambda m: "\\" if m.group(1) == "\\"
                  else chr(int(m.group(1), 16)), text)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mlir_opt")
    p.add_argument("source")
    p.add_argument("out")
    p.add_argument("--chip", default="sm_90")
    p.add_argument("--ptxas")
    a = p.parse_args()
    found = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"',
                       lower(a.mlir_opt, a.source, a.chip))
    if len(found) != 1:
        sys.exit(f"make_ptx.py: expected one gpu.object, found {len(found)}")
    ptx = unescape(found[0])
    if ".entry" not in ptx:
        sys.exit("make_ptx.py: the PTX has no kernel entry")
    if a.ptxas:
        with tempfile.NamedTemporaryFile(suffix=".ptx", mode="w") as f:
            f.write(ptx)
            f.flush()
            done = subprocess.run([a.ptxas, f"-arch={a.chip}", f.name,
                                   "-o", "/dev/null"],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit("make_ptx.py: ptxas refused the PTX:\n" + done.stderr)
    with open(a.out, "w") as f:
        f.write(ptx)


if __name__ == "__main__":
    main()
