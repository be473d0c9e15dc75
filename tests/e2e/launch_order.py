#!/usr/bin/env python3
"""GPU bundles let a CUDA graph run independent launches side by side.

The runtime orders a graph's launches by the memory they share, taking what
each launch writes from its "writes" (runtime/src/LaunchOrder.h). Two things
the compiler promises for that, checked on the manifests of GPU bundles of
branching models (compile only, no GPU):

1. "writes" names exactly the launch's results and scratch: never an input,
   a param or a derived buffer; every launch of a GPU bundle has it.
2. The memory plan adds no order of its own: where two temps share arena
   bytes, every launch touching the later one descends, through the data
   dependencies alone (by buffer id: read after write, write after read or
   write), from every launch touching the earlier one. Otherwise the reuse
   would serialise branches the model leaves independent. A launch that
   depends on nothing (one zeroing its kernel's scratch) may wait for the
   memory instead: the launches after it in its kernel read what the kernel
   reads, so they follow the earlier users anyway, and the check holds them.
3. A launch writing its channels of a concat's buffer in place says which
   ("write_slices": bytes [offset, offset + bytes) of every `stride`), so
   that the producers of one concat run side by side: the slices of a
   buffer's writers are disjoint and together cover each period.
The models must reuse memory somewhere, so that 2 is not vacuous, and write
some concat in place, so that 3 is not.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ['inception_f16.json', 'unet_stage_f16.json', 'transformer_block.json',
          'small_cnn.json', 'decoder_block_bf16.json', 'topk_logits.json']


def manifest(tcc, model, target, tmp, extra=()):
    out = os.path.join(tmp, os.path.basename(model) + '.tccb')
    subprocess.run([tcc, 'compile', model, '--target', target, '-o', out] + list(extra),
                   check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    p = subprocess.run([tcc, 'inspect', out], check=True, stdout=subprocess.PIPE)
    return json.loads(p.stdout)


def touches(m):
    """Per launch: (read ids, written ids), copies included."""
    out = []
    for l in m['launches']:
        if 'copy' in l:
            out.append(({l['copy']['src']}, {l['copy']['dst']}))
            continue
        w = {l['args'][p] for p in l['writes']}
        out.append((set(l['args']) - w, w))
    return out


def check(m, name):
    """Returns (problems, pairs of temps sharing bytes)."""
    problems = []
    kind = {b['id']: b['kind'] for b in m['buffers']}
    for i, l in enumerate(m['launches']):
        if 'copy' in l:
            continue
        if 'writes' not in l:
            problems.append('%s: launch %d lists no writes' % (name, i))
            continue
        for p in l['writes']:
            k = kind[l['args'][p]]
            if k not in ('temp', 'output'):
                problems.append('%s: launch %d writes its argument %d, a %s buffer'
                                % (name, i, p, k))
    t = touches(m)
    n = len(t)
    # ancestors[i]: launches that launch i follows through data dependencies.
    ancestors = []
    for i in range(n):
        r, w = t[i]
        a = set()
        for j in range(i):
            rj, wj = t[j]
            if (r | w) & wj or w & rj:
                a |= ancestors[j] | {j}
        ancestors.append(a)
    users = {}
    for i, (r, w) in enumerate(t):
        for b in r | w:
            users.setdefault(b, set()).add(i)
    temps = [b for b in m['buffers'] if b['kind'] == 'temp' and b['bytes'] > 0
             and b['id'] in users]
    pairs = 0
    for x in temps:
        for y in temps:
            if x['id'] >= y['id']:
                continue
            if not (x['offset'] < y['offset'] + y['bytes'] and
                    y['offset'] < x['offset'] + x['bytes']):
                continue
            pairs += 1
            ux, uy = users[x['id']], users[y['id']]
            early, late = (ux, uy) if min(ux) < min(uy) else (uy, ux)
            for u in late:
                if not ancestors[u]:
                    continue
                missing = [e for e in early if e not in ancestors[u]]
                if missing:
                    problems.append('%s: buffers %d and %d share bytes, but launch %d does '
                                    'not follow launch %d' % (name, x['id'], y['id'], u,
                                                              missing[0]))
                    break
    return problems, pairs


def check_slices(m, name):
    """Returns (problems, buffers written in slices)."""
    problems = []
    by_buffer = {}
    for i, l in enumerate(m['launches']):
        for sl in l.get('write_slices', []):
            by_buffer.setdefault(l['args'][sl['arg']], {})[i] = sl
    for b, slices in by_buffer.items():
        strides = {sl['stride'] for sl in slices.values()}
        if len(strides) != 1:
            problems.append('%s: buffer %d written with strides %s' % (name, b, sorted(strides)))
            continue
        stride = strides.pop()
        covered = [0] * stride
        # A kernel of several launches (a split-K's reduction) lists the
        # slice on each launch that passes the buffer: count kernels once.
        seen = set()
        for i, sl in slices.items():
            key = (m['launches'][i]['kernel'], sl['offset'], sl['bytes'])
            if key in seen:
                continue
            seen.add(key)
            for a in range(sl['offset'], sl['offset'] + sl['bytes']):
                covered[a] += 1
        if any(c != 1 for c in covered):
            problems.append('%s: the slices of buffer %d cover its %d-byte period %s'
                            % (name, b, stride, 'twice somewhere' if max(covered) > 1
                               else 'partly'))
    return problems, len(by_buffer)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tcc', required=True)
    args = ap.parse_args()
    problems, reused, sliced = [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            path = os.path.join(HERE, 'models', name)
            for target in ('sm_90a', 'sm_80'):
                m = manifest(args.tcc, path, target, tmp)
                p, pairs = check(m, '%s (%s)' % (name, target))
                problems += p
                reused += pairs
                p, n = check_slices(m, '%s (%s)' % (name, target))
                problems += p
                sliced += n
                print('%s %s: %d launches, %d pairs of temps sharing bytes, arena %d bytes'
                      % (name, target, len(m['launches']), pairs, m['arena_bytes']))
        # The host runs launches in order: its bundles list no writes.
        m = manifest(args.tcc, os.path.join(HERE, 'models', 'small_cnn.json'), 'host', tmp)
        if any('writes' in l for l in m['launches']):
            problems.append('small_cnn (host): launches list writes')
    if reused == 0:
        problems.append('no model reuses memory: the order check saw nothing')
    if sliced == 0:
        problems.append('no model writes a concat in place: the slice check saw nothing')
    for p in problems[:20]:
        print('FAIL', p)
    print('%d problems' % len(problems))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
