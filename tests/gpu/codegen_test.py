#!/usr/bin/env python3
"""Every op, example and e2e model compiled for every GPU target, the code
checked without a GPU.

    codegen_test.py TCC [--ptxas PTXAS] [--readobj LLVM_READOBJ] [--jobs N] MODEL.json...

The models: those given (the examples), the e2e models (tests/e2e/models.py's
list), softcap attention, f32 attention, and every op of the model format in every dtype it
allows (tests/e2e/optest.py's generators, --quick, a fixed seed) gathered into
one model. Each is compiled for every supported GPU target (`tcc compile
--target`). For NVIDIA targets the bundle's PTX must hold an `.entry` for each
kernel of the manifest and be accepted by ptxas for that architecture (when
the CUDA toolkit is installed; said otherwise). For AMD targets the bundle's
HSA code object must be an AMDGPU ELF, for that processor, with a kernel
descriptor (`SYMBOL.kd`) for each kernel of the manifest. Should the all-ops
model fail for a target, each op is compiled alone to name the failing ones.
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

# Every target `tcc compile --target` supports (compiler/Target.cpp).
NVIDIA = ('sm_90', 'sm_80', 'sm_90a', 'sm_86', 'sm_89')
AMD = ('gfx942', 'gfx90a')
E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e')


def blobs(bundle):
    """The manifest and the blobs of a bundle file (format version 1)."""
    with open(bundle, 'rb') as f:
        data = f.read()
    assert data[:8] == b'TCCBUNDL', 'not a bundle'
    offset, size = struct.unpack_from('<QQ', data, 16)
    manifest = json.loads(data[offset:offset + size])
    return manifest, {b['name']: data[b['offset']:b['offset'] + b['size']]
                      for b in manifest['blobs']}


def check(args, model, target, work):
    work = tempfile.mkdtemp(dir=work)
    bundle = os.path.join(work, 'b.tccb')
    p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', target],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return 'compile failed: ' + p.stderr.strip()
    manifest, data = blobs(bundle)
    code = manifest['code']
    if len(code) != 1 or code[0]['target'] != target:
        return 'manifest code entry is %s' % code
    blob = data[code[0]['blob']]
    symbols = {k['symbol'] for k in manifest['kernels']}
    if not symbols:
        return 'no kernels'
    if target in NVIDIA:
        if code[0].get('format') != 'ptx':
            return 'format %s, expected ptx' % code[0].get('format')
        ptx = blob.decode()
        missing = [s for s in symbols if '.entry %s(' % s not in ptx]
        if missing:
            return 'PTX lacks entries %s' % missing
        if '.target %s' % target not in ptx:
            return 'PTX is not for %s' % target
        if args.ptxas:
            path = os.path.join(work, 'k.ptx')
            with open(path, 'w') as f:
                f.write(ptx)
            p = subprocess.run([args.ptxas, '-arch=' + target, path, '-o', os.devnull],
                               capture_output=True, text=True)
            if p.returncode != 0:
                return 'ptxas: ' + p.stderr.strip()[:500]
        return None
    if code[0].get('format') != 'hsaco':
        return 'format %s, expected hsaco' % code[0].get('format')
    path = os.path.join(work, 'k.hsaco')
    with open(path, 'wb') as f:
        f.write(blob)
    p = subprocess.run([args.readobj, '--file-headers', '--symbols', path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return 'llvm-readobj: ' + p.stderr.strip()
    out = p.stdout
    if 'EM_AMDGPU' not in out:
        return 'not an AMDGPU ELF'
    if 'EF_AMDGPU_MACH_AMDGCN_%s' % target.upper() not in out:
        return 'code object is not for %s' % target
    missing = [s for s in symbols if 'Name: %s.kd' % s not in out]
    if missing:
        return 'no kernel descriptors for %s' % missing
    return None


def check_schedule(args, work):
    """--schedule changes the matmul template's tiles; a bad file is refused."""
    model = os.path.join(work, 'mm.json')
    with open(model, 'w') as f:
        json.dump({'format': 'tcc-model', 'version': 1, 'name': 'mm',
                   'inputs': [{'name': 'a', 'dtype': 'bf16', 'shape': [512, 256]},
                              {'name': 'b', 'dtype': 'bf16', 'shape': [256, 384]}],
                   'params': [], 'outputs': ['c'],
                   'nodes': [{'op': 'matmul', 'inputs': ['a', 'b'], 'outputs': ['c']}]}, f)
    bundle = os.path.join(work, 'mm.tccb')
    grids = {}
    for tile in (64, 128):
        sched = os.path.join(work, 's.json')
        with open(sched, 'w') as f:
            json.dump({'matmul': {'tile_m': tile, 'tile_n': tile}}, f)
        p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', 'sm_90',
                            '--schedule', sched], capture_output=True, text=True)
        if p.returncode != 0:
            return 'compile with --schedule failed: ' + p.stderr.strip()
        manifest, _ = blobs(bundle)
        grids[tile] = [l['grid'] for l in manifest['launches'] if 'grid' in l]
    # 512x384 in 64x64 tiles is 8*6 = 48 blocks; in 128x128 tiles, 4*3 = 12.
    if grids[64] != [[48, 1, 1]] or grids[128] != [[12, 1, 1]]:
        return 'unexpected grids %s' % grids
    with open(sched, 'w') as f:
        json.dump({'matmul': {'tile_m': 65}}, f)
    p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', 'sm_90',
                        '--schedule', sched], capture_output=True, text=True)
    if p.returncode != 1 or len(p.stderr.strip().splitlines()) != 1 or \
            'power' not in p.stderr:
        return 'bad schedule: exit %d, %r' % (p.returncode, p.stderr)
    # An entry naming no matmul kernel of the model is refused, not ignored.
    with open(sched, 'w') as f:
        json.dump({'kernels': {'k9_matmul': {'tile_m': 64}}}, f)
    p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', 'sm_90',
                        '--schedule', sched], capture_output=True, text=True)
    if p.returncode != 1 or len(p.stderr.strip().splitlines()) != 1 or \
            "'k9_matmul' is not a matmul kernel" not in p.stderr or 'k0_matmul' not in p.stderr:
        return 'schedule for no kernel: exit %d, %r' % (p.returncode, p.stderr)
    with open(sched, 'w') as f:
        json.dump({'kernels': {'k0_matmul': {'tile_m': 64, 'tile_n': 64}}}, f)
    p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', 'sm_90',
                        '--schedule', sched], capture_output=True, text=True)
    if p.returncode != 0:
        return 'schedule naming k0_matmul: exit %d, %r' % (p.returncode, p.stderr)
    return None


