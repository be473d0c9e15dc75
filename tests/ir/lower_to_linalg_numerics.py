#!/usr/bin/python3
"""Numeric check of tcc-lower-to-linalg on the host.

Every case is a function of tcc ops on fresh random inputs. All cases go into
one module, which is lowered with `tcc-opt --tcc-lower-to-linalg`, taken to
LLVM IR by the upstream pipeline (mlir-opt, mlir-translate), compiled with
clang into a shared library and called through ctypes. Each result is
compared with an independent NumPy reference under the format's rules:
narrow floats (f16, bf16, f8) are computed in f32 and rounded once to
nearest even. The reference's own dtype rounding is written here from
scratch (nearest grid point, ties to the even code), not shared with the
compiler.

Usage: lower_to_linalg_numerics.py --tcc-opt build/compiler/tcc-opt
           [--llvm-bin /usr/lib/llvm-22/bin] [--seed N] [-k SUBSTRING]
           [--keep DIR]
Needs NumPy (Debian's /usr/bin/python3), and mlir-opt, mlir-translate and
clang from --llvm-bin. Exits 1 when a case fails; prints the seed to rerun.
"""
import argparse
import ctypes
import math
import os
import string
import subprocess
import sys
import tempfile

import numpy as np

LLVM_BIN = "/usr/lib/llvm-22/bin"

# The upstream pipeline of the task, plus the two passes it needs beyond
# that: lower-affine (convert-linalg-to-loops and expand-strided-metadata
# emit affine.apply) and convert-math-to-libm (math.erf becomes a call to
# erff).
PIPELINE = [
    "--linalg-fuse-elementwise-ops",
    "--eliminate-empty-tensors",
    "--one-shot-bufferize=bufferize-function-boundaries=true "
    "function-boundary-type-conversion=identity-layout-map",
    "--convert-linalg-to-loops",
    "--arith-expand=include-bf16=true",
    "--convert-scf-to-cf",
    "--expand-strided-metadata",
    "--lower-affine",
    "--finalize-memref-to-llvm",
    "--convert-math-to-llvm",
    "--convert-math-to-libm",
    "--convert-arith-to-llvm",
    "--convert-func-to-llvm",
    "--convert-cf-to-llvm",
    "--reconcile-unrealized-casts",
]

# ---------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------

MLIR_ELT = {"f64": "f64", "f32": "f32", "f16": "f16", "bf16": "bf16",
            "f8e4m3": "f8E4M3FN", "f8e5m2": "f8E5M2", "i8": "i8",
            "i32": "i32", "i64": "i64", "bool": "i1"}
STORAGE = {"f64": np.float64, "f32": np.float32, "f16": np.float16,
           "bf16": np.uint16, "f8e4m3": np.uint8, "f8e5m2": np.uint8,
           "i8": np.int8, "i32": np.int32, "i64": np.int64, "bool": np.uint8}
FLOATS = ("f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2")
INTS = ("i8", "i32", "i64")
NARROW = ("f16", "bf16", "f8e4m3", "f8e5m2")

# (exponent bits, mantissa bits, has inf, saturates, NaN code, max code)
SMALL = {"bf16": (8, 7, True, False, 0x7FC0, 0x7F7F),
         "f8e4m3": (4, 3, False, True, 0x7F, 0x7E),
         "f8e5m2": (5, 2, True, True, 0x7E, 0x7B)}
# (mantissa bits, smallest normal exponent) for ulp computations
ULP = {"f64": (52, -1022), "f32": (23, -126), "f16": (10, -14),
       "bf16": (7, -126), "f8e4m3": (3, -6), "f8e5m2": (2, -14)}


def decode_small(bits, dt):
    eb, mb, has_inf, _, nan_code, _ = SMALL[dt]
    bits = np.asarray(bits).astype(np.int64)
    bias = 2 ** (eb - 1) - 1
    neg = ((bits >> (eb + mb)) & 1) == 1
    e = (bits >> mb) & (2 ** eb - 1)
    m = bits & (2 ** mb - 1)
    with np.errstate(all="ignore"):
        v = np.where(e == 0,
                     np.ldexp(m.astype(np.float64), 1 - bias - mb),
                     np.ldexp((m + 2 ** mb).astype(np.float64),
                              (e - bias - mb).astype(np.int64)))
    if has_inf:
        top = e == 2 ** eb - 1
        v = np.where(top & (m == 0), np.inf, v)
        v = np.where(top & (m != 0), np.nan, v)
    else:
        v = np.where((bits & (2 ** (eb + mb) - 1)) == nan_code, np.nan, v)
    return np.where(neg, -v, v)


def encode_small(x, dt):
    """float64 -> codes: the nearest grid value, ties to the even code."""
    eb, mb, has_inf, saturate, nan_code, max_code = SMALL[dt]
    grid = decode_small(np.arange(max_code + 1), dt)  # increasing, from 0
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    with np.errstate(all="ignore"):
        idx = np.clip(np.searchsorted(grid, np.nan_to_num(a, posinf=0)),
                      1, max_code)
        lo, hi = grid[idx - 1], grid[idx]
        dlo, dhi = a - lo, hi - a
        pick_hi = (dhi < dlo) | ((dhi == dlo) & (idx % 2 == 0))
        code = np.where(pick_hi, idx, idx - 1)
        code = np.where(a == 0, 0, code)
        inf_code = (2 ** eb - 1) << mb
        top = grid[-1]
        if saturate:
            code = np.where(a > top, max_code, code)
        else:
            half_ulp = (top - grid[-2]) / 2
            code = np.where(a >= top + half_ulp, inf_code,
                            np.where(a > top, max_code, code))
        code = np.where(np.isinf(a), inf_code if has_inf else max_code, code)
        code = np.where(np.isnan(a), nan_code, code)
    code = code | np.where(np.signbit(x), 1 << (eb + mb), 0)
    return code.astype(STORAGE[dt])


def to_storage(v, dt):
    """Values (float64, ints or bools) -> the dtype's storage, rounded."""
    v = np.asarray(v)
    if dt in SMALL:
        return encode_small(v.astype(np.float64), dt)
    if dt == "bool":
        return (v != 0).astype(np.uint8)
    if dt in INTS:
        if v.dtype.kind == "f":
            raise ValueError("integer references must be integers")
        return v.astype(STORAGE[dt])  # wraps
    with np.errstate(all="ignore"):
        return v.astype(STORAGE[dt])


def values(s, dt):
    """Storage -> float64 values (ints as int64, bools as bool)."""
    if dt in SMALL:
        return decode_small(s, dt)
    if dt == "bool":
        return s != 0
    if dt in INTS:
        return s.astype(np.int64)
    return s.astype(np.float64)


def rnd(v, dt):
    """v rounded to dtype dt, as float64 values."""
    return values(to_storage(v, dt), dt)


def via_f32(v, dt):
    """A result computed in the compute type: f32 for narrow floats."""
    if dt == "f64":
        return np.asarray(v, np.float64)
    with np.errstate(all="ignore"):
        return rnd(np.asarray(v, np.float64).astype(np.float32)
                   .astype(np.float64), dt)


def ulp(v, dt):
    mb, emin = ULP[dt]
    with np.errstate(all="ignore"):
        _, e = np.frexp(np.where(np.isfinite(v), v, 0))
    return np.ldexp(1.0, np.maximum(e - 1, emin) - mb)

# ---------------------------------------------------------------------------
# Tensors and cases
# ---------------------------------------------------------------------------


class Tensor:
    def __init__(self, dt, storage):
        self.dt = dt
        self.s = np.ascontiguousarray(storage, dtype=STORAGE[dt])

    @property
    def v(self):
        return values(self.s, self.dt)

    @property
    def type(self):
        return mlir_type(self.dt, self.s.shape)


def mlir_type(dt, shape):
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{MLIR_ELT[dt]}>"


class Case:
    def __init__(self, name, inputs, body, ref, tol=None):
        self.name, self.inputs, self.body, self.ref = name, inputs, body, ref
        self.tol = tol or {}


CASES = []


def case(name, inputs, body, ref, **tol):
    CASES.append(Case(name, inputs, body, ref, tol))


rng = None


def fl(dt, shape, lo=-3.0, hi=3.0, specials=()):
    v = rng.uniform(lo, hi, size=shape)
    flat = v.reshape(-1)
    for s in specials:
        if flat.size:
            flat[rng.integers(flat.size)] = s
    return Tensor(dt, to_storage(v, dt))


