"""Random mixes of attention's forms, for attention_test.py --mix N[:SEED].

Issue 13 asks that every form, *and any mix of them*, be one kernel (two
for decode) and right. attention_test.py's named cases each try one form or
a few; these draw a combination of all of them from a seed:

  dtype         bf16, f16, f32
  head size     32 to 256 (multiples of 8; sometimes of 2 only: SIMT); V's
                sometimes another (MLA's 128 under 192, or wider than Q's)
  shape         prefill (odd lengths, self or cross) or decode (1-4 rows
                a head, 600-5000 keys); batch 1-2; MHA, GQA or MQA written
                as reshape + broadcast_to + reshape (MQA: or broadcast_to, or
                the matmuls' own batch broadcast)
  layout        any of Q, K, V, O kept [B, L, H, D] and transposed
  K             [B, H, L, D], or transposed: an input [B, H, D, L], a swap
                of its last axes, or a [B, L, H, D] permuted by (0, 2, 3, 1)
  scale         s * c, s / c, Q scaled first, Q and K scaled first
                (SDPA's export), Q scaled per head by an input, or none
                (then maybe the scores scaled per head by an input)
  score change  a softcap (s / cap or s * (1 / cap)); ALiBi
                (-slope * |row - col|) with one slope, or
                per head as an input or a param; a bias input of any
                broadcast shape; a per-key bias; then a change reading
                the score twice (leaky, swish: a DAG)
  masks         causal, sliding window, prefix-LM, document ids, a padding
                mask input ([B, 1, 1, L] or [B, L] reshaped; runs of keys),
                the padding mask or the causal mask added as 0/-inf; with
                -inf or a finite stand-in (-1e30, f16's -65504), one select
                each or and-ed
  softmax       the op (in 16-bit, maybe on the scores cast to f32, P
                cast back), or written by hand: exp(s - max), exp(s +
                neg(max)), exp((s - max) * 2) or exp(s), P·V divided by the
                sum afterwards, or P = e * reciprocal(sum)

Each mix is a case of attention_test.py (named mix_<seed>_<i>_...; decode
ones mix_..._decode_...), with its float64 reference composed from the
same choices, so --record / --replay / --count-only treat it as any other.
"""
import functools
import zlib

import numpy as np

DTYPES = ('bf16', 'f16', 'f32')
HEADS = (32, 64, 64, 80, 96, 128, 128, 192, 256, 40, 72)
SIMT_HEADS = (36, 50, 20)


class Mix:
    """One drawn combination: the model's nodes, inputs and params, how
    attention's Q, K and V come from the inputs (qkv), the score change as
    a NumPy function (change) and the kernels expected."""

    def __init__(self, T, rng, name):
        self.T, self.rng, self.name = T, rng, name
        self.nodes, self.inputs, self.params = [], [], []
        self.tags = []
        self.n = 0

    def fresh(self, base):
        self.n += 1
        return '%s_%d' % (base, self.n)

    def add(self, op, ins, **attrs):
        out = self.fresh(op)
        self.nodes.append(self.T.node(op, ins, out, **attrs))
        return out

    def const(self, dt, value):
        out = self.fresh('c')
        self.nodes.append(self.T.const(out, dt, value))
        return out

    def input(self, name, dt, shape):
        self.inputs.append({'name': name, 'dtype': dt, 'shape': list(shape)})
        return name

    def pick(self, options, p=None):
        return options[int(self.rng.choice(len(options), p=p))]

    def chance(self, p):
        return bool(self.rng.random() < p)


