#!/usr/bin/env python3
"""Checks the e2e references themselves, without tcc: rounding against
hand-computed bit patterns and NumPy's float16, conv against a direct loop and
its adjoint, pooling and slicing against worked examples, the generator against
SplitMix64's published first outputs. Prints "N passed, M failed"."""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as L  # noqa: E402
import optest  # noqa: E402

results = []


def check(name, ok, detail=''):
    results.append(ok)
    print('%s %s%s' % ('PASS' if ok else 'FAIL', name, '' if ok else ' -- ' + str(detail)))


def bits_f32(x):
    return int(np.float32(x).view(np.uint32))


def f32_of(bits):
    return float(np.uint32(bits).view(np.float32))


def test_bf16():
    # Hand-made f32 bit patterns: low half exactly 0x8000 is a tie.
    cases = [
        (0x3F808000, 0x3F800000),  # 1 + 2^-8: tie, mantissa even -> down
        (0x3F818000, 0x3F820000),  # 1 + 3*2^-8: tie, mantissa odd -> up
        (0x3F808001, 0x3F810000),  # just above the tie -> up
        (0x3F80FFFF, 0x3F810000),
        (0x7F7FFFFF, 0x7F800000),  # above bf16's max: overflows to inf
        (0x7F7F7FFF, 0x7F7F0000),  # just below the tie at the top: max
        (0x80008000, 0x80000000),  # tiny negative subnormal tie -> -0
        (0x00018000, 0x00020000),  # subnormal tie, odd -> up
    ]
    for src, want in cases:
        got = bits_f32(L.round_bf16_f32bits(f32_of(src)))
        check('bf16 f32-bits rounding of 0x%08X' % src, got == want, '0x%08X' % got)
        got2 = bits_f32(L.round_small(f32_of(src), 'bf16'))
        check('bf16 one-step rounding of 0x%08X' % src, got2 == want, '0x%08X' % got2)
    # Both roundings agree on random f32 values, ties included.
    rng = np.random.default_rng(1)
    b = rng.integers(0, 2**32, 200000, dtype=np.uint64).astype(np.uint32)
    b[::7] = (b[::7] & 0xFFFF0000) | 0x8000
    x = b.view(np.float32).astype(np.float64)
    x = x[np.isfinite(x)]
    a, c = L.round_bf16_f32bits(x), L.round_small(x, 'bf16')
    same = (a == c) | (np.isnan(a) & np.isnan(c))
    check('bf16: f32-bits and one-step rounding agree on 200k f32 values', same.all(),
          x[~same][:3])


def test_f16():
    # NumPy's float16 conversion is an independent RNE implementation.
    rng = np.random.default_rng(2)
    grid = np.unique(rng.integers(0, 0x7C00, 20000, dtype=np.uint16)).view(np.float16).astype(np.float64)
    mids = (grid[:-1] + grid[1:]) / 2                    # exact ties
    x = np.concatenate([grid, mids, rng.standard_normal(50000) * 1000, [65519.9, 65520.0, 7e4]])
    x = np.concatenate([x, -x])
    got = L.round_small(x, 'f16')
    want = x.astype(np.float16).astype(np.float64)
    check('f16: round_small equals numpy float16 (ties, subnormals, overflow)',
          np.array_equal(got, want), x[got != want][:3])


