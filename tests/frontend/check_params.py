#!/usr/bin/python3
"""Checks parameter initialisers against NumPy.

Writes a model with many params of random dtypes, shapes and initialisers
(literal values, fills, the documented random recipe, safetensors files
written here by an independent writer), imports it with tcc-import-dump and
compares every param's bytes with a NumPy reference.

The reference rounds to narrow floats by searching a table of every value
the format can hold (ties to the even bit pattern), not by DType.cpp's
arithmetic, and re-implements SplitMix64 and Box-Muller from the recipe in
docs/model-format.md.

usage: check_params.py TCC_IMPORT_DUMP [--seed N] [--count N]
"""
import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np

FLOATS = ["f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2"]
INTS = {"i8": 8, "i32": 32, "i64": 64}
DTYPES = FLOATS + list(INTS) + ["bool"]
SIZE = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "f8e4m3": 1, "f8e5m2": 1,
        "i8": 1, "i32": 4, "i64": 8, "bool": 1}
ST_NAME = {"f64": "F64", "f32": "F32", "f16": "F16", "bf16": "BF16",
           "f8e4m3": "F8_E4M3", "f8e5m2": "F8_E5M2", "i8": "I8", "i32": "I32",
           "i64": "I64", "bool": "BOOL"}


# --- Narrow floats: every finite non-negative value with its bit pattern ---

def decode_e4m3(bits):
    e, m = (bits >> 3) & 15, bits & 7
    if e == 15 and m == 7:
        return math.nan
    if e == 0:
        return m / 8.0 * 2.0 ** -6
    return (1 + m / 8.0) * 2.0 ** (e - 7)


def positive_table(dtype):
    """(values, bits) of the finite values >= 0, sorted; and the sign bit."""
    if dtype == "f16":
        bits = np.arange(0x8000, dtype=np.uint16)
        vals = bits.view(np.float16).astype(np.float64)
        sign = 0x8000
    elif dtype == "bf16":
        bits = np.arange(0x8000, dtype=np.uint32)
        with np.errstate(invalid="ignore"):  # the NaN patterns
            vals = (bits << 16).view(np.float32).astype(np.float64)
        sign = 0x8000
    elif dtype == "f8e5m2":  # the top byte of an f16
        bits = np.arange(0x80, dtype=np.uint16)
        vals = (bits << 8).view(np.float16).astype(np.float64)
        sign = 0x80
    else:
        bits = np.arange(0x80, dtype=np.uint16)
        vals = np.array([decode_e4m3(int(b)) for b in bits])
        sign = 0x80
    keep = np.isfinite(vals)
    return vals[keep], bits[keep].astype(np.uint64), sign


TABLES = {t: positive_table(t) for t in ["f16", "bf16", "f8e4m3", "f8e5m2"]}


def round_narrow(dtype, v):
    """Bit pattern of `v` in a narrow float: nearest, ties to even bits;
    f16/bf16 overflow to infinity, f8 saturates."""
    vals, bits, sign = TABLES[dtype]
    a = abs(v)
    s = sign if math.copysign(1.0, v) < 0 else 0
    top, top_bits = vals[-1], int(bits[-1])
    if a >= top:
        if dtype in ("f16", "bf16"):
            half_ulp = (top - vals[-2]) / 2
            if a >= top + half_ulp:
                return s | (0x7C00 if dtype == "f16" else 0x7F80)
        return s | top_bits
    i = int(np.searchsorted(vals, a))
    if vals[i] == a:
        return s | int(bits[i])
    lo, hi = vals[i - 1], vals[i]
    if a - lo < hi - a:
        pick = i - 1
    elif hi - a < a - lo:
        pick = i
    else:
        pick = i - 1 if int(bits[i - 1]) % 2 == 0 else i
    return s | int(bits[pick])


