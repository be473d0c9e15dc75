#!/usr/bin/env python3
"""Checks and times the attention kernels of .carry/flash on a CUDA GPU.

    check_flash.py CARRY_DIR OUT_DIR [NAME_REGEX]   (cases whose name it matches)

Each case (CARRY_DIR/NAME.json from tcc-flash-gen, NAME.cubin or NAME.ptx)
is loaded with the CUDA driver (ctypes over libcuda.so.1, in torch's
context) and run on fresh random inputs (uniform in [-1, 1), rounded to the
dtype), once as drawn and once with Q scaled by 30 (large scores: the online
max matters). The output is poisoned with NaN first. The error
||out - ref|| / ||ref|| against a float64 reference (torch, on the GPU) must
be at most 1.5x the error of torch SDPA in the same dtype (the flash backend
where it takes the case, else the efficient one with an explicit mask/bias;
softcap, which SDPA lacks, against an emulation of flash's rounding: f32
scores, P rounded to the dtype, f32 accumulation), or under half the dtype's
rounding unit. f32 cases (the SIMT kernels of tests/gpu/simt) pass that,
or attention_test.py's f32 bound: a max error of (32 + 2 sqrt(Lk)) units
of 2^-24 of max|O|; they are timed beside SDPA's efficient backend too. Rows the mask empties must be 0 (or NaN, per the case's
policy). Cases with strides (the JSON's q/k/v/o_strides, from --layout or
--X-strides) get their tensors in buffers of those layouts, and nothing may
be written between O's elements. Decode cases (--decode) run the partial
kernel and then NAME_combine. "check" cases compare every row; "bench"
cases compare sampled rows and are timed (CUDA events, median of 10)
beside SDPA's flash, cuDNN and math backends on the same inputs (math where
its scores fit), and some beside FlexAttention (FLEX_CASES). Writes
OUT_DIR/results.json and prints a table; exits 1 if any check failed.
"""
import ctypes
import json
import math
import os
import re
import sys
import time
import traceback

import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
UNIT = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24}

# FlexAttention is timed on these cases, while the run is young enough:
# each compiles its own kernel (tens of seconds).
FLEX_CASES = {"b1_causal", "b1_alibi_causal", "b1_softcap_50",
              "b1_window_4096", "b1_gqa_64_8"}
FLEX_DEADLINE = time.time() + 120

cuda = ctypes.CDLL("libcuda.so.1")


def ck(res, what):
    if res != 0:
        msg = ctypes.c_char_p()
        cuda.cuGetErrorString(res, ctypes.byref(msg))
        raise RuntimeError(f"{what}: CUDA error {res} "
                           f"({msg.value.decode() if msg.value else '?'})")


# cuda.h's CUtensorMapDataType and CUtensorMapSwizzle values.
TMA_DTYPE = {"f16": 6, "f32": 7, "bf16": 9}
TMA_SWIZZLE = {"none": 0, "32B": 1, "64B": 2, "128B": 3}