def test_f8():
    e4 = [(1.0625, 1.0), (1.1875, 1.25), (448.0, 448.0), (449.0, 448.0), (464.0, 448.0),
          (1e6, 448.0), (-1e6, -448.0), (2.0**-9, 2.0**-9), (2.0**-10, 0.0),
          (3 * 2.0**-11, 2.0**-9), (0.3, 0.3125), (2.0**-6 * 1.0625, 2.0**-6),
          (np.inf, 448.0)]
    for x, want in e4:
        got = float(L.round_small(x, 'f8e4m3'))
        check('f8e4m3(%r) = %r' % (x, want), got == want, got)
    e5 = [(1.125, 1.0), (1.375, 1.5), (57344.0, 57344.0), (60000.0, 57344.0),
          (1e9, 57344.0), (2.0**-16, 2.0**-16), (2.0**-17, 0.0), (3 * 2.0**-18, 2.0**-16),
          (np.inf, np.inf), (-np.inf, -np.inf)]
    for x, want in e5:
        got = float(L.round_small(x, 'f8e5m2'))
        check('f8e5m2(%r) = %r' % (x, want), got == want, got)
    check('f8 keeps NaN', np.isnan(L.round_small(np.nan, 'f8e4m3')))
    # Every f8e4m3 value is a fixed point, and there are 2*126 finite
    # non-zero ones plus zero (e4m3fn: 0x7F/0xFF are NaN).
    vals = np.array([m * 2.0**(e - 3) for e in range(-6, 9) for m in range(8, 16)] +
                    [m * 2.0**-9 for m in range(1, 8)])
    vals = vals[vals <= 448]
    check('f8e4m3 grid is fixed', np.array_equal(L.round_small(vals, 'f8e4m3'), vals))
    check('f8e4m3 has 126 positive finite values', len(set(vals)) == 126, len(set(vals)))


