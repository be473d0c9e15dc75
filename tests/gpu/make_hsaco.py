#!/usr/bin/env python3
"""Lowers tests/gpu/kernels.mlir to one HSACO per AMD GPU architecture.

    make_hsaco.py BIN_DIR KERNELS.mlir OUT_DIR --chips gfx90a,gfx942
                  [--device-libs ROOT]

BIN_DIR holds LLVM 22's mlir-opt, llvm-mc, ld.lld and llvm-readobj; each chip
gives OUT_DIR/kernels-CHIP.hsaco. The steps, for the compiler to copy:

 1. mlir-opt: rocdl-attach-target{chip=CHIP abi=500}, then in the gpu.module
    convert-scf-to-cf, convert-gpu-to-rocdl{use-bare-ptr-memref-call-conv=1},
    reconcile-unrealized-casts, then gpu-module-to-binary{format=isa}. abi=500
    asks for code object v5, which ROCm 5.x and 6.x load (LLVM 22 defaults to
    v6, which older runtimes refuse). gpu.block_dim lowers to a call into
    ROCm's device library ockl.bc, which the binary step links from
    ROOT/amdgcn/bitcode (its toolkit= option; Debian's rocm-device-libs puts
    it under /usr/lib/x86_64-linux-gnu).
 2. The `assembly` of the gpu.object (MLIR's \\XX escapes undone) is assembled
    with llvm-mc -triple=amdgcn-amd-amdhsa -mcpu=CHIP -filetype=obj, and
 3. linked with ld.lld -shared into the HSACO. (format=bin would do 2 and 3
    itself but runs ld.lld only from ROOT/llvm/bin, a ROCm install's layout.)

The part of the source between the lines "// CUDA only: begin" and "// CUDA
only: end" (kernels in NVPTX inline assembly) is left out.

Each HSACO is checked with llvm-readobj: its target must be CHIP and every
gpu.func ... kernel of the source must have a kernel descriptor (NAME.kd).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def run(args, what):
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        # The first lines say why; the rest is the module MLIR dumps.
        head = "\n".join(done.stderr.splitlines()[:12])
        sys.exit(f"make_hsaco.py: {what} failed:\n{head}")
    return done.stdout


def unescape(text):
    # MLIR escapes '\\' as "\\\\" and everything unprintable as "\\XX".
    return re.sub(r"\\(\\|[0-9A-Fa-f]{2})",
                  lambda m: "\\" if m.group(1) == "\\"
                  else chr(int(m.group(1), 16)), text)


def hsaco(tools, source, chip, device_libs, out):
    toolkit = f" toolkit={device_libs}" if device_libs else ""
    pipeline = (
        "builtin.module("
        f"rocdl-attach-target{{chip={chip} abi=500}},"
        "gpu.module(convert-scf-to-cf,"
        "convert-gpu-to-rocdl{use-bare-ptr-memref-call-conv=1},"
        "reconcile-unrealized-casts),"
        f"gpu-module-to-binary{{format=isa{toolkit}}})")
    lowered = run([tools["mlir-opt"], source, "--pass-pipeline=" + pipeline],
                  f"mlir-opt for {chip}")
    found = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', lowered)
    if len(found) != 1:
        sys.exit(f"make_hsaco.py: expected one gpu.object, found {len(found)}")
    with tempfile.TemporaryDirectory() as tmp:
        asm, obj = os.path.join(tmp, "k.s"), os.path.join(tmp, "k.o")
        with open(asm, "w") as f:
            f.write(unescape(found[0]))
        run([tools["llvm-mc"], "-triple=amdgcn-amd-amdhsa", f"-mcpu={chip}",
             "-filetype=obj", asm, "-o", obj], f"llvm-mc for {chip}")
        run([tools["ld.lld"], "-shared", obj, "-o", out], f"ld.lld for {chip}")


def check(tools, source, chip, path):
    notes = run([tools["llvm-readobj"], "--notes", "--symbols", path],
                "llvm-readobj")
    if f"amdhsa.target:   amdgcn-amd-amdhsa--{chip}" not in notes:
        sys.exit(f"make_hsaco.py: {path} is not for amdgcn-amd-amdhsa--{chip}")
    with open(source) as f:
        kernels = re.findall(r"gpu\.func @(\w+)\((?:[^)]|\n)*\)\s*kernel",
                             f.read())
    symbols = set(re.findall(r"Name: (\S+)", notes))
    missing = [k for k in kernels if k + ".kd" not in symbols]
    if not kernels or missing:
        sys.exit(f"make_hsaco.py: {path} lacks kernel descriptors for "
                 f"{missing or 'every kernel'}")


def without_cuda_only(source, tmp):
    """A copy of `source` in `tmp` without its CUDA-only part."""
    with open(source) as f:
        text = f.read()
    text = re.sub(r"[ \t]*// CUDA only: begin.*?// CUDA only: end[^\n]*\n",
                  "", text, flags=re.S)
    path = os.path.join(tmp, "kernels.mlir")
    with open(path, "w") as f:
        f.write(text)
    return path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("bin_dir")
    p.add_argument("source")
    p.add_argument("out_dir")
    p.add_argument("--chips", required=True)
    p.add_argument("--device-libs")
    a = p.parse_args()
    tools = {t: os.path.join(a.bin_dir, t)
             for t in ("mlir-opt", "llvm-mc", "ld.lld", "llvm-readobj")}
    os.makedirs(a.out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        source = without_cuda_only(a.source, tmp)
        for chip in a.chips.split(","):
            out = os.path.join(a.out_dir, f"kernels-{chip}.hsaco")
            hsaco(tools, source, chip, a.device_libs, out)
            check(tools, source, chip, out)


if __name__ == "__main__":
    main()