def encode(dtype, v):
    """Bytes of one element; v is a Python int (integer dtypes, bool) or
    float."""
    if dtype == "f64":
        return struct.pack("<d", float(v))
    if dtype == "f32":
        return np.array([float(v)], dtype=np.float64).astype("<f4").tobytes()
    if dtype in ("f16", "bf16"):
        return struct.pack("<H", round_narrow(dtype, float(v)))
    if dtype in ("f8e4m3", "f8e5m2"):
        return struct.pack("<B", round_narrow(dtype, float(v)))
    if dtype == "bool":
        return struct.pack("<B", 1 if v else 0)
    return struct.pack({"i8": "<b", "i32": "<i", "i64": "<q"}[dtype], int(v))


def decode(dtype, b):
    """Element values of a param's bytes as float64, for tolerance checks."""
    if dtype == "f64":
        return np.frombuffer(b, "<f8")
    if dtype == "f32":
        return np.frombuffer(b, "<f4").astype(np.float64)
    if dtype == "f16":
        return np.frombuffer(b, "<f2").astype(np.float64)
    if dtype == "bf16":
        u = np.frombuffer(b, "<u2").astype(np.uint32) << 16
        return u.view(np.float32).astype(np.float64)
    if dtype == "f8e5m2":
        u = np.frombuffer(b, np.uint8).astype(np.uint16) << 8
        return u.view(np.float16).astype(np.float64)
    u = np.frombuffer(b, np.uint8)
    return np.array([math.copysign(decode_e4m3(int(x) & 0x7F), -1 if x & 0x80 else 1)
                     for x in u])


def ulp(dtype, v):
    """Spacing of the dtype's values around |v|."""
    if dtype == "f64":
        return np.spacing(abs(v))
    if dtype == "f32":
        return float(np.spacing(np.float32(abs(v))))
    vals = TABLES[dtype][0]
    i = min(int(np.searchsorted(vals, abs(v))), len(vals) - 1)
    return vals[i] - vals[i - 1] if i > 0 else vals[1]


# --- The documented random recipe ---

MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * 2.0 ** -53


def random_values(kind, a, b, seed, n):
    g = SplitMix64(seed)
    out = []
    for _ in range(n):
        if kind == "normal":
            u1 = 1.0 - g.uniform()
            u2 = g.uniform()
            out.append(a + b * math.sqrt(-2.0 * math.log(u1)) *
                       math.cos(6.283185307179586 * u2))
        else:
            out.append(a + (b - a) * g.uniform())
    return out


# --- Random params ---

def random_scalar(rng, dtype):
    if dtype == "bool":
        return rng.choice([True, False, 0, 1])
    if dtype in INTS:
        bits = INTS[dtype]
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return rng.choice([lo, hi, 0, -1, rng.randint(lo, hi),
                           rng.randint(max(lo, -1000), min(hi, 1000))])
    r = rng.random()
    if r < 0.1:
        return rng.randint(-100000, 100000)  # an integer literal for a float
    if r < 0.3 and dtype in TABLES:
        # An exact midpoint between two neighbours: the tie rule decides.
        vals = TABLES[dtype][0]
        i = rng.randrange(1, len(vals))
        mid = (vals[i - 1] + vals[i]) / 2
        return -mid if rng.random() < 0.5 else mid
    scale = 10.0 ** rng.uniform(-9, 6)
    return rng.gauss(0, 1) * scale


