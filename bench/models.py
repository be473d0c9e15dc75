#!/usr/bin/python3
"""Writes the benchmark models and compiles them, on the build machine.

    /usr/bin/python3 bench/models.py [--out DIR] [--tcc TCC] [--target sm_90] [--small]
                                     [--only PREFIX,...]

For each case: DIR/models/NAME.json (the model, as a user writes it),
DIR/NAME.tccb (the bundle), and DIR/manifest.json, which tells
bench/gpu_bench.py what each case computes (kind, dtype, shapes, the params'
initialisers) so that it can make inputs and a reference there. Nothing large
is written: params use the format's seeded `random` initialisers, and inputs
are made on the GPU machine, so the folder stays a few megabytes.

--small shrinks every shape (for trying the whole flow on the host target).
"""
import argparse
import json
import struct
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model(name, inputs, nodes, outputs, params=()):
    return {'format': 'tcc-model', 'version': 1, 'name': name,
            'inputs': [{'name': n, 'dtype': d, 'shape': s} for n, d, s in inputs],
            'params': list(params), 'nodes': nodes, 'outputs': outputs}


def node(op, inputs, output, **attrs):
    n = {'op': op, 'inputs': inputs, 'outputs': [output]}
    if attrs:
        n['attrs'] = attrs
    return n


def normal_param(name, dtype, shape, mean, std, seed):
    return {'name': name, 'dtype': dtype, 'shape': shape,
            'init': {'random': 'normal', 'mean': mean, 'std': std, 'seed': seed}}


def gemm_model(n, dt, mkn=None):
    m, k, n = mkn or (n, n, n)
    name = 'gemm_%d_%s' % (n, dt) if not mkn else 'gemm_%dx%dx%d_%s' % (m, k, n, dt)
    return model(name, [('a', dt, [m, k]), ('b', dt, [k, n])],
                 [node('matmul', ['a', 'b'], 'c')], ['c'])


def lowp_gemm_model(mkn, dt):
    """An 8-bit GEMM as torch._scaled_mm and torch._int_mm take it: B stored
    [N, K] (K-major, what 8-bit wgmma reads), f8 giving bf16 and i8 giving
    i32."""
    m, k, n = mkn
    name = 'gemm_%dx%dx%d_%s' % (m, k, n, dt)
    out = 'i32' if dt == 'i8' else 'bf16'
    return model(name, [('a', dt, [m, k]), ('b', dt, [n, k])],
                 [node('matmul', ['a', 'b'], 'c', transpose_b=True, out_dtype=out)], ['c'])


def rowwise_models(rows, cols, dt='bf16'):
    """The memory-bound cases over one [rows, cols] tensor x -> y in `dt`."""
    shape = [rows, cols]
    x = [('x', dt, shape)]
    gamma = normal_param('gamma', dt, [cols], 1.0, 0.1, 11)
    beta = normal_param('beta', dt, [cols], 0.0, 0.1, 12)
    weight = normal_param('weight', dt, [cols], 1.0, 0.1, 13)
    return {
        'softmax': model('softmax', x, [node('softmax', ['x'], 'y', axis=-1)], ['y']),
        'log_softmax': model('log_softmax', x, [node('log_softmax', ['x'], 'y', axis=-1)],
                             ['y']),
        'layer_norm': model(
            'layer_norm', x, [node('layer_norm', ['x', 'gamma', 'beta'], 'y', axis=-1, eps=1e-5)],
            ['y'], [gamma, beta]),
        # RMS norm written out in the format's primitives, as the spec's chain.
        'rms_norm': model('rms_norm', x, [
            node('mul', ['x', 'x'], 'x2'),
            node('reduce_mean', ['x2'], 'ms', axes=[-1], keepdims=True),
            node('constant', [], 'eps', dtype=dt, shape=[], value=1e-6),
            node('add', ['ms', 'eps'], 'ms_eps'),
            node('rsqrt', ['ms_eps'], 'inv'),
            node('mul', ['x', 'inv'], 'xn'),
            node('mul', ['xn', 'weight'], 'y'),
        ], ['y'], [weight]),
        # An elementwise chain computed in f32 between two casts.
        'silu_plus1': model('silu_plus1', x, [
            node('cast', ['x'], 'xf', to='f32'),
            node('sigmoid', ['xf'], 's'),
            node('mul', ['xf', 's'], 'p'),
            node('constant', [], 'one', dtype='f32', shape=[], value=1.0),
            node('add', ['p', 'one'], 'q'),
            node('cast', ['q'], 'y', to='bf16'),
        ], ['y']),
        # Cross-entropy as a user writes it (reduction 'mean' over the rows):
        # log_softmax, the target's entry, negated and averaged.
        'cross_entropy': model('cross_entropy', x + [('t', 'i64', [rows, 1])], [
            node('log_softmax', ['x'], 'logp', axis=-1),
            node('take_along_axis', ['logp', 't'], 'picked', axis=1),
            node('neg', ['picked'], 'nll'),
            node('reduce_mean', ['nll'], 'y', axes=[0], keepdims=True),
        ], ['y']),
        # The simplest kernel that reads and writes every element: copy speed.
        'neg': model('neg', x, [node('neg', ['x'], 'y')], ['y']),
    }