class Kernel:
    """One kernel of a cubin (or PTX), launched on torch's current stream."""

    def __init__(self, carry, info):
        self.info = info
        name = info["name"]
        self.module = ctypes.c_void_p()
        cubin = os.path.join(carry, name + ".cubin")
        loaded = False
        if os.path.exists(cubin):
            data = open(cubin, "rb").read()
            loaded = cuda.cuModuleLoadData(ctypes.byref(self.module),
                                           data) == 0
        if not loaded:
            data = open(os.path.join(carry, name + ".ptx"), "rb").read()
            ck(cuda.cuModuleLoadData(ctypes.byref(self.module),
                                     data + b"\0"), "cuModuleLoadData")
        self.fn = ctypes.c_void_p()
        ck(cuda.cuModuleGetFunction(ctypes.byref(self.fn), self.module,
                                    name.encode()), "cuModuleGetFunction")
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        ck(cuda.cuFuncSetAttribute(self.fn, 8, info["shared_bytes"]),
           "cuFuncSetAttribute")
        # The decode form (--decode): the partial kernel writes scratch,
        # NAME_combine merges it into O.
        self.decode = info.get("decode")
        if self.decode:
            self.combine = ctypes.c_void_p()
            ck(cuda.cuModuleGetFunction(ctypes.byref(self.combine),
                                        self.module,
                                        (name + "_combine").encode()),
               "cuModuleGetFunction")
            self.scratch = [torch.empty(self.decode[n] // 4, device="cuda",
                                        dtype=torch.float32)
                            for n in ("partial_o_bytes", "stats_bytes")]

    def tensor_maps(self, tensors):
        """The kernel's TMA descriptors ("tensor_maps": after its buffers),
        encoded over the buffers of this launch, as 128-byte values."""
        maps = []
        for m in self.info.get("tensor_maps", []):
            rank = len(m["dims"])
            buf = (ctypes.c_uint64 * 17)()  # 128 bytes, 64-aligned below
            addr = (ctypes.addressof(buf) + 63) // 64 * 64
            u64 = ctypes.c_uint64 * rank
            u32 = ctypes.c_uint32 * rank
            ck(cuda.cuTensorMapEncodeTiled(
                ctypes.c_void_p(addr), ctypes.c_int(TMA_DTYPE[m["dtype"]]),
                ctypes.c_uint32(rank),
                ctypes.c_void_p(tensors[m["operand"]].data_ptr()),
                u64(*m["dims"]), (ctypes.c_uint64 * (rank - 1))(*m["strides"]),
                u32(*m["box"]), u32(*([1] * rank)), ctypes.c_int(0),
                ctypes.c_int(TMA_SWIZZLE[m["swizzle"]]), ctypes.c_int(3),
                ctypes.c_int(0)), "cuTensorMapEncodeTiled")
            maps.append((buf, addr))
        return maps

    def launch(self, fn, grid, block, shared, tensors, maps=()):
        ptrs = [ctypes.c_void_p(t.data_ptr()) for t in tensors]
        # A pointer parameter's value is the pointer; a tensor map's is its
        # 128 bytes (cuLaunchKernel copies them).
        args = (ctypes.c_void_p * (len(ptrs) + len(maps)))(
            *[ctypes.addressof(p) for p in ptrs], *[a for _, a in maps])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        ck(cuda.cuLaunchKernel(fn, *[ctypes.c_uint(x) for x in grid],
                               *[ctypes.c_uint(x) for x in block],
                               ctypes.c_uint(shared), stream, args, None),
           "cuLaunchKernel")

    def __call__(self, q, k, v, o):
        if self.info.get("k_transposed"):
            # The kernel reads K as [B, HKV, D, LK]: made once per K tensor
            # (outside the timed launches).
            if getattr(self, "k_src", None) is not k:
                self.k_src, self.kt = k, k.transpose(-1, -2).contiguous()
            k = self.kt
        # Strided cases: each tensor in a buffer laid out by the case's
        # strides (made per call: check cases only); O's buffer starts as the
        # sentinel, so that writes between O's elements show (o_gaps_ok).
        bufs = [strided_copy(x, self.info.get(n + "_strides"))
                for n, x in (("q", q), ("k", k), ("v", v))]
        o_strides = self.info.get("o_strides")
        o_buf = o
        if o_strides and list(o_strides) != packed_strides(o.shape):
            o_buf, o_view = strided_empty(o, o_strides, SENTINEL)
        g, bl = self.info["grid"], self.info["block"]
        if self.decode:
            # Scratch starts as NaN: a partial result never written shows.
            for t in self.scratch:
                t.fill_(float("nan"))
            self.launch(self.fn, g, bl, self.info["shared_bytes"],
                        bufs + self.scratch)
            self.launch(self.combine, self.decode["combine_grid"],
                        self.decode["combine_block"], 0,
                        self.scratch + [o_buf])
        else:
            key = tuple(t.data_ptr() for t in bufs)
            if getattr(self, "maps_key", None) != key:
                self.maps_key = key
                self.maps = self.tensor_maps(bufs + [o_buf])
            self.launch(self.fn, g, bl, self.info["shared_bytes"],
                        bufs + [o_buf], self.maps)
        if o_buf is not o:
            o.copy_(o_view)
            gaps = torch.ones_like(o_buf, dtype=torch.bool)
            torch.as_strided(gaps, o.shape, o_strides).fill_(False)
            self.o_gaps_ok = bool((o_buf[gaps] == SENTINEL).all())


# What a strided O's buffer holds before the kernel runs: no output element
# (a weighted average of V's values, in [-1, 1]) equals it.
SENTINEL = 1024.0