def mm_model(work, m, k, n, dtype='bf16'):
    model = os.path.join(work, 'mm%dx%dx%d_%s.json' % (m, k, n, dtype))
    with open(model, 'w') as f:
        json.dump({'format': 'tcc-model', 'version': 1, 'name': 'mm',
                   'inputs': [{'name': 'a', 'dtype': dtype, 'shape': [m, k]},
                              {'name': 'b', 'dtype': dtype, 'shape': [k, n]}],
                   'params': [], 'outputs': ['c'],
                   'nodes': [{'op': 'matmul', 'inputs': ['a', 'b'], 'outputs': ['c']}]}, f)
    return model


def ptx_of(args, model, target, work, *flags):
    """(manifest, PTX) of `model` compiled for `target`, or an error string."""
    bundle = os.path.join(work, 'p.tccb')
    p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', target] +
                       list(flags), capture_output=True, text=True)
    if p.returncode != 0:
        return 'compile failed: ' + p.stderr.strip()
    manifest, data = blobs(bundle)
    return manifest, data[manifest['code'][0]['blob']].decode()


def check_wgmma(args, work):
    """sm_90a computes a bf16 matmul with warpgroup MMA (ptxas accepts it for
    sm_90a), edge tiles and batches included; sm_90, fewer than 64 rows, and
    rows not 16-byte aligned keep the mma.sync template (48 rows: 16 tiles,
    so split-K: on sm_90 its splits run as a thread-block cluster and sum in
    the kernel, on sm_80 a second kernel adds them). A tf32 matmul (f32
    with --allow-tf32) first transposes B, then runs wgmma (k8 tf32) on
    sm_90a or mma.sync on sm_90. A K = 0 matmul compiles (no template)."""
    tf32 = ['--allow-tf32']
    for model, target, want, flags in (
            (mm_model(work, 512, 256, 512), 'sm_90a', 'wgmma', []),
            (mm_model(work, 512, 256, 512), 'sm_90', 'mma', []),
            (mm_model(work, 500, 256, 520), 'sm_90a', 'wgmma', []),
            (mm_model(work, 48, 256, 512), 'sm_90a', 'mma_cluster', []),
            (mm_model(work, 48, 256, 512), 'sm_80', 'mma_splitk', []),
            (mm_model(work, 512, 260, 512), 'sm_90a', 'mma', []),
            (mm_model(work, 512, 256, 512, 'f32'), 'sm_90a', 'wgmma', tf32),
            (mm_model(work, 512, 256, 512, 'f32'), 'sm_90', 'mma', tf32)):
        got = ptx_of(args, model, target, work, *flags)
        if isinstance(got, str):
            return got
        manifest, ptx = got
        symbols = [k['symbol'] for k in manifest['kernels']]
        has = 'wgmma.mma_async' in ptx
        expect = (['_transpose_b'] if flags else []) + (
            ['_mma', '_mma_splitk'] if want == 'mma_splitk' else
            ['_mma'] if want == 'mma_cluster' else ['_' + want])
        if len(symbols) != len(expect) or not all(
                s.endswith(e) for s, e in zip(symbols, expect)):
            return '%s on %s %s: kernels %s, expected %s' % (
                os.path.basename(model), target, ' '.join(flags), symbols, expect)
        clusters = [k.get('cluster') for k in manifest['kernels'] if 'cluster' in k]
        if want == 'mma_cluster' and (
                len(clusters) != 1 or clusters[0][0] != 1 or clusters[0][2] != 1 or
                not 2 <= clusters[0][1] <= 8 or 'ld.shared::cluster' not in ptx or
                'barrier.cluster.wait' not in ptx):
            return '48 rows on %s: no cluster split-K (clusters %s)' % (target, clusters)
        if want != 'mma_cluster' and clusters:
            return '%s on %s: unexpected clusters %s' % (os.path.basename(model), target,
                                                         clusters)
        if flags and want == 'wgmma' and '.tf32.tf32' not in ptx:
            return 'tf32 on %s: no tf32 wgmma in the PTX' % target
        if has != (want == 'wgmma') or '.target %s' % target not in ptx:
            # (mma_splitk is mma.sync too)
            return '%s on %s: wgmma in PTX %s' % (os.path.basename(model), target, has)
        if args.ptxas:
            path = os.path.join(work, 'w.ptx')
            with open(path, 'w') as f:
                f.write(ptx)
            p = subprocess.run([args.ptxas, '-arch=' + target, path, '-o', os.devnull],
                               capture_output=True, text=True)
            if p.returncode != 0 or 'warning' in p.stderr:
                return 'ptxas %s: %s' % (target, p.stderr.strip()[:500])
    # An empty contraction (K = 0) is all zeros: no template, and it compiles.
    got = ptx_of(args, mm_model(work, 64, 0, 64, 'f32'), 'sm_90', work)
    if isinstance(got, str):
        return 'K = 0: ' + got
    return None


