#!/usr/bin/env python3
"""Attention written by hand, and `tcc compile --explain` (no GPU needed).

    attention_explain_test.py TCC

- Each of attention_test.py's handwritten_cases() (softmax and P·V as users
  write them: normalised after P·V, reciprocals, no max, the max without
  keepdims) compiles for sm_90 to one kernel, the fused attention template,
  and --explain says nothing about it.
- The same models compiled for and run on the host (no fused template
  there), unfused and with the chain fused (--fusion=rolling), match
  attention_test.py's float64 reference.
- Chains that are not attention the template takes (softmax along the
  queries, a score change reading two scores, a mask the kernel cannot
  represent, refused only when the kernel is built) compile for sm_90 unfused,
  and --explain prints one line for each: "MODEL: remark: NODE: attention
  not fused: REASON"; without --explain nothing is printed.
- --schedule's "attention" entry: another template or some of its fields
  are built as asked (the launches' threads and grid show it); a schedule
  the templates cannot build, or a malformed one, is one error line.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'gpu'))
import attention_test as A  # noqa: E402

L = A.L


def kernels(tcc, bundle):
    info = json.loads(subprocess.run([tcc, 'inspect', bundle], capture_output=True,
                                     text=True, check=True).stdout)
    return [k['symbol'] for k in info['kernels']]


def refused_models():
    """(name, model, the reason --explain must give, whether the matmuls
    become GEMM kernels: refused by tcc-gpu-attention-chains, the chain is
    dissolved; refused by the kernel builder, it stays one kernel of generic
    loops)."""
    scale = [A.const('c', 'bf16', 0.125), A.node('mul', ['s', 'c'], 's_mod')]
    over_queries = A.model('over_queries', 'bf16', [1, 2, 128, 64], [1, 2, 128, 64], scale)
    softmax = over_queries['nodes'][-2]
    assert softmax['op'] == 'softmax'
    softmax['attrs']['axis'] = -2
    # The scores transposed (keys as rows): no element-wise change, so the
    # chain is formed without Q·Kᵀ. (A change reading the score twice,
    # s · s, is fused: attention_test.py's dag_ cases.)
    transposed = A.model('transposed', 'bf16', [1, 2, 128, 64], [1, 2, 128, 64],
                         [A.node('transpose', ['s'], 's_mod', perm=[0, 1, 3, 2])])
    # A causal-like mask whose constraint (1e8·q - k >= 0) overflows the
    # template's 32-bit positions: matched, then refused by the kernel.
    steep = scale[:1] + [A.node('mul', ['s', 'c'], 'ss')] + A.positions(64, 64) + [
        A.const('big', 'i32', 100000000), A.node('mul', ['row', 'big'], 'far'),
        A.node('greater_equal', ['far', 'col'], 'keep'), A.const('neg', 'bf16', -1e30),
        A.node('select', ['keep', 'ss', 'neg'], 's_mod')]
    steep_layout = A.model('steep_layout', 'bf16', [1, 2, 64, 64], [1, 2, 64, 64], steep,
                           layout='qkvo')
    steep = A.model('steep', 'bf16', [1, 2, 64, 64], [1, 2, 64, 64], steep)
    # The same in the model's layout: the transposes moved into the chain
    # stay in its generic kernel; the remark is at P·V's node, not at the
    # output's transpose.
    pv = [i for i, n in enumerate(steep_layout['nodes']) if n['outputs'] == ['oh']][0]
    # Head size 36 in f16 (not a multiple of 8: no tensor-core template),
    # its Q, K, V in a projection's layout with 3 heads (rows 216 bytes
    # apart, which the SIMT template reads element by element), and the
    # steep mask, which the SIMT template refuses too: the reason names
    # both refusals.
    odd_rows = A.model('odd_rows', 'f16', [1, 3, 64, 36], [1, 3, 64, 36],
                       [A.const('c', 'f16', 0.125), A.node('mul', ['s', 'c'], 'ss')] +
                       A.positions(64, 64) + [
                           A.const('big', 'i32', 100000000),
                           A.node('mul', ['row', 'big'], 'far'),
                           A.node('greater_equal', ['far', 'col'], 'keep'),
                           A.const('neg', 'f16', -1e30),
                           A.node('select', ['keep', 'ss', 'neg'], 's_mod')],
                       layout='qkv')
    # V of head size 320 under Q and K of 64: P·V over the templates'
    # largest head stays a GEMM; one line, at P·V (the chain formed without
    # it once gave a second, "does not end in P·V").
    wide_values = A.model('wide_values', 'bf16', [1, 2, 128, 64], [1, 2, 128, 64], scale,
                          vd=320)
    pv_wide = [i for i, n in enumerate(wide_values['nodes']) if n['op'] == 'matmul'][-1]
    return [('over_queries', over_queries, 'the chain does not end in P·V', True),
            ('wide_values', wide_values,
             'head size 320 is over 256, the largest the attention templates take', True,
             pv_wide),
            ('transposed_scores', transposed,
             'the scores do not come from Q·Kᵀ in the chain', True),
            ('steep_mask', steep,
             "attention kernel: a mask constraint's values exceed the 32-bit range", False),
            ('steep_mask_layout', steep_layout,
             "attention kernel: a mask constraint's values exceed the 32-bit range", False,
             pv),
            ('odd_rows_hd36', odd_rows,
             "attention kernel: head dim must be a multiple of 8 from 8 to 256; SIMT attention "
             "kernel: a mask constraint's values exceed the 32-bit range", False)]


def main():
    tcc = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix='tcc-attention-explain-') as work:
        failed = run(tcc, work)
    print('%d failed' % failed)
    return 1 if failed else 0


def run(tcc, work):
    failed = 0

    def check(name, ok, detail=''):
        nonlocal failed
        print('%s %s%s' % ('PASS' if ok else 'FAIL', name, '' if ok else ' -- ' + detail),
              flush=True)
        failed += not ok

    for name, m, qscale, change in A.handwritten_cases():
        d = os.path.join(work, name)
        os.makedirs(d)
        path = os.path.join(d, 'model.json')
        with open(path, 'w') as f:
            json.dump(m, f)
        bundle = os.path.join(d, 'gpu.tccb')
        p = subprocess.run([tcc, 'compile', path, '-o', bundle, '--target', 'sm_90',
                            '--explain'], capture_output=True, text=True)
        if p.returncode != 0:
            check(name + ' sm_90', False, p.stderr.strip())
            continue
        symbols = kernels(tcc, bundle)
        check(name + ' sm_90: one attention kernel, nothing to explain',
              len(symbols) == 1 and symbols[0].endswith('_attn') and not p.stderr,
              '%s, stderr %r' % (symbols, p.stderr))

        env, _ = A.make_inputs(m, qscale, seed=len(name))
        inputs = []
        for i in m['inputs']:
            npy = os.path.join(d, i['name'] + '.npy')
            np.save(npy, L.to_npy(i['dtype'], env[i['name']]))
            inputs += ['--input', '%s=%s' % (i['name'], npy)]
        dt = m['inputs'][0]['dtype']
        ref = A.reference(*A.attention_inputs(name, env), change, env)
        # attention_test.py's tolerance: a few units of the dtype's last
        # place of max|O| (the host computes softmax in the model's dtype).
        bound = (2.0 ** -6 if dt == 'bf16' else 2.0 ** -8) * np.abs(ref).max()
        # The host's default (these rows are too short to fuse) and the
        # chain read in chunks, the division after P·V reading the final sum.
        for fusion in ('auto', 'rolling'):
            out = os.path.join(d, fusion)
            p = subprocess.run([tcc, 'run', path, '--target', 'host', '--fusion', fusion,
                                '--output-dir', out] + inputs, capture_output=True, text=True)
            what = '%s host --fusion=%s' % (name, fusion)
            if p.returncode != 0:
                check(what, False, p.stderr.strip()[-300:])
                continue
            got = L.from_npy(dt, np.load(os.path.join(out, 'o.npy')))
            err = np.abs(got - ref).max()
            check(what, err <= bound and 'warning' not in p.stderr,
                  'max error %.3g, allowed %.3g; %s' % (err, bound, p.stderr.strip()[-300:]))

    for name, m, reason, gemm, *node in refused_models():
        path = os.path.join(work, name + '.json')
        with open(path, 'w') as f:
            json.dump(m, f)
        bundle = os.path.join(work, name + '.tccb')
        p = subprocess.run([tcc, 'compile', path, '-o', bundle, '--target', 'sm_90',
                            '--explain'], capture_output=True, text=True)
        lines = p.stderr.splitlines()
        want = re.compile(r'^%s: remark: /nodes/%s: attention not fused: %s' %
                          (re.escape(path), node[0] if node else r'\d+', re.escape(reason)))
        check(name + ' --explain: one line with the reason',
              p.returncode == 0 and len(lines) == 1 and want.match(lines[0]) is not None,
              'rc %d, stderr %r' % (p.returncode, p.stderr))
        symbols = kernels(tcc, bundle) if p.returncode == 0 else []
        check(name + ' compiled unfused',
              symbols and not any('_attn' in s or '_decode' in s for s in symbols) and
              any('matmul' in s for s in symbols) == gemm, str(symbols))
        p = subprocess.run([tcc, 'compile', path, '-o', bundle, '--target', 'sm_90'],
                           capture_output=True, text=True)
        check(name + ' without --explain: silent', p.returncode == 0 and not p.stderr,
              repr(p.stderr))

    # check() counts its failures into `failed` (not `failed += ...`, which
    # would read `failed` before the call and drop them).
    run_schedules(tcc, work, check)
    return failed


def launches(tcc, bundle):
    info = json.loads(subprocess.run([tcc, 'inspect', bundle], capture_output=True,
                                     text=True, check=True).stdout)
    names = [k['symbol'] for k in info['kernels']]
    plans.extend(k.get('plan') for k in info['kernels'])
    return [(names[l['kernel']], l['block'][0], l['grid'][0]) for l in info['launches']]


plans = []  # the kernels' "plan" entries (tcc inspect) of the last bundles read


def run_schedules(tcc, work, check):
    """--schedule's "attention" entry (tcc-gpu-attention-plan applies it):
    another template or some fields of one, built as asked; a schedule the
    templates cannot build, or a malformed one, is one error line and exit
    status 1."""
    scale = [A.const('c', 'bf16', 0.125), A.node('mul', ['s', 'c'], 's_mod')]
    bf16 = A.model('sched', 'bf16', [1, 2, 1000, 64], [1, 2, 1000, 64], scale)
    f32 = A.model('sched32', 'f32', [1, 2, 1000, 64], [1, 2, 1000, 64],
                  [A.const('c', 'f32', 0.125), A.node('mul', ['s', 'c'], 's_mod')])
    # Decode: one query row a head against 1000 keys.
    dec = A.model('sched_dec', 'bf16', [1, 2, 1, 64], [1, 2, 1000, 64], scale)
    paths = {}
    for name, m in (('bf16', bf16), ('f32', f32), ('dec', dec)):
        paths[name] = os.path.join(work, 'sched_%s.json' % name)
        with open(paths[name], 'w') as f:
            json.dump(m, f)

    def compile_with(model, target, schedule):
        sched = os.path.join(work, 'schedule.json')
        with open(sched, 'w') as f:
            json.dump({'attention': schedule}, f)
        bundle = os.path.join(work, 'sched.tccb')
        p = subprocess.run([tcc, 'compile', paths[model], '-o', bundle, '--target', target,
                            '--schedule', sched], capture_output=True, text=True)
        return p, (launches(tcc, bundle) if p.returncode == 0 else [])

    # wgmma is sm_90a's default at head size 64; mma.sync with 64-row blocks
    # of 4 warps asked for: 16 query tiles of 1000 rows, 128 threads.
    plans.clear()
    p, got = compile_with('bf16', 'sm_90a', {'template': 'mma', 'block_q': 64, 'warps': 4})
    check('schedule: mma.sync instead of wgmma',
          p.returncode == 0 and len(got) == 1 and got[0][0].endswith('_attn') and
          got[0][1:] == (128, 16), '%r %s' % (p.stderr, got))
    # tcc inspect shows the plan the kernel was built with.
    check('schedule: the plan in the manifest',
          len(plans) == 1 and re.fullmatch(
              r'#tcc\.mma_attention<blockQ = 64, blockKV = \d+, warps = 4, stages = \d+>',
              plans[0] or '') is not None, plans)
    # The SIMT template (f32 prefill's default is 3xTF32 on mma.sync) with
    # its 8 x 4 register tile: (128 / 8) x (64 / 4) threads.
    p, got = compile_with('f32', 'sm_90', {'template': 'simt', 'tile_rows': 8,
                                           'block_q': 128, 'block_kv': 64})
    check('schedule: the SIMT template with 8 x 4 register tiles',
          p.returncode == 0 and len(got) == 1 and got[0][0].endswith('_attn_simt') and
          got[0][1:] == (256, 8), '%r %s' % (p.stderr, got))
    # f32 on tensor cores as 3xTF32: the mma.sync template, asked for (the
    # default is the SIMT template, true f32), on sm_90 and sm_90a alike.
    for target in ('sm_90', 'sm_90a'):
        p, got = compile_with('f32', target, {'template': 'mma'})
        check('schedule: f32 on the mma.sync template (3xTF32) on %s' % target,
              p.returncode == 0 and len(got) == 1 and got[0][0].endswith('_attn'),
              '%r %s' % (p.stderr, got))
    for what, model, target, schedule, reason in (
            ('wgmma on sm_90', 'bf16', 'sm_90', {'template': 'wgmma'},
             'needs a target with wgmma'),
            ('an unknown field', 'bf16', 'sm_90', {'template': 'mma', 'tile_rows': 8},
             "'tile_rows' is not a field of the mma template"),
            ('a field of the wrong type', 'f32', 'sm_90', {'template': 'simt', 'split_kv': 1},
             "'split_kv' takes true or false"),
            ('a template for another dtype', 'f32', 'sm_90a', {'template': 'wgmma'},
             'f32 takes the mma.sync template'),
            ('an unknown template', 'bf16', 'sm_90', {'template': 'tma'},
             "template 'tma' is not one of"),
            ('a schedule the template refuses', 'bf16', 'sm_90', {'block_q': 48},
             'must be powers of two'),
            # Huge powers of two: bounded before sizes are computed from
            # them (their shared-memory bytes overflowed, then the builder
            # aborted); chunks and minBlocks too large for the kernel's
            # 32-bit indices and ptxas.
            ('a huge block_q', 'bf16', 'sm_90', {'template': 'mma', 'block_q': 1 << 62},
             'blockQ and blockKV must be <= 1024'),
            ('a huge decode block_kv', 'dec', 'sm_90',
             {'template': 'mma_decode', 'block_kv': 1 << 62}, 'blockKV must be <= 1024'),
            ('a huge decode chunk', 'dec', 'sm_90',
             {'template': 'mma_decode', 'chunk_tiles': 1 << 62}, '1 to 2^30 key tiles'),
            ('a huge SIMT chunk', 'f32', 'sm_90', {'template': 'simt', 'chunk_tiles': 1 << 62},
             'chunkTiles must be in [0, 2^30]'),
            ('a huge min_blocks', 'f32', 'sm_90', {'template': 'simt', 'min_blocks': 1 << 62},
             'minBlocks must be in [0, 32]')):
        p, _ = compile_with(model, target, schedule)
        lines = p.stderr.splitlines()
        check('schedule: %s is refused' % what,
              p.returncode == 1 and len(lines) == 1 and
              lines[0].startswith(tuple(paths[model] + ': error: ' + t + 'attention schedule: '
                                        for t in ('', 'SIMT '))) and
              reason in lines[0] and 'schedule: attention schedule:' not in lines[0],
              'rc %d, stderr %r' % (p.returncode, p.stderr))
    # 32-bit indices asked for a model with a template kernel: one error line.
    p = subprocess.run([tcc, 'compile', paths['bf16'], '-o', os.path.join(work, 'i32.tccb'),
                        '--target', 'sm_90', '--gpu-index-bits', '32'],
                       capture_output=True, text=True)
    lines = p.stderr.splitlines()
    check('--gpu-index-bits 32 with the attention template is refused',
          p.returncode == 1 and len(lines) == 1 and
          '--gpu-index-bits 32 does not fit this model' in lines[0],
          'rc %d, stderr %r' % (p.returncode, p.stderr))


if __name__ == '__main__':
    sys.exit(main())
