#!/usr/bin/env python3
"""Convolutions store into the channel concat that reads them.

    concat_in_place_test.py TCC MODEL [PTXAS]

Compiles MODEL (tests/e2e/models/inception_f16.json: four branches, each
ending in a convolution, concatenated and read by a 1x1 convolution and a
max pool) for sm_90a and sm_80, with tcc-concat-in-place (the default) and
with --gpu-concat-in-place=false, and checks the manifests (`tcc inspect`):
on, no launch copies the concat, the four branch convolutions (mma.sync and,
for sm_90a, one on wgmma) write one buffer, which both readers read, and
there is one launch fewer than off, where a kernel of the concat runs. With
PTXAS the PTX must assemble. The results are checked against NumPy on a GPU
by tests/e2e/models.py (tests/gpu/run-on-gpu.sh records it for sm_90 and
sm_90a).
"""
import json
import os
import subprocess
import sys
import tempfile


def compile_model(tcc, model, chip, out, extra):
    done = subprocess.run([tcc, "compile", model, "--target", chip, "-o", out]
                          + extra, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("%s %s: %s" % (chip, extra, done.stderr.strip()))


def manifest(tcc, bundle):
    done = subprocess.run([tcc, "inspect", bundle], capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


def launches(m):
    """(kernel symbol, its ops, its buffer args) per launch."""
    out = []
    for l in m["launches"]:
        if "kernel" not in l:
            continue
        k = m["kernels"][l["kernel"]]
        out.append((k["symbol"], k["ops"], l["args"]))
    return out


def main():
    tcc, model = sys.argv[1], sys.argv[2]
    ptxas = sys.argv[3] if len(sys.argv) > 3 else ""
    failed = 0

    def check(what, ok, detail=""):
        nonlocal failed
        print("%s %s%s" % ("PASS" if ok else "FAIL", what,
                           (": " + detail) if detail and not ok else ""))
        failed += not ok

    with tempfile.TemporaryDirectory() as tmp:
        for chip in ("sm_90a", "sm_80"):
            on, off = (os.path.join(tmp, "%s-%s.tccb" % (chip, n))
                       for n in ("on", "off"))
            compile_model(tcc, model, chip, on, [])
            compile_model(tcc, model, chip, off, ["--gpu-concat-in-place=false"])
            lon, loff = launches(manifest(tcc, on)), launches(manifest(tcc, off))
            copies = [s for s, ops, _ in lon if "tcc.concat" in ops]
            check("%s: no launch copies the concat" % chip, not copies,
                  str(copies))
            check("%s: off, a kernel copies it" % chip,
                  any("tcc.concat" in ops for _, ops, _ in loff))
            check("%s: one launch fewer" % chip, len(lon) == len(loff) - 1,
                  "%d against %d" % (len(lon), len(loff)))
            convs = [(s, a) for s, ops, a in lon if "_conv_" in s]
            # The last convolution is the 1x1 over the concat: its input is
            # the concat's buffer, which the four branches' last
            # convolutions (and nothing else) write.
            cat = convs[-1][1][0]
            writers = [s for s, ops, a in lon if a[-1] == cat]
            check("%s: the four branch convolutions write the 1x1's input"
                  % chip, len(writers) == 4 and
                  all("_conv_" in s for s in writers), str(writers))
            pools = [a for s, ops, a in lon if "max_pool2d" in s and a[0] == cat]
            check("%s: the max pool reads it too" % chip, len(pools) == 1)
            if chip == "sm_90a":
                check("sm_90a: a branch runs on wgmma",
                      any("_conv_wgmma" in s for s in writers))
            if ptxas:
                ptx = os.path.join(tmp, chip + ".ptx")
                compile_model(tcc, model, chip, ptx, ["--emit", "asm"])
                done = subprocess.run(
                    [ptxas, "-arch=" + chip, ptx, "-o",
                     os.path.join(tmp, chip + ".cubin")],
                    capture_output=True, text=True)
                check("%s: ptxas" % chip, done.returncode == 0,
                      done.stderr.strip()[:300])
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