def check_residency(args, work):
    """A row kernel of 512 threads asks for 4 resident blocks by default
    (tcc-gpu-occupancy); "rows": {"blocks_per_sm": -1} drops the request;
    an out-of-range value is refused in one line."""
    model = os.path.join(work, 'ln.json')
    with open(model, 'w') as f:
        json.dump({'format': 'tcc-model', 'version': 1, 'name': 'ln',
                   'inputs': [{'name': 'x', 'dtype': 'bf16', 'shape': [64, 8192]}],
                   'params': [], 'outputs': ['y'],
                   'nodes': [{'op': 'layer_norm', 'inputs': ['x'], 'outputs': ['y'],
                              'attrs': {'axis': -1}}]}, f)
    sched = os.path.join(work, 'r.json')
    for value, want in ((None, True), (-1, False)):
        flags = []
        if value is not None:
            with open(sched, 'w') as f:
                json.dump({'rows': {'blocks_per_sm': value}}, f)
            flags = ['--schedule', sched]
        got = ptx_of(args, model, 'sm_90', work, *flags)
        if isinstance(got, str):
            return got
        if ('.minnctapersm 4' in got[1]) != want:
            return 'blocks_per_sm %s: .minnctapersm 4 %s' % (
                value, 'missing' if want else 'present')
        # tcc-gpu-l2-policy follows the request: the row's loads carry the
        # L2 evict_last policy.
        if ('ld.global.L2::cache_hint' in got[1]) != want:
            return 'blocks_per_sm %s: L2 evict_last loads %s' % (
                value, 'missing' if want else 'present')
    # sm_80 keeps plain loads: the policy needs PTX 7.4, and LLVM writes 7.0
    # for sm_80 (ptxas would refuse the file).
    got = ptx_of(args, model, 'sm_80', work)
    if isinstance(got, str):
        return got
    if 'cache_hint' in got[1]:
        return 'sm_80: L2 policy loads in the PTX'
    if args.ptxas:
        path = os.path.join(work, 'ln80.ptx')
        with open(path, 'w') as f:
            f.write(got[1])
        p = subprocess.run([args.ptxas, '-arch=sm_80', path, '-o', os.devnull],
                           capture_output=True, text=True)
        if p.returncode != 0:
            return 'sm_80 row kernel: ptxas: ' + p.stderr.strip()[:300]
    with open(sched, 'w') as f:
        json.dump({'rows': {'blocks_per_sm': 99}}, f)
    p = subprocess.run([args.tcc, 'compile', model, '-o', os.path.join(work, 'r.tccb'),
                        '--target', 'sm_90', '--schedule', sched], capture_output=True, text=True)
    if p.returncode != 1 or len(p.stderr.strip().splitlines()) != 1 or \
            'blocks_per_sm' not in p.stderr:
        return 'bad blocks_per_sm: exit %d, %r' % (p.returncode, p.stderr)
    return None


def attention_model(dtype, shape, mods):
    """Plain attention over q, k, v of `shape`, with `mods` (nodes from s to
    's_mod') between the scores and the softmax."""
    l = shape[-2]
    nodes = [{'op': 'matmul', 'inputs': ['q', 'k'], 'outputs': ['s'],
              'attrs': {'transpose_b': True}}] + mods + [
        {'op': 'softmax', 'inputs': ['s_mod'], 'outputs': ['p'], 'attrs': {'axis': -1}},
        {'op': 'matmul', 'inputs': ['p', 'v'], 'outputs': ['o']}]
    return {'format': 'tcc-model', 'version': 1, 'name': 'attn',
            'inputs': [{'name': n, 'dtype': dtype, 'shape': shape} for n in 'qkv'],
            'params': [], 'outputs': ['o'], 'nodes': nodes}


