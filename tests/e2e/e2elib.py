"""Shared pieces of tcc's end-to-end tests: dtype rounding, .npy exchange with
`tcc run`, tolerances, comparison, and the documented random generator.

Only the standard library and NumPy. Every reference here is written from the
model format's text (docs/model-format.md), not from tcc's sources, so that a
misreading in the compiler shows up as a difference.
"""
import json
import os
import math
import re
import struct
import subprocess
import sys


import numpy as np

FLOATS = ('f64', 'f32', 'f16', 'bf16', 'f8e4m3', 'f8e5m2')
NARROW = ('f16', 'bf16', 'f8e4m3', 'f8e5m2')
INTS = ('i8', 'i32', 'i64')
ALL_DTYPES = FLOATS + INTS + ('bool',)

# Narrow float formats: significand bits p (with the implicit one), smallest
# normal exponent, largest finite value, and whether finite overflow
# saturates (the format's rule for f8) instead of giving infinity (IEEE).
_SMALL = {
    'f16': (11, -14, 65504.0, False),
    'bf16': (8, -126, float.fromhex('0x1.fep127'), False),
    'f8e4m3': (4, -6, 448.0, True),
    'f8e5m2': (3, -14, 57344.0, True),
}

# How each dtype travels through .npy files (tcc run writes bf16 and f8 as
# exact float32, and converts float .npy inputs to the input's float dtype).
NPY_DTYPE = {
    'f64': np.dtype('<f8'), 'f32': np.dtype('<f4'), 'f16': np.dtype('<f2'),
    'bf16': np.dtype('<f4'), 'f8e4m3': np.dtype('<f4'),
    'f8e5m2': np.dtype('<f4'), 'i8': np.dtype('|i1'), 'i32': np.dtype('<i4'),
    'i64': np.dtype('<i8'), 'bool': np.dtype('|b1'),
}

INT_RANGE = {'i8': (-128, 127), 'i32': (-2**31, 2**31 - 1),
             'i64': (-2**63, 2**63 - 1)}


def is_float(dt):
    return dt in FLOATS


def eps(dt):
    """Relative spacing 2^(1-p): one ulp relative to a value is at most this."""
    return {'f64': 2.0**-52, 'f32': 2.0**-23, 'f16': 2.0**-10,
            'bf16': 2.0**-7, 'f8e4m3': 2.0**-3, 'f8e5m2': 2.0**-2}[dt]


def tiny(dt):
    """Smallest spacing near zero (subnormal step; for f32/f64 the smallest
    normal, since a compiler may flush subnormals to zero)."""
    return {'f64': 2.0**-1022, 'f32': 2.0**-126, 'f16': 2.0**-24,
            'bf16': 2.0**-133, 'f8e4m3': 2.0**-9, 'f8e5m2': 2.0**-16}[dt]


def compute_dtype(dt):
    """The format computes f16/bf16/f8 arithmetic in f32."""
    return 'f64' if dt == 'f64' else 'f32'


def round_small(x, dt):
    """Rounds float64 values to a narrow float format, ties to even, in one
    step from the exact value. f8 saturates finite overflow (and an infinity
    for f8e4m3, which has none); f16/bf16 overflow to infinity."""
    p, emin, maxf, saturate = _SMALL[dt]
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    finite = np.isfinite(a) & (a > 0)
    safe = np.where(finite, a, 1.0)
    _, e = np.frexp(safe)               # safe = m * 2^e, m in [0.5, 1)
    e = np.maximum(e - 1, emin)         # exponent of the grid around a
    shift = (p - 1) - e
    r = np.ldexp(np.round(np.ldexp(safe, shift)), -shift)  # np.round: ties to even
    over = r > maxf
    r = np.where(over, maxf if saturate else np.inf, r)
    r = np.where(finite, r, a)          # 0, inf and NaN pass through
    if dt == 'f8e4m3':
        r = np.where(np.isinf(a), maxf, r)
    return np.copysign(r, x)


