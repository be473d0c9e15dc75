#!/usr/bin/env python3
"""Checks and times the GEMM bundles of .carry/gemm on a CUDA GPU.

    check_gemm.py TCC CARRY_DIR OUT_DIR

For every case of CARRY_DIR/cases.txt: fresh random inputs (uniform in
[-1, 1), rounded to the operand dtype so that the reference sees exactly what
the kernel sees), `tcc run`, and ||out - ref|| / ||ref|| against a float64
reference computed by torch on the GPU, with a tolerance set by the dtypes.
Bench cases are also timed with `tcc bench` (device events, median) next to
torch.matmul (cuBLAS) on the same shapes and dtypes, in this same process.
Writes OUT_DIR/results.json; exits 1 if any case failed.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

TORCH_DTYPE = {"bf16": torch.bfloat16, "f16": torch.float16,
               "f32": torch.float32}
# fp8 where this torch has it (the GPU machine's; Debian's may not: the
# host tests import this module too).
for _name, _attr in (("f8e4m3", "float8_e4m3fn"), ("f8e5m2", "float8_e5m2")):
    if hasattr(torch, _attr):
        TORCH_DTYPE[_name] = getattr(torch, _attr)


def tolerance(info):
    """Relative error bound for ||out - ref|| / ||ref||."""
    if info["out_type"] == "bf16":
        return 8e-3   # output rounding alone: ~2^-9 / sqrt(3)
    if info["out_type"] == "f16":
        return 2e-3   # ~2^-12 / sqrt(3), plus accumulation
    if info["type"] == "f32" and info["tf32"]:
        return 4e-3   # operands truncated to tf32's 10 mantissa bits
    if info["type"].startswith("f8"):
        # Exact operands, but Hopper's fp8 MMA adds its products with fewer
        # bits than f32 (about 14 kept in its sums, reported for the H800).
        return 2e-3
    return 1e-4       # exact operands, f32 accumulation


def shapes(info):
    m, n, k, batch = info["m"], info["n"], info["k"], info["batch"]
    ba = batch if info["a_batched"] else 1
    bb = batch if info["b_batched"] else 1
    a = [ba, k, m] if info["trans_a"] else [ba, m, k]
    b = [bb, n, k] if info["trans_b"] else [bb, k, n]
    return a, b


def operands(info, gen):
    """Random A, B on the GPU, in the operand dtype (views for matmul)."""
    a_shape, b_shape = shapes(info)
    dt = TORCH_DTYPE[info["type"]]
    a = (torch.rand(a_shape, device="cuda", generator=gen) * 2 - 1).to(dt)
    b = (torch.rand(b_shape, device="cuda", generator=gen) * 2 - 1).to(dt)
    return a, b


def logical(info, a, b):
    """A as [.., M, K] and B as [.., K, N] views."""
    if info["trans_a"]:
        a = a.transpose(-1, -2)
    if info["trans_b"]:
        b = b.transpose(-1, -2)
    return a, b


def check(tcc, carry, name, info, gen, tmp):
    a, b = operands(info, gen)
    files = {}
    for key, t in (("a", a), ("b", b)):
        # f32 files; bf16/f16/f8 values convert exactly on load.
        files[key] = os.path.join(tmp, key + ".npy")
        np.save(files[key], t.float().cpu().numpy())
    outdir = os.path.join(tmp, "out")
    os.makedirs(outdir, exist_ok=True)
    done = subprocess.run(
        [tcc, "run", os.path.join(carry, name + ".tccb"),
         "--input", "a=" + files["a"], "--input", "b=" + files["b"],
         "--output-dir", outdir], capture_output=True, text=True)
    if done.returncode != 0:
        return {"ok": False, "error": (done.stderr or done.stdout).strip()}
    out = torch.from_numpy(np.load(os.path.join(outdir, "c.npy"))).cuda()
    la, lb = logical(info, a.double(), b.double())
    ref = torch.matmul(la, lb).expand(out.shape)
    diff = (out.double() - ref)
    ref_norm = ref.norm().item()
    rel = diff.norm().item() / ref_norm if ref_norm else diff.norm().item()
    scale = ref.abs().max().item() or 1.0
    max_rel = diff.abs().max().item() / scale
    nans = int(torch.isnan(out).sum().item())
    tol = tolerance(info)
    ok = nans == 0 and rel <= tol and max_rel <= 10 * tol
    return {"ok": ok, "rel": rel, "max_rel": max_rel, "nans": nans,
            "tol": tol}


def median_ms(fn, warmup=10, iters=50):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def bench(tcc, carry, name, info, gen, tmp):
    path = os.path.join(tmp, "bench.json")
    done = subprocess.run(
        [tcc, "bench", os.path.join(carry, name + ".tccb"), "--warmup", "10",
         "--iters", "50", "--json", path], capture_output=True, text=True)
    if done.returncode != 0:
        return {"ok": False, "error": (done.stderr or done.stdout).strip()}
    with open(path) as f:
        ours = json.load(f)["median_ms"]
    # The peer: torch.matmul on the same layouts (views, as cuBLAS takes
    # them) and dtypes; f32 is tf32 exactly when the kernel is.
    torch.backends.cuda.matmul.allow_tf32 = bool(info["tf32"])
    a, b = operands(info, gen)
    la, lb = logical(info, a, b)
    peer = median_ms(lambda: torch.matmul(la, lb))
    flop = 2.0 * info["m"] * info["n"] * info["k"] * info["batch"]
    return {"ok": True, "ms": ours, "tflops": flop / ours / 1e9,
            "torch_ms": peer, "torch_tflops": flop / peer / 1e9,
            "ratio": peer / ours}


def run_cases(check, bench, peer="torch", width=18, digits=3):
    """Checks (and benches) every case of the carry given on the command
    line (TCC CARRY OUT_DIR) with `check` and `bench`; one line a case and
    OUT_DIR/results.json. Shared by the GPU template checkers."""
    tcc, carry, outdir = sys.argv[1:4]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int.from_bytes(os.urandom(4), "little"))
    print("torch", torch.__version__, torch.cuda.get_device_name(0))
    results, failed = {}, []
    with open(os.path.join(carry, "cases.txt")) as f:
        cases = [line.split()[:2] for line in f
                 if line.strip() and not line.startswith("#")]
    for name, role in cases:
        with open(os.path.join(carry, name + ".json")) as f:
            info = json.load(f)
        res = {"info": info}
        with tempfile.TemporaryDirectory() as tmp:
            try:
                res["check"] = check(tcc, carry, name, info, gen, tmp)
                if role in ("bench", "both"):
                    res["bench"] = bench(tcc, carry, name, info, gen, tmp)
            except Exception as e:  # one broken case must not hide the rest
                res["check"] = {"ok": False, "error": repr(e)}
        ok = res["check"]["ok"] and res.get("bench", {"ok": True})["ok"]
        if not ok:
            failed.append(name)
        c = res["check"]
        line = f"{name:{width}s} {'ok  ' if ok else 'FAIL'} sched={info['schedule']}"
        if "rel" in c:
            line += f" rel={c['rel']:.2e} max_rel={c['max_rel']:.2e} tol={c['tol']:.0e}"
        if "error" in c:
            line += " error: " + c["error"][:300]
        if "bench" in res and "ms" in res["bench"]:
            r = res["bench"]
            line += (f" | {r['ms']:.{digits}f} ms {r['tflops']:.1f} TFLOP/s;"
                     f" {peer} {r['torch_ms']:.{digits}f} ms"
                     f" {r['torch_tflops']:.1f} TFLOP/s; ratio {r['ratio']:.2f}")
        elif "bench" in res:
            line += " bench error: " + res["bench"].get("error", "")[:300]
        print(line, flush=True)
        results[name] = res
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"{len(cases) - len(failed)} passed, {len(failed)} failed")
    if failed:
        print("failed:", " ".join(failed))
    return 1 if failed else 0



def main():
    return run_cases(check, bench)

if __name__ == "__main__":
    sys.exit(main())
