#!/usr/bin/env python3
"""Attention written plainly, compiled with --gpu-attention, against its peers.

    python3 bench/attention_bench.py --tcc BUILD/runtime/tcc [--carry .carry/bench]
                                     [--out DIR] [--only NAME,...] [--no-flex]

For every case of the carry folder's attention-manifest.json (bench/models.py):
prefill at sequence 8192, head size 128, bf16 (and f16: the '_f16' cases),
batch 1 and 8, the variants of
issue 4 (global, causal, ALiBi, GQA 64/8, softcap 50 with 32/16 heads,
sliding window 4096 with 32/8 heads); decode (one query row at the last
position, 'lq' in the manifest) of causal, ALiBi, GQA, softcap, window, the
[B, L, H, D] layout, bias, padding mask and ALiBi slopes as a param against
8192 and 32768 keys; in f16, score changes reading captured tensors (issue
13, the model's extra inputs or a param: 'bias', 'padmask', 'alibi_param',
'alibi_input'), which are checked against the best of SDPA with attn_mask
(cuDNN, efficient, math), FlexAttention capturing the same tensors and plain
PyTorch.

1. correctness (batch 1): `tcc run` on seeded inputs against a float64
   reference computed head by head; tcc's largest error must be at most 1.5x
   that of SDPA's flash backend in bf16 where it runs the variant, else of
   plain PyTorch in bf16 (scores, softmax in f32, P rounded to bf16);
2. speed: `tcc bench` (device events, median) beside SDPA flash and cuDNN
   where they run the variant, FlexAttention compiled, and plain PyTorch
   where its scores fit in memory, all on the same device in one run.

TFLOP/s count 4 * D * (kept query-key pairs) * B * Hq; GB/s count the bytes
of K and V (each read once) over the time, beside the bandwidth of a 2 GiB
device-to-device copy in the same run (bytes read plus written). Writes
DIR/attention.json and DIR/attention-table.md.
"""
import argparse
import json
import math
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_bench as G  # noqa: E402  (tcc_speed, time_cuda, run_cmd)

SEED = 20261201
WINDOW = 4096
CAP = 50.0


def slopes(hq):
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / hq) for h in range(hq)], device='cuda',
                        dtype=torch.float64)


# Variants whose score change reads tensors from outside attention
# (issue 13): the model's extra inputs (or param) are made here, `env`.
CAPTURED = ('bias', 'padmask', 'alibi_param', 'alibi_input')
ALIBI_SLOPES = ('alibi_param', 'alibi_input')
FUSED_PEERS = ('SDPA cuDNN', 'SDPA efficient', 'FlexAttention')


