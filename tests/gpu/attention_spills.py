#!/usr/bin/env python3
"""GPU-free check that attention kernels do not spill registers.

Compiles forms of attention_test.py (the models it records) for sm_90,
sm_90a and sm_80 with --gpu-attention --emit asm, assembles the PTX with ptxas -v and
fails on any kernel that spills (a spill is local memory traffic inside the
key loop: a slow kernel, not a wrong one, so nothing else catches it), or
whose PTX holds a warp vote whose result nothing reads: beside such a dead
vote.all, the CUDA 13 JIT turned the live "any" flags of the key-skipping
prologue into "all" flags on the H100 (session 46), and tiles a padding mask
kept in part were skipped (a wrong answer no ptxas report shows).

usage: attention_spills.py TCC [--ptxas PTXAS] [--all] [--only PREFIX]...
                            [--target T]... [--mix N[:SEED]]
    TCC        the compiler
    --ptxas    the CUDA toolkit's ptxas (default: searched for); without
               one the check reports SKIPPED (exit status 77)
    --all      every form of attention_test.py, f32's SIMT kernels included
               (a survey, minutes), not the representative subset the
               ctest runs
    --only     forms whose name starts with PREFIX (repeatable)
    --target   the targets (repeatable; default sm_90, sm_90a and sm_80:
               the mma.sync template is sm_80's too)
Prints one line per kernel: form, target, kernel, registers, spill stores
and loads (bytes).
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# One form of each kind the mma.sync and wgmma templates build: plain and
# causal at head sizes 64 and 128 (both dtypes), the other head sizes, masks
# and biases read per score (per head, per key, planes), softcap, GQA,
# strided layouts, K given transposed, handwritten softmax and the decode
# pair, V of another head size (MLA, prefill and decode); of the f32 forms
# (the SIMT template), rows copied element by element.
SUBSET = (
    'plain_bf16', 'causal_bf16_1000', 'cross_f16_100x3001', 'softcap_x30_bf16',
    'softcap_sparse_padmask_bf16_664',
    'alibi_slopes_input_bf16', 'window64_bf16', 'gqa_8_2_bf16',
    'keymask_perhead_drop_f16_1000', 'keymask_runs_causal_bf16_700',
    'bias_plane_causal_f16_520', 'bias_unaligned_f16_777',
    'hd32_causal_bf16_300', 'hd80_f16_333', 'hd96_gqa_causal_bf16', 'hd192_causal_f16_200',
    'hd256_bias_f16_130', 'layout_kv_causal_f16_d96', 'layout_bf16',
    'hand_post_norm_f32_sum_f16', 'rank2_causal_f16_1000',
    'decode_keymask_perhead_gqa_q1_3001', 'decode_hd256_gqa_q1_2000',
    'f32_hd50_gqa_8_2_357', 'mla_causal_f16_333', 'decode_mla_f16_q1_3001',
)

INFO = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'.*?"
                  r"(\d+) bytes spill stores, (\d+) bytes spill loads.*?"
                  r"Used (\d+) registers", re.S)


def find_ptxas():
    found = shutil.which('ptxas') or sorted(glob.glob('/usr/local/cuda*/bin/ptxas'))
    return found if isinstance(found, str) else (found[0] if found else None)


VOTE = re.compile(r'vote\.sync\.\w+\.pred\s+(%p\d+)')


def dead_votes(ptx):
    """The predicates of warp votes that the PTX never reads (a register
    named once: its definition)."""
    return [r for r in VOTE.findall(ptx) if len(re.findall(re.escape(r) + r'\b', ptx)) == 1]


def check(tcc, ptxas, tmp, name, m, target):
    """(name, target, [(kernel, registers, stores, loads)], error or None)."""
    base = os.path.join(tmp, '%s-%s' % (name, target))
    with open(base + '.json', 'w') as f:
        json.dump(m, f)
    p = subprocess.run([tcc, 'compile', base + '.json', '--target', target, '--gpu-attention',
                        '--emit', 'asm', '-o', base + '.ptx'], capture_output=True, text=True)
    if p.returncode:
        return name, target, [], 'compile: ' + p.stderr.strip()[:300]
    with open(base + '.ptx') as f:
        dead = dead_votes(f.read())
    if dead:
        return name, target, [], 'votes nothing reads: %s' % ' '.join(dead)
    p = subprocess.run([ptxas, '-arch=' + target, '-v', base + '.ptx', '-o', base + '.cubin'],
                       capture_output=True, text=True)
    if p.returncode:
        return name, target, [], 'ptxas: ' + p.stderr.strip()[:300]
    kernels = [(k, int(r), int(st), int(ld)) for k, _, st, ld, r in INFO.findall(p.stderr)]
    if not kernels:
        return name, target, [], 'ptxas -v reported no kernel'
    return name, target, kernels, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('tcc')
    ap.add_argument('--ptxas')
    ap.add_argument('--all', action='store_true')
    ap.add_argument('--only', action='append', default=[])
    ap.add_argument('--target', action='append', default=[],
                    help='sm_80 ... sm_90a (repeatable; default sm_90, sm_90a, sm_80)')
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--mix', metavar='N[:SEED]',
                    help='also N random mixes of the forms (attention_mix.py; a fresh draw '
                         'unless SEED), f32 ones left out as in the subset')
    args = ap.parse_args()
    ptxas = args.ptxas or find_ptxas()
    if not ptxas or not os.access(ptxas, os.X_OK):
        print('SKIPPED: no ptxas (the CUDA toolkit) found')
        return 77
    # Imported once ptxas is known to be here: a machine without the CUDA
    # toolkit skips without needing NumPy.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import attention_test as A
    if args.mix:
        count, _, seed = args.mix.partition(':')
        A.MIX_DRAW['count'] = int(count)
        A.MIX_DRAW['seed'] = int(seed) if seed else int.from_bytes(os.urandom(4), 'little') >> 1
        print('mixes: --mix %d:%d' % (A.MIX_DRAW['count'], A.MIX_DRAW['seed']))
    forms = [(n, m) for n, m, _, _ in A.cases()]
    mixes = [(n, m) for n, m in forms
             if n in A.MIX and m['inputs'][0]['dtype'] != 'f32']
    if args.only:
        forms = [(n, m) for n, m in forms if n.startswith(tuple(args.only))]
    elif not args.all:
        names = {n for n, _ in forms}
        missing = [n for n in SUBSET if n not in names]
        if missing:
            print('FAIL the subset names forms attention_test.py lacks: %s' % missing)
            return 1
        forms = [(n, m) for n, m in forms if n in SUBSET] + mixes
    targets = args.target or ['sm_90', 'sm_90a', 'sm_80']
    failed = 0
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        jobs = [pool.submit(check, args.tcc, ptxas, tmp, n, m, t)
                for n, m in forms for t in targets]
        for job in jobs:
            name, target, kernels, error = job.result()
            if error:
                print('FAIL %s %s: %s' % (name, target, error))
                failed += 1
            for kernel, regs, st, ld in kernels:
                spills = st or ld
                print('%s %-36s %-7s %-28s %3d registers, spills %d/%d bytes' % (
                    'FAIL' if spills else 'ok  ', name, target, kernel, regs, st, ld))
                failed += bool(spills)
    print('%d forms x %d targets, %d failed' % (len(forms), len(targets), failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