def it(dt, shape, lo, hi):
    return Tensor(dt, rng.integers(lo, hi, size=shape, endpoint=True))


def bo(shape):
    return Tensor("bool", rng.integers(0, 1, size=shape, endpoint=True))


def lit(dt, vals):
    vals = np.asarray(vals)
    if dt in INTS or dt == "bool":
        return Tensor(dt, vals)
    return Tensor(dt, to_storage(vals.astype(np.float64), dt))

# ---------------------------------------------------------------------------
# Compile and run
# ---------------------------------------------------------------------------


def desc_type(rank):
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
              ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank),
                   ("strides", ctypes.c_int64 * rank)]
    return type(f"Desc{rank}", (ctypes.Structure,), {"_fields_": fields})


def make_desc(arr):
    d = desc_type(arr.ndim)()
    ptr = arr.ctypes.data
    d.allocated = d.aligned = ptr
    d.offset = 0
    if arr.ndim:
        for i in range(arr.ndim):
            d.sizes[i] = arr.shape[i]
            d.strides[i] = arr.strides[i] // arr.itemsize
    return d


def read_desc(d, dt, rank):
    np_t = np.dtype(STORAGE[dt])
    shape = tuple(d.sizes) if rank else ()
    strides = tuple(d.strides) if rank else ()
    if 0 in shape:
        return np.zeros(shape, np_t)
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    base = d.aligned + d.offset * np_t.itemsize
    buf = (ctypes.c_uint8 * (extent * np_t.itemsize)).from_address(base)
    arr = np.ndarray(shape, np_t, buffer=buf,
                     strides=tuple(s * np_t.itemsize for s in strides))
    return arr.copy()


def function_text(i, c, outs):
    args = ", ".join(f"%a{j}: {t.type}" for j, t in enumerate(c.inputs))
    res_types = [mlir_type(dt, np.shape(v)) for v, dt in outs]
    subst = {f"a{j}": f"%a{j}" for j in range(len(c.inputs))}
    subst.update({f"t{j}": t.type for j, t in enumerate(c.inputs)})
    subst.update({f"r{j}": t for j, t in enumerate(res_types)})
    body = string.Template(c.body).substitute(subst)
    rets = ", ".join(f"%r{j}" for j in range(len(outs)))
    return (f"func.func @k{i}({args}) -> ({', '.join(res_types)}) "
            f"attributes {{llvm.emit_c_interface}} {{\n  {body}\n"
            f"  return {rets} : {', '.join(res_types)}\n}}\n")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.stderr.write(f"FAILED: {' '.join(cmd)}\n{r.stderr}\n")
        sys.exit(1)
    return r


def compile_module(text, tcc_opt, work):
    src = os.path.join(work, "cases.mlir")
    with open(src, "w") as f:
        f.write(text)
    lin = os.path.join(work, "linalg.mlir")
    run([tcc_opt, src, "--tcc-lower-to-linalg", "-o", lin])
    llvm_mlir = os.path.join(work, "llvm.mlir")
    run([f"{LLVM_BIN}/mlir-opt", lin, *PIPELINE, "-o", llvm_mlir])
    ll = os.path.join(work, "cases.ll")
    run([f"{LLVM_BIN}/mlir-translate", "--mlir-to-llvmir", llvm_mlir,
         "-o", ll])
    so = os.path.join(work, "cases.so")
    # --no-undefined: the kernels may need libm and libc, nothing else (no
    # memrefCopy from MLIR's runner utils).
    run([f"{LLVM_BIN}/clang", "-shared", "-fPIC", "-O1", ll, "-o", so,
         "-Wl,--no-undefined", "-lm"])
    return ctypes.CDLL(so)


def compare(got, exp, dt, tol):
    """Returns an error message or None."""
    if dt in INTS or dt == "bool":
        if got.shape != exp.shape or not np.array_equal(got, exp):
            bad = np.argwhere(got != exp)[:3] if got.shape == exp.shape else []
            return (f"mismatch at {bad.tolist() if len(bad) else '?'}: "
                    f"got {got.reshape(-1)[:8]} want {exp.reshape(-1)[:8]}")
        return None
    g, e = values(got, dt), values(exp, dt)
    if g.shape != e.shape:
        return f"shape {g.shape} vs {e.shape}"
    gn, en = np.isnan(g), np.isnan(e)
    if not np.array_equal(gn, en):
        i = np.argwhere(gn != en)[0]
        return f"NaN mismatch at {i.tolist()}: got {g[tuple(i)]} want {e[tuple(i)]}"
    fin = ~en
    with np.errstate(all="ignore"):
        inf = fin & np.isinf(e)
        if not np.array_equal(g[inf], e[inf]):
            return "infinity mismatch"
        m = fin & ~inf
        allowed = (np.broadcast_to(tol.get("atol", 0.0), e.shape)
                   + tol.get("rtol", 0.0) * np.abs(e)
                   + tol.get("ulp", 0) * ulp(e, dt))
        err = np.abs(g - e)
        bad = m & ~(err <= allowed)
    if bad.any():
        i = np.argwhere(bad)[0]
        t = tuple(i)
        return (f"{int(bad.sum())} elements off, first at {i.tolist()}: "
                f"got {g[t]!r} want {e[t]!r} (allowed {allowed[t]:.3g})")
    return None


def run_cases(cases, refs, text, tcc_opt, work):
    """Compiles all cases into one library, runs them; returns the number
    of failures."""
    lib = compile_module(text, tcc_opt, work)

    failures = 0
    for i, (c, outs) in enumerate(zip(cases, refs)):
        descs = [make_desc(t.s) for t in c.inputs]
        res_types = [desc_type(np.ndim(v)) for v, _ in outs]
        if len(outs) == 1:
            res = res_types[0]()
            res_list = [res]
        else:
            res = type("Results", (ctypes.Structure,), {"_fields_": [
                (f"r{j}", t) for j, t in enumerate(res_types)]})()
            res_list = [getattr(res, f"r{j}") for j in range(len(outs))]
        fn = getattr(lib, f"_mlir_ciface_k{i}")
        fn.restype = None
        fn(ctypes.byref(res), *[ctypes.byref(d) for d in descs])
        errors = []
        for j, ((v, dt), d) in enumerate(zip(outs, res_list)):
            got = read_desc(d, dt, np.ndim(v))
            tol = {k: (f(*c.inputs) if callable(f) else f)
                   for k, f in c.tol.items()}
            msg = compare(got, to_storage(v, dt), dt, tol)
            if msg:
                errors.append(f"result {j} ({dt}): {msg}")
        status = "FAIL" if errors else "ok"
        print(f"{status:4} {c.name}" + "".join(f"\n     {e}" for e in errors))
        failures += bool(errors)
    return failures


def main():
    global rng, LLVM_BIN
    ap = argparse.ArgumentParser()
    ap.add_argument("--tcc-opt", required=True)
    ap.add_argument("--llvm-bin", default=LLVM_BIN)
    ap.add_argument("--seed", type=int,
                    default=int.from_bytes(os.urandom(4), "little"))
    ap.add_argument("-k", default="", help="run cases whose name contains")
    ap.add_argument("--keep", help="keep the build files in this folder")
    args = ap.parse_args()
    LLVM_BIN = args.llvm_bin
    print(f"seed {args.seed}")
    rng = np.random.default_rng(args.seed)
    define_cases()
    cases = [c for c in CASES if args.k in c.name]
    refs = []
    for c in cases:
        with np.errstate(all="ignore"):
            outs = c.ref(*c.inputs)
        if not isinstance(outs, list):
            outs = [outs]
        refs.append([(np.asarray(v), dt) for v, dt in outs])
    text = "".join(function_text(i, c, refs[i]) for i, c in enumerate(cases))
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        failures = run_cases(cases, refs, text, args.tcc_opt, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="tcc-numerics-") as work:
            failures = run_cases(cases, refs, text, args.tcc_opt, work)
    print(f"{len(cases) - failures}/{len(cases)} cases passed (seed "
          f"{args.seed})")
    return 1 if failures else 0

# ---------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------


def f64(x):
    return np.asarray(x, np.float64)


def bshape(*shapes):
    return np.broadcast_shapes(*shapes)