NO_RESIDENCY = os.path.join(ROOT, 'bench', 'rows-no-residency.json')
# The f32 SIMT attention template (true f32 on CUDA cores) with its 8 x 4
# register tile: f32 prefill's default is 3xTF32 on tensor cores, this
# the true-f32 form beside it (docs/architecture.md, "f32 attention").
SIMT_8X4 = os.path.join(ROOT, 'bench', 'attention-simt-8x4.json')


def cases(small):
    """(case name, model, extra compile flags, manifest entry)."""
    sizes = [256, 512] if small else [4096, 8192]
    rows, cols = (64, 512) if small else (16384, 8192)
    out = []
    for n in sizes:
        for dt in ('bf16', 'f16', 'f32'):
            m = gemm_model(n, dt)
            info = {'kind': 'gemm', 'dtype': dt, 'n': n, 'tf32': False}
            out.append((m['name'], m, [], info))
            if dt == 'f32':
                out.append(('gemm_%d_tf32' % n, m, ['--allow-tf32'], dict(info, tf32=True)))
                out.append(('gemm_%d_tf32_sm90a' % n, m, ['--allow-tf32', '--target', 'sm_90a'],
                            dict(info, tf32=True)))
            else:
                # Hopper's warpgroup MMA (wgmma) needs the sm_90a target.
                out.append((m['name'] + '_sm90a', m, ['--target', 'sm_90a'], info))
    # Sizes no tile divides (correctness first: the edges of the tiles and of
    # the tf32 path's transpose of B).
    for mkn in ((61, 70, 33),) if small else ((1000, 3001, 517),):
        for dt in ('bf16', 'f32'):
            m = gemm_model(0, dt, mkn)
            info = {'kind': 'gemm', 'dtype': dt, 'n': 0, 'mkn': list(mkn), 'tf32': dt == 'f32'}
            out.append((m['name'] + ('_tf32' if dt == 'f32' else ''), m,
                        ['--allow-tf32'] if dt == 'f32' else [], info))
    # Not square, on the wgmma template (sizes multiples of its tiles).
    mkn = (128, 64, 128) if small else (1024, 2048, 768)
    m = gemm_model(0, 'f32', mkn)
    out.append((m['name'] + '_tf32_sm90a', m, ['--allow-tf32', '--target', 'sm_90a'],
                {'kind': 'gemm', 'dtype': 'f32', 'n': 0, 'mkn': list(mkn), 'tf32': True}))
    # 8-bit operands (issue 16) on wgmma, against torch._scaled_mm and
    # torch._int_mm; an odd M and N, and a K that is not a multiple of 16
    # (16-byte rows: the generic kernels, correctness only).
    lowp = [(n, n, n) for n in sizes] + ([(61, 80, 33), (61, 70, 33)] if small
                                         else [(1000, 3008, 517), (1000, 3001, 517)])
    for dt in ('f8e4m3', 'i8'):
        for mkn_ in lowp:
            m = lowp_gemm_model(mkn_, dt)
            out.append((m['name'] + '_sm90a', m, ['--target', 'sm_90a'],
                        {'kind': 'gemm', 'dtype': dt, 'n': 0, 'mkn': list(mkn_), 'tf32': False,
                         'trans_b': True, 'out_dtype': 'i32' if dt == 'i8' else 'bf16'}))
    def rowwise_info(kind, m, shape, dt='bf16'):
        info = {'kind': kind, 'dtype': dt, 'shape': shape,
                'params': {p['name']: p['init'] for p in m['params']}}
        eps = {'layer_norm': 1e-5, 'rms_norm': 1e-6}
        if kind in eps:
            info['eps'] = eps[kind]
        return info
    for kind, m in rowwise_models(rows, cols).items():
        info = rowwise_info(kind, m, [rows, cols])
        out.append((kind, m, [], info))
        if kind in ('softmax', 'layer_norm', 'rms_norm'):
            # The same model without the residency request (32 row values
            # a thread instead of 16 measured no different: performance.md).
            out.append((kind + '_resfree', m, ['--schedule', NO_RESIDENCY], info))
    # Row lengths that are not multiples of 4 (issue 13: every reduction chain
    # at least torch.compile's speed on any row length).
    for odd in (() if small else (1001, 5003)):
        for kind, m in rowwise_models(rows, odd).items():
            if kind not in ('softmax', 'log_softmax', 'layer_norm', 'rms_norm',
                            'cross_entropy'):
                continue
            name = '%s_%d' % (kind, odd)
            out.append((name, dict(m, name=name), [], rowwise_info(kind, m, [rows, odd])))
    # The sweep of issue 13's last point: short, odd and long rows in every
    # dtype, 2^26 elements a case (about the bytes of the cases above in
    # bf16; rows of 7 are then 9.6 M rows); vocabularies' lengths (50257,
    # 131072: 512 rows) are longer than a block's registers hold.
    chains = ('softmax', 'log_softmax', 'layer_norm', 'rms_norm', 'cross_entropy')
    lengths = {'bf16': (7, 100, 50257), 'f16': (7, 100, 3001, 32768, 50257, 131072),
               'f32': (7, 100, 3001, 32768, 50257, 131072)}
    for dt in ((('f16',)) if small else ('bf16', 'f16', 'f32')):
        for n in ((7, 100) if small else lengths[dt]):
            r = max(1, (1 << (12 if small else 26)) // n)
            for kind, m in rowwise_models(r, n, dt).items():
                if kind not in chains:
                    continue
                name = '%s_%d_%s' % (kind, n, dt)
                out.append((name, dict(m, name=name), [], rowwise_info(kind, m, [r, n], dt)))
    # Norms over rows of 4097-12289 not a multiple of 4, where a full
    # residency request spilled before session 44 (docs/performance.md).
    for dt in (() if small else ('f16', 'f32')):
        n = 8191
        r = (1 << 26) // n
        for kind, m in rowwise_models(r, n, dt).items():
            if kind in ('layer_norm', 'rms_norm'):
                name = '%s_%d_%s' % (kind, n, dt)
                out.append((name, dict(m, name=name), [], rowwise_info(kind, m, [r, n], dt)))
    return out


def attention_model(name, b, hq, hkv, l, d, variant, lq=None, dt='bf16', layout=False,
                    written='', packed=False, dv=None):
    """Prefill attention written plainly (the ten Neptune operators' prefill
    half): scores, the variant's changes, softmax, P·V; K and V repeated
    over query heads by reshape and broadcast when hkv < hq (GQA). With
    `lq` (decode), lq query rows at the last lq of the l positions: row
    positions are offset by l - lq. `layout`: Q, K, V and the output are
    [B, L, H, D] (a projection's layout), transposed to and from attention's
    [B, H, L, D] in the model. `written`: 'ktrans' (K the input
    [B, Hkv, D, L], the scores matmul(q, k)), 'handwritten' (softmax as
    exp(s - max), its sum, and P·V divided by the sum afterwards), 'flat'
    (Q, K, V and the output [B·H, L, D], the scores viewed [B, H, L, S]
    around the mask, as torch.bmm code writes it). `packed`
    (hkv = hq, prefill): Q, K and V cut from one input [B, L, 3·H·D] (a fused
    QKV projection: three slices, each reshaped to [B, L, H, D] and
    transposed), the output transposed back and its heads merged, [B, L, H·D].
    `dv`: V's head size where it is not D (DeepSeek's MLA: 128 under 192)."""
    lq = lq or l
    nodes = []
    kk, vv = 'k', 'v'
    if hkv != hq:
        g = hq // hkv
        for t, width in (('k', d), ('v', dv or d)):
            nodes += [node('reshape', [t], t + '5', shape=[b, hkv, 1, l, width]),
                      node('broadcast_to', [t + '5'], t + 'b', shape=[b, hkv, g, l, width]),
                      node('reshape', [t + 'b'], t + t, shape=[b, hq, l, width])]
        kk, vv = 'kk', 'vv'
    scale = 1.0 / d ** 0.5
    nodes += [node('matmul', ['q', kk], 's', transpose_b=written != 'ktrans'),
              node('constant', [], 'scale', dtype=dt, shape=[], value=scale),
              node('mul', ['s', 'scale'], 'ss')]
    cur = 'ss'
    if written == 'flat':
        # Heads flattened ([B·H, L, D], torch.bmm): the scores viewed
        # [B, H, L, S] for the mask and merged back for the softmax.
        nodes.append(node('reshape', [cur], 'ss4', shape=[b, hq, lq, l]))
        cur = 'ss4'
    pos = [node('iota', [], 'col', dtype='i32', shape=[lq, l], axis=-1)]
    if lq == l:
        pos.append(node('iota', [], 'row', dtype='i32', shape=[lq, l], axis=-2))
    else:
        pos += [node('iota', [], 'row0', dtype='i32', shape=[lq, l], axis=-2),
                node('constant', [], 'off', dtype='i32', shape=[], value=l - lq),
                node('add', ['row0', 'off'], 'row')]
    if variant == 'softcap':
        nodes += [node('constant', [], 'cap', dtype=dt, shape=[], value=50.0),
                  node('div', [cur, 'cap'], 'sc'), node('tanh', ['sc'], 'th'),
                  node('mul', ['th', 'cap'], 'capped')]
        cur = 'capped'
    if variant == 'alibi':
        # slope_h = 2^(-8 (h + 1) / H), times the distance k - q.
        nodes += pos + [
            node('iota', [], 'head', dtype='i32', shape=[hq, 1, 1], axis=0),
            node('constant', [], 'one', dtype='i32', shape=[], value=1),
            node('add', ['head', 'one'], 'h1'), node('cast', ['h1'], 'h1f', to='f32'),
            node('constant', [], 'k8', dtype='f32', shape=[], value=-8.0 * 0.6931471805599453 / hq),
            node('mul', ['h1f', 'k8'], 'e'), node('exp', ['e'], 'slope'),
            node('sub', ['col', 'row'], 'dist'), node('cast', ['dist'], 'distf', to='f32'),
            node('mul', ['slope', 'distf'], 'biasf'), node('cast', ['biasf'], 'bias', to=dt),
            node('add', [cur, 'bias'], 'biased')]
        cur = 'biased'
        pos = []
    if variant in ('causal', 'alibi', 'softcap', 'window'):
        nodes += pos + [node('greater_equal', ['row', 'col'], 'keep')]
        keep = 'keep'
        if variant == 'window':
            nodes += [node('sub', ['row', 'col'], 'dqk'),
                      node('constant', [], 'w', dtype='i32', shape=[], value=4096),
                      node('less', ['dqk', 'w'], 'near'), node('and', ['keep', 'near'], 'keepw')]
            keep = 'keepw'
        if written == 'fill':
            # masked_fill(drop, -inf) as exported: where(drop, -inf, s).
            nodes += [node('not', [keep], 'drop'),
                      node('constant', [], 'neg', dtype=dt, shape=[], value='-inf'),
                      node('select', ['drop', 'neg', cur], 'masked')]
        else:
            nodes += [node('constant', [], 'neg', dtype=dt, shape=[],
                           value='-inf' if written == 'safe' else -1e30),
                      node('select', [keep, cur, 'neg'], 'masked')]
        cur = 'masked'
    if written == 'flat':
        nodes.append(node('reshape', [cur], 's3', shape=[b * hq, lq, l]))
        cur = 's3'
    if written == 'handwritten':
        nodes += [node('reduce_max', [cur], 'mx', axes=[-1], keepdims=True),
                  node('sub', [cur, 'mx'], 'sh'), node('exp', ['sh'], 'e'),
                  node('reduce_sum', ['e'], 'den', axes=[-1], keepdims=True),
                  node('matmul', ['e', vv], 'num'), node('div', ['num', 'den'], 'o')]
    elif written == 'safe':
        # A "safe softmax": P zeroed where the mask drops keys, so that a
        # row keeping none gives zeros.
        nodes += [node('softmax', [cur], 'p', axis=-1),
                  node('constant', [], 'zero', dtype=dt, shape=[], value=0.0),
                  node('select', [keep, 'p', 'zero'], 'pz'), node('matmul', ['pz', vv], 'o')]
    else:
        nodes += [node('softmax', [cur], 'p', axis=-1), node('matmul', ['p', vv], 'o')]
    shapes = [[b, hq, lq, d], [b, hkv, d, l] if written == 'ktrans' else [b, hkv, l, d],
              [b, hkv, l, dv or d]]
    if written == 'flat':
        assert hkv == hq, 'flattened heads: one K and V head a query head'
        shapes = [[b * hq, lq, d], [b * hq, l, d], [b * hq, l, d]]
    if layout:
        # Attention reads qh, kh, vh and writes oh; q, k, v, o are [B, L, H, D].
        names = {'q': 'qh', 'k': 'kh', 'v': 'vh', 'o': 'oh'}
        for n in nodes:
            n['inputs'] = [names.get(i, i) for i in n['inputs']]
            n['outputs'] = [names.get(o, o) for o in n['outputs']]
        nodes = [node('transpose', [t], t + 'h', perm=[0, 2, 1, 3]) for t in 'qkv'] + nodes + [
            node('transpose', ['oh'], 'o', perm=[0, 2, 1, 3])]
        shapes = [[x[0], x[2], x[1], x[3]] for x in shapes]
    if packed:
        names = {'q': 'qh', 'k': 'kh', 'v': 'vh', 'o': 'oh'}
        for n in nodes:
            n['inputs'] = [names.get(i, i) for i in n['inputs']]
            n['outputs'] = [names.get(o, o) for o in n['outputs']]
        views = []
        for i, t in enumerate('qkv'):
            views += [node('slice', ['qkv'], t + 's', starts=[i * hq * d],
                           ends=[(i + 1) * hq * d], axes=[2]),
                      node('reshape', [t + 's'], t + 'r', shape=[b, l, hq, d]),
                      node('transpose', [t + 'r'], t + 'h', perm=[0, 2, 1, 3])]
        nodes = views + nodes + [node('transpose', ['oh'], 'ot', perm=[0, 2, 1, 3]),
                                 node('reshape', ['ot'], 'o', shape=[b, l, hq * d])]
        return model(name, [('qkv', dt, [b, l, 3 * hq * d])], nodes, ['o'])
    return model(name, [(t, dt, sh) for t, sh in zip('qkv', shapes)], nodes, ['o'])


def alibi_slopes(h):
    """ALiBi's slopes 2^(-8 (h + 1) / H), as f32 holds them."""
    return [struct.unpack('<f', struct.pack('<f', 2.0 ** (-8.0 * (i + 1) / h)))[0]
            for i in range(h)]


def captured_attention_model(name, b, h, l, d, form, dt='f16', lq=None):
    """Attention whose score change reads tensors from outside it, as a user
    writes it (issue 13):
      bias:        scores + bias, bias an input [1, H, L, L] in `dt`;
      padmask:     select(mask, scores, -inf), mask a bool input [B, 1, 1, L]
                   (PyTorch's masked_fill(~mask, -inf));
      alibi_param: causal ALiBi, scores + slopes * (k - q) computed in f32
                   and cast, the slopes a param [1, H, 1, 1] holding ALiBi's
                   values (a registered buffer);
      alibi_input: the same with the slopes an f32 input.
    With `lq` (decode): lq query rows at the last lq of the l positions
    (the bias [1, H, lq, L])."""
    lq = lq or l
    scale = 1.0 / d ** 0.5
    nodes = [node('matmul', ['q', 'k'], 's', transpose_b=True),
             node('constant', [], 'scale', dtype=dt, shape=[], value=scale),
             node('mul', ['s', 'scale'], 'ss')]
    extra, params = [], []
    if form == 'bias':
        extra = [('bias', dt, [1, h, lq, l])]
        nodes += [node('add', ['ss', 'bias'], 'biased')]
        cur = 'biased'
    elif form == 'padmask':
        extra = [('mask', 'bool', [b, 1, 1, l])]
        nodes += [node('constant', [], 'ninf', dtype=dt, shape=[], value='-inf'),
                  node('select', ['mask', 'ss', 'ninf'], 'masked')]
        cur = 'masked'
    elif form in ('alibi_param', 'alibi_input'):
        if form == 'alibi_param':
            params = [{'name': 'slopes', 'dtype': 'f32', 'shape': [1, h, 1, 1],
                       'init': {'value': alibi_slopes(h)}}]
        else:
            extra = [('slopes', 'f32', [1, h, 1, 1])]
        nodes += [node('iota', [], 'row0', dtype='i32', shape=[lq, l], axis=-2),
                  node('constant', [], 'off', dtype='i32', shape=[], value=l - lq),
                  node('add', ['row0', 'off'], 'row'),
                  node('iota', [], 'col', dtype='i32', shape=[lq, l], axis=-1),
                  node('sub', ['col', 'row'], 'dist'), node('cast', ['dist'], 'distf', to='f32'),
                  node('mul', ['slopes', 'distf'], 'biasf'),
                  node('cast', ['biasf'], 'bias', to=dt), node('add', ['ss', 'bias'], 'biased'),
                  node('greater_equal', ['row', 'col'], 'keep'),
                  node('constant', [], 'neg', dtype=dt, shape=[], value=-1e30),
                  node('select', ['keep', 'biased', 'neg'], 'masked')]
        cur = 'masked'
    else:
        raise ValueError(form)
    nodes += [node('softmax', [cur], 'p', axis=-1), node('matmul', ['p', 'v'], 'o')]
    return model(name, [('q', dt, [b, h, lq, d]), ('k', dt, [b, h, l, d]),
                        ('v', dt, [b, h, l, d])] + extra, nodes, ['o'], params)


def rounded_scale(d, dt):
    """1/sqrt(d) as the model's `dt` constant holds it: the peers and the
    reference get this value, so that all compute the same problem (in f16
    at 32768 keys the exact value moved outputs by 4e-5, twice SDPA's
    error)."""
    x = 1.0 / d ** 0.5
    if dt == 'f32':
        return struct.unpack('<f', struct.pack('<f', x))[0]
    if dt == 'f16':
        return struct.unpack('<e', struct.pack('<e', x))[0]
    bits = struct.unpack('<I', struct.pack('<f', x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # nearest even
    return struct.unpack('<f', struct.pack('<I', bits))[0]


def attention_cases(small):
    """(case name, model, flags, manifest entry) for bench/attention_bench.py."""
    seq, d = (256, 64) if small else (8192, 128)
    variants = [('global', 32, 32), ('causal', 32, 32), ('alibi', 32, 32), ('gqa', 64, 8),
                ('softcap', 32, 16), ('window', 32, 8)]
    out = []
    for dt, suffix in (('bf16', ''), ('f16', '_f16')):
        for variant, hq, hkv in variants:
            for b in (1, 8):
                name = 'attn_%s_b%d%s' % (variant, b, suffix)
                m = attention_model(name, b, hq, hkv, seq, d, variant, dt=dt)
                out.append((name, m, ['--gpu-attention'],
                            {'kind': 'attention', 'variant': variant, 'dtype': dt, 'b': b,
                             'hq': hq, 'hkv': hkv, 'l': seq, 'd': d,
                             'scale': rounded_scale(d, dt)}))
        # Decode (issue 4): one query row against 8192 or 32768 keys.
        for variant, hq, hkv in variants[1:]:
            for l in ((1024,) if small else (8192, 32768)):
                for b in (1, 8):
                    name = 'decode_%s_%d_b%d%s' % (variant, l, b, suffix)
                    m = attention_model(name, b, hq, hkv, l, d, variant, lq=1, dt=dt)
                    out.append((name, m, ['--gpu-attention'],
                                {'kind': 'attention', 'variant': variant, 'dtype': dt, 'b': b,
                                 'hq': hq, 'hkv': hkv, 'l': l, 'lq': 1, 'd': d,
                                 'scale': rounded_scale(d, dt)}))
    # Q, K, V and the output kept [B, L, H, D] by the model and transposed
    # (issue 13): the peers get the transposed views. `packed`: Q, K and V
    # cut from one projection [B, L, 3·H·D] (GPT-2's c_attn split in three),
    # the output's heads merged, read and written through the views; the
    # peers get the split, viewed and transposed tensors, as a PyTorch user
    # hands them to SDPA.
    for form in ('layout', 'packed'):
        for variant, hq, hkv in variants[:2]:
            for b in (1, 8):
                name = 'attn_%s_%s_b%d_f16' % (variant, form, b)
                m = attention_model(name, b, hq, hkv, seq, d, variant, dt='f16',
                                    **{form: True})
                out.append((name, m, ['--gpu-attention'],
                            {'kind': 'attention', 'variant': variant, 'dtype': 'f16', 'b': b,
                             'hq': hq, 'hkv': hkv, 'l': seq, 'd': d, form: True,
                             'scale': rounded_scale(d, 'f16')}))
    for l in ((1024,) if small else (8192, 32768)):
        for b in (1, 8):
            name = 'decode_causal_layout_%d_b%d_f16' % (l, b)
            m = attention_model(name, b, 32, 32, l, d, 'causal', lq=1, dt='f16', layout=True)
            out.append((name, m, ['--gpu-attention'],
                        {'kind': 'attention', 'variant': 'causal', 'dtype': 'f16', 'b': b,
                         'hq': 32, 'hkv': 32, 'l': l, 'lq': 1, 'd': d, 'layout': True,
                         'scale': rounded_scale(d, 'f16')}))
    # The same attention written differently (issue 13): K given transposed
    # (an input [B, H, D, L]; the peers get K's [B, H, L, D] view) and
    # softmax by hand (P·V divided by the sum afterwards), heads flattened
    # (torch.bmm on [B·H, L, D]; the peers get the [B, H, L, D] views of the
    # same tensors); f16, global and causal, batch 1 and 8.
    for written in ('ktrans', 'handwritten', 'flat'):
        for variant, hq, hkv in variants[:2]:
            for b in (1, 8):
                name = 'attn_%s_%s_b%d_f16' % (variant, written, b)
                m = attention_model(name, b, hq, hkv, seq, d, variant, dt='f16',
                                    written=written)
                info = {'kind': 'attention', 'variant': variant, 'dtype': 'f16', 'b': b,
                        'hq': hq, 'hkv': hkv, 'l': seq, 'd': d,
                        'scale': rounded_scale(d, 'f16')}
                if written in ('ktrans', 'flat'):
                    info[written] = True
                out.append((name, m, ['--gpu-attention'], info))
    # The causal mask as masked_fill(drop, -inf) exports it, and a "safe
    # softmax" (P zeroed where the mask drops keys), f16, batch 1 and 8.
    for written in ('fill', 'safe'):
        for b in (1, 8):
            name = 'attn_causal_%s_b%d_f16' % (written, b)
            m = attention_model(name, b, 32, 32, seq, d, 'causal', dt='f16', written=written)
            out.append((name, m, ['--gpu-attention'],
                        {'kind': 'attention', 'variant': 'causal', 'dtype': 'f16', 'b': b,
                         'hq': 32, 'hkv': 32, 'l': seq, 'd': d,
                         'scale': rounded_scale(d, 'f16')}))
    # V of another head size (DeepSeek's MLA prefill: Q·Kᵀ over 192, values
    # of 128), f16, global and causal, batch 1 and 8.
    for variant, hq, hkv in variants[:2]:
        for b in (1, 8):
            name = 'attn_%s_mla_b%d_f16' % (variant, b)
            m = attention_model(name, b, hq, hkv, seq, 192, variant, dt='f16', dv=128)
            out.append((name, m, ['--gpu-attention'],
                        {'kind': 'attention', 'variant': variant, 'dtype': 'f16', 'b': b,
                         'hq': hq, 'hkv': hkv, 'l': seq, 'd': 192, 'dv': 128,
                         'scale': rounded_scale(192, 'f16')}))
    # f32 (issue 13: 3xTF32 on tensor cores; `_8x4` the SIMT template in
    # true f32), at sequence 4096 and 8192: SDPA's efficient backend is the
    # fused peer that takes f32.
    for s4 in ((256,) if small else (4096, seq)):
        for variant in ('global', 'causal'):
            for b in ((1,) if s4 != seq else (1, 8)):
                name = 'attn_%s_b%d_f32_s%d' % (variant, b, s4)
                m = attention_model(name, b, 32, 32, s4, d, variant, dt='f32')
                info = {'kind': 'attention', 'variant': variant, 'dtype': 'f32', 'b': b,
                        'hq': 32, 'hkv': 32, 'l': s4, 'd': d,
                        'scale': rounded_scale(d, 'f32')}
                out.append((name, m, ['--gpu-attention'], info))
                if not small and s4 != seq:
                    out.append((name + '_8x4', m, ['--gpu-attention', '--schedule', SIMT_8X4],
                                info))
    # Score changes reading captured tensors (issue 13), f16 as its figures.
    # The manifest's `inputs` names the extra inputs attention_bench.py
    # makes; batch 1 and 8 (the bias [1, H, L, L] broadcast over the
    # batch), and decode (one query row; the bias [1, H, 1, L]).
    s4, s8 = (256, 256) if small else (4096, 8192)
    forms = [('bias', 'bias_s%d_h8' % s4, 8, s4, (1, 8), None),
             ('bias', 'bias_s%d_h8' % s8, 8, s8, (1, 8), None),
             ('padmask', 'padmask_%d' % s8, 32, s8, (1, 8), None),
             ('alibi_param', 'alibi_param_%d' % s8, 32, s8, (1, 8), None),
             ('alibi_input', 'alibi_input_%d' % s8, 32, s8, (1,), None)]
    for form in ('bias', 'padmask', 'alibi_param'):
        for l in ((1024,) if small else (8192, 32768)):
            forms.append((form, 'decode_%s_%d' % (form, l), 32, l, (1, 8), 1))
    for form, base, h, l, batches, lq in forms:
        for b in batches:
            name = base + ('_b%d' % b if b != 1 or lq else '') + '_f16'
            m = captured_attention_model(name, b, h, l, d, form, lq=lq)
            info = {'kind': 'attention', 'variant': form, 'dtype': 'f16', 'b': b, 'hq': h,
                    'hkv': h, 'l': l, 'd': d, 'scale': rounded_scale(d, 'f16'),
                    'inputs': [i['name'] for i in m['inputs'][3:]]}
            if lq:
                info['lq'] = lq
            if form == 'alibi_param':
                info['slopes'] = m['params'][0]['init']['value']
            out.append((name, m, ['--gpu-attention'], info))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=os.path.join(ROOT, '.carry', 'bench'))
    ap.add_argument('--tcc', default=os.path.join(ROOT, 'build', 'compiler', 'tcc'))
    ap.add_argument('--target', default='sm_90')
    ap.add_argument('--small', action='store_true', help='tiny shapes, for a trial run')
    ap.add_argument('--only', help='comma-separated name prefixes: only these cases')
    args = ap.parse_args()
    only = tuple(args.only.split(',')) if args.only else None

    def wanted(name):
        return only is None or name.startswith(only)

    os.makedirs(os.path.join(args.out, 'models'), exist_ok=True)
    manifest = {'target': args.target, 'small': args.small, 'cases': []}
    failed = 0
    for name, m, flags, info in cases(args.small):
        if not wanted(name):
            continue
        path = os.path.join(args.out, 'models', m['name'] + '.json')
        with open(path, 'w') as f:
            json.dump(m, f, indent=1)
        bundle = name + '.tccb'
        cmd = [args.tcc, 'compile', path, '-o', os.path.join(args.out, bundle),
               '--target', args.target] + flags
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            # Reported, not fatal: the GPU side reports the case as missing.
            print('FAILED to compile %s: %s' % (name, (p.stderr or p.stdout).strip()))
            failed += 1
            continue
        manifest['cases'].append(dict(info, name=name, bundle=bundle,
                                      compile=' '.join(['tcc compile', m['name'] + '.json',
                                                        '--target', args.target] + flags)))
        print('compiled %-18s (%d bytes)' % (name, os.path.getsize(os.path.join(args.out, bundle))))
    with open(os.path.join(args.out, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)
    # Attention: a manifest of its own, for bench/attention_bench.py.
    # Attention on sm_90 is compiled for sm_90a: its prefill kernel is built
    # on Hopper's warpgroup MMA, which plain sm_90 PTX cannot hold.
    target = 'sm_90a' if args.target == 'sm_90' else args.target
    attention = {'target': target, 'small': args.small, 'cases': []}
    for name, m, flags, info in attention_cases(args.small):
        if not wanted(name):
            continue
        path = os.path.join(args.out, 'models', m['name'] + '.json')
        with open(path, 'w') as f:
            json.dump(m, f, indent=1)
        bundle = name + '.tccb'
        p = subprocess.run([args.tcc, 'compile', path, '-o', os.path.join(args.out, bundle),
                            '--target', target] + flags, capture_output=True, text=True)
        if p.returncode != 0:
            print('FAILED to compile %s: %s' % (name, (p.stderr or p.stdout).strip()))
            failed += 1
            continue
        attention['cases'].append(dict(info, name=name, bundle=bundle))
        print('compiled %-18s (%d bytes)' % (name, os.path.getsize(os.path.join(args.out, bundle))))
    with open(os.path.join(args.out, 'attention-manifest.json'), 'w') as f:
        json.dump(attention, f, indent=1)
    print('wrote %d bundles and manifest.json to %s' % (len(manifest['cases']), args.out))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
