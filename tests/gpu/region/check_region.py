#!/usr/bin/env python3
"""Checks and times the region-fusion bundles of .carry/region on a CUDA GPU.

    check_region.py TCC CARRY_DIR OUT_DIR

For every case of CARRY_DIR/cases.txt: fresh random inputs, rounded to the
chain's dtype so that the reference sees exactly what the kernel sees (x
uniform in [-1, 1); weights uniform with variance 1 / fan-in, so that
activations stay O(1) through the chain and ReLU6 clamps some; biases
uniform in [-0.5, 0.5)), `tcc run`, and ||out - ref|| / ||ref|| against the
same chain in float64 with torch.nn.functional on the GPU (pads through
F.pad: zeros for convolutions and average pools, -inf for max pools; an
average pool without the padding in its divisor divides by the count of
image positions). The tolerance is set by the dtype: the fused kernel
rounds each member's output to f16/bf16 (as the unfused chain does), so
with members L <= 3 the error is a few unit roundoffs u (f16 2^-11, bf16
2^-8) at most: tol = 8u. The error of torch's own unfused chain in the dtype
is printed beside it (peer_rel) for scale.

Bench cases are also timed with `tcc bench --cuda-graph` (device events,
median) next to the chain run member by member in torch on channels_last
tensors of the dtype (cuDNN, benchmark mode), replayed as a CUDA graph, in
this same process. Writes OUT_DIR/results.json and prints one line a case;
exits 1 if any case failed.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "matmul"))
from check_gemm import median_ms, run_cases  # noqa: E402  (as the GEMMs')

TORCH_DTYPE = {"bf16": torch.bfloat16, "f16": torch.float16}
UNIT_ROUNDOFF = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}


def tolerance(info):
    """Relative error bound for ||out - ref|| / ||ref||: 8 unit roundoffs
    (one rounding of each member's output, rms u / sqrt(3) each, carried
    through at most 3 members with gains near 1, plus the residual's)."""
    return 8 * UNIT_ROUNDOFF[info["type"]]


def operands(info, gen, device="cuda"):
    """x [N,H,W,C] and per member w<i>, b<i> (the bundle's inputs), in the
    chain's dtype, on `device` (gen's)."""
    dt = TORCH_DTYPE[info["type"]]

    def rand(shape, scale):
        r = torch.rand(shape, device=device, generator=gen,
                       dtype=torch.float64)
        return ((r * 2 - 1) * scale).to(dt)
    ops = {"x": rand([info["n"], info["h"], info["w"], info["c"]], 1.0)}
    for i, m in enumerate(info["members"]):
        kh, kw = m["kernel"]
        c, o = m["in"][2], m["out"][2]
        if m["kind"] == "conv":
            # uniform(-a, a) has variance a^2 / 3: a = sqrt(3 / fan-in).
            ops[f"w{i}"] = rand([o, kh, kw, c], math.sqrt(3.0 / (kh * kw * c)))
        elif m["kind"] == "dw":
            ops[f"w{i}"] = rand([c, kh, kw, 1], math.sqrt(3.0 / (kh * kw)))
        if m["bias"]:
            ops[f"b{i}"] = rand([o], 0.5)
    return ops


def chain(info, ops, graphable=False):
    """The chain on NCHW views of the NHWC operands, in their dtype. With
    `graphable`, symmetric pads go to the ops themselves (no F.pad copy)."""
    t = ops["x"].permute(0, 3, 1, 2)
    outs = [t]
    for i, m in enumerate(info["members"]):
        top, left, bottom, right = m["pad"]
        sym = top == bottom and left == right
        kind = m["kind"]
        kh, kw = m["kernel"]
        if kind in ("conv", "dw"):
            w = ops[f"w{i}"].permute(0, 3, 1, 2)
            groups = 1 if kind == "conv" else m["in"][2]
            if sym and graphable:
                y = F.conv2d(t, w, None, m["stride"], (top, left),
                             m["dilation"], groups)
            else:
                y = F.conv2d(F.pad(t, (left, right, top, bottom)), w, None,
                             m["stride"], 0, m["dilation"], groups)
        elif kind == "maxpool":
            if sym and graphable and 2 * max(top, left) <= min(kh, kw):
                y = F.max_pool2d(t, (kh, kw), m["stride"], (top, left),
                                 m["dilation"])
            else:
                y = F.max_pool2d(F.pad(t, (left, right, top, bottom),
                                       value=-math.inf),
                                 (kh, kw), m["stride"], 0, m["dilation"])
        else:
            padded = F.pad(t, (left, right, top, bottom))
            if m["count_include_pad"]:
                y = F.avg_pool2d(padded, (kh, kw), m["stride"])
            else:
                ones = F.pad(torch.ones_like(t[:, :1]),
                             (left, right, top, bottom))
                y = (F.avg_pool2d(padded, (kh, kw), m["stride"]) /
                     F.avg_pool2d(ones, (kh, kw), m["stride"]))
        if m["bias"]:
            y = y + ops[f"b{i}"].view(1, -1, 1, 1)
        if m["residual"] >= 0:
            y = y + outs[m["residual"]]
        if m["act"] == "relu":
            y = F.relu(y)
        elif m["act"] == "relu6":
            y = F.relu6(y)
        outs.append(y)
        t = y
    return t.permute(0, 2, 3, 1)


def rel_error(out, ref):
    diff = out.double() - ref
    ref_norm = ref.norm().item()
    rel = diff.norm().item() / ref_norm if ref_norm else diff.norm().item()
    scale = ref.abs().max().item() or 1.0
    return rel, diff.abs().max().item() / scale


def check(tcc, carry, name, info, gen, tmp):
    ops = operands(info, gen)
    cmd = [tcc, "run", os.path.join(carry, name + ".tccb")]
    for key, t in ops.items():
        # f32 files; bf16/f16 values convert exactly on load.
        path = os.path.join(tmp, key + ".npy")
        np.save(path, t.float().cpu().numpy())
        cmd += ["--input", key + "=" + path]
    outdir = os.path.join(tmp, "out")
    os.makedirs(outdir, exist_ok=True)
    done = subprocess.run(cmd + ["--output-dir", outdir],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return {"ok": False, "error": (done.stderr or done.stdout).strip()}
    out = torch.from_numpy(np.load(os.path.join(outdir, "y.npy"))).cuda()
    ref = chain(info, {k: v.double() for k, v in ops.items()})
    if list(out.shape) != list(ref.shape):
        return {"ok": False, "error": f"shape {list(out.shape)}, "
                                      f"expected {list(ref.shape)}"}
    rel, max_rel = rel_error(out, ref)
    peer_rel, _ = rel_error(chain(info, ops).float(), ref)
    nans = int(torch.isnan(out).sum().item())
    tol = tolerance(info)
    ok = nans == 0 and rel <= tol and max_rel <= 10 * tol
    return {"ok": ok, "rel": rel, "max_rel": max_rel, "nans": nans,
            "tol": tol, "peer_rel": peer_rel}


def flops(info):
    """Multiply-adds x 2 of the unfused chain (pools: a FLOP a tap)."""
    total = 0
    for m in info["members"]:
        kh, kw = m["kernel"]
        oh, ow, o = m["out"]
        per = {"conv": 2 * kh * kw * m["in"][2], "dw": 2 * kh * kw}.get(
            m["kind"], kh * kw)
        total += info["n"] * oh * ow * o * per
    return total


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
    # The peer: the chain member by member (cuDNN convolutions, torch's
    # pools and element-wise kernels) on channels_last tensors of the same
    # dtype, captured in one CUDA graph.
    torch.backends.cudnn.benchmark = True
    ops = operands(info, gen)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            chain(info, ops, graphable=True)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        chain(info, ops, graphable=True)
    peer = median_ms(graph.replay)
    flop = flops(info)
    return {"ok": True, "ms": ours, "tflops": flop / ours / 1e9,
            "torch_ms": peer, "torch_tflops": flop / peer / 1e9,
            "ratio": peer / ours}


def main():
    return run_cases(check, bench, peer="torch-chain", width=16, digits=4)


if __name__ == "__main__":
    sys.exit(main())