def draw(T, seed, index):
    """(name, model, q scale, change, qkv, expect) for mix `index` of
    `seed`."""
    rng = np.random.default_rng([seed, index])
    m = Mix(T, rng, '')
    L = T.L
    dt = m.pick(DTYPES)
    d = m.pick(HEADS) if m.chance(0.9) else m.pick(SIMT_HEADS)
    decode = m.chance(0.3)
    hkv = m.pick((1, 2, 2))
    g = m.pick((1, 1, 2, 4))
    h, b = hkv * g, m.pick((1, 2))
    if decode:
        lq = m.pick(tuple(x for x in (1, 2, 4) if x * g <= 16))
        lk = int(rng.integers(600, 5001))
    else:
        lq = int(rng.integers(40, 700))
        lk = lq if m.chance(0.7) else int(rng.integers(40, 700))
    off = max(lk - lq, 0) if decode or m.chance(0.5) else 0  # the rows' first position
    layout = ''.join(t for t in 'qkvo' if m.chance(0.25))
    kt = m.pick((None, None, None, 'input', 'swap', 'blhd'))
    if kt:
        layout = layout.replace('k', '')
    scale_form = m.pick(('mul', 'mul', 'div', 'preq', 'preqk', 'preq_input', 'none'))
    hand = m.chance(0.2)
    # V's head size: Q's and K's, or one of its own (a fifth of the mixes),
    # drawn from a generator of its own so that the other draws stay as
    # they were.
    vrng = np.random.default_rng([seed, index, 3])
    dv = d
    if vrng.random() < 0.2:
        dv = int(vrng.choice(HEADS if vrng.random() < 0.9 else SIMT_HEADS))
    tags = [dt, 'd%d' % d + ('v%d' % dv if dv != d else ''),
            'decode' if decode else 'prefill', 'g%d' % g, layout or 'bhld',
            'kt_' + kt if kt else 'k', scale_form] + (['hand'] if hand else [])

    # Q
    bhld = lambda x: [x[0], x[2], x[1], x[3]]
    if 'q' in layout:
        q = m.add('transpose', [m.input('q_in', dt, [b, lq, h, d])], perm=[0, 2, 1, 3])
    else:
        q = m.input('q_in', dt, [b, h, lq, d])
    inv = 1 / np.sqrt(d)
    qc = kc = None
    if scale_form == 'preq':
        qc = float(L.narrow(dt, np.float64(inv)))
    elif scale_form == 'preqk':
        qc = kc = float(L.narrow(dt, np.float64(np.sqrt(inv))))
    if qc is not None:
        q = m.add('mul', [q, m.const(dt, qc)])
    elif scale_form == 'preq_input':
        q = m.add('mul', [q, m.input('qf', dt, [1, h, 1, 1])])
    # K, and V
    kshape = [b, hkv, lk, d]
    if kt == 'input':
        k = m.input('k_in', dt, [b, hkv, d, lk])
    elif kt == 'swap':
        k = m.add('transpose', [m.input('k_in', dt, kshape)], perm=[0, 1, 3, 2])
    elif kt == 'blhd':
        k = m.add('transpose', [m.input('k_in', dt, bhld(kshape))], perm=[0, 2, 3, 1])
    elif 'k' in layout:
        k = m.add('transpose', [m.input('k_in', dt, bhld(kshape))], perm=[0, 2, 1, 3])
    else:
        k = m.input('k_in', dt, kshape)
    if kc is not None:
        k = m.add('mul', [k, m.const(dt, kc)])
    vshape = kshape[:-1] + [dv]
    if 'v' in layout:
        v = m.add('transpose', [m.input('v_in', dt, bhld(vshape))], perm=[0, 2, 1, 3])
    else:
        v = m.input('v_in', dt, vshape)
    if g > 1:
        mqa_broadcast = hkv == 1 and m.chance(0.5)
        # Half of those leave the broadcast to the matmuls (NumPy batch
        # rules: K [B, 1, L, D] against Q [B, H, L, D]). Decided by the
        # name, not the generator, so that the other draws stay as they were.
        implicit = mqa_broadcast and zlib.crc32(m.name.encode()) % 2 == 0
        if mqa_broadcast:
            tags.append('mqai' if implicit else 'mqa')

        def repeat(x, rows):
            if implicit:  # MQA: the matmul broadcasts the one head
                return x
            if mqa_broadcast:  # MQA: the one head broadcast
                return m.add('broadcast_to', [x], shape=[b, h] + rows)
            x = m.add('reshape', [x], shape=[b, hkv, 1] + rows)
            x = m.add('broadcast_to', [x], shape=[b, hkv, g] + rows)
            return m.add('reshape', [x], shape=[b, h] + rows)
        k = repeat(k, [d, lk] if kt else [lk, d])
        v = repeat(v, [lk, dv])

    def qkv(env, exact=False):
        """Q, K, V as attention reads them: a prescaled operand rounded to
        dt as the model computes it, or exact (the float64 reference)."""
        r = (lambda x: x) if exact else (lambda x: L.narrow(dt, x).astype(np.float64))
        q = np.swapaxes(env['q_in'], 1, 2) if 'q' in layout else env['q_in']
        if qc is not None:
            q = r(q * qc)
        elif scale_form == 'preq_input':
            q = r(q * env['qf'])
        k = env['k_in']
        if kt == 'input':
            k = np.swapaxes(k, -1, -2)
        elif kt == 'blhd' or (not kt and 'k' in layout):
            k = np.swapaxes(k, 1, 2)
        if kc is not None:
            k = r(k * kc)
        v = np.swapaxes(env['v_in'], 1, 2) if 'v' in layout else env['v_in']
        return [q, k, v]

    s = m.add('matmul', [q, k], transpose_b=not kt)
    # The change, step by step: (model tensor, NumPy function of (s, r, c, env)).
    fs = []
    if scale_form in ('mul', 'div'):
        c = L.narrow(dt, np.float64(inv if scale_form == 'mul' else np.sqrt(d))).item()
        s = m.add(scale_form, [s, m.const(dt, c)])
        fs.append(lambda x, r, c_, env, c=c, op=scale_form: x * c if op == 'mul' else x / c)
    positions = {}

    def pos():
        if not positions:
            row = m.add('iota', [], dtype='i32', shape=[lq, lk], axis=-2)
            if off:
                row = m.add('add', [row, m.const('i32', off)])
            positions['row'] = row
            positions['col'] = m.add('iota', [], dtype='i32', shape=[lq, lk], axis=-1)
        return positions['row'], positions['col']
    if scale_form == 'none' and m.chance(0.3):
        # Scaled per head by a factor the model reads, after Q·Kᵀ.
        s = m.add('mul', [s, m.input('hs', dt, [1, h, 1, 1])])
        fs.append(lambda x, r, c, env: x * env['hs'])
        tags.append('headscale')
    if m.chance(0.2):
        cap = m.pick((30.0, 50.0))
        cc = m.const(dt, cap)
        if m.chance(0.5):
            s = m.add('mul', [m.add('tanh', [m.add('div', [s, cc])]), cc])
        else:  # tanh(s * (1 / cap)) * cap, 1 / cap rounded
            inv_cap = float(L.narrow(dt, np.float64(1 / cap)))
            s = m.add('mul', [cc, m.add('tanh', [m.add('mul', [s, m.const(dt, inv_cap)])])])
            fs.append(lambda x, r, c, env, cap=cap, i=inv_cap: cap * np.tanh(x * i))
            tags.append('softcap')
            cap = None
        if cap:
            fs.append(lambda x, r, c, env, cap=cap: cap * np.tanh(x / cap))
            tags.append('softcap')
    if m.chance(0.25):
        row, col = pos()
        dist = m.add('cast', [m.add('abs', [m.add('sub', [row, col])])], to=dt)
        form = m.pick(('const', 'input', 'param'))
        # Slopes of at least 1/16: keys 256 or more away weigh exp(-16) or
        # less, so bf16's rounding of their distance (exact to 256) is moot.
        if form == 'const':
            slope = m.pick((1 / 4, 1 / 8, 1 / 16))
            sl = m.const(dt, slope)
            get = lambda env, slope=slope: slope
        elif form == 'input':
            # make_inputs draws standard normals / 16: |x| + 1/16.
            sl = m.add('add', [m.add('abs', [m.input('slopes', dt, [1, h, 1, 1])]),
                               m.const(dt, 1 / 16)])
            # The model's sum is not rounded here: the float64 reference
            # is the model's arithmetic with nothing rounded (the kernels
            # keep it in f32; rounded, it moved mix 18 of seed 827788816,
            # bf16 keys 247 away, by 0.07: session 41).
            get = lambda env: np.abs(env['slopes']) + 1 / 16
        else:
            vals = L.narrow(dt, 2.0 ** -rng.uniform(2, 4, h)).astype(np.float64)
            m.params.append({'name': 'slopes_p', 'dtype': dt, 'shape': [1, h, 1, 1],
                             'init': {'value': [float(x) for x in vals]}})
            sl = 'slopes_p'
            get = lambda env, vals=vals: vals.reshape(1, h, 1, 1)
        s = m.add('sub', [s, m.add('mul', [dist, sl])])
        fs.append(lambda x, r, c, env, get=get: x - get(env) * np.abs(r + off - c))
        tags.append('alibi_' + form)
    if m.chance(0.25):
        shape = m.pick(([1, h, lq, lk], [b, 1, lq, lk], [lq, lk], [b, h, lq, lk], [b, 1, 1, lk]))
        s = m.add('add', [s, m.input('bias', dt, shape)])
        fs.append(lambda x, r, c, env: x + env['bias'])
        tags.append('bias%d' % len(shape) + ('k' if shape[-2] == 1 else ''))

    # A change reading the score twice (a DAG of element-wise ops), drawn
    # from a generator of its own so that the other choices of a seed's
    # mixes stay those of earlier sessions' draws.
    dag = np.random.default_rng([seed, index, 1])
    # Forms written around attention (a mask expanded to the scores'
    # shape, P·V kept in f32): a generator of their own too.
    around = np.random.default_rng([seed, index, 2])
    if dag.random() < 0.2:
        if dag.random() < 0.5:  # leaky: s > 0 ? s : s / 4
            low = m.add('mul', [s, m.const(dt, 0.25)])
            s = m.add('select', [m.add('greater', [s, m.const(dt, 0.0)]), s, low])
            fs.append(lambda x, r, c, env: np.where(x > 0, x, 0.25 * x))
            tags.append('leaky')
        else:  # swish: s * sigmoid(s)
            s = m.add('mul', [s, m.add('sigmoid', [s])])
            fs.append(lambda x, r, c, env: x / (1 + np.exp(-x)))
            tags.append('swish')

    # Masks, last (a finite stand-in then stays as written).
    # -inf, or a finite stand-in: -1e30, or f16's lowest (-65504).
    finite = m.chance(0.3)
    neg_ref = (-65504.0 if dt == 'f16' else -1e30) if finite else -np.inf
    neg_value = neg_ref if finite else '-inf'
    keeps = []  # (bool tensor, NumPy function of (r, c, env))
    causal = m.chance(0.4)
    if causal:
        row, col = pos()
        keeps.append((m.add('greater_equal', [row, col]), lambda r, c, env: r + off >= c))
        tags.append('causal')
        if not decode and m.chance(0.25):
            plen = int(rng.integers(1, lk))
            keeps[-1] = (m.add('or', [keeps[-1][0], m.add('less', [col, m.const('i32', plen)])]),
                         lambda r, c, env, plen=plen: (r + off >= c) | (c < plen))
            tags.append('prefix')
    if m.chance(0.15):
        row, col = pos()
        w = int(rng.integers(16, 400))
        keeps.append((m.add('less', [m.add('sub', [row, col]), m.const('i32', w)]),
                      lambda r, c, env, w=w: r + off - c < w))
        tags.append('window')
    if not decode and lq == lk and not off and m.chance(0.15):
        doc = m.input('doc', 'i32', [lk])
        same = m.add('equal', [m.add('reshape', [doc], shape=[lq, 1]),
                               m.add('reshape', [doc], shape=[1, lk])])
        keeps.append((same, lambda r, c, env: env['doc'][r] == env['doc'][c]))
        tags.append('doc')
    if m.chance(0.3):
        # make_inputs empties the last batch's mask (NaN rows) and draws
        # masks named runs* as runs of keys (whole tiles dropped): a batch
        # of one takes runs, or the whole output would be NaN.
        mname = m.pick(('mask', 'runs')) if b > 1 else 'runs'
        if decode and 'window' in tags:
            # Decode's rows share one window of keys, which runs of up to
            # 400 dropped keys would empty: keys kept with probability 3/4.
            mname = 'keep_pad'
        if m.chance(0.5):
            mk = m.input(mname, 'bool', [b, 1, 1, lk])
            get = lambda env, mname=mname: env[mname]
        else:
            mk = m.add('reshape', [m.input(mname, 'bool', [b, lk])], shape=[b, 1, 1, lk])
            get = lambda env, mname=mname: env[mname][:, None, None, :]
        if around.random() < 0.3:
            # Expanded to the scores' shape (PyTorch's expand).
            mk = m.add('broadcast_to', [mk], shape=[b, h, lq, lk])
            tags.append('expand')
        keeps.append((mk, lambda r, c, env, get=get: get(env)))
        tags.append('pad_' + mname)
    if keeps and m.chance(0.5):
        both = keeps[0][0]
        for t, _ in keeps[1:]:
            both = m.add('and', [both, t])
        fns = [f for _, f in keeps]
        keeps = [(both, lambda r, c, env, fns=fns: functools.reduce(
            np.logical_and, [f(r, c, env) for f in fns]))]
    if keeps:
        neg = m.const(dt, neg_value)
        for t, f in keeps:
            s = m.add('select', [t, s, neg])
            fs.append(lambda x, r, c, env, f=f: np.where(f(r, c, env), x, neg_ref))
    # Additive masks (0 / -inf), as SDPA's export writes attn_mask.
    if m.chance(0.15):
        aname = 'amask' if b > 1 else 'runs_add'
        if decode and 'window' in tags:
            aname = 'keep_add'  # as for the padding mask above
        mk = m.input(aname, 'bool', [b, lk])
        add = m.add('select', [m.add('reshape', [mk], shape=[b, 1, 1, lk]), m.const(dt, 0.0),
                               m.const(dt, '-inf')])
        s = m.add('add', [add, s] if m.chance(0.5) else [s, add])
        fs.append(lambda x, r, c, env, a=aname: x + np.where(env[a][:, None, None, :], 0.0,
                                                    -np.inf))
        tags.append('addpad')
    if m.chance(0.1):
        row, col = pos()
        add = m.add('select', [m.add('greater', [col, row]), m.const(dt, '-inf'),
                               m.const(dt, 0.0)])
        s = m.add('add', [s, add])
        fs.append(lambda x, r, c, env: np.where(c > r + off, -np.inf, x))
        tags.append('addcausal')

    # Softmax and P·V.
    if hand:
        hand_form = m.pick(('post', 'reciprocal', 'no_max'))
        tags.append(hand_form)
        if hand_form == 'no_max':  # the kernel's stable softmax is the same maths
            e = m.add('exp', [s])
        else:
            mx = m.add('reduce_max', [s], axes=[-1], keepdims=True)
            # The shift as an add of its negation, or a temperature after
            # it (exp((s - max) * 2): softmax of 2s), from a generator of
            # their own (the other draws stay those of earlier sessions).
            shift = np.random.default_rng([seed, index, 3]).random()
            if shift < 0.2:
                e = m.add('exp', [m.add('add', [s, m.add('neg', [mx])])])
                tags.append('negadd')
            elif shift < 0.4:
                e = m.add('exp', [m.add('mul', [m.add('sub', [s, mx]), m.const(dt, 2.0)])])
                fs.append(lambda x, r, c, env: 2 * x)
                tags.append('temp2')
            else:
                e = m.add('exp', [m.add('sub', [s, mx])])
        total = m.add('reduce_sum', [e], axes=[-1], keepdims=True)
        if hand_form == 'reciprocal':  # p = e * (1 / sum), then p · v
            o = m.add('matmul', [m.add('mul', [e, m.add('reciprocal', [total])]), v])
        else:  # (e · v) / sum
            o = m.add('div', [m.add('matmul', [e, v]), total])
    else:
        if dt != 'f32' and m.chance(0.3):
            # Softmax in f32, P cast back for P·V (Hugging Face's eager
            # attention: softmax(s, dtype=float32).to(q.dtype)).
            p32 = m.add('softmax', [m.add('cast', [s], to='f32')], axis=-1)
            o = m.add('matmul', [m.add('cast', [p32], to=dt), v])
            tags.append('softmax32')
        else:
            o = m.add('matmul', [m.add('softmax', [s], axis=-1), v])
    if dt != 'f32' and m.nodes[-1]['op'] == 'matmul' and around.random() < 0.15:
        # P·V kept in f32 (out_dtype), cast back to the dtype.
        pv = m.nodes[-1]
        pv['attrs'] = dict(pv.get('attrs', {}), out_dtype='f32')
        o = m.add('cast', [o], to=dt)
        tags.append('pvf32')
    if 'o' in layout:
        o = m.add('transpose', [o], perm=[0, 2, 1, 3])
    m.nodes[-1]['outputs'] = ['o']

    def change(x, r, c, env):
        for f in fs:
            x = f(x, r, c, env)
        return x
    name = 'mix_%d_%d_%s' % (seed, index, '_'.join(tags))
    # Q, K and V first (attention_test reads the dtype and head size from
    # the first input, the key count from the third).
    first = {'q_in': 0, 'k_in': 1, 'v_in': 2}
    inputs = sorted(m.inputs, key=lambda i: first.get(i['name'], 3))
    model = {'format': 'tcc-model', 'version': 1, 'name': 'mix_%d_%d' % (seed, index),
             'inputs': inputs, 'params': m.params, 'outputs': ['o'], 'nodes': m.nodes}
    # f32 prefill runs as 3xTF32 on the mma.sync template unless its head
    # size is not a multiple of 4 or K is given transposed.
    simt = (d % 4 or dv % 4 or kt == 'input') if dt == 'f32' else (
        d % 8 or dv % 8 or (kt == 'input' and lk % 8))
    prefer_decode = g * lq <= 16 and lk >= 512
    # The host computes the model op by op in its dtype: unscaled 16-bit
    # scores (tens, rounded to 2^-4 or coarser) make it inexact where the
    # kernel is not, and exp(s) without the max overflows f16 past 11 and
    # gives 0 / 0 on a row masked with a finite stand-in, where the kernel
    # computes the stable softmax (docs/numerics.md); such mixes are
    # checked on GPUs only.
    host = (dt == 'f32' or scale_form != 'none') and not (hand and hand_form == 'no_max')
    expect = {'decode': prefer_decode, 'simt': bool(simt), 'layout': layout, 'host': host}
    return name, model, 1.0, change, qkv, expect


def cases(T, count, seed):
    """`count` mixes drawn from `seed`."""
    return [draw(T, seed, i) for i in range(count)]
