#!/usr/bin/env python3
"""A/B timing of attention kernels from a flash carry, interleaved.

  python3 ab_time.py CARRY NAME [NAME...] [--rounds R] [--burst N]

check_flash.py times each case once, right after its checks, so two
schedules of one form meet the GPU in different states (clocks, L2, heat):
the same kernel measured twice in one run differed by 9%. Here every named
kernel (bench or check cases of a carry written by tests/gpu/flash3
run-on-gpu.sh prepare or the like) and SDPA's cuDNN backend on each shape run
in rounds, in a new random order each round, each timed as a burst of N
back-to-back launches; the median over rounds is reported with the spread
(min-max), and each kernel's ratio to cuDNN is taken per round before the
median, so a slow round moves both.
"""
import os
import random
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_flash as cf  # noqa: E402


def burst_ms(fn, n):
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / n


def main():
    args = sys.argv[1:]
    rounds, burst = 7, 10
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    if "--burst" in args:
        i = args.index("--burst")
        burst = int(args[i + 1])
        del args[i:i + 2]
    carry, names = args[0], args[1:]
    import json
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the context the kernels load into
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    entries = []  # (label, fn, shape key, flops)
    peers = {}
    for name in names:
        info = json.load(open(os.path.join(carry, name + ".json")))
        kern = cf.Kernel(carry, info)
        dt = cf.DT[info["type"]]
        B, hq, hkv = info["batch"], info["hq"], info["hkv"]
        lq, lk, d = info["lq"], info["lk"], info["d"]

        def rnd(*shape):
            return (torch.rand(shape, device="cuda", generator=gen) * 2 -
                    1).to(dt)
        q, k, v = rnd(B, hq, lq, d), rnd(B, hkv, lk, d), rnd(B, hkv, lk, d)
        o = torch.empty((B, hq, lq, d), device="cuda", dtype=dt)
        flops = 4.0 * d * cf.kept_pairs(info) * B * hq
        key = (B, hq, hkv, lq, lk, d, info["type"], str(info["mask"]),
               info["alibi"], info["softcap"])
        entries.append((name, (lambda kern=kern, q=q, k=k, v=v, o=o:
                               kern(q, k, v, o)), key, flops))
        # cuDNN as the peer of the plain and causal forms only (others
        # would need a materialised mask or are not its forms).
        plain = not (info["alibi"] or info["softcap"] or info["window"])
        if key not in peers and plain:
            fn, _ = cf.run_sdpa(info, q, k, v,
                                cf.SDPBackend.CUDNN_ATTENTION)
            if fn is not None:
                peers[key] = fn
    for key, fn in peers.items():
        entries.append(("cudnn" + str(list(peers).index(key)), fn, key, None))
    for _, fn, _, _ in entries:
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    times = {e[0]: [] for e in entries}
    for _ in range(rounds):
        order = list(entries)
        random.shuffle(order)
        for label, fn, _, _ in order:
            times[label].append(burst_ms(fn, burst))
    peer_label = {key: "cudnn" + str(i) for i, key in enumerate(peers)}
    print(f"{'kernel':22s} {'ms':>8s} {'min-max':>15s} {'TFLOP/s':>8s} "
          f"{'/cudnn':>7s}")
    for label, _, key, flops in entries:
        t = times[label]
        med = statistics.median(t)
        line = f"{label:22s} {med:8.3f} {min(t):7.3f}-{max(t):7.3f}"
        if flops:
            line += f" {flops / med / 1e9:8.0f}"
            if key in peer_label:
                pt = times[peer_label[key]]
                ratio = statistics.median(p / x for p, x in zip(pt, t))
                line += f" {ratio:7.3f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
