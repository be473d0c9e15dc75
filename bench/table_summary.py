"""One line a case from attention_bench.py's attention.json or gpu_bench.py's
bench.json (bench/issue13.sh): tcc's time, the best peer's, their ratio
(above 1: tcc faster) and the correctness check.

    table_summary.py attention|rows FOLDER
"""
import json
import math
import os
import sys

FUSED_PEERS = ('SDPA flash', 'SDPA cuDNN', 'SDPA efficient', 'SDPA math', 'FlexAttention')


def ms(v):
    return '%.4f' % v if v else '-'


def attention(rows):
    for r in rows:
        c, t = r['case'], r.get('tcc') or {}
        peers = dict((n, p) for n, p in (r.get('peers') or []) if p)
        fused = [(p, n) for n, p in peers.items() if n in FUSED_PEERS]
        best_ms, best = min(fused) if fused else (None, '-')
        cor = r.get('correctness')
        check = '-' if not cor else '%s %.2g (peer %.2g)' % (
            'ok' if cor.get('correct') else 'NOT CORRECT', cor.get('max_err', math.nan),
            cor.get('peer_max_err', math.nan))
        got = t.get('ms')
        print('%-34s tcc %8s  cuDNN %8s  Flex %8s  best %-14s %8s  x%s  %s' % (
            c['name'], ms(got) if got else t.get('error', '?')[:30], ms(peers.get('SDPA cuDNN')),
            ms(peers.get('FlexAttention')), best, ms(best_ms),
            '%.2f' % (best_ms / got) if got and best_ms else '-', check))


def reductions(rows):
    for r in rows:
        c, t = r['case'], r.get('tcc') or {}
        if 'skipped' in r:
            print('%-26s skipped (deadline)' % c['name'])
            continue
        times = [v for v in (t.get('ms'), t.get('graph_ms')) if v]
        best = min(times) if times else None
        compiled = dict(r.get('peers') or []).get('torch.compile')
        cor = r.get('correctness', {})
        print('%-26s tcc %8s  graph %8s  torch.compile %8s  x%s  %s' % (
            c['name'], ms(t.get('ms')) if t.get('ms') else t.get('error', '?')[:30],
            ms(t.get('graph_ms')), ms(compiled),
            '%.2f' % (compiled / best) if compiled and best else '-',
            'ok' if cor.get('correct') else 'NOT CORRECT %s' % str(cor.get('detail', ''))[:60]))


def main():
    kind, folder = sys.argv[1], sys.argv[2]
    path = os.path.join(folder, 'attention.json' if kind == 'attention' else 'bench.json')
    try:
        with open(path) as f:
            rows = json.load(f)['rows']
    except (OSError, ValueError, KeyError) as e:
        print('no results in %s: %s' % (path, e))
        return 1
    (attention if kind == 'attention' else reductions)(rows)
    return 0


if __name__ == '__main__':
    sys.exit(main())
