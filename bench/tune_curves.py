#!/usr/bin/env python3
"""Tuning curves of `tcc tune` (issue 17) as one SVG, strategies side by side.

    python3 bench/tune_curves.py --out curves.svg NAME=WORK_DIR [NAME=WORK_DIR ...]

Each WORK_DIR is a `tcc tune --work` folder after `--finish` (its curve.csv:
measurements in order, seconds spent measuring, the model's matmul time with
the fastest schedules so far). The plot puts each strategy's curve on the
seconds spent measuring, with a dashed line at the best time any of them
found; the table printed beside gives, per strategy, the seconds it took to
come within 5% of that best (issue 17's criterion), or 'never'.
"""
import argparse
import csv
import os
import sys


def read(path):
    with open(os.path.join(path, 'curve.csv')) as f:
        return [(float(r['seconds']), float(r['model_ms'])) for r in csv.DictReader(f)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', required=True)
    ap.add_argument('runs', nargs='+', metavar='NAME=WORK_DIR')
    a = ap.parse_args()
    curves = {}
    for spec in a.runs:
        name, _, path = spec.partition('=')
        if not path:
            sys.exit('expected NAME=WORK_DIR, got %r' % spec)
        curves[name] = read(path)
    best = min(ms for c in curves.values() for _, ms in c)
    print('| strategy | measurements | seconds | best ms | seconds to within 5%% of %.4f |' % best)
    print('| --- | ---: | ---: | ---: | ---: |')
    for name, c in curves.items():
        hit = next((s for s, ms in c if ms <= 1.05 * best), None)
        print('| %s | %d | %.1f | %.4f | %s |' % (name, len(c), c[-1][0], c[-1][1],
                                                  '%.1f' % hit if hit is not None else 'never'))
    # The plot: 640 x 400, margins for the axes' labels.
    W, H, L, R, T, B = 640, 400, 70, 20, 20, 50
    xmax = max(s for c in curves.values() for s, _ in c) or 1
    ymax = max(ms for c in curves.values() for _, ms in c)
    ymin = best * 0.95
    X = lambda s: L + (W - L - R) * s / xmax
    Y = lambda ms: T + (H - T - B) * (1 - (ms - ymin) / ((ymax - ymin) or 1))
    colours = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e']
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - R, H - B),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - B),
           '<text x="%d" y="%d" text-anchor="middle">seconds of GPU time measuring</text>'
           % ((L + W - R) // 2, H - 12),
           '<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">'
           'matmul time with the best so far (ms)</text>' % ((T + H - B) // 2, (T + H - B) // 2),
           '<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="gray" stroke-dasharray="4"/>'
           % (L, Y(best), W - R, Y(best))]
    for i in range(5):
        v = ymin + (ymax - ymin) * i / 4
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.3f</text>' % (L - 4, Y(v) + 4, v))
        s = xmax * i / 4
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>' % (X(s), H - B + 16, s))
    for i, (name, c) in enumerate(curves.items()):
        col = colours[i % len(colours)]
        pts = []
        for j, (s, ms) in enumerate(c):
            if j:
                pts.append('%.1f,%.1f' % (X(s), Y(c[j - 1][1])))  # a step
            pts.append('%.1f,%.1f' % (X(s), Y(ms)))
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                   % (col, ' '.join(pts)))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (W - R - 120, T + 14 * (i + 1), col, name))
    out.append('</svg>')
    with open(a.out, 'w') as f:
        f.write('\n'.join(out) + '\n')


if __name__ == '__main__':
    main()