def round_bf16_f32bits(x):
    """bf16 rounding as hardware does it: round-to-nearest-even on the f32 bit
    pattern (the value is first an f32, as the format computes in f32)."""
    f = np.asarray(x, dtype=np.float64).astype(np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    u = np.uint64
    bits = ((bits + u(0x7FFF) + ((bits >> u(16)) & u(1))) >> u(16)) << u(16)
    out = bits.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), np.float32(np.nan), out).astype(np.float64)


def rnd(dt, x):
    """x (float64 or ints) rounded to dtype dt, returned as float64 for floats
    (int64 / bool arrays for the others). One rounding from the exact value."""
    if dt == 'f64':
        return np.asarray(x, dtype=np.float64)
    if dt == 'f32':
        return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)
    if dt == 'f16':
        return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)
    if dt in _SMALL:
        return round_small(x, dt)
    if dt == 'bool':
        return np.asarray(x) != 0
    return np.asarray(x, dtype=np.int64)


def narrow(dt, x):
    """The result of an op computed in f32 (f64 for f64), rounded to dt."""
    if dt in NARROW:
        return rnd(dt, rnd('f32', x))
    return rnd(dt, x) if is_float(dt) else x


def to_npy(dt, v):
    # C order: a transposed view would otherwise be saved in Fortran order.
    return np.asarray(v).astype(NPY_DTYPE[dt], order='C')


def from_npy(dt, a):
    """The values of a .npy array as float64 / int64 / bool."""
    if is_float(dt):
        return a.astype(np.float64)
    if dt == 'bool':
        return a.astype(bool)
    return a.astype(np.int64)


class Tol:
    """|got - ref| <= rtol * |ref| + atol, elementwise (rtol and atol may be
    arrays broadcast against ref). NaN must meet NaN, infinities must match."""

    def __init__(self, rtol=0.0, atol=0.0):
        self.rtol, self.atol = rtol, atol

    def exact(self):
        return np.all(np.asarray(self.rtol) == 0) and np.all(np.asarray(self.atol) == 0)


EXACT = Tol()


def ftol(dt, ulps=4.0, scale=0.0, store_ulps=1.0, store_scale=0.0):
    """Tolerance of a float result of dtype dt.

    ulps: error of the computation in ulps of the compute dtype (f32 for the
    narrow types), relative to |ref| + scale; `scale` carries the size of the
    terms that were summed or cancelled (e.g. sum |x| for a reduction).
    store_ulps: ulps of a narrow output dtype allowed on top, relative to
    |ref| + store_scale. One op rounds once, and the reference and tcc may
    round a value lying near a rounding boundary to its two neighbours: one
    ulp of |ref|. A chain of primitives rounds at each step: a few ulps, of the
    intermediate values' size (store_scale).
    """
    c = eps(compute_dtype(dt))
    rtol = ulps * c
    atol = ulps * c * np.asarray(scale, dtype=np.float64) + tiny(compute_dtype(dt))
    if dt in NARROW:
        s = store_ulps * eps(dt)
        rtol = rtol + s
        atol = atol + s * np.asarray(store_scale, dtype=np.float64) + tiny(dt)
    return Tol(rtol, atol)