def packed_strides(shape):
    out, n = [], 1
    for d in reversed(shape):
        out.insert(0, n)
        n *= d
    return out


def strided_empty(x, strides, fill):
    """A flat buffer for a tensor like `x` at element `strides`, every
    element `fill`, and the tensor's view into it."""
    if len(strides) != x.dim():
        raise ValueError(f"strides {list(strides)} for shape {list(x.shape)}")
    size = 1 + sum((n - 1) * st for n, st in zip(x.shape, strides))
    buf = torch.full((size,), fill, device=x.device, dtype=x.dtype)
    return buf, torch.as_strided(buf, x.shape, strides)


def strided_copy(x, strides):
    """`x` laid out at element `strides` (packed or none: `x` itself)."""
    if not strides or list(strides) == packed_strides(x.shape):
        return x
    buf, view = strided_empty(x, strides, 0.0)
    view.copy_(x)
    return buf


def keep_mask(info, rows, lk, device):
    """Bool [len(rows), lk]: the pairs the mask keeps."""
    q = rows.view(-1, 1).to(torch.int64)
    k = torch.arange(lk, device=device).view(1, -1)
    keep = torch.ones(len(rows), lk, dtype=torch.bool, device=device)
    for a, b, c in info["mask"]:
        keep &= (a * q + b * k + c) >= 0
    return keep