def wrap(v, dt):
    """Python ints -> the dtype's two's-complement wrap, as int64."""
    bits = {"i8": 8, "i32": 32, "i64": 64}[dt]
    v = int(v) & ((1 << bits) - 1)
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def int_div(a, b, dt):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return wrap(q if (a < 0) == (b < 0) else -q, dt)


def int_pow(a, e, dt):
    if e < 0:
        return 1 if a == 1 else ((-1 if e % 2 else 1) if a == -1 else 0)
    return wrap(pow(a, e, 1 << 64), dt)


def elementwise_int(fn, dt, *ts):
    shape = bshape(*[t.s.shape for t in ts])
    vs = [np.broadcast_to(t.v, shape).reshape(-1) for t in ts]
    out = [fn(*[int(v[i]) for v in vs]) for i in range(int(np.prod(shape)))]
    return np.array(out, np.int64).reshape(shape)


def sum_error(abs_sum, n, dt):
    """Error allowed to an accumulation of n terms whose magnitudes add up to
    abs_sum, in the compute type of dt (f32, f64 for f64): sqrt(n) unit
    roundoffs of abs_sum, generous for random rounding, tight enough that a
    missing or wrong term of size abs_sum / n shows."""
    u = 2.0 ** -53 if dt == "f64" else 2.0 ** -24
    return u * math.sqrt(max(n, 1)) * np.asarray(abs_sum, np.float64)


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def gelu(x, approx):
    if approx:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi)
                                      * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def cast_ref(t, to):
    """tcc.cast reference from the input's exact values."""
    if to == "bool":
        return t.v != 0
    if t.dt == "bool":
        return t.s.astype(np.int64) if to in INTS else t.s.astype(np.float64)
    if to in INTS:
        if t.dt in INTS:
            return t.v  # to_storage wraps
        bits = {"i8": 8, "i32": 32, "i64": 64}[to]
        v = t.v
        out = np.zeros(v.shape, np.int64)
        lim = 2.0 ** (bits - 1)
        with np.errstate(all="ignore"):
            ok = (v >= -lim) & (v < lim)
            out[ok] = np.trunc(v[ok]).astype(np.int64)
        out[v >= lim] = 2 ** (bits - 1) - 1
        out[v < -lim] = -(2 ** (bits - 1))
        return out
    return t.v.astype(np.float64)  # to_storage rounds once


def topk_ref(x, k, axis, largest):
    xv = np.moveaxis(x, axis, -1)
    rows = xv.reshape(-1, xv.shape[-1])
    vals, idxs = [], []
    for r in rows:
        def key(i):
            v = r[i]
            nan = isinstance(v, float) and math.isnan(v)
            if largest:
                return (0 if nan else 1, 0 if nan else -v, i)
            return (1 if nan else 0, 0 if nan else v, i)
        order = sorted(range(len(r)), key=key)[:k]
        idxs.append(order)
        vals.append([r[i] for i in order])
    shape = xv.shape[:-1] + (k,)
    v = np.moveaxis(np.array(vals, dtype=rows.dtype).reshape(shape), -1, axis)
    i = np.moveaxis(np.array(idxs, np.int64).reshape(shape), -1, axis)
    return v, i


def arg_ref(x, axis, is_max, keepdims):
    xv = np.moveaxis(x, axis, -1)
    rows = xv.reshape(-1, xv.shape[-1])
    out = []
    for r in rows:
        best = None
        for i, v in enumerate(r):
            if isinstance(v, float) and math.isnan(v):
                best = i
                break
            if best is None or (v > r[best] if is_max else v < r[best]):
                best = i
        out.append(best)
    res = np.array(out, np.int64).reshape(xv.shape[:-1])
    return np.expand_dims(res, axis) if keepdims else res


