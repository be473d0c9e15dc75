#!/usr/bin/env python3
"""Checks and times the convolution bundles of .carry/conv on a CUDA GPU.

    check_conv.py TCC CARRY_DIR OUT_DIR

For every case of CARRY_DIR/cases.txt: fresh random inputs (uniform in
[-1, 1), rounded to the operand dtype so that the reference sees exactly what
the kernel sees), `tcc run`, and ||out - ref|| / ||ref|| against a float64
torch.nn.functional.conv2d on the GPU (asymmetric pads through F.pad), with a
tolerance set by the dtypes. Bench cases are also timed with `tcc bench`
(device events, median) next to torch conv2d on channels_last tensors
(cuDNN, benchmark mode) of the same shapes and dtypes, in this same process,
both as CUDA graph replays (`tcc bench --cuda-graph`, torch.cuda.CUDAGraph).
Writes OUT_DIR/results.json and prints one line a case; exits 1 if any case
failed.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "matmul"))
from check_gemm import median_ms, run_cases  # noqa: E402  (as the GEMMs')

TORCH_DTYPE = {"bf16": torch.bfloat16, "f16": torch.float16,
               "f32": torch.float32}


def tolerance(info):
    """Relative error bound for ||out - ref|| / ||ref||."""
    if info["out_type"] == "bf16":
        return 8e-3   # output rounding alone: ~2^-9 / sqrt(3)
    if info["out_type"] == "f16":
        return 2e-3   # ~2^-12 / sqrt(3), plus accumulation
    if info["type"] == "f32":
        return 4e-3   # operands truncated to tf32's 10 mantissa bits
    return 1e-4       # exact 16-bit products, f32 accumulation


def operands(info, gen):
    """Random x [N,H,W,C], w [O,KH,KW,C], bias [O] in the operand dtype."""
    dt = TORCH_DTYPE[info["type"]]
    kh, kw = info["kernel"]

    def rand(shape):
        return (torch.rand(shape, device="cuda", generator=gen) * 2 - 1).to(dt)
    x = rand([info["n"], info["h"], info["w"], info["c"]])
    w = rand([info["o"], kh, kw, info["c"] // info.get("groups", 1)])
    b = rand([info["o"]]) if info["bias"] else None
    return x, w, b


def conv_nchw(info, x, w, b):
    """torch's conv2d of NCHW-viewed x, w (any dtype), with the case's pads."""
    top, left, bottom, right = info["pad"]
    if top == bottom and left == right:
        y = F.conv2d(x, w, b, stride=info["stride"], padding=(top, left),
                     dilation=info["dilation"], groups=info.get("groups", 1))
    else:
        y = F.conv2d(F.pad(x, (left, right, top, bottom)), w, b,
                     stride=info["stride"], dilation=info["dilation"],
                     groups=info.get("groups", 1))
    return F.relu(y) if info["relu"] else y


def check(tcc, carry, name, info, gen, tmp):
    x, w, b = operands(info, gen)
    files = {}
    for key, t in (("x", x), ("w", w), ("bias", b)):
        if t is None:
            continue
        # f32 files; bf16/f16 values convert exactly on load.
        files[key] = os.path.join(tmp, key + ".npy")
        np.save(files[key], t.float().cpu().numpy())
    outdir = os.path.join(tmp, "out")
    os.makedirs(outdir, exist_ok=True)
    cmd = [tcc, "run", os.path.join(carry, name + ".tccb")]
    for key, path in files.items():
        cmd += ["--input", key + "=" + path]
    done = subprocess.run(cmd + ["--output-dir", outdir],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return {"ok": False, "error": (done.stderr or done.stdout).strip()}
    out = torch.from_numpy(np.load(os.path.join(outdir, "y.npy"))).cuda()
    ref = conv_nchw(info, x.double().permute(0, 3, 1, 2),
                    w.double().permute(0, 3, 1, 2),
                    None if b is None else b.double()).permute(0, 2, 3, 1)
    if list(out.shape) != list(ref.shape):
        return {"ok": False, "error": f"shape {list(out.shape)}, "
                                      f"expected {list(ref.shape)}"}
    diff = out.double() - ref
    ref_norm = ref.norm().item()
    rel = diff.norm().item() / ref_norm if ref_norm else diff.norm().item()
    scale = ref.abs().max().item() or 1.0
    max_rel = diff.abs().max().item() / scale
    nans = int(torch.isnan(out).sum().item())
    tol = tolerance(info)
    ok = nans == 0 and rel <= tol and max_rel <= 10 * tol
    return {"ok": ok, "rel": rel, "max_rel": max_rel, "nans": nans,
            "tol": tol}


def bench(tcc, carry, name, info, gen, tmp):
    path = os.path.join(tmp, "bench.json")
    done = subprocess.run(
        [tcc, "bench", os.path.join(carry, name + ".tccb"), "--warmup", "10",
         "--iters", "50", "--cuda-graph", "--json", path],
        capture_output=True, text=True)
    if done.returncode != 0:
        return {"ok": False, "error": (done.stderr or done.stdout).strip()}
    with open(path) as f:
        ours = json.load(f)["median_ms"]
    # The peer: cuDNN on channels_last tensors (NHWC memory, as ours), same
    # dtypes; f32 is tf32 exactly when the kernel is.
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = bool(info["tf32"])
    x, w, b = operands(info, gen)
    xc = x.permute(0, 3, 1, 2)  # a channels_last view: no copy
    wc = w.permute(0, 3, 1, 2)
    # Both sides replay a CUDA graph: a batch-1 layer runs in a few
    # microseconds, less than Python's launch of F.conv2d, which timing
    # eager calls would measure instead of cuDNN's kernel.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            conv_nchw(info, xc, wc, b)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        conv_nchw(info, xc, wc, b)
    peer = median_ms(graph.replay)
    kh, kw = info["kernel"]
    n, oh, ow, o = info["out"]
    flop = 2.0 * n * oh * ow * o * kh * kw * info["c"] // info.get("groups", 1)
    return {"ok": True, "ms": ours, "tflops": flop / ours / 1e9,
            "torch_ms": peer, "torch_tflops": flop / peer / 1e9,
            "ratio": peer / ours}


def main():
    return run_cases(check, bench, peer="cudnn", width=16, digits=4)

if __name__ == "__main__":
    sys.exit(main())