def compare(got, ref, tol):
    """Returns (ok, maxerr, detail). got and ref are float64/int64/bool."""
    if got.shape != ref.shape:
        return False, float('inf'), 'shape %s, expected %s' % (list(got.shape), list(ref.shape))
    if got.size == 0:
        return True, 0.0, ''
    if ref.dtype == bool or np.issubdtype(ref.dtype, np.integer):
        bad = got != ref
        err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        maxerr = float(err.max())
        if not bad.any():
            return True, maxerr, ''
        i = np.unravel_index(np.argmax(bad), ref.shape)
        return False, maxerr, '%d mismatches, first at %s: got %s want %s' % (
            int(bad.sum()), list(i), got[i], ref[i])
    gn, rn = np.isnan(got), np.isnan(ref)
    ginf, rinf = np.isinf(got), np.isinf(ref)
    special = rn | gn | rinf | ginf
    bad_special = (gn != rn) | ((rinf | ginf) & ~rn & (got != ref))
    with np.errstate(invalid='ignore', over='ignore'):
        err = np.where(special, 0.0, np.abs(got - ref))
        allowed = np.broadcast_to(tol.rtol * np.abs(np.where(special, 0, ref)) + tol.atol, ref.shape)
    bad = bad_special | (err > allowed)
    maxerr = float(err.max()) if err.size else 0.0
    if not bad.any():
        return True, maxerr, ''
    # Report the worst offender (relative to what was allowed).
    with np.errstate(divide='ignore', invalid='ignore'):
        ratio = np.where(bad_special, np.inf, err / np.where(allowed > 0, allowed, 1e-300))
    i = np.unravel_index(np.argmax(ratio), ref.shape)
    return False, (float('inf') if bad_special.any() else maxerr), \
        '%d of %d off, worst at %s: got %r want %r (allowed %.3g)' % (
            int(bad.sum()), ref.size, list(i), float(got[i]), float(ref[i]), float(allowed[i]))


CANNOT_RUN = -1000


def run_tcc(args, timeout=600):
    """Runs tcc; returns (exit status, stdout, stderr). A timeout is status
    -9 with a note, so that a hang is reported as a failure, not raised; a
    binary that cannot be started at all is CANNOT_RUN."""
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return -9, '', 'timed out after %d s' % timeout
    except OSError as e:
        return CANNOT_RUN, '', 'cannot run %s: %s' % (args[0], e)


SKIP = 77  # ctest's SKIP_RETURN_CODE for the GPU tests


def device_missing(tcc, target, work):
    """None when a bundle compiled for `target` runs here, else why not (the
    runtime's "not available" message). Compile errors are raised."""
    import json as _json
    model = os.path.join(work, 'probe.json')
    with open(model, 'w') as f:
        _json.dump({'format': 'tcc-model', 'version': 1, 'name': 'probe',
                    'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [4]}], 'params': [],
                    'nodes': [{'op': 'neg', 'inputs': ['x'], 'outputs': ['y']}],
                    'outputs': ['y']}, f)
    bundle = os.path.join(work, 'probe.tccb')
    rc, _, err = run_tcc([tcc, 'compile', model, '-o', bundle, '--target', target])
    if rc != 0:
        raise RuntimeError('cannot compile for %s: %s' % (target, first_line(err)))
    rc, _, err = run_tcc([tcc, 'run', bundle, '--output-dir', os.path.join(work, 'probe')])
    if rc != 0 and 'not available' in err:
        return first_line(err)
    return None


def save_inputs(d, name, model, vals):
    """Writes `vals` (by input name) as `d/name.INPUT.npy` in the model's
    dtypes; returns the `--input NAME=FILE` arguments of `tcc run`."""
    files = []
    for t in model['inputs']:
        path = os.path.join(d, '%s.%s.npy' % (name, t['name']))
        np.save(path, to_npy(t['dtype'], vals[t['name']]))
        files += ['--input', '%s=%s' % (t['name'], path)]
    return files


def run_bundle(tcc, bundle, files, d, output='y'):
    """Runs `bundle` with the `files` inputs; returns (output `output` as
    float64, None), or (None, the error's first line)."""
    out = os.path.join(d, 'out')
    os.makedirs(out, exist_ok=True)
    rc, _, err = run_tcc([tcc, 'run', bundle, '--output-dir', out] + list(files))
    if rc:
        return None, first_line(err)
    return np.load(os.path.join(out, output + '.npy')).astype(np.float64), None


def write_json(path, obj, indent=None):
    with open(path, 'w') as f:
        json.dump(obj, f, indent=indent)