def valid_lengths(case):
    """Keys each batch keeps in the padding-mask cases: the last (b + 1) / B
    of a fifth of the keys are padding, so batch B - 1 keeps 0.8 L and no
    row is fully masked."""
    b, l = case['b'], case['l']
    return [l - (l // 5) * (bi + 1) // b for bi in range(b)]


def change(case, s, h, rows, cols, env=None, bi=0):
    """The variant's scores (float64 or f32 s of one head of batch bi),
    masked ones -inf; `env` holds the captured tensors."""
    v = case['variant']
    if v == 'softcap':
        s = CAP * torch.tanh(s / CAP)
    if v == 'alibi':
        s = s + float(slopes(case['hq'])[h]) * (cols - rows).to(s.dtype)
    if v in ALIBI_SLOPES:
        # As the model computes it: the f32 slope times the distance in
        # f32, cast to the dtype (SDPA's float mask holds the same values).
        slope = env['slopes'][0, h, 0, 0].double()
        s = s + (slope * (cols - rows).double()).float().to(torch_dtype(case)).to(s.dtype)
    if v == 'bias':
        s = s + env['bias'][0, h].to(s.dtype)
    if v == 'padmask':
        s = s.masked_fill(~env['mask'][bi, 0, 0][None, :], float('-inf'))
    keep = None
    if v in ('causal', 'alibi', 'softcap', 'window') + ALIBI_SLOPES:
        keep = rows >= cols
        if v == 'window':
            keep = keep & (rows - cols < WINDOW)
    return s if keep is None else s.masked_fill(~keep, float('-inf'))


def lq_of(case):
    """Query rows: all l positions (prefill) or the last lq (decode)."""
    return case.get('lq', case['l'])


def torch_dtype(case):
    return {'f16': torch.float16, 'f32': torch.float32}.get(case.get('dtype'), torch.bfloat16)


def per_head(case, q, k, v, dtype, env=None):
    """Attention head by head in `dtype` (float64: the reference; bfloat16
    or float16: plain PyTorch, softmax in f32)."""
    b, hq, lq, d = q.shape
    l = k.shape[2]
    g = hq // k.shape[1]
    out = torch.empty(q.shape[:-1] + v.shape[-1:], dtype=dtype, device='cuda')
    rows = torch.arange(lq, device='cuda')[:, None] + (l - lq)
    cols = torch.arange(l, device='cuda')[None, :]
    for bi in range(b):
        for h in range(hq):
            qh, kh, vh = (t.to(dtype) for t in (q[bi, h], k[bi, h // g], v[bi, h // g]))
            s = (qh @ kh.T) * case['scale']
            if dtype == torch.float64:
                p = torch.softmax(change(case, s, h, rows, cols, env, bi), dim=-1)
            else:
                p = torch.softmax(change(case, s.float(), h, rows, cols, env, bi),
                                  dim=-1).to(dtype)
            out[bi, h] = p @ vh
    return out


def sdpa(case, q, k, v, backend):
    from torch.nn.attention import sdpa_kernel
    # SDPA's is_causal aligns the rows to the first keys; one decode row at
    # the last position keeps every key, which is no mask at all.
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(
            q, k, v, is_causal=case['variant'] == 'causal' and lq_of(case) == case['l'],
            scale=case['scale'], enable_gqa=case['hkv'] != case['hq'])


def sdpa_runs(case):
    return case['variant'] in ('global', 'gqa') or (
        case['variant'] == 'causal' and lq_of(case) in (1, case['l']))


def fits(case):
    """Whether [B, H, Lq, L] scores in 2 bytes fit beside the rest (plain
    PyTorch, SDPA's math backend, an ALiBi mask for SDPA)."""
    return case['b'] * case['hq'] * lq_of(case) * case['l'] * 2 <= 8e9


def attn_mask(case, env):
    """The mask an SDPA user passes for a captured variant: the bias, the
    bool padding mask, or ALiBi's bias computed in f32, cast to the dtype
    and -inf above the diagonal ([1, H, Lq, L]; None where it does not
    fit)."""
    v = case['variant']
    if v == 'bias':
        return env['bias']
    if v == 'padmask':
        return env['mask']
    if not fits(case):
        return None
    l, hq, lq = case['l'], case['hq'], lq_of(case)
    rows = torch.arange(lq, device='cuda')[:, None] + (l - lq)
    cols = torch.arange(l, device='cuda')[None, :]
    dist = (cols - rows).float()
    m = torch.empty((1, hq, lq, l), dtype=torch_dtype(case), device='cuda')
    for h in range(hq):  # a head at a time: f32 [L, L] is 256 MiB at 8192
        m[0, h] = (env['slopes'][0, h, 0, 0] * dist).to(m.dtype).masked_fill(
            rows < cols, float('-inf'))
    return m


def sdpa_masked(case, q, k, v, mask, backend):
    from torch.nn.attention import sdpa_kernel
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=case['scale'])


def sdpa_masked_backends():
    from torch.nn.attention import SDPBackend
    return [('SDPA cuDNN', SDPBackend.CUDNN_ATTENTION),
            ('SDPA efficient', SDPBackend.EFFICIENT_ATTENTION), ('SDPA math', SDPBackend.MATH)]


def flex_fn(case, env=None):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    v, l, lq = case['variant'], case['l'], lq_of(case)
    off = l - lq
    mask = None
    batches = None
    if v in ('causal', 'alibi', 'softcap') + ALIBI_SLOPES:
        def mask(b, h, q, kv):
            return q + off >= kv
    elif v == 'padmask':
        # The block mask built from the tensor, the mask_mod reading it.
        pad = env['mask']
        batches = case['b']

        def mask(b, h, q, kv):
            return pad[b, 0, 0, kv]
    elif v == 'window':
        def mask(b, h, q, kv):
            return (q + off >= kv) & (q + off - kv < WINDOW)
    block = create_block_mask(mask, batches, None, lq, l, device='cuda') if mask else None
    score_mod = None
    if v == 'softcap':
        def score_mod(s, b, h, q, kv):
            return CAP * torch.tanh(s / CAP)
    elif v == 'alibi':
        sl = slopes(case['hq']).float()

        def score_mod(s, b, h, q, kv):
            return s + sl[h] * (kv - q - off)
    elif v in ALIBI_SLOPES:
        sl2 = env['slopes'].reshape(-1)

        dt = torch_dtype(case)

        def score_mod(s, b, h, q, kv):
            # Rounded to the dtype, as the model's cast does.
            return s + (sl2[h] * (kv - q - off)).to(dt)
    elif v == 'bias':
        bias = env['bias']

        def score_mod(s, b, h, q, kv):
            return s + bias[0, h, q, kv]
    # Each case compiles afresh: dynamo counts recompilations of
    # flex_attention across cases, and past its limit (8) it silently ran
    # Flex unfused (85 ms for softcap in the first run).
    torch._dynamo.reset()
    flex = torch.compile(flex_attention, dynamic=False)
    return lambda q, k, v_: flex(q, k, v_, score_mod=score_mod, block_mask=block,
                                 scale=case['scale'], enable_gqa=case['hkv'] != case['hq'])


def pairs(case):
    l, v, lq = case['l'], case['variant'], lq_of(case)
    rows = range(l - lq, l)  # query positions
    if v in ('global', 'gqa', 'bias'):
        return lq * l
    if v == 'padmask':
        return lq * sum(valid_lengths(case)) / case['b']
    if v == 'window':
        return sum(min(q + 1, WINDOW) for q in rows)
    return sum(q + 1 for q in rows)


def kv_bytes(case):
    """K and V, and a captured bias (the mask and slopes are small)."""
    n = case['b'] * case['hkv'] * case['l'] * (case['d'] + dv_of(case)) * 2
    if case['variant'] == 'bias':
        n += case['hq'] * lq_of(case) * case['l'] * 2
    return n


def dv_of(case):
    """V's head size (`dv`: MLA's 128 under scores over 192), else D."""
    return case.get('dv', case['d'])


def copy_bandwidth():
    """GB/s of a 2 GiB device-to-device copy, bytes read plus written."""
    n = 2 << 30
    src = torch.empty(n, dtype=torch.uint8, device='cuda').random_()
    dst = torch.empty_like(src)
    ms = G.time_cuda(lambda: dst.copy_(src))
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n / ms / 1e6


def inputs(case):
    """Q, K, V from the seed, and the captured tensors (`env`): the bias
    standard normal in the dtype, the padding mask keeping
    valid_lengths(case) keys, the slopes ALiBi's (the param's values, or
    the same computed in f32 for the input)."""
    g = torch.Generator(device='cuda').manual_seed(SEED)
    b, hq, hkv, l, d = (case[k] for k in ('b', 'hq', 'hkv', 'l', 'd'))
    qkv = [torch.randn(shape, device='cuda', generator=g).to(torch_dtype(case))
           for shape in ((b, hq, lq_of(case), d), (b, hkv, l, d), (b, hkv, l, dv_of(case)))]
    env = {}
    if case.get('layout'):
        # Stored [B, L, H, D]; everyone sees the [B, H, L, D] views.
        qkv = [t.transpose(1, 2).contiguous().transpose(1, 2) for t in qkv]
    if case.get('packed'):
        # One [B, L, 3·H·D] tensor (the model's input); everyone else sees
        # its thirds viewed [B, L, H, D] and transposed.
        env['qkv'] = torch.randn((b, l, 3 * hq * d), device='cuda',
                                 generator=g).to(torch_dtype(case))
        qkv = [t.view(b, l, hq, d).transpose(1, 2)
               for t in env['qkv'].split(hq * d, dim=2)]
    v = case['variant']
    if v == 'bias':
        g2 = torch.Generator(device='cuda').manual_seed(SEED + 1)
        env['bias'] = torch.randn((1, hq, lq_of(case), l), device='cuda',
                                  generator=g2).to(torch_dtype(case))
    if v == 'padmask':
        n = torch.tensor(valid_lengths(case), device='cuda')
        env['mask'] = (torch.arange(l, device='cuda')[None, :] < n[:, None]).view(b, 1, 1, l)
    if v in ALIBI_SLOPES:
        sl = case.get('slopes') or [2.0 ** (-8.0 * (h + 1) / hq) for h in range(hq)]
        env['slopes'] = torch.tensor(sl, dtype=torch.float32, device='cuda').view(1, hq, 1, 1)
    return qkv, env


def captured_peer_calls(case, q, k, v, env, flex):
    """[(peer, call)] for a captured variant: SDPA with attn_mask on each
    backend that accepts it (math where its scores fit), FlexAttention
    (`flex`, compiled by the caller) and plain PyTorch."""
    calls = []
    mask = attn_mask(case, env)
    if mask is not None:
        for name, backend in sdpa_masked_backends():
            if name != 'SDPA math' or fits(case):
                calls.append((name, lambda b=backend: sdpa_masked(case, q, k, v, mask, b)))
    if flex is not None:
        calls.append(('FlexAttention', lambda: flex(q, k, v)))
    if fits(case):
        calls.append(('plain PyTorch', lambda: per_head(case, q, k, v, torch_dtype(case), env)))
    return calls


def captured_peer_outputs(case, q, k, v, env, flex):
    """[(peer, output)] of captured_peer_calls; a peer that fails is
    reported and left out."""
    out = []
    for name, fn in captured_peer_calls(case, q, k, v, env, flex):
        try:
            out.append((name, fn()))
        except Exception as e:  # noqa: BLE001
            print('  %s failed: %s' % (name, str(e).splitlines()[0][:200]), flush=True)
    return out


def correctness(args, case, q, k, v, env=None, flex=None):
    ref = per_head(case, q, k, v, torch.float64, env)
    with tempfile.TemporaryDirectory() as work:
        files = []
        # The model's q, k, v: [B, L, H, D] under `layout` (the tensors
        # behind the views).
        qkv = [t.transpose(1, 2) if case.get('layout') else t for t in (q, k, v)]
        if case.get('ktrans'):
            # K given transposed: the model's input is [B, H, D, L].
            qkv[1] = k.transpose(-1, -2)
        if case.get('flat'):  # heads flattened, [B·H, L, D]
            qkv = [t.reshape(-1, t.shape[-2], t.shape[-1]) for t in qkv]
        given = list(zip('qkv', qkv)) + [(n, env[n]) for n in case.get('inputs', [])]
        if case.get('packed'):
            given = [('qkv', env['qkv'])]
        for name, t in given:
            path = os.path.join(work, name + '.npy')
            # bool stays bool (the mask); floats go as f32, tcc rounds them
            # to the input's dtype (exactly: they came from it).
            np.save(path, (t if t.dtype == torch.bool else t.float()).cpu().numpy())
            files += ['--input', '%s=%s' % (name, path)]
        out = os.path.join(work, 'out')
        rc, log = G.run_cmd([args.tcc, 'run', os.path.join(args.carry, case['bundle']),
                             '--output-dir', out] + files, args.case_timeout)
        if rc != 0:
            return {'correct': False, 'detail': 'tcc run failed: ' + log.strip()[-300:]}
        got = torch.from_numpy(np.load(os.path.join(out, 'o.npy')).astype(np.float64)).cuda()
        if case.get('layout'):
            got = got.transpose(1, 2)
        if case.get('packed'):  # [B, L, H·D]
            got = got.view(case['b'], case['l'], case['hq'], case['d']).transpose(1, 2)
        if case.get('flat'):  # [B·H, L, D]
            got = got.view(case['b'], case['hq'], -1, case['d'])
    err = float((got - ref).abs().max()) if torch.isfinite(got).all() else math.inf
    if case['variant'] in CAPTURED:
        # Against the most accurate fused peer that ran (SDPA's math
        # backend may compute in f32, which no fused kernel does; it and
        # plain PyTorch count only where no fused peer ran). A peer giving
        # NaN does not count. Every peer's error is recorded.
        errs = {}
        for name, o in captured_peer_outputs(case, q, k, v, env, flex):
            e = float((o.double() - ref).abs().max())
            errs[name] = e if math.isfinite(e) else math.inf
            del o
        finite = {n: e for n, e in errs.items() if math.isfinite(e)}
        fused = {n: e for n, e in finite.items() if n in FUSED_PEERS}
        finite = fused or finite
        if not finite:
            return {'correct': False, 'max_err': err, 'peer_errs': errs,
                    'detail': 'no peer gave a finite result'}
        best = min(finite, key=finite.get)
        return {'correct': err <= 1.5 * finite[best], 'max_err': err,
                'peer_max_err': finite[best], 'peer': best, 'peer_errs': errs}
    if sdpa_runs(case) and case['dtype'] == 'f32':
        # Flash and cuDNN take no f32: the efficient backend does, in f32.
        from torch.nn.attention import SDPBackend
        peer, peer_name = sdpa(case, q, k, v, SDPBackend.EFFICIENT_ATTENTION), 'SDPA efficient'
    elif sdpa_runs(case) and 'dv' in case:
        # V of another head size: SDPA's flash backend refuses it.
        from torch.nn.attention import SDPBackend
        peer, peer_name = sdpa(case, q, k, v, SDPBackend.EFFICIENT_ATTENTION), 'SDPA efficient'
    elif sdpa_runs(case):
        from torch.nn.attention import SDPBackend
        peer, peer_name = sdpa(case, q, k, v, SDPBackend.FLASH_ATTENTION), 'SDPA flash'
    else:
        peer, peer_name = per_head(case, q, k, v, torch_dtype(case)), 'plain PyTorch'
    peer_err = float((peer.double() - ref).abs().max())
    return {'correct': err <= 1.5 * peer_err, 'max_err': err, 'peer_max_err': peer_err,
            'peer': peer_name}


def make_flex(args, case, env, q, k, v):
    """The compiled FlexAttention call for a captured variant (run once, so
    that it is compiled before it is checked or timed), or None."""
    if args.no_flex:
        return None
    try:
        fn = flex_fn(case, env)
        fn(q, k, v)
        return fn
    except Exception as e:  # noqa: BLE001
        print('  FlexAttention failed: %s' % str(e).splitlines()[0][:200], flush=True)
        return None


def peers(args, case, q, k, v, env=None, flex=None):
    from torch.nn.attention import SDPBackend
    out = []

    def add(name, fn):
        try:
            out.append((name, G.time_cuda(fn)))
        except Exception as e:  # noqa: BLE001
            print('  %s failed: %s' % (name, str(e).splitlines()[0][:200]), flush=True)
    if case['variant'] in CAPTURED:
        for name, fn in captured_peer_calls(case, q, k, v, env, flex):
            add(name, fn)
        return out
    if sdpa_runs(case) and case['dtype'] == 'f32':
        add('SDPA efficient', lambda: sdpa(case, q, k, v, SDPBackend.EFFICIENT_ATTENTION))
        add('SDPA math', lambda: sdpa(case, q, k, v, SDPBackend.MATH))
    elif sdpa_runs(case):
        add('SDPA flash', lambda: sdpa(case, q, k, v, SDPBackend.FLASH_ATTENTION))
        add('SDPA cuDNN', lambda: sdpa(case, q, k, v, SDPBackend.CUDNN_ATTENTION))
        if 'dv' in case:
            add('SDPA efficient', lambda: sdpa(case, q, k, v, SDPBackend.EFFICIENT_ATTENTION))
    if not args.no_flex:
        try:
            fn = flex_fn(case)
            fn(q, k, v)
            add('FlexAttention', lambda: fn(q, k, v))
        except Exception as e:  # noqa: BLE001
            print('  FlexAttention failed: %s' % str(e).splitlines()[0][:200], flush=True)
    if case['b'] * case['hq'] * lq_of(case) * case['l'] * 2 <= 8e9:
        add('plain PyTorch', lambda: per_head(case, q, k, v, torch_dtype(case)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--tcc', required=True)
    ap.add_argument('--carry', default=os.path.join(G.ROOT, '.carry', 'bench'))
    ap.add_argument('--out', default=os.environ.get('OUT', os.path.join(G.ROOT, 'out')))
    ap.add_argument('--only')
    ap.add_argument('--no-flex', action='store_true')
    ap.add_argument('--deadline', type=float, default=480)
    ap.add_argument('--case-timeout', type=int, default=180)
    args = ap.parse_args()
    start = time.time()
    with open(os.path.join(args.carry, 'attention-manifest.json')) as f:
        cases = json.load(f)['cases']
    if args.only:
        # In the order given: the first ones run before any deadline.
        by_name = {c['name']: c for c in cases}
        cases = [by_name[n] for n in args.only.split(',') if n in by_name]
    copy = copy_bandwidth()
    print('d2d copy: %.0f GB/s (read + write)' % copy, flush=True)
    rows, lines = [], ['2 GiB device-to-device copy: %.0f GB/s (bytes read + written); '
                       'GB/s below: K and V bytes (and a bias) / time' % copy, '',
                       '| case | tcc ms | tcc TFLOP/s | tcc GB/s | peer | peer ms | peer TFLOP/s '
                       '| peer GB/s | tcc speed / peer | correct (tcc err, peer err) |',
                       '|' + ' --- |' * 10]
    for case in cases:
        if time.time() - start > args.deadline:
            print('%s: skipped (deadline)' % case['name'])
            continue
        print('== %s' % case['name'], flush=True)
        (q, k, v), env = inputs(case)
        flex = make_flex(args, case, env, q, k, v) if case['variant'] in CAPTURED else None
        row = {'case': case}
        if case['b'] == 1:
            row['correctness'] = correctness(args, case, q, k, v, env, flex)
            print('  correctness:', json.dumps(row['correctness']), flush=True)
        # tcc is timed on the captured tensors the peers get (a padding
        # mask's dropped key tiles are skipped; random values would drop
        # none); Q, K and V are random (their values do not change the time).
        with tempfile.TemporaryDirectory() as work:
            extra = []
            for name in case.get('inputs', []):
                path = os.path.join(work, name + '.npy')
                t = env[name]
                np.save(path, (t if t.dtype == torch.bool else t.float()).cpu().numpy())
                extra += ['--input', '%s=%s' % (name, path)]
            row['tcc'] = G.tcc_speed(args, case, extra)
        print('  tcc:', json.dumps(row['tcc']), flush=True)
        row['peers'] = peers(args, case, q, k, v, env, flex)
        print('  peers:', row['peers'], flush=True)
        rows.append(row)
        flops = 2.0 * (case['d'] + dv_of(case)) * pairs(case) * case['b'] * case['hq']
        t = row['tcc'].get('ms')
        c = row.get('correctness')
        cstr = '-' if not c else '%s (%.2g, %.2g)' % (
            'yes' if c['correct'] else 'NO', c.get('max_err', math.nan),
            c.get('peer_max_err', math.nan))
        gb = kv_bytes(case) / 1e6
        for i, (pname, pms) in enumerate(row['peers'] or [('-', None)]):
            lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                case['name'] if i == 0 else '', G.fmt(t) if i == 0 else '',
                G.fmt(flops / t / 1e9, '%.0f') if i == 0 and t else '',
                G.fmt(gb / t, '%.0f') if i == 0 and t else '', pname, G.fmt(pms),
                G.fmt(flops / pms / 1e9, '%.0f') if pms else '-',
                G.fmt(gb / pms, '%.0f') if pms else '-',
                G.fmt(pms / t, '%.2f') if pms and t else '-', cstr if i == 0 else ''))
        del q, k, v, env, flex
        torch.cuda.empty_cache()
    text = '\n'.join(lines)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'attention-table.md'), 'w') as f:
        f.write(text + '\n')
    with open(os.path.join(args.out, 'attention.json'), 'w') as f:
        json.dump({'copy_gbps': copy, 'rows': rows}, f, indent=1, default=str)
    bad = [r['case']['name'] for r in rows if r.get('correctness', {}).get('correct') is False]
    if bad:
        print('NOT CORRECT:', ', '.join(bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
