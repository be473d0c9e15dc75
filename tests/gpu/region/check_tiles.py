#!/usr/bin/env python3
"""GPU-free check of the region template's tiling: the block algorithm of
compiler/gpu/RegionKernel.cpp emulated in float64 NumPy from the tiles that
tcc-region-gen reports, against the whole chain (check_region.py's
reference, torch on the CPU).

    check_tiles.py TCC_REGION_GEN

For every case of cases.txt small enough to emulate (and a few more made
for it), each block of the last member's output: the chain input's tile at
origin scale * (tile start) + offset, zeros outside the image; each member
computed over its whole tile from the previous tile at the tile-local
window positions (out * stride + tap * dilation), then zeroed where the
position lies outside the member's image (a max pool skipping taps outside
its input image, an average pool without the padding dividing by the image
taps); a member residual read from the source tile at the tiles' offset
difference, the chain input's from the image. The blocks' outputs must
tile the output exactly and match the reference to 1e-9: any halo, origin
or zero-ring error in the tiles shows.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_region import chain, operands  # noqa: E402

EXTRA = [
    # 1-pixel tiles, tiles larger than the image, a stride-2 chain.
    "x1 --input 1,6,5,8 --member conv:o=16,k=3,p=1,act=relu --member conv:o=8,k=3,s=2,p=1 --tile 1,1",
    "big --input 1,3,5,8 --member dw:k=3,p=2,bias --member maxpool:k=3,s=2,p=1 --tile 8,8",
]


def emulate(info, ops):
    x = ops["x"].double().numpy()
    n, h, w, c = x.shape
    mem = info["members"]
    tiles = info["tiles"]
    th, tw = info["tile"]
    oh, ow, oc = mem[-1]["out"]
    y = np.full((n, oh, ow, oc), np.nan)
    for img in range(n):
        for ty0 in range(0, oh, th):
            for tx0 in range(0, ow, tw):
                def origin(t):
                    return [tiles[t]["scale"][0] * ty0 + tiles[t]["offset"][0],
                            tiles[t]["scale"][1] * tx0 + tiles[t]["offset"][1]]
                sh, sw = tiles[0]["size"]
                o = origin(0)
                tile = np.zeros((sh, sw, c))
                for a in range(sh):
                    for b in range(sw):
                        Y, X = o[0] + a, o[1] + b
                        if 0 <= Y < h and 0 <= X < w:
                            tile[a, b] = x[img, Y, X]
                kept = {0: None}
                for i, m in enumerate(mem):
                    t = i + 1
                    osz = tiles[t]["size"]
                    oo, io = origin(t), origin(i)
                    ih, iw, ic = m["in"]
                    mh, mw, mc = m["out"]
                    (kh, kw), (s0, s1) = m["kernel"], m["stride"]
                    d0, d1 = m["dilation"]
                    out = np.zeros((osz[0], osz[1], mc))
                    for py in range(osz[0]):
                        for px in range(osz[1]):
                            Y, X = oo[0] + py, oo[1] + px
                            inside = 0 <= Y < mh and 0 <= X < mw
                            win, ok = [], []
                            for ky in range(kh):
                                for kx in range(kw):
                                    a, b = py * s0 + ky * d0, px * s1 + kx * d1
                                    assert a < tile.shape[0] and b < tile.shape[1], \
                                        "window outside the tile"
                                    win.append(tile[a, b])
                                    ok.append(0 <= io[0] + a < ih and
                                              0 <= io[1] + b < iw)
                            win = np.array(win)
                            if m["kind"] == "conv":
                                wt = ops[f"w{i}"].double().numpy().reshape(mc, -1)
                                v = wt @ win.reshape(-1)
                            elif m["kind"] == "dw":
                                wt = ops[f"w{i}"].double().numpy().reshape(mc, -1)
                                v = (wt.T * win).sum(0)
                            elif m["kind"] == "maxpool":
                                v = np.max(np.where(np.array(ok)[:, None], win,
                                                    -np.inf), 0)
                            elif m["count_include_pad"]:
                                v = win.sum(0) / (kh * kw)
                            else:
                                v = win.sum(0) / max(1, sum(ok))
                            if m["bias"]:
                                v = v + ops[f"b{i}"].double().numpy()
                            r = m["residual"]
                            if r == 0 and inside:
                                v = v + x[img, Y, X]
                            elif r > 0:
                                src = kept[r]
                                so = origin(r)
                                v = v + src[Y - so[0], X - so[1]]
                            if m["act"] == "relu":
                                v = np.maximum(v, 0)
                            elif m["act"] == "relu6":
                                v = np.clip(v, 0, 6)
                            out[py, px] = v if inside else 0
                    kept[t] = out
                    tile = out
                for py in range(th):
                    for px in range(tw):
                        Y, X = ty0 + py, tx0 + px
                        if Y < oh and X < ow:
                            assert np.isnan(y[img, Y, X]).all(), "tiles overlap"
                            y[img, Y, X] = tile[py, px]
    return y


def main():
    gen_bin = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    lines = []
    with open(os.path.join(here, "cases.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, _, flags = line.split(None, 2)
                lines.append(name + " " + flags)
    lines += EXTRA
    g = torch.Generator().manual_seed(1)
    failed = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for line in lines:
            name, *flags = line.split()
            done = subprocess.run([gen_bin, "--name", name, "--out-dir", tmp] +
                                  flags, capture_output=True, text=True)
            if done.returncode:
                print(f"FAIL {name}: {done.stderr.strip()}")
                failed += 1
                continue
            info = json.loads(done.stdout)
            n, oh, ow, oc = info["out"]
            th, tw = info["tile"]
            t0 = info["tiles"][0]["size"]
            work = (n * -(-oh // th) * -(-ow // tw) *
                    sum(t["size"][0] * t["size"][1] for t in info["tiles"]))
            if work > 60000:
                continue  # too slow to emulate in Python
            ops = operands(info, g, device="cpu")
            ops = {k: v.double() for k, v in ops.items()}
            ref = chain(info, ops).numpy()
            try:
                out = emulate(info, ops)
                err = np.abs(out - ref).max() / max(1e-30, np.abs(ref).max())
                ok = not np.isnan(out).any() and err < 1e-9
            except AssertionError as e:
                ok, err = False, str(e)
            checked += 1
            print(f"{'ok  ' if ok else 'FAIL'} {name} tile {th}x{tw} "
                  f"input tile {t0[0]}x{t0[1]}: max error {err}")
            failed += not ok
    print(f"{checked - failed} of {checked} emulated, {failed} failed")
    return 1 if failed or checked < 8 else 0


if __name__ == "__main__":
    sys.exit(main())