def pool_out(n, k, s, pb, pe, ceil, d=1):
    span = d * (k - 1) + 1
    avail = n + pb + pe - span
    out = (-(-avail // s) if ceil else avail // s) + 1
    if ceil and (out - 1) * s >= n + pb:
        out -= 1
    return out


def conv_ref(x, w, b, strides, pads, dil, groups):
    """Direct definition: out[n, o, y, x] = sum x[.., y*s - p + kh*d, ..]."""
    N, C, H, W = x.shape
    O, Cg, KH, KW = w.shape
    OH = pool_out(H, KH, strides[0], pads[0], pads[2], False, dil[0])
    OW = pool_out(W, KW, strides[1], pads[1], pads[3], False, dil[1])
    out = np.zeros((N, O, OH, OW))
    F = O // groups
    for o in range(O):
        g = o // F
        for kh in range(KH):
            for kw in range(KW):
                for oy in range(OH):
                    iy = oy * strides[0] - pads[0] + kh * dil[0]
                    if not 0 <= iy < H:
                        continue
                    for ox in range(OW):
                        ix = ox * strides[1] - pads[1] + kw * dil[1]
                        if not 0 <= ix < W:
                            continue
                        out[:, o, oy, ox] += x[:, g * Cg:(g + 1) * Cg, iy,
                                               ix] @ w[o, :, kh, kw]
    if b is not None:
        out += b[None, :, None, None]
    return out


def conv_t_ref(x, w, b, strides, pads, dil, outpad, groups):
    """Scatter definition: x[n, c, i, j] * w[c, f, kh, kw] lands at
    (i*s - p + kh*d, j*s - p + kw*d) of output channel g*F + f."""
    N, C, H, W = x.shape
    _, F, KH, KW = w.shape
    Cg = C // groups
    OH = (H - 1) * strides[0] - pads[0] - pads[2] + dil[0] * (KH - 1) \
        + outpad[0] + 1
    OW = (W - 1) * strides[1] - pads[1] - pads[3] + dil[1] * (KW - 1) \
        + outpad[1] + 1
    out = np.zeros((N, F * groups, OH, OW))
    for c in range(C):
        g = c // Cg
        for i in range(H):
            for j in range(W):
                for kh in range(KH):
                    y = i * strides[0] - pads[0] + kh * dil[0]
                    if not 0 <= y < OH:
                        continue
                    for kw in range(KW):
                        xx = j * strides[1] - pads[1] + kw * dil[1]
                        if not 0 <= xx < OW:
                            continue
                        out[:, g * F:(g + 1) * F, y, xx] += \
                            x[:, c, i, j][:, None] * w[c, :, kh, kw][None, :]
    if b is not None:
        out += b[None, :, None, None]
    return out


def pool_ref(x, k, s, pads, ceil, kind, include_pad=True):
    N, C, H, W = x.shape
    OH = pool_out(H, k[0], s[0], pads[0], pads[2], ceil)
    OW = pool_out(W, k[1], s[1], pads[1], pads[3], ceil)
    out = np.zeros((N, C, OH, OW))
    for oy in range(OH):
        for ox in range(OW):
            hs, ws = oy * s[0] - pads[0], ox * s[1] - pads[1]
            he = min(hs + k[0], H + pads[2])
            we = min(ws + k[1], W + pads[3])
            size = (he - hs) * (we - ws)
            h0, w0, h1, w1 = max(hs, 0), max(ws, 0), min(he, H), min(we, W)
            win = x[:, :, h0:h1, w0:w1]
            if kind == "max":
                with np.errstate(all="ignore"):
                    m = win.max(axis=(2, 3))
                out[:, :, oy, ox] = m
            else:
                div = size if include_pad else (h1 - h0) * (w1 - w0)
                out[:, :, oy, ox] = win.sum(axis=(2, 3)) / div
    return out


def arr(a):
    return "array<i64: " + ", ".join(str(int(v)) for v in a) + ">"

# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------


def define_cases():
    nan, inf = float("nan"), float("inf")

    # -- unary float ops, in every float dtype --
    unary = {
        "neg": (lambda x: -x, {}, (-3, 3)),
        "abs": (np.abs, {}, (-3, 3)),
        "exp": (np.exp, {"ulp": 1, "rtol": 4e-7}, (-5, 5)),
        "log": (np.log, {"ulp": 1, "rtol": 4e-7, "atol": 1e-7}, (0, 6)),
        "sqrt": (np.sqrt, {}, (0, 6)),
        "rsqrt": (lambda x: 1 / np.sqrt(x), {"ulp": 1}, (0, 6)),
        "reciprocal": (lambda x: 1 / x, {}, (-3, 3)),
        "tanh": (np.tanh, {"ulp": 1, "rtol": 4e-7}, (-4, 4)),
        "sigmoid": (lambda x: 1 / (1 + np.exp(-x)),
                    {"ulp": 1, "rtol": 5e-7}, (-8, 8)),
        "relu": (lambda x: np.maximum(x, 0), {}, (-3, 3)),
        "silu": (lambda x: x / (1 + np.exp(-x)), {"ulp": 1, "rtol": 5e-7},
                 (-8, 8)),
        "erf": (erf, {"ulp": 1, "rtol": 5e-7}, (-3, 3)),
        "floor": (np.floor, {}, (-5, 5)),
        "ceil": (np.ceil, {}, (-5, 5)),
    }
    for name, (fn, tol, (lo, hi)) in unary.items():
        for dt in FLOATS:
            specials = (nan, 0.0) if name not in ("log", "sqrt", "rsqrt") \
                else (nan, 0.0, inf)
            x = fl(dt, (3, 17), lo, hi, specials)
            t = dict(tol)
            if dt in NARROW:  # f32 result off by an ulp may round either way
                t["ulp"] = max(t.get("ulp", 0), 1 if tol else 0)
            case(f"{name}_{dt}", [x], f"%r0 = tcc.{name} $a0 : $t0",
                 lambda x, fn=fn, dt=dt: (via_f32(fn(x.v), dt), dt), **t)
    for approx in (False, True):
        for dt in ("f32", "f16", "bf16", "f64"):
            x = fl(dt, (4, 33), -6, 6, (nan,))
            case(f"gelu_{'tanh' if approx else 'erf'}_{dt}", [x],
                 f"%r0 = tcc.gelu $a0 {{tanh_approx = {str(approx).lower()}}}"
                 " : $t0",
                 lambda x, a=approx, dt=dt: (via_f32(gelu(x.v, a), dt), dt),
                 ulp=1, rtol=1e-6, atol=2e-7 if dt != "f64" else 1e-15)
    for dt in FLOATS:
        x = fl(dt, (5, 7), -3, 3, (nan, inf, -inf))
        case(f"clamp_{dt}", [x],
             "%r0 = tcc.clamp $a0 {min = -1.25 : f64, max = 0.75 : f64} : $t0",
             lambda x, dt=dt: (via_f32(np.minimum(np.maximum(
                 x.v, rnd(-1.25, "f32")), rnd(0.75, "f32")), dt), dt))
    x = fl("f32", (9,), -3, 3, (nan,))
    case("clamp_min_only_f32", [x], "%r0 = tcc.clamp $a0 {min = 0.5 : f64} : $t0",
         lambda x: (np.maximum(x.v, 0.5), "f32"))

    # -- unary int ops --
    for dt, (lo, hi) in {"i8": (-128, 127), "i32": (-2**31, 2**31 - 1),
                         "i64": (-2**63, 2**63 - 1)}.items():
        x = it(dt, (6, 5), lo, hi)
        x.s.reshape(-1)[0] = lo  # INT_MIN: neg and abs wrap
        case(f"neg_{dt}", [x], "%r0 = tcc.neg $a0 : $t0",
             lambda x, dt=dt: (elementwise_int(lambda a: wrap(-a, dt), dt, x),
                               dt))
        case(f"abs_{dt}", [x], "%r0 = tcc.abs $a0 : $t0",
             lambda x, dt=dt: (elementwise_int(lambda a: wrap(abs(a), dt), dt,
                                               x), dt))
        case(f"relu_{dt}", [x], "%r0 = tcc.relu $a0 : $t0",
             lambda x, dt=dt: (np.maximum(x.v, 0), dt))
        y = it(dt, (6, 5), -20, 20)
        case(f"clamp_{dt}", [y],
             "%r0 = tcc.clamp $a0 {min = -7.5 : f64, max = 1.0e30 : f64} : $t0",
             lambda y, dt=dt: (np.maximum(y.v, -7), dt))

    # -- binary float ops with broadcasting --
    binary = {
        "add": (np.add, {}), "sub": (np.subtract, {}),
        "mul": (np.multiply, {}), "div": (np.divide, {}),
        "maximum": (np.maximum, {}), "minimum": (np.minimum, {}),
        "pow": (np.power, {"ulp": 1, "rtol": 5e-7}),
    }
    for name, (fn, tol) in binary.items():
        for dt in FLOATS:
            lo = 0.1 if name == "pow" else -3
            a = fl(dt, (3, 1, 6), lo, 3, (nan, 0.0))
            b = fl(dt, (4, 6), -2, 2, (nan, 0.0, inf))
            t = dict(tol)
            if dt in NARROW and tol:
                t["ulp"] = 1
            with np.errstate(all="ignore"):
                case(f"{name}_{dt}", [a, b],
                     f"%r0 = tcc.{name} $a0, $a1 : $t0, $t1 -> $r0",
                     lambda a, b, fn=fn, dt=dt: (via_f32(fn(a.v, b.v), dt), dt),
                     **t)
    a = fl("f32", (8,), -3, 3)
    b = lit("f32", [0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, 2.0])
    a.s[:4] = [-2.0, -3.0, -0.5, -1.5]
    case("pow_negative_base_f32", [a, b],
         "%r0 = tcc.pow $a0, $a1 : $t0, $t1 -> $r0",
         lambda a, b: (via_f32(np.power(a.v, b.v), "f32"), "f32"),
         ulp=1, rtol=5e-7)

    # -- binary int ops --
    for dt, (lo, hi) in {"i8": (-128, 127), "i32": (-2**31, 2**31 - 1),
                         "i64": (-2**63, 2**63 - 1)}.items():
        a = it(dt, (4, 7), lo, hi)
        b = it(dt, (7,), lo, hi)
        for name, f in {"add": lambda x, y: x + y, "sub": lambda x, y: x - y,
                        "mul": lambda x, y: x * y,
                        "maximum": max, "minimum": min}.items():
            case(f"{name}_{dt}", [a, b],
                 f"%r0 = tcc.{name} $a0, $a1 : $t0, $t1 -> $r0",
                 lambda a, b, f=f, dt=dt: (elementwise_int(
                     lambda x, y: wrap(f(x, y), dt), dt, a, b), dt))
        a = it(dt, (3, 8), -50, 50)
        b = it(dt, (3, 8), -7, 7)
        a.s[0, :3] = [lo, lo, 17]
        b.s[0, :3] = [-1, 0, 0]
        case(f"div_{dt}", [a, b], "%r0 = tcc.div $a0, $a1 : $t0, $t1 -> $r0",
             lambda a, b, dt=dt: (elementwise_int(
                 lambda x, y: int_div(x, y, dt), dt, a, b), dt))
        a = it(dt, (3, 8), -4, 4)
        b = it(dt, (3, 8), -3, 9)
        a.s[0, :4] = [1, -1, -1, 2]
        b.s[0, :4] = [-5, -5, -4, -1]
        case(f"pow_{dt}", [a, b], "%r0 = tcc.pow $a0, $a1 : $t0, $t1 -> $r0",
             lambda a, b, dt=dt: (elementwise_int(
                 lambda x, y: int_pow(x, y, dt), dt, a, b), dt))

    # -- comparisons, logic, select --
    cmps = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
            "less_equal": np.less_equal, "greater": np.greater,
            "greater_equal": np.greater_equal}
    for name, fn in cmps.items():
        for dt in ("f32", "f16", "bf16", "f8e5m2", "i32", "i8", "bool"):
            if dt == "bool":
                a, b = bo((5, 6)), bo((6,))
            elif dt in INTS:
                a, b = it(dt, (5, 6), -3, 3), it(dt, (6,), -3, 3)
            else:
                a = fl(dt, (5, 6), -2, 2, (nan, inf))
                b = lit(dt, [0.0, 1.0, nan, -1.0, 0.5, -inf])
                a.s[0] = b.s  # some equal pairs
            with np.errstate(all="ignore"):
                case(f"{name}_{dt}", [a, b],
                     f"%r0 = tcc.{name} $a0, $a1 : $t0, $t1 -> $r0",
                     lambda a, b, fn=fn: (fn(a.v, b.v), "bool"))
    a, b = bo((4, 5)), bo((1, 5))
    case("and", [a, b], "%r0 = tcc.and $a0, $a1 : $t0, $t1 -> $r0",
         lambda a, b: (a.v & b.v, "bool"))
    case("or", [a, b], "%r0 = tcc.or $a0, $a1 : $t0, $t1 -> $r0",
         lambda a, b: (a.v | b.v, "bool"))
    case("not", [a], "%r0 = tcc.not $a0 : $t0", lambda a: (~a.v, "bool"))
    for dt in ("f32", "bf16", "f8e4m3", "i64", "bool"):
        c = bo((4, 1))
        x = bo((4, 5)) if dt == "bool" else (
            it(dt, (4, 5), -9, 9) if dt in INTS else fl(dt, (4, 5), -2, 2,
                                                       (nan,)))
        y = bo((5,)) if dt == "bool" else (
            it(dt, (5,), -9, 9) if dt in INTS else fl(dt, (5,), -2, 2))
        case(f"select_{dt}", [c, x, y],
             "%r0 = tcc.select $a0, $a1, $a2 : $t0, $t1, $t2 -> $r0",
             lambda c, x, y, dt=dt: (np.where(c.v, x.v, y.v), dt))

    # -- casts between every pair of dtypes --
    all_dts = FLOATS + INTS + ("bool",)
    float_specials = [nan, -nan, inf, -inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5,
                      -2.5, 127.9, 128.0, -128.9, 300.7, 448.0, 464.0,
                      480.0, 57344.0, 61440.0, 65504.0, 65520.0, 1e10,
                      -3e9, 2.0**31, -2.0**31, 2.0**63, -2.0**63, 1e30,
                      3.4e38, 1e-3, 1e-5, 2.0**-7, 2.0**-9, 3 * 2.0**-10,
                      2.0**-16, 2.0**-17, 5e-8, 1e-40,
                      # ties of the narrow formats (normal and subnormal)
                      1.0625, 1.1875, 1.125, 1.375, 2.0**-10, 1 + 2.0**-8,
                      1 + 3 * 2.0**-8, 1 + 2.0**-11, 1 + 3 * 2.0**-11,
                      2.0**-25, 3 * 2.0**-25, 5 * 2.0**-18, -7 * 2.0**-11]
    for src in all_dts:
        if src in FLOATS:
            vals = np.concatenate([float_specials,
                                   rng.normal(0, 50, 24),
                                   rng.normal(0, 1e-3, 8)])
            x = lit(src, vals)
        elif src == "bool":
            x = bo((16,))
        else:
            lo, hi = {"i8": (-128, 127), "i32": (-2**31, 2**31 - 1),
                      "i64": (-2**53, 2**53)}[src]
            x = it(src, (40,), lo, hi)
            x.s[:8] = np.array([0, 1, -1, lo, hi, 100, -100, 255 % (hi + 1)],
                               dtype=np.int64).astype(x.s.dtype)
        for dst in all_dts:
            if dst == src:
                continue
            case(f"cast_{src}_to_{dst}", [x], "%r0 = tcc.cast $a0 : $t0 -> $r0",
                 lambda x, dst=dst: (cast_ref(x, dst), dst))
    x = lit("i64", [2**62, -2**63, 2**63 - 1, 3 * 2**60])
    for dst in ("f32", "f64", "f16", "f8e4m3"):
        case(f"cast_i64_large_to_{dst}", [x], "%r0 = tcc.cast $a0 : $t0 -> $r0",
             lambda x, dst=dst: (x.v.astype(np.float64), dst))

    # -- sources --
    consts = [("f32", "1.5 : f32", 1.5), ("bf16", "-2.25 : bf16", -2.25),
              ("f8e4m3", "448.0 : f8E4M3FN", 448.0),
              ("f8e5m2", "-0.75 : f8E5M2", -0.75), ("f16", "0.1 : f16", 0.1),
              ("i64", "-5000000000 : i64", -5000000000),
              ("i8", "-3 : i8", -3), ("bool", "true", True),
              ("f64", "0.1 : f64", 0.1)]
    for dt, attr, v in consts:
        case(f"constant_{dt}", [lit("f32", [0.0])],
             f"%r0 = tcc.constant {{value = {attr}}} : $r0",
             lambda _, dt=dt, v=v: (np.full((3, 4), v), dt))
    for dt in ("f32", "i64", "i32", "f8e5m2", "bf16", "f16", "i8"):
        for axis in (0, 2):
            case(f"iota_{dt}_axis{axis}", [lit("f32", [0.0])],
                 f"%r0 = tcc.iota {{axis = {axis} : i64}} : $r0",
                 lambda _, dt=dt, axis=axis: (np.broadcast_to(
                     np.arange((3, 4, 40)[axis]).reshape(
                         [-1 if d == axis else 1 for d in range(3)]),
                     (3, 4, 40)).astype(np.int64), dt))

    # -- reductions --
    for kind, fn in (("sum", np.sum), ("max", np.max), ("min", np.min),
                     ("mean", np.mean)):
        for dt in ("f32", "f16", "bf16", "f8e4m3", "f64", "i32", "i8"):
            if kind == "mean" and dt in INTS:
                continue
            for axes, keep in (((1,), False), ((0, 2), True), ((0, 1, 2),
                                                               False)):
                if dt in INTS:
                    x = it(dt, (4, 5, 6), -100, 100)
                else:
                    x = fl(dt, (4, 5, 6), -2, 2)
                kd = "true" if keep else "false"
                if dt in INTS:
                    ref = (lambda x, fn=fn, axes=axes, keep=keep, dt=dt:
                           (fn(x.v, axis=axes, keepdims=keep), dt))
                    tol = {}
                else:
                    ref = (lambda x, fn=fn, axes=axes, keep=keep, dt=dt:
                           (via_f32(fn(x.v, axis=axes, keepdims=keep), dt),
                            dt))
                    # f32 accumulation vs the f64 reference
                    n = int(np.prod([x.s.shape[a] for a in axes]))
                    div = n if kind == "mean" else 1
                    tol = ({"ulp": 1, "atol": lambda x, axes=axes, keep=keep,
                            dt=dt, n=n, div=div: sum_error(np.abs(x.v).sum(
                                axis=axes, keepdims=keep) / div, n, dt)}
                           if kind in ("sum", "mean") else {})
                case(f"reduce_{kind}_{dt}_{''.join(map(str, axes))}"
                     f"{'_keep' if keep else ''}", [x],
                     f"%r0 = tcc.reduce_{kind} $a0 {{axes = {arr(axes)}, "
                     f"keepdims = {kd}}} : $t0 -> $r0", ref, **tol)
    x = fl("f32", (4, 6), -2, 2)
    x.s[0] = -np.inf
    x.s[1, 3] = np.nan
    x.s[2, :] = np.inf
    x.s[3, 2] = -np.inf
    for kind, fn in (("max", np.max), ("min", np.min), ("sum", np.sum)):
        with np.errstate(all="ignore"):
            case(f"reduce_{kind}_specials_f32", [x],
                 f"%r0 = tcc.reduce_{kind} $a0 {{axes = array<i64: 1>, "
                 "keepdims = false} : $t0 -> $r0",
                 lambda x, fn=fn: (fn(x.v, axis=1), "f32"), ulp=1,
                 atol=lambda x: sum_error(np.nan_to_num(
                     np.abs(x.v), posinf=0).sum(axis=1), 6, "f32"))
    x = fl("f16", (3, 2048), 0, 1)
    case("reduce_sum_f16_long", [x],
         "%r0 = tcc.reduce_sum $a0 {axes = array<i64: 1>, keepdims = false}"
         " : $t0 -> $r0", lambda x: (via_f32(x.v.sum(axis=1), "f16"), "f16"),
         ulp=1, atol=lambda x: sum_error(np.abs(x.v).sum(axis=1), 2048, "f16"))

    for is_max in (True, False):
        name = "argmax" if is_max else "argmin"
        for dt in ("f32", "f16", "i32", "f8e5m2"):
            for axis, keep in ((1, False), (0, True)):
                if dt in INTS:
                    x = it(dt, (5, 9), -3, 3)
                else:
                    x = lit(dt, rng.integers(-3, 3, size=(5, 9)) * 0.5)
                    if dt != "f8e5m2":
                        x.s[2, 4] = x.s[2, 7] = to_storage(nan, dt)
                        x.s[3, :] = to_storage(-inf, dt)
                case(f"{name}_{dt}_axis{axis}{'_keep' if keep else ''}", [x],
                     f"%r0 = tcc.{name} $a0 {{axis = {axis} : i64, keepdims = "
                     f"{str(keep).lower()}}} : $t0 -> $r0",
                     lambda x, a=axis, m=is_max, k=keep: (
                         arg_ref(x.v, a, m, k), "i64"))
    for dt in ("i32", "i64"):
        idx = it(dt, (3, 7), -9, 9)
        case(f"index_check_{dt}", [idx],
             "%r0 = tcc.index_check $a0 {bound = 5 : i64} : $t0 -> $r0",
             lambda i: (np.array(((i.v < -5) | (i.v >= 5)).sum()), "i32"))

    # -- topk --
    for dt in ("f32", "f16", "i32", "bf16"):
        for k, axis, largest in ((3, 1, True), (3, 1, False), (4, 0, True),
                                 (9, 1, False), (1, 1, True)):
            if dt in INTS:
                x = it(dt, (5, 9), -4, 4)
            else:
                x = lit(dt, rng.integers(-4, 4, size=(5, 9)) * 0.5)
                x.s[1, 2] = x.s[1, 6] = to_storage(nan, dt)
                x.s[4, 0] = to_storage(nan, dt)
            case(f"topk_{dt}_k{k}_axis{axis}_{'max' if largest else 'min'}",
                 [x], f"%r0, %r1 = tcc.topk $a0 {{k = {k} : i64, axis = {axis}"
                 f" : i64, largest = {str(largest).lower()}}} : $t0 -> $r0, $r1",
                 lambda x, k=k, a=axis, l=largest, dt=dt: [
                     (topk_ref(x.v, k, a, l)[0], dt),
                     (topk_ref(x.v, k, a, l)[1], "i64")])

    # -- matmul --
    mm = [("f32", "f32", (2, 3, 4), (4, 5), False, False),
          ("f32", "f32", (2, 1, 3, 4), (5, 4, 6), False, False),
          ("f32", "f32", (3, 4, 2), (3, 5, 4), True, True),
          ("f32", "f32", (7, 3), (7, 2), True, False),
          ("f16", "f16", (2, 8, 16), (2, 16, 8), False, False),
          ("bf16", "f32", (4, 32), (8, 32), False, True),
          ("f8e4m3", "f32", (3, 8), (8, 4), False, False),
          ("f64", "f64", (3, 5), (5, 2), False, False),
          ("i8", "i32", (2, 3, 9), (9, 4), False, False),
          ("i32", "i32", (3, 9), (9, 4), False, False),
          ("i8", "i8", (3, 9), (9, 4), False, False)]
    for i, (dt, odt, sa, sb, ta, tb) in enumerate(mm):
        if dt in INTS:
            a = it(dt, sa, -100, 100) if dt == "i8" else \
                it(dt, sa, -2**31, 2**31 - 1)
            b = it(dt, sb, -100, 100) if dt == "i8" else \
                it(dt, sb, -2**31, 2**31 - 1)
        else:
            a, b = fl(dt, sa, -2, 2), fl(dt, sb, -2, 2)

        def ref(a, b, ta=ta, tb=tb, odt=odt):
            x = np.swapaxes(a.v, -1, -2) if ta else a.v
            y = np.swapaxes(b.v, -1, -2) if tb else b.v
            if odt in INTS:
                r = np.matmul(x.astype(object), y.astype(object))
                return np.vectorize(lambda v: wrap(v, odt),
                                    otypes=[np.int64])(r), odt
            return via_f32(np.matmul(x, y), odt), odt
        def err(a, b, ta=ta, tb=tb, odt=odt):
            x = np.abs(np.swapaxes(a.v, -1, -2) if ta else a.v)
            y = np.abs(np.swapaxes(b.v, -1, -2) if tb else b.v)
            return sum_error(np.matmul(x, y), x.shape[-1], odt)
        case(f"matmul{i}_{dt}_to_{odt}", [a, b],
             f"%r0 = tcc.matmul $a0, $a1 {{transpose_a = {str(ta).lower()}, "
             f"transpose_b = {str(tb).lower()}}} : $t0, $t1 -> $r0", ref,
             **({} if odt in INTS else {"atol": err, "ulp": 1}))

    # -- shape ops --
    for dt, src, dst in (("f32", (2, 3, 4), (6, 4)), ("f32", (2, 3, 4), (24,)),
                         ("i64", (2, 3, 4), (4, 6)), ("f16", (6, 4), (2, 3, 4)),
                         ("bool", (), (1, 1)), ("f8e4m3", (1, 1), ()),
                         ("f32", (4, 6), (3, 8)), ("bf16", (3, 0), (0, 5))):
        x = bo(src) if dt == "bool" else (it(dt, src, -9, 9) if dt in INTS
                                          else fl(dt, src))
        case(f"reshape_{dt}_{'x'.join(map(str, src))}_to_"
             f"{'x'.join(map(str, dst))}", [x],
             "%r0 = tcc.reshape $a0 : $t0 -> $r0",
             lambda x, dst=dst, dt=dt: (x.v.reshape(dst), dt))
    for dt, shape, perm in (("f32", (2, 3, 4), (2, 0, 1)),
                            ("bool", (3, 5), (1, 0)),
                            ("f8e5m2", (2, 3, 4, 5), (0, 2, 3, 1))):
        x = bo(shape) if dt == "bool" else fl(dt, shape)
        case(f"transpose_{dt}", [x],
             f"%r0 = tcc.transpose $a0 {{perm = {arr(perm)}}} : $t0 -> $r0",
             lambda x, perm=perm, dt=dt: (np.transpose(x.v, perm), dt))
    for dt, src, dst in (("f32", (3, 1), (2, 3, 4)), ("i32", (), (2, 2)),
                         ("bf16", (1, 4), (3, 4))):
        x = it(dt, src, -9, 9) if dt in INTS else fl(dt, src)
        case(f"broadcast_to_{dt}", [x], "%r0 = tcc.broadcast_to $a0 : $t0 -> $r0",
             lambda x, dst=dst, dt=dt: (np.broadcast_to(x.v, dst), dt))
    a, b, c = it("i64", (2, 3), -9, 9), it("i64", (2, 0), 0, 1), \
        it("i64", (2, 4), -9, 9)
    case("concat_i64_axis1", [a, b, c],
         "%r0 = tcc.concat $a0, $a1, $a2 {axis = 1 : i64} : $t0, $t1, $t2 -> $r0",
         lambda a, b, c: (np.concatenate([a.v, b.v, c.v], 1), "i64"))
    a, b = fl("f16", (1, 3)), fl("f16", (2, 3))
    case("concat_f16_axis0", [a, b],
         "%r0 = tcc.concat $a0, $a1 {axis = 0 : i64} : $t0, $t1 -> $r0",
         lambda a, b: (np.concatenate([a.v, b.v], 0), "f16"))
    for dt, shape, starts, steps, counts in (
            ("f32", (6, 7), (5, 1), (-2, 2), (3, 3)),
            ("f32", (6, 7), (1, 0), (1, 3), (4, 3)),
            ("f16", (4, 5, 3), (3, 4, 0), (-1, -1, 1), (4, 5, 3)),
            ("i32", (5,), (2,), (1,), (0,)),
            ("bool", (5, 4), (4, 2), (-3, 1), (2, 2)),
            # start 0, step 1 on a shortened axis: no plain-d_i map
            ("f32", (9, 5), (0, 0), (1, 1), (4, 5)),
            ("i8", (6, 7), (0, 2), (1, -1), (3, 3)),
            ("f16", (6, 7), (0, 1), (1, 2), (6, 3))):
        x = bo(shape) if dt == "bool" else (it(dt, shape, -9, 9)
                                            if dt in INTS else fl(dt, shape))
        idx = tuple(slice(s, s + n * st if s + n * st >= 0 else None, st)
                    for s, st, n in zip(starts, steps, counts))
        case(f"slice_{dt}_{'x'.join(map(str, shape))}_"
             f"{'_'.join(map(str, starts))}_{'_'.join(map(str, steps))}", [x],
             f"%r0 = tcc.slice $a0 {{starts = {arr(starts)}, steps = "
             f"{arr(steps)}}} : $t0 -> $r0",
             lambda x, idx=idx, dt=dt: (x.v[idx], dt))
    for dt, shape, pads, value in (("f32", (2, 3), (1, 0, 2, 3), 1.5),
                                   ("i32", (2, 2, 2), (0, 1, 0, 1, 0, 2), -7),
                                   ("bool", (3,), (2, 1), 1.0),
                                   ("f8e4m3", (2, 2), (1, 1, 1, 1), 1000.0)):
        x = bo(shape) if dt == "bool" else (it(dt, shape, -9, 9)
                                            if dt in INTS else fl(dt, shape))
        r = len(shape)
        width = [(pads[d], pads[d + r]) for d in range(r)]
        case(f"pad_{dt}", [x],
             f"%r0 = tcc.pad $a0 {{pads = {arr(pads)}, value = {value:e} : f64}}"
             " : $t0 -> $r0",
             lambda x, w=width, v=value, dt=dt: (
                 np.pad(x.v.astype(np.float64) if dt not in INTS else x.v,
                        w, constant_values=(v if dt not in INTS else int(v))),
                 dt))

    # -- gathers --
    def gather_ref(d, i, axis):
        n = d.s.shape[axis]
        idx = np.where(i.v < 0, i.v + n, i.v).clip(0, n - 1)
        return np.take(d.v, idx, axis=axis)
    for dt, dshape, ishape, axis, it_dt in (
            ("f32", (10, 4), (2, 3), 0, "i64"), ("f16", (3, 6, 2), (4,), 1, "i32"),
            ("i64", (5, 3), (), 0, "i32"), ("f8e4m3", (2, 5), (3, 2), 1, "i64")):
        d = it(dt, dshape, -99, 99) if dt in INTS else fl(dt, dshape)
        n = dshape[axis]
        idx = it(it_dt, ishape, -n - 2, n + 2)  # some out of range: clamped
        case(f"gather_{dt}_axis{axis}", [d, idx],
             f"%r0 = tcc.gather $a0, $a1 {{axis = {axis} : i64}} : $t0, $t1 -> $r0",
             lambda d, i, a=axis, dt=dt: (gather_ref(d, i, a), dt))

    def take_ref(d, i, axis):
        n = d.s.shape[axis]
        idx = np.where(i.v < 0, i.v + n, i.v).clip(0, n - 1)
        return np.take_along_axis(d.v, idx, axis=axis)
    for dt, dshape, ishape, axis in (("f32", (4, 5), (4, 7), 1),
                                     ("bf16", (6, 3), (2, 3), 0),
                                     ("i8", (3, 4, 5), (3, 4, 2), 2)):
        d = it(dt, dshape, -99, 99) if dt in INTS else fl(dt, dshape)
        n = dshape[axis]
        idx = it("i64", ishape, -n - 1, n)
        case(f"take_along_axis_{dt}_axis{axis}", [d, idx],
             f"%r0 = tcc.take_along_axis $a0, $a1 {{axis = {axis} : i64}} : "
             "$t0, $t1 -> $r0",
             lambda d, i, a=axis, dt=dt: (take_ref(d, i, a), dt))

    # -- convolution, pooling, batch norm --
    convs = [("f32", (2, 4, 9, 8), (6, 2, 3, 3), True, (2, 1), (1, 0, 2, 1),
              (1, 2), 2),
             ("f32", (1, 3, 7, 7), (3, 1, 3, 3), False, (1, 1), (1, 1, 1, 1),
              (1, 1), 3),
             ("f32", (1, 2, 5, 6), (4, 2, 1, 2), True, (1, 2), (0, 0, 0, 0),
              (1, 1), 1),
             ("f16", (2, 4, 6, 6), (4, 4, 3, 3), True, (1, 1), (1, 1, 1, 1),
              (1, 1), 1),
             ("bf16", (1, 4, 8, 8), (2, 2, 2, 2), False, (2, 2), (0, 0, 0, 0),
              (2, 2), 2),
             ("f8e4m3", (1, 2, 5, 5), (2, 2, 3, 3), True, (1, 1), (0, 0, 0, 0),
              (1, 1), 1)]
    for i, (dt, xs, ws, bias, st, pads, dil, g) in enumerate(convs):
        x, w = fl(dt, xs, -2, 2), fl(dt, ws, -1, 1)
        ins = [x, w] + ([fl(dt, (ws[0],), -1, 1)] if bias else [])
        operands = "$a0, $a1" + (", $a2" if bias else "")
        types = "$t0, $t1" + (", $t2" if bias else "")
        case(f"conv2d{i}_{dt}", ins,
             f"%r0 = tcc.conv2d {operands} {{strides = {arr(st)}, pads = "
             f"{arr(pads)}, dilations = {arr(dil)}, groups = {g} : i64}} : "
             f"{types} -> $r0",
             lambda x, w, *b, st=st, pads=pads, dil=dil, g=g, dt=dt: (
                 via_f32(conv_ref(x.v, w.v, b[0].v if b else None, st, pads,
                                  dil, g), dt), dt),
             atol=lambda x, w, *b, st=st, pads=pads, dil=dil, g=g, dt=dt:
             sum_error(conv_ref(np.abs(x.v), np.abs(w.v),
                                np.abs(b[0].v) if b else None, st, pads, dil,
                                g), w.s[0].size + 1, dt), ulp=1)
    convts = [("f32", (1, 2, 4, 4), (2, 3, 3, 3), True, (2, 2), (1, 1, 1, 1),
               (1, 1), (1, 1), 1),
              ("f32", (2, 4, 3, 5), (4, 1, 2, 3), False, (1, 2), (0, 1, 0, 2),
               (2, 1), (0, 1), 2),
              ("f32", (1, 3, 5, 4), (3, 2, 3, 2), True, (3, 1), (2, 0, 1, 0),
               (1, 2), (2, 0), 1),
              ("f16", (1, 4, 4, 4), (4, 2, 3, 3), True, (2, 2), (0, 0, 0, 0),
               (1, 1), (0, 0), 2),
              ("f32", (1, 2, 3, 3), (2, 2, 3, 3), False, (1, 1), (2, 2, 2, 2),
               (1, 1), (0, 0), 1)]
    for i, (dt, xs, ws, bias, st, pads, dil, op, g) in enumerate(convts):
        x, w = fl(dt, xs, -2, 2), fl(dt, ws, -1, 1)
        ins = [x, w] + ([fl(dt, (ws[1] * g,), -1, 1)] if bias else [])
        operands = "$a0, $a1" + (", $a2" if bias else "")
        types = "$t0, $t1" + (", $t2" if bias else "")
        case(f"conv_transpose2d{i}_{dt}", ins,
             f"%r0 = tcc.conv_transpose2d {operands} {{strides = {arr(st)}, "
             f"pads = {arr(pads)}, dilations = {arr(dil)}, output_padding = "
             f"{arr(op)}, groups = {g} : i64}} : {types} -> $r0",
             lambda x, w, *b, st=st, pads=pads, dil=dil, op=op, g=g, dt=dt: (
                 via_f32(conv_t_ref(x.v, w.v, b[0].v if b else None, st, pads,
                                    dil, op, g), dt), dt),
             atol=lambda x, w, *b, st=st, pads=pads, dil=dil, op=op, g=g,
             dt=dt: sum_error(conv_t_ref(np.abs(x.v), np.abs(w.v),
                                         np.abs(b[0].v) if b else None, st,
                                         pads, dil, op, g),
                              x.s.shape[1] * w.s[0, 0].size + 1, dt), ulp=1)
    pools = [("f32", (2, 3, 7, 8), (3, 3), (2, 2), (1, 1, 1, 1), False),
             ("f32", (1, 2, 7, 8), (3, 2), (2, 2), (1, 0, 1, 1), True),
             ("f16", (1, 2, 6, 6), (2, 2), (2, 2), (0, 0, 0, 0), False),
             ("f8e4m3", (1, 1, 5, 5), (3, 3), (2, 2), (1, 1, 1, 1), True),
             ("f32", (1, 1, 6, 5), (2, 3), (3, 2), (1, 1, 0, 1), True)]
    for i, (dt, xs, k, st, pads, ceil) in enumerate(pools):
        x = fl(dt, xs, -3, 0, (nan,) if dt == "f32" else ())
        attrs = (f"kernel = {arr(k)}, strides = {arr(st)}, pads = {arr(pads)}"
                 f", ceil_mode = {str(ceil).lower()}")
        case(f"max_pool2d{i}_{dt}", [x],
             f"%r0 = tcc.max_pool2d $a0 {{{attrs}}} : $t0 -> $r0",
             lambda x, k=k, st=st, pads=pads, ceil=ceil, dt=dt: (
                 pool_ref(x.v, k, st, pads, ceil, "max"), dt))
        y = fl(dt, xs, -3, 3)
        for inc in (True, False):
            case(f"avg_pool2d{i}_{dt}_{'incl' if inc else 'excl'}", [y],
                 f"%r0 = tcc.avg_pool2d $a0 {{{attrs}, count_include_pad = "
                 f"{str(inc).lower()}}} : $t0 -> $r0",
                 lambda y, k=k, st=st, pads=pads, ceil=ceil, dt=dt, inc=inc: (
                     via_f32(pool_ref(y.v, k, st, pads, ceil, "avg", inc), dt),
                     dt), rtol=1e-6, ulp=1,
                 atol=lambda y, k=k, st=st, pads=pads, ceil=ceil, dt=dt,
                 inc=inc: sum_error(pool_ref(np.abs(y.v), k, st, pads, ceil,
                                             "avg", inc), k[0] * k[1], dt))
    for dt in ("f32", "f16"):
        x = fl(dt, (2, 3, 5, 7))
        case(f"global_avg_pool2d_{dt}", [x],
             "%r0 = tcc.global_avg_pool2d $a0 : $t0 -> $r0",
             lambda x, dt=dt: (via_f32(x.v.mean(axis=(2, 3), keepdims=True),
                                       dt), dt), rtol=1e-6, ulp=1,
             atol=lambda x, dt=dt: sum_error(np.abs(x.v).mean(
                 axis=(2, 3), keepdims=True), 35, dt))
    for dt, shape in (("f32", (2, 3, 4, 5)), ("bf16", (4, 3)),
                      ("f64", (2, 3, 4))):
        x = fl(dt, shape)
        s, b, m = fl(dt, (3,)), fl(dt, (3,)), fl(dt, (3,))
        v = fl(dt, (3,), 0, 2)
        bshape_ = [1, 3] + [1] * (len(shape) - 2)

        def bn(x, s, b, m, v, dt=dt, bs=bshape_):
            r = [t.v.reshape(bs) for t in (s, b, m, v)]
            return via_f32((x.v - r[2]) / np.sqrt(r[3] + 1e-5) * r[0] + r[1],
                           dt), dt
        case(f"batch_norm_{dt}", [x, s, b, m, v],
             "%r0 = tcc.batch_norm $a0, $a1, $a2, $a3, $a4 {eps = 1.0e-5 : f64}"
             " : ($t0, $t1, $t2, $t3, $t4) -> $r0", bn, rtol=2e-6, atol=1e-6,
             ulp=1)

    # -- chains of ops, so that elementwise fusion and bufferization see
    # producers and consumers together --
    for dt in ("f32", "f16", "bf16"):
        x = fl(dt, (3, 4, 10), -4, 4)

        def softmax(x, dt=dt):
            r = lambda v: via_f32(v, dt)
            m = x.v.max(axis=-1, keepdims=True)
            e = r(np.exp(r(x.v - m)))
            return r(e / r(e.sum(axis=-1, keepdims=True))), dt
        case(f"chain_softmax_{dt}", [x], """
  %m = tcc.reduce_max $a0 {axes = array<i64: 2>, keepdims = true} : $t0 -> $m_t
  %d = tcc.sub $a0, %m : $t0, $m_t -> $t0
  %e = tcc.exp %d : $t0
  %s = tcc.reduce_sum %e {axes = array<i64: 2>, keepdims = true} : $t0 -> $m_t
  %r0 = tcc.div %e, %s : $t0, $m_t -> $t0""".replace(
            "$m_t", mlir_type(dt, (3, 4, 1))), softmax, ulp=2, rtol=2e-6)
    q, k, v = fl("f32", (2, 5, 8)), fl("f32", (2, 7, 8)), fl("f32", (2, 7, 8))

    def attention(q, k, v):
        s = (q.v @ np.swapaxes(k.v, -1, -2)) * 0.25
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)
        return p @ v.v, "f32"
    st, mt = mlir_type("f32", (2, 5, 7)), mlir_type("f32", (2, 5, 1))
    case("chain_attention_f32", [q, k, v], f"""
  %s = tcc.matmul $a0, $a1 {{transpose_b = true}} : $t0, $t1 -> {st}
  %c = tcc.constant {{value = 0.25 : f32}} : tensor<f32>
  %ss = tcc.mul %s, %c : {st}, tensor<f32> -> {st}
  %m = tcc.reduce_max %ss {{axes = array<i64: 2>, keepdims = true}} : {st} -> {mt}
  %d = tcc.sub %ss, %m : {st}, {mt} -> {st}
  %e = tcc.exp %d : {st}
  %z = tcc.reduce_sum %e {{axes = array<i64: 2>, keepdims = true}} : {st} -> {mt}
  %p = tcc.div %e, %z : {st}, {mt} -> {st}
  %r0 = tcc.matmul %p, $a2 : {st}, $t2 -> $r0""", attention, rtol=2e-5,
         atol=2e-6)
    x, w = fl("f32", (1, 3, 9, 9)), fl("f32", (4, 3, 3, 3), -1, 1)
    sc, bi, mu = fl("f32", (4,)), fl("f32", (4,)), fl("f32", (4,))
    va = fl("f32", (4,), 0.5, 2)

    def conv_block(x, w, sc, bi, mu, va):
        y = conv_ref(x.v, w.v, None, (1, 1), (1, 1, 1, 1), (1, 1), 1)
        r = lambda t: t.v.reshape(1, 4, 1, 1)
        y = (y - r(mu)) / np.sqrt(r(va) + 1e-5) * r(sc) + r(bi)
        y = np.maximum(y, 0)
        return pool_ref(y, (2, 2), (2, 2), (0, 0, 0, 0), True, "max"), "f32"
    yt = mlir_type("f32", (1, 4, 9, 9))
    case("chain_conv_bn_relu_pool_f32", [x, w, sc, bi, mu, va], f"""
  %y = tcc.conv2d $a0, $a1 {{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}} : $t0, $t1 -> {yt}
  %n = tcc.batch_norm %y, $a2, $a3, $a4, $a5 {{eps = 1.0e-5 : f64}} : ({yt}, $t2, $t3, $t4, $t5) -> {yt}
  %a = tcc.relu %n : {yt}
  %r0 = tcc.max_pool2d %a {{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true}} : {yt} -> $r0""",
         conv_block, rtol=1e-5, atol=1e-5)
    emb, ids = fl("bf16", (20, 6)), it("i32", (2, 5), -20, 19)
    pos = fl("bf16", (5, 6))

    def embed(emb, ids, pos):
        r = lambda t: via_f32(t, "bf16")
        e = np.take(emb.v, np.where(ids.v < 0, ids.v + 20, ids.v), axis=0)
        h = np.maximum(r(e + pos.v), 0)  # exact: the topk order is stable
        h = np.concatenate([h, h[:, ::-1, :]], axis=1)
        vals, idx = topk_ref(h, 2, 2, True)
        return [(vals, "bf16"), (idx, "i64")]
    gt, ct = mlir_type("bf16", (2, 5, 6)), mlir_type("bf16", (2, 10, 6))
    case("chain_embedding_bf16", [emb, ids, pos], f"""
  %g = tcc.gather $a0, $a1 {{axis = 0 : i64}} : $t0, $t1 -> {gt}
  %h = tcc.add %g, $a2 : {gt}, $t2 -> {gt}
  %a = tcc.relu %h : {gt}
  %b = tcc.slice %a {{starts = array<i64: 0, 4, 0>, steps = array<i64: 1, -1, 1>}} : {gt} -> {gt}
  %c = tcc.concat %a, %b {{axis = 1 : i64}} : {gt}, {gt} -> {ct}
  %r0, %r1 = tcc.topk %c {{k = 2 : i64, axis = 2 : i64, largest = true}} : {ct} -> $r0, $r1""",
         embed)


if __name__ == "__main__":
    sys.exit(main())
