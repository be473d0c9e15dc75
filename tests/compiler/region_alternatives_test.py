#!/usr/bin/env python3
"""tcc-region-fusion's alternative groupings on a small graph.

    region_alternatives_test.py TCC_OPT

The graph: six f16 NHWC convolutions on 1x32x32x32, 3x3 pad 1 and 1x1 in
turn, each followed by a ReLU, named conv0, relu0, ... (their locations).
The region template runs chains, so a legal group is, independently of the
pass, a run of consecutive ops starting at a convolution with two or more
convolutions (and at most 8 members), whose ReLUs are its members
too except perhaps the last one's. Checked: 24 alternatives asked, 24 given
(the chain has many more), all distinct and legal by that rule; the first is
the search's, the cheapest (the search is complete here), and `unfused`
costs the sum of the ops' unfused times; every alternative's predicted time
is its group kernels' plus its unfused ops'; the same seed gives the same
file, another seed another; and each alternative forced back with
force=FILE:ID marks exactly its groups.
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def graph():
    lines = ['func.func @main(%x: tensor<1x32x32x32xf16>, %w: tensor<32x3x3x32xf16>, '
             '%v: tensor<32x1x1x32xf16>) -> tensor<1x32x32x32xf16> {']
    cur = '%x'
    for i in range(6):
        w, k, p = ('%w', 3, 1) if i % 2 == 0 else ('%v', 1, 0)
        lines.append(
            '  %%c%d = tcc.conv2d %s, %s {strides = array<i64: 1, 1>, pads = array<i64: %d, %d, '
            '%d, %d>, dilations = array<i64: 1, 1>, groups = 1 : i64, nhwc} : '
            'tensor<1x32x32x32xf16>, tensor<32x%dx%dx32xf16> -> tensor<1x32x32x32xf16> '
            'loc("conv%d")' % (i, cur, w, p, p, p, p, k, k, i))
        lines.append('  %%r%d = tcc.relu %%c%d : tensor<1x32x32x32xf16> loc("relu%d")'
                     % (i, i, i))
        cur = '%%r%d' % i
    lines.append('  return %s : tensor<1x32x32x32xf16>\n}\n' % cur)
    return '\n'.join(lines)


ORDER = ['%s%d' % (kind, i) for i in range(6) for kind in ('conv', 'relu')]


def legal(group):
    """A chain the region template runs, by the rule in the docstring."""
    idx = [ORDER.index(m) for m in group]
    convs = sum(1 for m in group if m.startswith('conv'))
    return (idx == list(range(idx[0], idx[0] + len(idx))) and group[0].startswith('conv')
            and convs >= 2 and len(group) <= 8)


def main():
    opt = sys.argv[1]
    failed = 0

    def check(name, ok, detail=''):
        nonlocal failed
        print('%s %s%s' % ('PASS' if ok else 'FAIL', name, '' if ok else ' -- ' + detail),
              flush=True)
        failed += not ok

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 'chain.mlir')
        with open(src, 'w') as f:
            f.write(graph())

        def alternatives(seed, name):
            out = os.path.join(tmp, name)
            p = subprocess.run([opt, src, '--tcc-region-fusion=alternatives=24 seed=%d out=%s'
                                % (seed, out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=120)
            check('alternatives seed %d run' % seed, p.returncode == 0, p.stderr)
            return out

        path = alternatives(1, 'a.json')
        doc = json.load(open(path))
        alts = doc['alternatives']
        check('24 alternatives', len(alts) == 24, str(len(alts)))
        keys = [json.dumps(a['groups']) for a in alts]
        check('distinct', len(set(keys)) == len(keys))
        bad = [(a['id'], g) for a in alts for g in a['groups'] if not legal(g)]
        check('every group a legal chain', not bad, str(bad[:3]))
        overlap = [a['id'] for a in alts
                   if len({m for g in a['groups'] for m in g}) != sum(map(len, a['groups']))]
        check('no member in two groups', not overlap, str(overlap))
        check('ids in order', [a['id'] for a in alts] == list(range(len(alts))))
        check('the first is the search\'s', alts[0]['origin'] == 'search', alts[0]['origin'])
        best = alts[0]['predicted_us']
        check('the search\'s is the cheapest', all(best <= a['predicted_us'] for a in alts),
              str([a['predicted_us'] for a in alts]))
        unfused = [a for a in alts if a['origin'] == 'unfused']
        ops = {o['name']: o['unfused']['us'] for o in doc['region_ops']}
        check('region ops named by location', sorted(ops) == sorted(ORDER), str(sorted(ops)))
        check('unfused is the sum of the ops', len(unfused) == 1 and
              abs(unfused[0]['predicted_us'] - sum(ops.values())) < 1e-9 and
              unfused[0]['groups'] == [])
        worst = 0
        for a in alts:
            grouped = {m for g in a['groups'] for m in g}
            total = sum(k['us'] for k in a['group_kernels']) + sum(
                us for n, us in ops.items() if n not in grouped)
            worst = max(worst, abs(total - a['predicted_us']))
        check('predicted = group kernels + unfused ops', worst < 1e-9, str(worst))
        # With the phase latency every group costs serial k-steps, so the
        # best fuses less and the worst (all unfused) is about 1.2x it, not
        # the 2x and more of the model without it; still the perturbations
        # reach many different costs, not the search's neighbourhood alone.
        spread = max(a['predicted_us'] for a in alts) / best
        check('the alternatives span the range (worst over best %.2f)' % spread, spread > 1.15)
        costs = len({round(a['predicted_us'], 6) for a in alts})
        check('the alternatives take many costs (%d distinct)' % costs, costs >= 6)

        again = alternatives(1, 'b.json')
        check('deterministic for a seed', open(path).read() == open(again).read())
        other = alternatives(2, 'c.json')
        check('another seed, other alternatives',
              [a['groups'] for a in json.load(open(other))['alternatives']] !=
              [a['groups'] for a in alts])

        # Each forced back marks exactly its groups.
        wrong = []
        for a in alts:
            p = subprocess.run([opt, src, '-mlir-print-debuginfo', '-mlir-print-local-scope',
                                '--tcc-region-fusion=force=%s:%d' % (path, a['id'])],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=120)
            groups = {}
            for line in p.stdout.splitlines():
                m = re.search(r'tcc\.region_group = (\d+).*loc\("(\w+)"\)', line)
                if m:
                    groups.setdefault(int(m.group(1)), []).append(m.group(2))
            if p.returncode != 0 or sorted(groups.values()) != sorted(a['groups']):
                wrong.append((a['id'], p.stderr.strip()[:200], groups))
        check('each forced back marks its groups', not wrong, str(wrong[:2]))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
