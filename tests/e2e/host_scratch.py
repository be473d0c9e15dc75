#!/usr/bin/env python3
"""Host kernels whose scratch the machine cannot give fail cleanly.

A reduction over an iota of 2^33 i64, over a broadcast to [8, 2^33] f32
through exp, and over a pad to 2^40 f32 each need tens of GB to TB of
scratch: `tcc run` must exit 1 within seconds with one line naming the
kernel and the bytes, never a signal. A reduction over an iota of 2^20 i64
(8 MB of scratch) still gives the exact sum n(n-1)/2, so the check does not
disturb allocations that succeed.

usage: host_scratch.py TCC
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

TCC = sys.argv[1]
passed = failed = 0


def report(ok, what):
    global passed, failed
    print(('PASS ' if ok else 'FAIL ') + what, flush=True)
    passed += ok
    failed += not ok


def model(name, inputs, nodes, outputs):
    return {'format': 'tcc-model', 'version': 1, 'name': name, 'inputs': inputs,
            'params': [], 'nodes': nodes, 'outputs': outputs}


def iota_sum(n):
    return model('iota_sum', [], [
        {'op': 'iota', 'inputs': [], 'outputs': ['i'],
         'attrs': {'dtype': 'i64', 'shape': [n], 'axis': 0}},
        {'op': 'reduce_sum', 'inputs': ['i'], 'outputs': ['s'], 'attrs': {}}], ['s'])


HUGE = {
    'iota of 2^33 i64, summed': iota_sum(2**33),
    'broadcast to [8, 2^33] f32, exp, max': model('bcast', [
        {'name': 'x', 'dtype': 'f32', 'shape': [1, 1]}], [
        {'op': 'broadcast_to', 'inputs': ['x'], 'outputs': ['b'], 'attrs': {'shape': [8, 2**33]}},
        {'op': 'exp', 'inputs': ['b'], 'outputs': ['e']},
        {'op': 'reduce_max', 'inputs': ['e'], 'outputs': ['m'], 'attrs': {}}], ['m']),
    'pad to 2^40 f32, summed': model('padbig', [{'name': 'x', 'dtype': 'f32', 'shape': [4]}], [
        {'op': 'pad', 'inputs': ['x'], 'outputs': ['p'], 'attrs': {'pads': [0, 2**40 - 4]}},
        {'op': 'reduce_sum', 'inputs': ['p'], 'outputs': ['s'], 'attrs': {}}], ['s']),
}

with tempfile.TemporaryDirectory() as d:
    def run(m, extra=()):
        path = os.path.join(d, m['name'] + '.json')
        with open(path, 'w') as f:
            json.dump(m, f)
        out = os.path.join(d, 'out')
        start = time.time()
        r = subprocess.run([TCC, 'run', path, '--output-dir', out] + list(extra),
                           capture_output=True, text=True, timeout=300)
        return r, time.time() - start, out

    # With "always overcommit" (vm.overcommit_memory=1) the kernel hands out
    # any size and kills whoever touches it: nothing to check there.
    try:
        always = open('/proc/sys/vm/overcommit_memory').read().strip() == '1'
    except OSError:
        always = False
    if always:
        print('the huge cases are skipped: vm.overcommit_memory is 1')
    for what, m in ({} if always else HUGE).items():
        r, secs, _ = run(m)
        errors = [l for l in r.stderr.splitlines() if l.strip() and not l.startswith('note:')]
        report(r.returncode == 1 and len(errors) == 1 and 'could not allocate' in errors[0]
               and 'bytes of scratch memory' in errors[0] and secs < 60,
               '%s: exit %d in %.1f s: %s' % (what, r.returncode, secs,
                                              errors[0] if errors else '(no error)'))
    n = 2**20
    r, _, out = run(iota_sum(n))
    ok = r.returncode == 0 and int(np.load(os.path.join(out, 's.npy'))) == n * (n - 1) // 2
    report(ok, 'iota of 2^20 i64, summed: the exact sum (exit %d %s)'
           % (r.returncode, r.stderr.strip()[:200]))

print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