def gqa_model():
    """Attention with K and V repeated from 2 heads to 8, as users write GQA."""
    m = attention_model('bf16', [1, 8, 128, 64], [
        {'op': 'constant', 'inputs': [], 'outputs': ['c'],
         'attrs': {'dtype': 'bf16', 'shape': [], 'value': 0.125}},
        {'op': 'mul', 'inputs': ['s', 'c'], 'outputs': ['s_mod']}])
    m['inputs'][1]['shape'] = m['inputs'][2]['shape'] = [1, 2, 128, 64]
    repeat = []
    for t in 'kv':
        repeat += [{'op': 'reshape', 'inputs': [t], 'outputs': [t + '5'],
                    'attrs': {'shape': [1, 2, 1, 128, 64]}},
                   {'op': 'broadcast_to', 'inputs': [t + '5'], 'outputs': [t + 'b'],
                    'attrs': {'shape': [1, 2, 4, 128, 64]}},
                   {'op': 'reshape', 'inputs': [t + 'b'], 'outputs': [t + t],
                    'attrs': {'shape': [1, 8, 128, 64]}}]
    m['nodes'][0]['inputs'] = ['q', 'kk']
    m['nodes'][-1]['inputs'] = ['p', 'vv']
    m['nodes'] = repeat + m['nodes']
    return m


