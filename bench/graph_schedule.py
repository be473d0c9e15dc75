#!/usr/bin/env python3
"""How long a concurrent CUDA graph of a bundle should take, from its kernels' times.

The runtime records a graph whose launches wait only for the earlier work
they share memory with (runtime/src/LaunchOrder.h). This replays that order
as a list schedule: each launch starts once the launches it waits for have
ended and the multiprocessors have room for it, and runs for its time alone
(Nsight Compute's, from bench/profile_kernels.py's NAME.profile.csv). A
launch's room is the share of the GPU its blocks fill: blocks over the
multiprocessors times the blocks one can hold (threads, shared memory and,
with --ptxas, registers: the manifest does not say them, so ptxas -v is run
on the bundle's PTX), at most all of it.

It explains why a change helps or not before a device call. On NASNet-A
Large (session 28) it gave 1.74 ms for region fusion auto and 1.35 for
off, measured 1.70 and 1.41; and 2.32 for the first concurrent bundle,
measured 2.81 (its depthwise kernels waited on memory latency more than
their blocks' room says). The critical path alone (unbounded room) gave
1.36 and 1.33: auto's region groups cost it room, not length. Session
29's bundles (region kernels at the planned tiles) it schedules at 1.30
(1.325 with registers) both, measured 1.54 and 1.36: what slows auto there
is outside this model.

usage: graph_schedule.py --tcc TCC BUNDLE PROFILE.csv [--sms 132] [--ptxas PTXAS]
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile


def ranges(m):
    """Per launch: (begin, end, written) byte ranges, temps at their arena
    offsets and every other buffer apart (as the runtime binds them)."""
    size = {b['id']: b['bytes'] for b in m['buffers']}
    base, free = {}, 1 << 40
    for b in m['buffers']:
        if b['kind'] == 'temp':
            base[b['id']] = b['offset']
        else:
            base[b['id']] = free
            free += b['bytes'] + 4096
    out = []
    for l in m['launches']:
        if 'copy' in l:
            c = l['copy']
            out.append([(base[c['src']], base[c['src']] + size[c['src']], False),
                        (base[c['dst']], base[c['dst']] + size[c['dst']], True)])
            continue
        w = set(l.get('writes', range(len(l['args']))))
        out.append([(base[a], base[a] + size[a], p in w) for p, a in enumerate(l['args'])])
    return out


def waits(items):
    return [[j for j in range(i)
             if any((x[2] or y[2]) and x[0] < y[1] and y[0] < x[1]
                    for x in items[i] for y in items[j])]
            for i in range(len(items))]


def room(m, sms, registers=None):
    """Per launch, the share of the GPU its blocks fill: blocks over the
    multiprocessors times the blocks one holds (threads, shared memory and,
    given `registers` per kernel symbol, the 64 K registers: a thread's
    count rounded up to 8, as the hardware allocates a warp's)."""
    out = []
    for l in m['launches']:
        if 'copy' in l:
            out.append(0.0)
            continue
        k = m['kernels'][l['kernel']]
        blocks = l['grid'][0] * l['grid'][1] * l['grid'][2]
        threads = l['block'][0] * l['block'][1] * l['block'][2]
        shared = k.get('shared_bytes', 0)
        per = min(2048 // threads, 32, (228 * 1024) // shared if shared else 32)
        regs = (registers or {}).get(k['symbol'])
        if regs:
            per = min(per, 65536 // (((regs + 7) // 8) * 8 * threads))
        out.append(min(1.0, blocks / (sms * max(per, 1))))
    return out


def kernel_registers(bundle, m, ptxas):
    """Registers a thread of each kernel, from `ptxas -v` on the bundle's PTX
    blob (the target is the blob's name, sm_90a.ptx)."""
    blob = next(b for b in m['blobs'] if b['name'].endswith('.ptx'))
    with open(bundle, 'rb') as f:
        f.seek(blob['offset'])
        ptx = f.read(blob['size'])
    with tempfile.NamedTemporaryFile(suffix='.ptx') as t:
        t.write(ptx)
        t.flush()
        log = subprocess.run([ptxas, '-arch=' + blob['name'][:-4], '-v', t.name, '-o', os.devnull],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True).stdout
    regs, entry = {}, None
    for line in log.decode(errors='replace').splitlines():
        e = re.search(r"Compiling entry function '(\w+)'", line)
        if e:
            entry = e.group(1)
        r = re.search(r'Used (\d+) registers', line)
        if r and entry:
            regs[entry] = int(r.group(1))
    return regs


def schedule(us, after, share, bounded=True):
    end, running = [0.0] * len(us), []
    for i in range(len(us)):
        start = max([end[j] for j in after[i]], default=0.0)
        need = share[i] if bounded else 0.0
        running = [r for r in running if r[0] > start]
        while running and sum(r[1] for r in running) + need > 1.0 + 1e-9:
            running.sort()
            start = max(start, running.pop(0)[0])
            running = [r for r in running if r[0] > start]
        end[i] = start + us[i]
        running.append((end[i], need))
    return max(end, default=0.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tcc', required=True)
    ap.add_argument('bundle')
    ap.add_argument('profile')
    ap.add_argument('--sms', type=int, default=132)
    ap.add_argument('--ptxas', help='ptxas of the CUDA toolkit: count registers in the room')
    args = ap.parse_args()
    m = json.loads(subprocess.run([args.tcc, 'inspect', args.bundle], check=True,
                                  stdout=subprocess.PIPE).stdout)
    rows = list(csv.DictReader(open(args.profile)))
    n = len(m['launches'])
    if len(rows) < n:
        print('the profile has %d launches, the bundle %d a run' % (len(rows), n))
        return 1
    us = [float(r['us']) for r in rows[-n:]]  # the run's, after the load's
    after = waits(ranges(m))
    share = room(m, args.sms, kernel_registers(args.bundle, m, args.ptxas) if args.ptxas else None)
    print('%d launches: serial %.3f ms, critical path %.3f ms, scheduled %.3f ms'
          % (n, sum(us) / 1000, schedule(us, after, share, False) / 1000,
             schedule(us, after, share) / 1000))
    return 0


if __name__ == '__main__':
    sys.exit(main())