def naive_conv2d(x, w, b, s, p, d, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h + p[0] + p[2] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (wd + p[1] + p[3] - d[1] * (kw - 1) - 1) // s[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for ni in range(n):
        for oc in range(o):
            g = oc // og
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0 if b is None else b[oc]
                    for ci in range(cg):
                        for a in range(kh):
                            for e in range(kw):
                                hi = i * s[0] - p[0] + a * d[0]
                                wi = j * s[1] - p[1] + e * d[1]
                                if 0 <= hi < h and 0 <= wi < wd:
                                    acc += x[ni, g * cg + ci, hi, wi] * w[oc, ci, a, e]
                    out[ni, oc, i, j] = acc
    return out


def test_conv():
    rng = np.random.default_rng(3)
    for t in range(6):
        groups = [1, 2, 3][t % 3]
        cg, og = 1 + t % 2, 1 + (t + 1) % 3
        kh, kw = 1 + t % 3, 2
        s, d = (1 + t % 2, 1 + (t // 2) % 2), (1 + (t // 3) % 2, 1)
        p = (t % 2, 1, 0, t % 3)
        x = rng.standard_normal((2, groups * cg, 7 + t, 6))
        w = rng.standard_normal((groups * og, cg, kh, kw))
        b = rng.standard_normal(groups * og) if t % 2 else None
        got = L.conv2d(x, w, b, s, p, d, groups)
        want = naive_conv2d(x, w, b, s, p, d, groups)
        check('conv2d vs direct loop (groups %d stride %s dilation %s pads %s)' % (groups, s, d, p),
              got.shape == want.shape and np.allclose(got, want, atol=1e-12), np.abs(got - want).max())
        # conv_transpose2d is conv2d's adjoint: <conv(x), y> = <x, convT(y)>,
        # with output_padding restoring x's size.
        y = rng.standard_normal(got.shape)
        oh = tuple(x.shape[2 + i] - ((got.shape[2 + i] - 1) * s[i] - p[i] - p[i + 2] +
                                      d[i] * (w.shape[2 + i] - 1) + 1) for i in range(2))
        if all(0 <= o < max(s[i], d[i]) for i, o in enumerate(oh)):
            xt = L.conv_transpose2d(y, w, None, s, p, d, oh, groups)
            lhs = np.sum(L.conv2d(x, w, None, s, p, d, groups) * y)
            check('conv_transpose2d is the adjoint of conv2d (case %d)' % t,
                  xt.shape == x.shape and abs(lhs - np.sum(x * xt)) < 1e-9 * (1 + abs(lhs)),
                  (xt.shape, x.shape))


def test_pool():
    # Output sizes, PyTorch's rule (worked by hand).
    for args, want in [((5, 2, 2, 0, 0, True), 3), ((4, 2, 2, 0, 0, True), 2),
                       ((6, 3, 2, 1, 1, True), 4), ((5, 2, 2, 1, 1, True), 3),
                       ((5, 2, 2, 1, 1, False), 3), ((7, 3, 3, 0, 0, False), 2),
                       ((7, 3, 3, 0, 0, True), 3)]:
        got = L.pool_out_size(*args)
        check('pool_out_size%s = %d' % (args, want), got == want, got)
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    inc = L.pool2d(x, 'avg', (3, 3), (2, 2), (1, 1, 1, 1), False, True)
    exc = L.pool2d(x, 'avg', (3, 3), (2, 2), (1, 1, 1, 1), False, False)
    # Top-left window: rows/cols -1..1 hold 0, 1, 4, 5.
    check('avg_pool count_include_pad divides by 9', inc[0, 0, 0, 0] == 10 / 9, inc[0, 0, 0, 0])
    check('avg_pool without pads divides by 4', exc[0, 0, 0, 0] == 10 / 4, exc[0, 0, 0, 0])
    # Bottom-right window (start 1, 1): rows/cols 1..3 -> all inside.
    check('avg_pool inner window', inc[0, 0, 1, 1] == np.mean(x[0, 0, 1:4, 1:4]), inc[0, 0, 1, 1])
    mx = L.pool2d(-x - 1, 'max', (2, 2), None, (1, 1, 1, 1), False)
    check('max_pool never picks padding', mx[0, 0, 0, 0] == -1.0, mx[0, 0, 0, 0])
    # ceil_mode: 5 wide, kernel 2 stride 2 -> a last window holding one column.
    y = np.arange(5.0).reshape(1, 1, 1, 5)
    c = L.pool2d(y, 'avg', (1, 2), None, (0, 0, 0, 0), True, True)
    check('ceil_mode partial window averages what it holds', c[0, 0, 0].tolist() == [0.5, 2.5, 4.0],
          c[0, 0, 0])


def test_slice():
    big = 2**63 - 1
    for (n, start, end, step), want in [
            ((10, -1, -100, -3), [9, 6, 3, 0]), ((10, 100, -100, -1), list(range(9, -1, -1))),
            ((10, 2, 2, 1), []), ((10, -100, 100, 4), [0, 4, 8]), ((10, 0, big, 3), [0, 3, 6, 9]),
            ((10, big, -big - 1, -4), [9, 5, 1]), ((5, -2, -1, 1), [3]), ((5, 3, -1, -1), []),
            ((1, 0, 1, 1), [0]), ((7, 5, 1, -2), [5, 3])]:
        got = optest.slice_indices(n, start, end, step)
        check('slice_indices(%d, %d, %d, %d)' % (n, start, end, step), got == want, got)


def test_int_div_and_casts():
    a = np.array([7, -7, 7, -7, 0, 2**62 + 1], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 5, -3], dtype=np.int64)
    got = optest.int_div(a, b).tolist()
    check('integer div truncates toward zero', got == [3, -3, -3, 3, 0, -((2**62 + 1) // 3)], got)
    x = np.array([2.9, -2.9, -0.5, 127.99, -128.0])
    check('float->int truncates', optest.cast_ref(x, 'f32', 'i8').tolist() == [2, -2, 0, 127, -128])
    x = np.array([0.0, -0.0, np.nan, 1e-30])
    check('float->bool is x != 0 (NaN is true)',
          optest.cast_ref(x, 'f32', 'bool').tolist() == [False, False, True, True])
    i = np.array([2**53 + 1, 2**40 + 2**16, 2**40 + 3 * 2**16, -(2**24 + 1)], dtype=np.int64)
    got = optest.cast_ref(i, 'i64', 'f32').tolist()
    check('i64->f32 rounds to nearest even',
          got == [2.0**53, 2.0**40, 2.0**40 + 2**18, -(2.0**24)] and
          optest.cast_ref(i[:1], 'i64', 'f64').tolist() == [2.0**53], got)


def test_composites():
    x = np.array([[-np.inf] * 4, [0.0, -np.inf, 0.0, -np.inf], [1.0, 2.0, 3.0, np.nan]])
    p = L.softmax(x)
    check('softmax of an all -inf row is NaN', np.isnan(p[0]).all(), p[0])
    check('softmax gives 0 at -inf', p[1].tolist() == [0.5, 0.0, 0.5, 0.0], p[1])
    check('softmax of a row with NaN is NaN', np.isnan(p[2]).all(), p[2])
    lp = L.log_softmax(x[1:2])
    check('log_softmax at -inf is -inf', lp[0, 1] == -np.inf and abs(lp[0, 0] + math.log(2)) < 1e-15,
          lp)
    y = np.random.default_rng(4).standard_normal((3, 4, 5))
    ln = L.layer_norm(y, axis=-2, eps_=0.0)
    check('layer_norm over two axes: mean 0, variance 1',
          np.allclose(ln.mean(axis=(1, 2)), 0, atol=1e-12) and np.allclose(ln.var(axis=(1, 2)), 1))
    rn = L.rms_norm(y, axis=-1, eps_=0.0)
    check('rms_norm: mean square 1', np.allclose(np.mean(rn * rn, axis=-1), 1))
    check('erf(0.5)', abs(float(L.erf(0.5)) - 0.5204998778130465) < 1e-15)
    check('gelu(1)', abs(float(L.gelu(1.0)) - 0.8413447460685429) < 1e-15)
    check('gelu tanh(1)', abs(float(L.gelu(1.0, 'tanh')) - 0.8411919906082768) < 1e-15)


def test_generator():
    # SplitMix64 seeded with 0: published first outputs.
    got = [int(v) for v in L.splitmix64(0, 3)]
    want = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    check('splitmix64(0) first outputs', got == want, [hex(v) for v in got])
    u = L.random_init({'random': 'uniform', 'low': -1, 'high': 1, 'seed': 5}, 100000)
    check('uniform init in range with mean ~0', u.min() >= -1 and u.max() < 1 and abs(u.mean()) < 0.01)
    nrm = L.random_init({'random': 'normal', 'mean': 1, 'std': 2, 'seed': 5}, 100000)
    check('normal init mean ~1 std ~2', abs(nrm.mean() - 1) < 0.03 and abs(nrm.std() - 2) < 0.03,
          (nrm.mean(), nrm.std()))


def test_compare():
    ok, _, _ = L.compare(np.array([1.0, np.nan, np.inf]), np.array([1.0, np.nan, np.inf]), L.EXACT)
    check('compare: NaN meets NaN, inf meets inf', ok)
    ok, _, _ = L.compare(np.array([1.0, 2.0]), np.array([1.0, np.nan]), L.EXACT)
    check('compare: a number where NaN is due fails', not ok)
    ok, _, _ = L.compare(np.array([np.inf]), np.array([1e38]), L.Tol(1.0, 1.0))
    check('compare: inf where a finite value is due fails', not ok)
    ok, _, _ = L.compare(np.array([1.0 + 2**-8]), np.array([1.0]), L.ftol('bf16', 0))
    check('compare: half a bf16 ulp passes', ok)
    ok, _, _ = L.compare(np.array([1.0 + 2**-5]), np.array([1.0]), L.ftol('bf16', 0))
    check('compare: four bf16 ulps fail', not ok)


def main():
    np.seterr(all='ignore')
    for t in (test_bf16, test_f16, test_f8, test_conv, test_pool, test_slice,
              test_int_div_and_casts, test_composites, test_generator, test_compare):
        t()
    print('%d passed, %d failed' % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