def decode_model():
    """Decode: one query row a head, GQA 16/2 (8 rows a key/value head),
    4096 keys, causal against the last position (row + 4095 >= col)."""
    m = gqa_model()
    b, hq, hkv, lk, d = 1, 16, 2, 4096, 128
    m['inputs'][0]['shape'] = [b, hq, 1, d]
    m['inputs'][1]['shape'] = m['inputs'][2]['shape'] = [b, hkv, lk, d]
    for n in m['nodes']:
        if n['op'] in ('reshape', 'broadcast_to'):
            n['attrs']['shape'] = {'reshape': [b, hkv, 1, lk, d] if n['outputs'][0].endswith('5')
                                   else [b, hq, lk, d],
                                   'broadcast_to': [b, hkv, hq // hkv, lk, d]}[n['op']]
    mask = [{'op': 'iota', 'inputs': [], 'outputs': ['row0'],
             'attrs': {'dtype': 'i32', 'shape': [1, lk], 'axis': -2}},
            {'op': 'constant', 'inputs': [], 'outputs': ['off'],
             'attrs': {'dtype': 'i32', 'shape': [], 'value': lk - 1}},
            {'op': 'add', 'inputs': ['row0', 'off'], 'outputs': ['row']},
            {'op': 'iota', 'inputs': [], 'outputs': ['col'],
             'attrs': {'dtype': 'i32', 'shape': [1, lk], 'axis': -1}},
            {'op': 'greater_equal', 'inputs': ['row', 'col'], 'outputs': ['keep']},
            {'op': 'constant', 'inputs': [], 'outputs': ['neg'],
             'attrs': {'dtype': 'bf16', 'shape': [], 'value': -1e30}},
            {'op': 'select', 'inputs': ['keep', 'sc', 'neg'], 'outputs': ['s_mod']}]
    i = next(i for i, n in enumerate(m['nodes']) if n['outputs'] == ['s_mod'])
    m['nodes'][i]['outputs'] = ['sc']
    m['nodes'][i + 1:i + 1] = mask
    return m


def check_attention(args, work):
    """--gpu-attention: attention chains become one template kernel (scale
    folded, a causal mask as constraints, a softcap as score code, a bias,
    mask or slopes given as inputs read per score), or two for decode
    (split-K partial and combine); f32 prefill the mma.sync kernel as
    3xTF32 on both targets (wgmma takes 16-bit operands), f32 decode the
    SIMT template's split-K pair (CUDA cores)."""
    def const(name, dtype, value):
        return {'op': 'constant', 'inputs': [], 'outputs': [name],
                'attrs': {'dtype': dtype, 'shape': [], 'value': value}}
    causal = [const('scale', 'bf16', 0.125),
              {'op': 'mul', 'inputs': ['s', 'scale'], 'outputs': ['ss']},
              {'op': 'iota', 'inputs': [], 'outputs': ['row'],
               'attrs': {'dtype': 'i32', 'shape': [256, 256], 'axis': -2}},
              {'op': 'iota', 'inputs': [], 'outputs': ['col'],
               'attrs': {'dtype': 'i32', 'shape': [256, 256], 'axis': -1}},
              {'op': 'greater_equal', 'inputs': ['row', 'col'], 'outputs': ['keep']},
              const('neg', 'bf16', -1e30),
              {'op': 'select', 'inputs': ['keep', 'ss', 'neg'], 'outputs': ['s_mod']}]
    softcap = [const('c', 'f16', 50.0),
               {'op': 'div', 'inputs': ['s', 'c'], 'outputs': ['t']},
               {'op': 'tanh', 'inputs': ['t'], 'outputs': ['th']},
               {'op': 'mul', 'inputs': ['th', 'c'], 'outputs': ['s_mod']}]
    plain32 = [{'op': 'neg', 'inputs': ['s'], 'outputs': ['ns']},
               {'op': 'neg', 'inputs': ['ns'], 'outputs': ['s_mod']}]
    one, two, tf32x3 = ['_attn'], ['_decode', '_combine'], ['_attn']

    def captured(m, name, dtype, shape):
        # Scores read a tensor from outside attention (a model input).
        m['inputs'].append({'name': name, 'dtype': dtype, 'shape': shape})
        return m
    bias = captured(attention_model('f16', [1, 2, 200, 64], [
        const('c', 'f16', 0.125), {'op': 'mul', 'inputs': ['s', 'c'], 'outputs': ['ss']},
        {'op': 'add', 'inputs': ['ss', 'bias'], 'outputs': ['s_mod']}]),
        'bias', 'f16', [1, 2, 200, 200])
    padding = [const('c', 'bf16', 0.125), {'op': 'mul', 'inputs': ['s', 'c'], 'outputs': ['ss']},
               const('neg', 'bf16', '-inf'),
               {'op': 'select', 'inputs': ['mask', 'ss', 'neg'], 'outputs': ['s_mod']}]
    pad = captured(attention_model('bf16', [2, 2, 256, 128], padding), 'mask', 'bool',
                   [2, 1, 1, 256])
    dpad = captured(attention_model('bf16', [2, 4, 1, 128], padding), 'mask', 'bool',
                    [2, 1, 1, 2048])
    dpad['inputs'][1]['shape'] = dpad['inputs'][2]['shape'] = [2, 4, 2048, 128]
    # f32 runs on CUDA cores; decode shapes split the keys there too.
    f32pad = captured(attention_model('f32', [2, 4, 1, 80], [
        dict(n, attrs=dict(n['attrs'], dtype='f32')) if n['op'] == 'constant' else n
        for n in padding]), 'mask', 'bool', [2, 1, 1, 2048])
    f32pad['inputs'][1]['shape'] = f32pad['inputs'][2]['shape'] = [2, 4, 2048, 80]
    alibi = captured(attention_model('bf16', [1, 4, 256, 64], causal[:4] + [
        {'op': 'sub', 'inputs': ['col', 'row'], 'outputs': ['d']},
        {'op': 'cast', 'inputs': ['d'], 'outputs': ['df'], 'attrs': {'to': 'bf16'}},
        {'op': 'mul', 'inputs': ['df', 'slopes'], 'outputs': ['b']},
        {'op': 'add', 'inputs': ['ss', 'b'], 'outputs': ['sb']}] + causal[4:6] + [
        {'op': 'select', 'inputs': ['keep', 'sb', 'neg'], 'outputs': ['s_mod']}]),
        'slopes', 'bf16', [1, 4, 1, 1])
    # K given transposed, [B, H, D, L]: the scores matmul(q, kt).
    def k_transposed(m):
        qk = next(n for n in m['nodes'] if n['outputs'] == ['s'])
        qk['attrs'] = {}
        k = m['inputs'][1]
        k['shape'] = k['shape'][:-2] + k['shape'][:-3:-1]
        return m
    dkt = k_transposed(decode_model())
    dkt['nodes'] = [dict(n, attrs={'shape': n['attrs']['shape'][:-2] + [128, 4096]})
                    if n['op'] in ('reshape', 'broadcast_to') and n['outputs'][0][0] == 'k'
                    else n for n in dkt['nodes']]
    cases = [('causal bf16 [2,4,256,128]', attention_model('bf16', [2, 4, 256, 128], causal), one),
             ('causal bf16, K given transposed [2,4,128,256]',
              k_transposed(attention_model('bf16', [2, 4, 256, 128], causal)), one),
             ('decode GQA 16/2, K given transposed [1,2,128,4096]', dkt, two),
             ('bias input f16 [1,2,200,200]', bias, one),
             ('padding mask input bf16 [2,1,1,256]', pad, one),
             ('ALiBi slopes input bf16 [1,4,1,1], causal', alibi, one),
             ('decode padding mask input [2,1,1,2048]', dpad, two),
             ('softcap f16 [8,256,64]', attention_model('f16', [8, 256, 64], softcap), one),
             ('f32 [4,64,64] (3xTF32)', attention_model('f32', [4, 64, 64], plain32), tf32x3),
             ('f32 padding mask input [2,1,1,2048], decode (SIMT)', f32pad, two),
             ('GQA 8/2 bf16', gqa_model(), one),
             ('decode GQA 16/2 bf16 [1,16,1,128] x 4096 keys', decode_model(), two)]
    model = os.path.join(work, 'attn.json')
    bundle = os.path.join(work, 'attn.tccb')
    # sm_90a builds prefill on warpgroup MMA (every case here has D 64 or
    # 128); decode keeps its pair.
    for (name, m, kernels), target in itertools.product(cases, ('sm_90', 'sm_90a')):
        if target == 'sm_90a' and kernels is one:
            kernels = ['_attn_wgmma']
        with open(model, 'w') as f:
            json.dump(m, f)
        p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', target,
                            '--gpu-attention'], capture_output=True, text=True)
        if p.returncode != 0:
            return '%s on %s: compile failed: %s' % (name, target, p.stderr.strip())
        manifest, data = blobs(bundle)
        symbols = [k['symbol'] for k in manifest['kernels']]
        # The expected suffixes in order.
        if len(manifest['launches']) != len(kernels) or len(symbols) != len(kernels) or any(
                not s.endswith(w) for s, w in zip(symbols, kernels)):
            return '%s on %s: kernels %s' % (name, target, symbols)
        # A captured tensor (the fourth input) is the first launch's last
        # argument.
        if len(m['inputs']) == 4 and manifest['launches'][0]['args'][-1] != 3:
            return '%s on %s: launch arguments %s' % (name, target,
                                                     manifest['launches'][0]['args'])
        # sm_90a prefill: the producer copies K and V by TMA (K given
        # transposed too, boxes of 64 keys by D rows over dims (L, D, H, B);
        # a padding mask keeps the kernel without a producer), and the bias
        # plane it stages beside them (f16 like Q, rows of 200 keys: 16-byte
        # aligned), so its launch carries their tensor maps over the K, V and
        # bias buffers (manifest version 4) and the PTX takes them as
        # 128-byte parameters after the pointers.
        maps = manifest['launches'][0].get('tensor_maps', [])
        ptx_text = data[manifest['code'][0]['blob']].decode()
        if target == 'sm_90a' and kernels == ['_attn_wgmma']:
            want_tma = 'padding' not in name
            largs = manifest['launches'][0]['args']
            want_buffers = largs[1:3] + (largs[-1:] if 'bias' in name else [])
            kt_map = {'dims': [256, 128, 4, 2], 'box': [64, 128, 1, 1], 'strides': [512, 65536, 262144]}
            if want_tma != bool(maps) or (maps and (
                    ('transposed' in name and any(maps[0][k] != v for k, v in kt_map.items())) or
                    [t['buffer'] for t in maps] != want_buffers or
                    manifest['format_version'] != 4 or
                    ptx_text.count('.b8 %s_param_' % symbols[0]) != len(maps) or
                    'cp.async.bulk.tensor' not in ptx_text)):
                return '%s on %s: tensor maps %s (want %s)' % (name, target, maps, want_tma)
        elif maps:
            return '%s on %s: unexpected tensor maps %s' % (name, target, maps)
        if args.ptxas:
            path = os.path.join(work, 'attn.ptx')
            with open(path, 'wb') as f:
                f.write(data[manifest['code'][0]['blob']])
            p = subprocess.run([args.ptxas, '-arch=' + target, path, '-o', os.devnull],
                               capture_output=True, text=True)
            if p.returncode != 0 or 'warning' in p.stderr:
                return '%s on %s: ptxas: %s' % (name, target, p.stderr.strip()[:300])
    return None


