"""The 3xTF32 attention kernel's arithmetic in NumPy, for a few query rows.

Usage: bench/tf32x3_numerics.py [SEED] [ROWS]

Emulates compiler/gpu/AttentionKernel.cpp's f32 form: Q, K, P and V split
into two tf32 values (round to nearest), each product three MMAs modelled as
exact sums truncated to f32 (the tensor cores' adds), scores summed in blocks
of 4 k-steps from zero, each key tile's P V apart from O, and the online
softmax's correction either as FA2 computes it, exp2(fma(m_old, c, -m*c)),
or from the difference, exp2((m_old - m_new) * c). Prints the largest error
against float64 for 16- and 32-key tiles, and NumPy's f32 attention's for
scale. Session 49 (docs/performance.md): FA2's correction gave 2x the error
at 16 keys as at 32, as the H100 measured, and 3-6x the difference form's;
the difference form errs 0.3-0.6x NumPy f32.
"""
import sys

import numpy as np
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
L, D, R = 4096, 128, int(sys.argv[2]) if len(sys.argv) > 2 else 32
f32 = np.float32
q = rng.standard_normal((R, D)).astype(f32)
k = rng.standard_normal((L, D)).astype(f32)
v = rng.standard_normal((L, D)).astype(f32)
scale = f32(1 / np.sqrt(D))

def tf32(x):  # round to nearest, ties away, 10 mantissa bits
    x = np.asarray(x, dtype=f32)
    b = x.view(np.uint32).astype(np.uint64)
    b = (b + 0x1000) & 0xFFFFE000
    return b.astype(np.uint32).view(f32)

def rz(x):  # float64 -> f32 rounded toward zero
    y = x.astype(f32)
    over = np.abs(y.astype(np.float64)) > np.abs(x)
    y[over] = np.nextafter(y[over], f32(0))
    return y

def split(x):
    big = tf32(x)
    return big, tf32((x.astype(f32) - big).astype(f32))

def mma(acc, a, b):  # acc [.., n]; a [.., 8]; b [8, n]: exact sum, truncated
    return rz(acc.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64))

def mma3(acc, A, B):
    acc = mma(acc, A[1], B[0]); acc = mma(acc, A[0], B[1]); return mma(acc, A[0], B[0])

def kernel(kv, old_corr):
    c = f32(scale * f32(1.4426950408889634))
    O = np.zeros((R, D), f32); l = np.zeros(R, f32); m = np.full(R, -np.inf, f32)
    Q = split(q)
    for t0 in range(0, L, kv):
        kt, vt = k[t0:t0 + kv], v[t0:t0 + kv]
        # S in blocks of 4 k-steps (32 d)
        S = None
        for b0 in range(0, D, 32):
            acc = np.zeros((R, kv), f32)
            for d0 in range(b0, b0 + 32, 8):
                A = (Q[0][:, d0:d0 + 8], Q[1][:, d0:d0 + 8])
                Kb = split(kt[:, d0:d0 + 8])
                acc = mma3(acc, A, (Kb[0].T, Kb[1].T))
            S = acc if S is None else (S + acc).astype(f32)
        mx = S.max(axis=1)
        mnew = np.maximum(m, mx)
        negM = (-(mnew * c)).astype(f32)
        if old_corr:
            corr = np.exp2((m.astype(np.float64) * c + negM).astype(f32)).astype(f32)
        else:
            corr = np.exp2(((m - mnew).astype(f32) * c).astype(f32)).astype(f32)
        corr = np.where(np.isneginf(m), f32(0), corr).astype(f32)
        arg = (S.astype(np.float64) * c + negM[:, None]).astype(f32)  # fma, one rounding
        p = np.exp2(arg.astype(np.float64)).astype(f32)
        l = (l.astype(np.float64) * corr + p.sum(axis=1, dtype=np.float64).astype(f32)).astype(f32)
        # P V: tile accumulators per 8-key k-step, 3 MMAs each
        P = split(p)
        tile = np.zeros((R, D), f32)
        for k0 in range(0, kv, 8):
            Vb = split(vt[k0:k0 + 8])
            tile = mma3(tile, (P[0][:, k0:k0 + 8], P[1][:, k0:k0 + 8]), Vb)
        O = (O.astype(np.float64) * corr[:, None] + tile).astype(f32)
        m = mnew
    return (O / l[:, None]).astype(f32)

ref = q.astype(np.float64) @ k.T.astype(np.float64) * float(scale)
ref = np.exp(ref - ref.max(1, keepdims=True)); ref /= ref.sum(1, keepdims=True)
ref = ref @ v.astype(np.float64)
mo = np.abs(ref).max()
for kv in (16, 32):
    for oc in ((True, False) if R <= 32 else (False,)):
        e = np.abs(kernel(kv, oc).astype(np.float64) - ref).max()
        print('kv %d old_corr %s: max err %.3g (max|O| %.3g)' % (kv, oc, e, mo), flush=True)
# true f32 for scale: plain f32 numpy attention
s32 = (q @ k.T) * scale
p32 = np.exp(s32 - s32.max(1, keepdims=True)); o32 = (p32 @ v) / p32.sum(1, keepdims=True)
print('numpy f32: %.3g' % np.abs(o32 - ref).max())