def kept_pairs(info):
    """Kept (q, k) pairs of one head (for FLOP counts)."""
    q = np.arange(info["lq"], dtype=np.int64)
    lo = np.zeros_like(q)
    hi = np.full_like(q, info["lk"] - 1)
    for a, b, c in info["mask"]:
        v = a * q + c
        if b > 0:
            lo = np.maximum(lo, -((v) // b))        # ceil(-v / b)
        elif b < 0:
            hi = np.minimum(hi, v // (-b))          # floor(v / -b)
        else:
            hi = np.where(v >= 0, hi, -1)
    return int(np.maximum(hi - lo + 1, 0).sum())


def scores_f(info, s, head, rows, lk):
    """Scale, score mod (as the kernel's hooks) and mask, in s's dtype;
    s is [.., len(rows), lk] for query head `head`."""
    s = s * info["scale"]
    if info["alibi"]:
        slope = 2.0 ** (-8.0 * (head + 1) / info["hq"])
        k = torch.arange(lk, device=s.device, dtype=s.dtype).view(1, -1)
        s = s + slope * (k - rows.view(-1, 1).to(s.dtype))
    if info["softcap"] > 0:
        c = info["softcap"]
        s = c * torch.tanh(s / c)
    if info["mask"]:
        s = s.masked_fill(~keep_mask(info, rows, lk, s.device), -math.inf)
    return s


def reference(info, q, k, v, pairs, rows):
    """float64 reference for query rows `rows` of each (batch, head)."""
    group = info["hq"] // info["hkv"]
    out = []
    for bb, h in pairs:
        qs = q[bb, h, rows].double()
        ks, vs = k[bb, h // group].double(), v[bb, h // group].double()
        s = scores_f(info, qs @ ks.T, h, rows, info["lk"])
        p = torch.softmax(s, dim=-1)
        out.append(p @ vs)
    return torch.stack(out)


def emulation(info, q, k, v, pairs, rows):
    """Flash's rounding, emulated: f32 scores, P in the dtype, f32 sums."""
    dt = DT[info["type"]]
    group = info["hq"] // info["hkv"]
    out = []
    for bb, h in pairs:
        qs = q[bb, h, rows].float()
        ks, vs = k[bb, h // group].float(), v[bb, h // group].float()
        s = scores_f(info, qs @ ks.T, h, rows, info["lk"])
        m = s.amax(dim=-1, keepdim=True).clamp_min(-1e30)
        p = torch.exp(s - m)
        o = (p.to(dt).float() @ vs) / p.sum(dim=-1, keepdim=True)
        out.append(o.to(dt))
    return torch.stack(out)


def run_sdpa(info, q, k, v, backend):
    """(call, output) of torch SDPA on the case with `backend`, or
    (None, None) if the backend refuses it."""
    if info["softcap"] > 0:
        return None, None
    kw = {"scale": info["scale"]}
    causal_only = info["causal"] and not info["window"] and \
        len(info["mask"]) == 1 and info["lq"] == info["lk"]
    if info["alibi"] or (info["mask"] and not causal_only):
        rows = torch.arange(info["lq"], device=q.device)
        keep = keep_mask(info, rows, info["lk"], q.device)
        if info["alibi"]:
            heads = torch.arange(info["hq"], device=q.device)
            slope = (2.0 ** (-8.0 * (heads + 1) / info["hq"])).view(-1, 1, 1)
            kk = torch.arange(info["lk"], device=q.device).view(1, 1, -1)
            bias = slope * (kk - rows.view(1, -1, 1)).float()
            bias = bias.masked_fill(~keep.view(1, *keep.shape), -math.inf)
            kw["attn_mask"] = bias.to(q.dtype).unsqueeze(0)
        else:
            kw["attn_mask"] = keep
    elif causal_only:
        kw["is_causal"] = True
    if info["hq"] != info["hkv"]:
        kw["enable_gqa"] = True

    def call():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, **kw)
    try:
        out = call()
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 (the backend does not take the case)
        return None, None
    return call, out


def rel_err(out, ref, valid):
    o, r = out[:, valid].double(), ref[:, valid]
    if not torch.isfinite(o).all():
        return float("inf")
    return float(torch.linalg.norm(o - r) / torch.linalg.norm(r))


def time_ms(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def check_case(info, kern, gen, scale30, bench):
    dt = DT[info["type"]]
    B, hq, hkv = info["batch"], info["hq"], info["hkv"]
    lq, lk, d = info["lq"], info["lk"], info["d"]
    dev = "cuda"

    def rnd(*shape):
        return (torch.rand(shape, device=dev, generator=gen) * 2 - 1).to(dt)
    q, k, v = rnd(B, hq, lq, d), rnd(B, hkv, lk, d), rnd(B, hkv, lk, d)
    if scale30:
        q = (q.float() * 30).to(dt)
    o = torch.full((B, hq, lq, d), float("nan"), device=dev, dtype=dt)
    kern.o_gaps_ok = True
    kern(q, k, v, o)
    torch.cuda.synchronize()

    if bench or B * hq * lq * lk > (1 << 26):
        pairs = [(0, 0), (B - 1, hq - 1), (B // 2, hq // 2 + 1 if hq > 1
                                            else 0)]
        rows = torch.unique(torch.cat([
            torch.randint(0, lq, (253,), device=dev, generator=gen),
            torch.tensor([0, lq - 1], device=dev)]))
    else:
        pairs = [(bb, h) for bb in range(B) for h in range(hq)]
        rows = torch.arange(lq, device=dev)
    ref = reference(info, q, k, v, pairs, rows)
    out = torch.stack([o[bb, h, rows] for bb, h in pairs])
    # Rows the mask empties.
    empty = ~keep_mask(info, rows, lk, dev).any(dim=-1) if info["mask"] \
        else torch.zeros(len(rows), dtype=torch.bool, device=dev)
    valid = ~empty
    res = {"rows_checked": int(len(rows)) * len(pairs)}
    # A strided O: nothing written between its elements.
    ok = kern.o_gaps_ok
    if not ok:
        res["o_gaps_written"] = True
    if empty.any():
        e = out[:, empty]
        if info["masked_rows"] == "zero":
            good = bool((e == 0).all())
        else:
            good = bool(torch.isnan(e).all())
        res["empty_rows"] = int(empty.sum())
        res["empty_rows_ok"] = good
        ok &= good
    err = rel_err(out, ref, valid)
    # The baseline: SDPA in the same dtype (the first backend that takes
    # the case), and flash's rounding emulated; the smaller error counts
    # (SDPA rounds an ALiBi bias to the dtype, which the kernel does not).
    base, base_name = math.inf, None
    for backend, bname in ((SDPBackend.FLASH_ATTENTION, "sdpa-flash"),
                           (SDPBackend.EFFICIENT_ATTENTION, "sdpa-efficient"),
                           (SDPBackend.MATH, "sdpa-math")):
        if bname == "sdpa-math" and B * hq * lq * lk > (1 << 28):
            continue
        _, so = run_sdpa(info, q, k, v, backend)
        if so is not None:
            sout = torch.stack([so[bb, h, rows] for bb, h in pairs])
            base, base_name = rel_err(sout, ref, valid), bname
            del so, sout
            break
    eo = emulation(info, q, k, v, pairs, rows)
    emu = rel_err(eo, ref, valid)
    res["sdpa_err"] = base if base_name else None
    res["emulated_err"] = emu
    if emu < base:
        base, base_name = emu, "emulated"
    bound = max(1.5 * base, UNIT[info["type"]] / 2)
    res.update({"err": err, "base": base, "base_of": base_name,
                "bound": bound})
    good = err <= bound
    if res["sdpa_err"] is not None:
        # The bar: 1.5x SDPA's own error in the dtype (the
        # emulation, exact f32 scores for f32, can be the stricter one).
        good |= err <= 1.5 * res["sdpa_err"]
    if info["type"] == "f32":
        # attention_test.py's f32 bound (ex2.approx's error is in it).
        # (Names of their own: q, k, v, o go back to the caller, o timed.)
        got, want = out[:, valid].double(), ref[:, valid]
        if got.numel():
            maxerr = float((got - want).abs().max())
            res["max_err"] = maxerr
            res["max_bound"] = UNIT["f32"] * (32 + 2 * math.sqrt(lk)) * \
                float(want.abs().max())
            good |= maxerr <= res["max_bound"]
    ok &= good
    res["ok"] = ok
    return res, (q, k, v, o)


def bench_case(info, kern, tensors, flex):
    q, k, v, o = tensors
    flops = 4.0 * info["d"] * kept_pairs(info) * info["batch"] * info["hq"]
    reps = 10
    res = {"flops": flops}
    t = time_ms(lambda: kern(q, k, v, o), reps)
    res["tcc_ms"] = t
    res["tcc_tflops"] = flops / t / 1e9
    peers = [(SDPBackend.FLASH_ATTENTION, "flash"),
             (SDPBackend.CUDNN_ATTENTION, "cudnn"), (SDPBackend.MATH, "math")]
    if info["type"] == "f32":  # flash and cuDNN take no f32
        peers.insert(0, (SDPBackend.EFFICIENT_ATTENTION, "efficient"))
    for backend, bname in peers:
        if bname == "math" and info["batch"] * info["hq"] * info["lq"] * \
                info["lk"] > (1 << 31):
            continue  # the unfused scores would not fit
        fn, _ = run_sdpa(info, q, k, v, backend)
        if fn is None:
            continue
        try:
            tt = time_ms(fn, reps)
        except Exception as e:  # noqa: BLE001 (report and go on)
            res[bname + "_error"] = str(e)[:80]
            continue
        res[bname + "_ms"] = tt
        res[bname + "_tflops"] = flops / tt / 1e9
    if flex and time.time() < FLEX_DEADLINE:
        try:
            tt = time_ms(flex_call(info, q, k, v), reps)
            res["flex_ms"] = tt
            res["flex_tflops"] = flops / tt / 1e9
        except Exception as e:  # noqa: BLE001 (report and go on)
            res["flex_error"] = str(e)[:120]
    return res


def flex_call(info, q, k, v):
    """FlexAttention (torch.compile'd) on the case, or None."""
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)
    cons, hq = info["mask"], info["hq"]

    def mask_mod(b, h, qi, ki):
        keep = None
        for a, bb, c in cons:
            t = (a * qi + bb * ki + c) >= 0
            keep = t if keep is None else keep & t
        return keep
    score_mod = None
    if info["alibi"]:
        def score_mod(score, b, h, qi, ki):
            return score + torch.exp2(-8.0 * (h + 1) / hq) * (ki - qi)
    elif info["softcap"] > 0:
        cap = info["softcap"]

        def score_mod(score, b, h, qi, ki):
            return cap * torch.tanh(score / cap)
    bm = create_block_mask(mask_mod, None, None, info["lq"], info["lk"],
                           device="cuda") if cons else None
    flex = torch.compile(flex_attention, dynamic=False)
    kw = {"score_mod": score_mod, "block_mask": bm, "scale": info["scale"],
          "enable_gqa": info["hq"] != info["hkv"]}
    flex(q, k, v, **kw)
    return lambda: flex(q, k, v, **kw)


def main():
    warnings.filterwarnings("ignore", category=UserWarning)
    carry, out_dir = sys.argv[1], sys.argv[2]
    filt = sys.argv[3] if len(sys.argv) > 3 else ""
    os.makedirs(out_dir, exist_ok=True)
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    print(torch.cuda.get_device_name(), "torch", torch.__version__,
          flush=True)
    order = [line.split()[0] for line in open(os.path.join(carry,
                                                           "cases.txt"))
             if line.strip() and not line.startswith("#")]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int.from_bytes(os.urandom(4), "little"))
    results, failed = {}, 0
    for name in order:
        if filt and not re.search(filt, name):
            continue
        info = json.load(open(os.path.join(carry, name + ".json")))
        bench = info.get("role") == "bench"
        try:
            kern = Kernel(carry, info)
            r = {}
            res, tensors = check_case(info, kern, gen, False, bench)
            r["check"] = res
            if not bench:
                res30, _ = check_case(info, kern, gen, True, False)
                r["check_x30"] = res30
            ok = res["ok"] and r.get("check_x30", {"ok": True})["ok"]
            if bench:
                r["bench"] = bench_case(info, kern, tensors,
                                        name in FLEX_CASES)
            del tensors
        except Exception as e:  # noqa: BLE001 (one line per broken case)
            # This file's failing line too: one line a case.
            at = [f for f in traceback.extract_tb(e.__traceback__)
                  if f.filename == __file__][-1]
            r, ok = {"error": f"{e} ({at.name}:{at.lineno})"}, False
        r["ok"] = ok
        r["schedule"] = info["schedule"]
        results[name] = r
        failed += not ok
        line = f"{'PASS' if ok else 'FAIL'} {name:20s}"
        if "error" in r:
            line += " " + r["error"]
        else:
            c = r["check"]
            line += f" err {c['err']:.2e} (base {c['base']:.2e} " \
                    f"{c['base_of']})"
            if c.get("sdpa_err") is not None:
                line += f" sdpa {c['sdpa_err']:.2e}"
            if "max_err" in c:
                line += f" max {c['max_err']:.2e} <= {c['max_bound']:.2e}?"
            if "check_x30" in r:
                c = r["check_x30"]
                line += f" x30 {c['err']:.2e} (base {c['base']:.2e})"
                if c.get("sdpa_err") is not None:
                    line += f" sdpa {c['sdpa_err']:.2e}"
                if "max_err" in c:
                    line += f" max {c['max_err']:.2e} <= " \
                        f"{c['max_bound']:.2e}?"
            if r["check"].get("o_gaps_written"):
                line += " O's gaps written"
            if "empty_rows" in r["check"]:
                line += f" empty rows {r['check']['empty_rows']} " \
                        f"{'ok' if r['check']['empty_rows_ok'] else 'BAD'}"
            # The timing on the case's line too, so that a run cut short
            # keeps what it measured.
            if "bench" in r:
                bres = r["bench"]
                line += f" | {bres['tcc_ms']:.3f} ms {bres['tcc_tflops']:.0f} TFLOP/s"
                for peer in ("flash", "efficient", "cudnn", "flex"):
                    if peer + "_ms" in bres:
                        line += f", {peer} {bres[peer + '_ms']:.3f}"
        print(line, flush=True)
        torch.cuda.empty_cache()
    json.dump(results, open(os.path.join(out_dir, "results.json"), "w"),
              indent=1)
    print("\n| case | schedule | tcc ms | tcc TFLOP/s | flash (f32: "
          "efficient) TFLOP/s | "
          "ratio | cudnn | math | flex | ratio flex |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
          "---: |")
    for name, r in results.items():
        bres = r.get("bench")
        if not bres:
            continue
        # f32: the ratio is to SDPA's efficient backend (no flash).
        fl = bres.get("flash_tflops") or bres.get("efficient_tflops")
        ratio = f"{bres['tcc_tflops'] / fl:.2f}" if fl else "-"

        def f(x):
            return f"{x:.0f}" if x else "-"
        fx = bres.get("flex_tflops")
        rfx = f"{bres['tcc_tflops'] / fx:.2f}" if fx else "-"
        print(f"| {name} | {','.join(map(str, r['schedule']))} | "
              f"{bres['tcc_ms']:.3f} | {bres['tcc_tflops']:.0f} | {f(fl)} | "
              f"{ratio} | {f(bres.get('cudnn_tflops'))} | "
              f"{f(bres.get('math_tflops'))} | {f(fx)} | "
              f"{rfx} |")
    print(f"\n{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