def check_attention_in_layer(args, work):
    """Attention inside a transformer layer (Q, K and V from projections,
    reshapes and transposes; tests/e2e/models/transformer_block.json in
    bf16, head size 64) is still one template kernel: the layer's other
    kernels are GEMMs, layer norms and layout copies."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e', 'models',
                       'transformer_block.json')
    with open(src) as f:
        m = json.load(f)
    b, l, e, h = 2, 128, 256, 4

    def bf16(o):
        if isinstance(o, dict):
            return {k: ('bf16' if k == 'dtype' and v == 'f32' else bf16(v)) for k, v in o.items()}
        return [bf16(v) for v in o] if isinstance(o, list) else o
    m = bf16(m)
    m['inputs'][0]['shape'] = [b, l, e]
    m['outputs'] = ['y']
    for p in m['params']:
        p['shape'] = [{64: e, 256: 4 * e}[d] for d in p['shape']]
    for n in m['nodes']:
        a = n.get('attrs', {})
        if n['op'] == 'reshape':
            a['shape'] = [b, l, h, e // h] if len(a['shape']) == 4 else [b, l, e]
        if n['op'] == 'iota':
            a['shape'] = [l, l]
    model = os.path.join(work, 'layer.json')
    with open(model, 'w') as f:
        json.dump(m, f)
    for target, want in (('sm_90', '_attn'), ('sm_90a', '_attn_wgmma')):
        got = ptx_of(args, model, target, work)
        if isinstance(got, str):
            return got
        manifest, ptx = got
        symbols = [k['symbol'] for k in manifest['kernels']]
        attn = [s for s in symbols if s.endswith(want)]
        # Softmax's own row kernels would mean attention ran unfused.
        if len(attn) != 1 or any('_chain_kernel_' in s for s in symbols):
            return '%s: kernels %s, expected one *%s' % (target, symbols, want)
        if args.ptxas:
            path = os.path.join(work, 'layer.ptx')
            with open(path, 'w') as f:
                f.write(ptx)
            p = subprocess.run([args.ptxas, '-arch=' + target, path, '-o', os.devnull],
                               capture_output=True, text=True)
            if p.returncode != 0:
                return '%s: ptxas: %s' % (target, p.stderr.strip()[:300])
    return None


def check_linear_and_softmax(args, work):
    """--gpu-attention puts 2-D matmuls into chains only as single-head
    attention's pair: a softmax followed by a linear layer (a weight param
    shared by every row), or a linear layer followed by a softmax, keeps
    its GEMM kernel, with no attention kernel and no "attention not fused"
    remark, while rank-2 attention itself is one kernel."""
    def softmax_model(first_linear):
        x = [256, 64] if first_linear else [256, 128]
        nodes = ([{'op': 'matmul', 'inputs': ['x', 'w'], 'outputs': ['l']}]
                 if first_linear else [])
        nodes.append({'op': 'softmax', 'inputs': ['l' if first_linear else 'x'],
                      'outputs': ['p'], 'attrs': {'axis': -1}})
        if not first_linear:
            nodes.append({'op': 'matmul', 'inputs': ['p', 'w'], 'outputs': ['y']})
        return {'format': 'tcc-model', 'version': 1, 'name': 'sl',
                'inputs': [{'name': 'x', 'dtype': 'f16', 'shape': x}],
                'params': [{'name': 'w', 'dtype': 'f16',
                            'shape': [64, 128] if first_linear else [128, 64],
                            'init': {'fill': 0.01}}],
                'outputs': ['p' if first_linear else 'y'], 'nodes': nodes}
    cases = [('softmax then linear [256,128] @ [128,64]', softmax_model(False), False),
             ('linear then softmax [256,64] @ [64,128]', softmax_model(True), False),
             ('rank-2 attention f16 [256,64]', attention_model('f16', [256, 64], [
                 {'op': 'neg', 'inputs': ['s'], 'outputs': ['ns']},
                 {'op': 'neg', 'inputs': ['ns'], 'outputs': ['s_mod']}]), True)]
    model = os.path.join(work, 'sl.json')
    bundle = os.path.join(work, 'sl.tccb')
    for (name, m, attention), target in itertools.product(cases, ('sm_90', 'sm_90a')):
        with open(model, 'w') as f:
            json.dump(m, f)
        p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', target,
                            '--gpu-attention', '--explain'], capture_output=True, text=True)
        if p.returncode != 0:
            return '%s on %s: compile failed: %s' % (name, target, p.stderr.strip())
        if 'attention not fused' in p.stderr:
            return '%s on %s: %s' % (name, target, p.stderr.strip())
        symbols = [k['symbol'] for k in blobs(bundle)[0]['kernels']]
        attn = [s for s in symbols if '_attn' in s]
        gemms = [s for s in symbols if s.endswith(('_matmul_mma', '_matmul_wgmma'))]
        ok = (len(symbols) == 1 and len(attn) == 1) if attention else (
            len(gemms) == 1 and not attn)
        if not ok:
            return '%s on %s: kernels %s' % (name, target, symbols)
    return None


def check_rope(args, work):
    """Rotary position embedding as Llama writes it (the upper half negated
    and concatenated before the lower, x * cos + rot * sin) is one launch on
    every GPU target: the concat recomputes the negation at its element and
    joins the products' loop (tcc-fuse-elementwise)."""
    model = os.path.join(E2E, 'models', 'rope_f16.json')
    bundle = os.path.join(work, 'rope.tccb')
    for target in NVIDIA + AMD:
        p = subprocess.run([args.tcc, 'compile', model, '-o', bundle, '--target', target],
                           capture_output=True, text=True)
        if p.returncode != 0:
            return 'on %s: compile failed: %s' % (target, p.stderr.strip())
        launches = blobs(bundle)[0]['launches']
        if len(launches) != 1:
            return 'on %s: %d launches' % (target, len(launches))
    return None