def random_shape(rng):
    rank = rng.randint(0, 3)
    return [rng.choice([0, 1, 2, 3, 5, 7]) if rng.random() < 0.1
            else rng.randint(1, 9) for _ in range(rank)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("FRONTEND_SEED",
                                               random.SystemRandom().randrange(1 << 31))))
    ap.add_argument("--count", type=int, default=120)
    args = ap.parse_args()
    print(f"seed {args.seed}")
    rng = random.Random(args.seed)

    with tempfile.TemporaryDirectory() as tmp:
        params, expected, kinds = [], [], []
        files = {"w/a.safetensors": [], "b.safetensors": []}
        for i in range(args.count):
            dtype = rng.choice(DTYPES)
            shape = random_shape(rng)
            n = int(np.prod(shape)) if shape else 1
            kind = rng.choice(["value", "fill", "random", "file"])
            if kind == "random" and dtype not in FLOATS:
                kind = "value"
            if kind == "value":
                vals = [random_scalar(rng, dtype) for _ in range(n)]
                init = {"value": vals}
                exp = b"".join(encode(dtype, v) for v in vals)
            elif kind == "fill":
                v = random_scalar(rng, dtype)
                init = {"fill": v}
                exp = encode(dtype, v) * n
            elif kind == "random":
                dist = rng.choice(["normal", "uniform"])
                seed = rng.choice([0, 1, rng.randrange(1 << 64),
                                   (1 << 64) - 1])
                if dist == "normal":
                    a, b = rng.uniform(-2, 2), 10.0 ** rng.uniform(-3, 3)
                    init = {"random": "normal", "mean": a, "std": b,
                            "seed": seed}
                else:
                    a = rng.uniform(-100, 100)
                    b = a + 10.0 ** rng.uniform(-3, 3)
                    init = {"random": "uniform", "low": a, "high": b,
                            "seed": seed}
                exp = b"".join(encode(dtype, v)
                               for v in random_values(dist, a, b, seed, n))
            else:
                fname = rng.choice(list(files))
                data = bytes(rng.getrandbits(8) for _ in range(n * SIZE[dtype]))
                if dtype == "bool":
                    data = bytes(x & 1 for x in data)
                key = f"layer{i}.weight"
                files[fname].append((key, ST_NAME[dtype], shape, data))
                init = {"file": fname, "tensor": key}
                exp = data
            params.append({"name": f"p{i}", "dtype": dtype, "shape": shape,
                           "init": init})
            expected.append(exp)
            kinds.append(kind)

        for fname, tensors in files.items():
            header, blob = {"__metadata__": {"writer": "check_params.py"}}, b""
            rng.shuffle(tensors)
            for key, st, shape, data in tensors:
                header[key] = {"dtype": st, "shape": shape,
                               "data_offsets": [len(blob), len(blob) + len(data)]}
                blob += data
            h = json.dumps(header).encode()
            h += b" " * (-len(h) % 8)  # the reference writer pads to 8
            path = os.path.join(tmp, fname)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(struct.pack("<Q", len(h)) + h + blob)

        model = {"format": "tcc-model", "version": 1, "name": "params",
                 "params": params, "outputs": ["p0"]}
        with open(os.path.join(tmp, "model.json"), "w") as f:
            json.dump(model, f)
        out_dir = os.path.join(tmp, "out")
        os.mkdir(out_dir)
        res = subprocess.run([args.dump, os.path.join(tmp, "model.json"),
                              out_dir], capture_output=True, text=True)
        if res.returncode != 0:
            print(res.stderr)
            print("FAIL: import failed")
            return 1

        failed = exact = 0
        for i, (p, exp, kind) in enumerate(zip(params, expected, kinds)):
            with open(os.path.join(out_dir, f"{i}.bin"), "rb") as f:
                got = f.read()
            if got == exp:
                exact += 1
                continue
            ok = False
            if kind == "random" and len(got) == len(exp):
                # libm's log/cos may differ in the last bit between the
                # Python and C++ calls, which can move a rounding by one
                # step of the dtype: allow one ulp of the dtype.
                g, e = decode(p["dtype"], got), decode(p["dtype"], exp)
                tol = np.array([ulp(p["dtype"], x) for x in e])
                ok = bool(np.all(np.abs(g - e) <= tol))
            if not ok:
                failed += 1
                print(f"FAIL p{i} {p['dtype']} {p['shape']} {kind}: "
                      f"got {got[:16].hex()} expected {exp[:16].hex()}")
        print(f"{exact} params bit-exact; "
              f"{len(params) - failed} passed, {failed} failed")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