def read_manifest(d):
    """The cases a GPU model test's `record` wrote into `d`."""
    with open(os.path.join(d, 'manifest.json')) as f:
        return json.load(f)


def write_manifest(d, manifest):
    write_json(os.path.join(d, 'manifest.json'), manifest, indent=1)


def report(failures, done):
    """Ends a test: its failures on one line and exit status 1, or `done`."""
    if failures:
        print('FAILED: ' + '; '.join(failures))
        sys.exit(1)
    print(done)


def gpu_test_main(modes):
    """The command line of the GPU model tests: `check TCC [--ptxas P]`
    (no GPU), `record TCC --out DIR`, `replay RUNTIME_TCC --dir DIR`; runs
    modes[mode](args)."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument('mode', choices=sorted(modes))
    ap.add_argument('tcc')
    ap.add_argument('--ptxas')
    ap.add_argument('--out')
    ap.add_argument('--dir')
    args = ap.parse_args()
    modes[args.mode](args)


def gpu_kernel_failures(tcc, ptxas, path, d, name, want):
    """Compiles the model at `path` for sm_90: (whether it compiled, the
    failures: the compile's, or a launch count other than `want` (`tcc
    inspect`) and, with `ptxas`, PTX that does not assemble or spills)."""
    bundle = os.path.join(d, name + '.gpu.tccb')
    rc, _, err = run_tcc([tcc, 'compile', path, '--target', 'sm_90', '-o', bundle])
    if rc:
        return False, ['%s: %s' % (name, first_line(err))]
    failures = []
    rc, out, err = run_tcc([tcc, 'inspect', bundle])
    launches = len(json.loads(out)['launches']) if rc == 0 else -1
    if launches != want:
        failures.append('%s: %d launches on sm_90, want %d' % (name, launches, want))
    if ptxas:
        ptx = os.path.join(d, name + '.ptx')
        run_tcc([tcc, 'compile', path, '--target', 'sm_90', '--emit', 'asm', '-o', ptx])
        rc, _, err = run_tcc([ptxas, '-arch=sm_90', '-v', ptx, '-o', os.devnull])
        if rc:
            failures.append('%s: ptxas: %s' % (name, first_line(err)))
        elif any(int(n) for n in re.findall(r'(\d+) bytes spill stores', err)):
            failures.append('%s: ptxas spills' % name)
    return True, failures


def chain_tolerance(dt):
    """A row chain's error bound relative to its row's values: 64 ulps of
    f32 (exponents up to ~40 carry their argument's ulps into exp; sums add
    sqrt(n) ulps), plus 4 ulps of a 16-bit dtype (a sum in another order
    rounds to its neighbour, and each op after it with it)."""
    tol = 64 * eps('f32')
    if dt in ('f16', 'bf16'):
        tol += 4 * eps(dt)
    return tol


def first_line(text):
    """The message of a failed run: its first line that is not a note
    (tcc notes input conversions before any error)."""
    lines = [l for l in text.strip().splitlines() if l.strip()]
    errors = [l for l in lines if not l.lstrip().startswith('note:')]
    return (errors or lines or ['(no message)'])[0]


# --- safetensors ------------------------------------------------------------

_ST_DTYPE = {'f64': 'F64', 'f32': 'F32', 'f16': 'F16', 'bf16': 'BF16',
             'i8': 'I8', 'i32': 'I32', 'i64': 'I64', 'bool': 'BOOL'}


def bf16_bits(x):
    """bf16 bit patterns of values already representable in bf16."""
    return (np.asarray(x, dtype=np.float32).view(np.uint32) >> 16).astype('<u2')


def write_safetensors(path, tensors):
    """tensors: {key: (dtype, array of values representable in dtype)}."""
    header, blobs, off = {}, [], 0
    for key, (dt, v) in tensors.items():
        if dt == 'bf16':
            raw = bf16_bits(v).tobytes()
        else:
            raw = np.ascontiguousarray(to_npy(dt, v)).tobytes()
        header[key] = {'dtype': _ST_DTYPE[dt], 'shape': list(np.shape(v)),
                       'data_offsets': [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b' ' * (-len(h) % 8)           # the format pads the header to 8 bytes
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))


# --- the documented generator -----------------------------------------------

_M64 = (1 << 64) - 1


def splitmix64(seed, n):
    """The first n outputs of SplitMix64 seeded with `seed` (uint64 array):
    state_k = seed + k * 0x9E3779B97F4A7C15, then two xor-shift-multiply
    rounds and a final xor-shift."""
    k = np.arange(1, n + 1, dtype=np.uint64)
    with np.errstate(over='ignore'):
        z = np.uint64(seed & _M64) + k * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def random_init(init, n):
    """The n values (float64, before rounding to the param's dtype) of a
    {"random": ...} initialiser: element i uses the generator's draws in
    order; uniform takes one draw (top 53 bits), normal two (Box-Muller,
    cosine branch)."""
    if init['random'] == 'uniform':
        u = (splitmix64(init.get('seed', 0), n) >> np.uint64(11)).astype(np.float64) * 2.0**-53
        lo, hi = init.get('low', 0.0), init.get('high', 1.0)
        return lo + (hi - lo) * u
    u = (splitmix64(init.get('seed', 0), 2 * n) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    u1, u2 = 1.0 - u[0::2], u[1::2]
    return init.get('mean', 0.0) + init.get('std', 1.0) * np.sqrt(-2.0 * np.log(u1)) * \
        np.cos(6.283185307179586 * u2)


# --- references shared by the op tests and the model tests --------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    return _erf(np.asarray(x, dtype=np.float64))


def gelu(x, approximate='none'):
    x = np.asarray(x, dtype=np.float64)
    if approximate == 'tanh':
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def sigmoid(x):
    with np.errstate(over='ignore'):
        return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def softmax(x, axis=-1, r=lambda v: v, out=None):
    """The format's chain; r rounds after each primitive (identity for f64),
    out the result (default r). Over f16, bf16 and f8 the composite computes
    in f32 and rounds its result once: pass out=the dtype's rounding and
    leave r the identity (composite_rounding)."""
    out = out or r
    with np.errstate(invalid='ignore'):
        m = r(np.max(x, axis=axis, keepdims=True))
        e = r(np.exp(r(x - m)))
        return out(e / r(np.sum(e, axis=axis, keepdims=True)))


def log_softmax(x, axis=-1, r=lambda v: v, out=None):
    out = out or r
    with np.errstate(invalid='ignore', divide='ignore'):
        t = r(x - r(np.max(x, axis=axis, keepdims=True)))
        return out(t - r(np.log(r(np.sum(r(np.exp(t)), axis=axis, keepdims=True)))))


def nll_loss(lp, t, w=None, ignore=None, reduction='mean'):
    """ONNX's NegativeLogLikelihoodLoss of log-probabilities lp [N, C, d...]
    (class axis 1) at targets t [N, d...], in float64: entries equal to
    `ignore` count nothing; weights w [C] scale each entry; a mean with
    weights or ignored entries divides by the weights kept (0 / 0 is NaN)."""
    keep = np.ones(t.shape, bool) if ignore is None else t != ignore
    tt = np.where(keep, t, 0)
    picked = np.take_along_axis(lp, np.expand_dims(tt, 1), axis=1)[:, 0]
    wl = np.ones(picked.shape) if w is None else w.astype(np.float64)[tt]
    loss = -picked * wl * keep
    if reduction == 'none':
        return loss
    if reduction == 'sum':
        return loss.sum()
    with np.errstate(invalid='ignore'):
        return loss.sum() / (wl * keep).sum() if (w is not None or ignore is not None) \
            else loss.mean()


def layer_norm(x, gamma=None, beta=None, axis=-1, eps_=1e-5, r=lambda v: v, out=None):
    out = out or r
    axes = tuple(range(axis % x.ndim if x.ndim else 0, x.ndim))
    m = r(np.mean(x, axis=axes, keepdims=True))
    d = r(x - m)
    v = r(np.mean(r(d * d), axis=axes, keepdims=True))
    y = r(d * r(1.0 / np.sqrt(r(v + eps_))))
    if gamma is not None:
        y = r(y * gamma)
    if beta is not None:
        y = r(y + beta)
    return out(y)


def rms_norm(x, gamma=None, axis=-1, eps_=1e-6, r=lambda v: v, out=None):
    out = out or r
    axes = tuple(range(axis % x.ndim if x.ndim else 0, x.ndim))
    ms = r(np.mean(r(x * x), axis=axes, keepdims=True))
    y = r(x * r(1.0 / np.sqrt(r(ms + eps_))))
    if gamma is not None:
        y = r(y * gamma)
    return out(y)


def composite_rounding(dt, r):
    """The keywords (r, out) for a composite over dtype dt whose primitives
    round by r: over f16, bf16 and f8 it computes in f32 and rounds its
    result once (the f32 steps are left exact); otherwise each step rounds."""
    if dt in NARROW:
        return {'r': lambda v: v, 'out': r}
    return {'r': r, 'out': r}


def conv2d(x, w, b=None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups=1):
    """Direct NCHW convolution: a sum over kernel taps of channel contractions."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum(
                    'nchw,oc->nohw', patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += np.asarray(b)[None, :, None, None]
    return out


def conv_transpose2d(x, w, b=None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1),
                     output_padding=(0, 0), groups=1):
    """Scatter form: input pixel (h, w) adds w * x at (h*s + k*d) of an
    uncropped output, which is then cropped by the pads."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    fh = (h - 1) * sh + dh * (kh - 1) + 1 + output_padding[0]
    fw = (wd - 1) * sw + dw * (kw - 1) + 1 + output_padding[1]
    full = np.zeros((n, og * groups, fh, fw))
    cg = c // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                full[:, g * og:(g + 1) * og, i * dh:i * dh + sh * (h - 1) + 1:sh,
                     j * dw:j * dw + sw * (wd - 1) + 1:sw] += np.einsum(
                         'nchw,co->nohw', xs, w[g * cg:(g + 1) * cg, :, i, j])
    oh = fh - pads[0] - pads[2]
    ow = fw - pads[1] - pads[3]
    out = full[:, :, pads[0]:pads[0] + oh, pads[1]:pads[1] + ow]
    if b is not None:
        out = out + np.asarray(b)[None, :, None, None]
    return out


def pool_out_size(n, k, s, pb, pe, ceil_mode):
    """PyTorch's rule: floor or ceil of the window count, and with ceil_mode
    the last window must start inside the input or the leading padding."""
    span = n + pb + pe - k
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + pb:
        out -= 1
    return out


def pool2d(x, kind, kernel, strides=None, pads=(0, 0, 0, 0), ceil_mode=False,
           count_include_pad=True):
    """Window loops written out: max never sees padding; avg divides by the
    window clipped to the padded input (count_include_pad) or to the input."""
    n, c, h, w = x.shape
    kh, kw = kernel
    sh, sw = strides if strides is not None else kernel
    oh = pool_out_size(h, kh, sh, pads[0], pads[2], ceil_mode)
    ow = pool_out_size(w, kw, sw, pads[1], pads[3], ceil_mode)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * sh - pads[0], j * sw - pads[1]
            h1, w1 = min(h0 + kh, h + pads[2]), min(w0 + kw, w + pads[3])
            area = (h1 - h0) * (w1 - w0)
            hs, ws = max(h0, 0), max(w0, 0)
            he, we = min(h1, h), min(w1, w)
            win = x[:, :, hs:he, ws:we]
            if kind == 'max':
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                div = area if count_include_pad else (he - hs) * (we - ws)
                out[:, :, i, j] = win.sum(axis=(2, 3)) / div
    return out