def op_models(work):
    """{op: model path}: the cases optest.py --quick draws for each op (every
    dtype the op allows), a fixed seed, without the run-time error cases;
    and 'all ops': every one of them in one model."""
    sys.path.insert(0, E2E)
    import numpy as np
    import optest
    np.seterr(all='ignore')
    per_op, every = {}, []
    for op in optest.OPS:
        g = optest.Gen(np.random.default_rng([2024, zlib.crc32(op.encode())]), True)
        cases = [c for c in optest.cases_for(op, g, True) if c.error is None]
        if op == 'gelu':
            # Every approximation in every dtype (the generator draws one).
            for dt in optest.STD_FLOATS:
                for approx in ('none', 'tanh'):
                    c = optest.Case('gelu', dt)
                    c.node('gelu', [c.inp('x', dt, np.zeros((3, 5)))], ['y'],
                           {'approximate': approx})
                    c.out('y', dt, None)
                    cases.append(c)
        per_op[op] = cases
        every += cases

    def write(cases, name):
        path = os.path.join(work, name + '.json')
        with open(path, 'w') as f:
            json.dump(optest.build_model(cases, name.replace('.', '_'))[0], f)
        return path
    return write(every, 'all_ops'), {op: (lambda c=c, op=op: write(c, 'op_' + op))
                                     for op, c in per_op.items()}


def e2e_models(work):
    """The e2e models (tests/e2e/models.py), each beside the files it reads."""
    sys.path.insert(0, E2E)
    import numpy as np
    import models
    out = []
    for rel, _, files_fn in models.MODELS:
        src = os.path.join(models.ROOT, rel)
        if not files_fn:
            out.append(src)
            continue
        d = os.path.join(work, 'e2e_' + os.path.splitext(os.path.basename(rel))[0])
        os.makedirs(d)
        files_fn(d, np.random.default_rng(0))
        shutil.copy(src, os.path.join(d, os.path.basename(rel)))
        out.append(os.path.join(d, os.path.basename(rel)))
    return out


def softcap_model(work):
    """Attention with a tanh softcap (tanh has no AMDGPU instruction)."""
    c = {'op': 'constant', 'inputs': [], 'outputs': ['c'],
         'attrs': {'dtype': 'f16', 'shape': [], 'value': 50.0}}
    m = attention_model('f16', [8, 256, 64], [
        c, {'op': 'div', 'inputs': ['s', 'c'], 'outputs': ['t']},
        {'op': 'tanh', 'inputs': ['t'], 'outputs': ['th']},
        {'op': 'mul', 'inputs': ['th', 'c'], 'outputs': ['s_mod']}])
    path = os.path.join(work, 'softcap_attention.json')
    with open(path, 'w') as f:
        json.dump(m, f)
    return path


def f32_attention_model(work):
    """f32 attention, causal, head size 80, odd length: the SIMT template on
    NVIDIA targets, the generic kernels on AMD ones."""
    c = {'op': 'constant', 'inputs': [], 'outputs': ['c'],
         'attrs': {'dtype': 'f32', 'shape': [], 'value': 0.125}}
    neg = {'op': 'constant', 'inputs': [], 'outputs': ['neg'],
           'attrs': {'dtype': 'f32', 'shape': [], 'value': -1e30}}
    iota = [{'op': 'iota', 'inputs': [], 'outputs': [n],
             'attrs': {'dtype': 'i32', 'shape': [203, 203], 'axis': a}}
            for n, a in (('row', -2), ('col', -1))]
    m = attention_model('f32', [2, 3, 203, 80], [
        c, {'op': 'mul', 'inputs': ['s', 'c'], 'outputs': ['ss']}] + iota + [
        {'op': 'greater_equal', 'inputs': ['row', 'col'], 'outputs': ['keep']}, neg,
        {'op': 'select', 'inputs': ['keep', 'ss', 'neg'], 'outputs': ['s_mod']}])
    path = os.path.join(work, 'f32_attention.json')
    with open(path, 'w') as f:
        json.dump(m, f)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('tcc')
    ap.add_argument('models', nargs='*')
    ap.add_argument('--ptxas')
    ap.add_argument('--readobj', required=True)
    ap.add_argument('--jobs', type=int, default=1,
                    help='compiles at once (ctest -j2 already fills 2 cores)')
    args = ap.parse_intermixed_args()
    if not args.ptxas:
        print('note: no ptxas (CUDA toolkit): PTX is checked for its entries only')
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        start = time.time()
        all_ops, per_op = op_models(work)
        models = [all_ops, softcap_model(work), f32_attention_model(work)]
        seen = set()
        for m in list(args.models) + e2e_models(work):
            if os.path.realpath(m) not in seen:
                seen.add(os.path.realpath(m))
                models.append(m)
        jobs = list(itertools.product(models, NVIDIA + AMD))
        def timed(job):
            t = time.time()
            return check(args, job[0], job[1], work), time.time() - t
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            results = list(ex.map(timed, jobs))
        for (model, target), (err, secs) in zip(jobs, results):
            print('%s %s %s %.1fs%s' % ('FAIL' if err else 'PASS', os.path.basename(model),
                                        target, secs, ' -- ' + err if err else ''), flush=True)
            failed += bool(err)
            if err and model == all_ops:
                # Name the ops that fail alone.
                for op, write in per_op.items():
                    e = check(args, write(), target, work)
                    if e:
                        print('FAIL op %s %s -- %s' % (op, target, e), flush=True)
        print('models x targets: %d compiles in %.1f s' % (len(jobs), time.time() - start))
        err = check_schedule(args, work)
        print('%s --schedule%s' % ('FAIL' if err else 'PASS', ' -- ' + err if err else ''))
        failed += bool(err)
        for what, fn in (('sm_90a wgmma', check_wgmma), ('residency', check_residency)):
            err = fn(args, work)
            print('%s %s%s' % ('FAIL' if err else 'PASS', what, ' -- ' + err if err else ''))
            failed += bool(err)
        for what, fn in (('--gpu-attention', check_attention),
                         ('attention in a transformer layer', check_attention_in_layer),
                         ('linear layers beside a softmax', check_linear_and_softmax),
                         ('RoPE in one launch', check_rope)):
            err = fn(args, work)
            print('%s %s%s' % ('FAIL' if err else 'PASS', what, ' -- ' + err if err else ''))
            failed += bool(err)
    print('%d failed' % failed)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
