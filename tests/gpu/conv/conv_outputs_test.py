#!/usr/bin/env python3
"""Where the convolution templates store: into a channel concat, and twice.

    conv_outputs_test.py TCC MODELS_DIR [PTXAS]

Compiles MODELS_DIR/inception_f16.json (tests/e2e/models: four branches, each
ending in a convolution, concatenated and read by a 1x1 convolution and a
max pool) for sm_90a and sm_80, with tcc-concat-in-place (the default) and
with --gpu-concat-in-place=false, and checks the manifests (`tcc inspect`):
on, no launch copies the concat, the four branch convolutions (mma.sync and,
for sm_90a, one on wgmma) write one buffer, which both readers read, and
there is one launch fewer than off, where a kernel of the concat runs. With
PTXAS the PTX must assemble. The results are checked against NumPy on a GPU
by tests/e2e/models.py (tests/gpu/run-on-gpu.sh records it for sm_90 and
sm_90a).

Then MODELS_DIR/conv_relu_both_f16.json, whose two convolutions' values are
read both before and after their ReLU (the second adds a residual first):
each is one template launch storing both (its two result buffers as its
last two arguments; the first on wgmma for sm_90a), and no other kernel
applies a ReLU.

Then MODELS_DIR/unet_stage_f16.json: the encoder's convolution stores its
result twice (the pool's input and the concat's channels), the
up-convolution stores its four phases interleaved into the concat's other
channels, and no launch copies the concat.
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


def assemble(tcc, ptxas, model, chip, stem, check, what):
    """Compiles `model` to PTX (stem.ptx) and assembles it for `chip`."""
    compile_model(tcc, model, chip, stem + ".ptx", ["--emit", "asm"])
    done = subprocess.run([ptxas, "-arch=" + chip, stem + ".ptx", "-o",
                           stem + ".cubin"], capture_output=True, text=True)
    check(what, done.returncode == 0, done.stderr.strip()[:300])


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
    tcc, models = sys.argv[1], sys.argv[2]
    model = os.path.join(models, "inception_f16.json")
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
                assemble(tcc, ptxas, model, chip, os.path.join(tmp, chip),
                         check, "%s: ptxas" % chip)
        both = os.path.join(models, "conv_relu_both_f16.json")
        for chip in ("sm_90a", "sm_80"):
            out = os.path.join(tmp, chip + "-both.tccb")
            compile_model(tcc, both, chip, out, [])
            m = manifest(tcc, out)
            ls = launches(m)
            convs = [(s, a) for s, ops, a in ls if "_conv_" in s]
            check("%s: three convolution launches" % chip, len(convs) == 3,
                  str(ls))
            # x, weight, bias -> C, raw; r, weight, residual y -> C, raw.
            check("%s: the first two store two results" % chip,
                  len(convs) == 3 and len(convs[0][1]) == 5 and
                  len(convs[1][1]) == 5 and convs[1][1][2] == convs[0][1][4],
                  str(convs))
            others = [s for s, ops, a in ls
                      if "_conv_" not in s and "tcc.relu" in ops]
            check("%s: no kernel applies a ReLU but the templates" % chip,
                  not others, str(others))
            if chip == "sm_90a":
                check("sm_90a: the first on wgmma",
                      bool(convs) and "_conv_wgmma" in convs[0][0])
        # A U-Net stage: enc's convolution stores twice (its buffer for the
        # pool, and channels 0-64 of the concat), the up-convolution stores
        # pixel-shuffled into channels 64-128; no launch copies.
        unet = os.path.join(models, "unet_stage_f16.json")
        for chip in ("sm_90a", "sm_80"):
            out = os.path.join(tmp, chip + "-unet.tccb")
            compile_model(tcc, unet, chip, out, [])
            ls = launches(manifest(tcc, out))
            convs = [(s, ops, a) for s, ops, a in ls
                     if "_conv_" in s and not s.endswith("_splitk")]
            check("%s: U-Net stage, no launch copies the concat" % chip,
                  not any("tcc.concat" in ops for _, ops, _ in ls), str(ls))
            check("%s: U-Net stage, four convolution launches" % chip,
                  len(convs) == 4, str(convs))
            if len(convs) != 4:
                continue
            enc, up, dec = convs[0][2], convs[2], convs[3][2]
            pool = [a for s, ops, a in ls if "max_pool2d" in s]
            # x, weight, bias -> the concat's buffer (C), its own (the copy).
            check("%s: enc stores the concat's buffer and its own" % chip,
                  len(enc) == 5 and enc[3] == dec[0] and bool(pool) and
                  pool[0][0] == enc[4], str((enc, dec, pool)))
            check("%s: the up-convolution interleaves into it" % chip,
                  "tcc.reshape" in up[1] and up[2][-1] == dec[0], str(up))
            if chip == "sm_90a":
                check("sm_90a: enc and the up-convolution on wgmma",
                      "_conv_wgmma" in convs[0][0] and "_conv_wgmma" in up[0])
            if ptxas:
                assemble(tcc, ptxas, unet, chip, os.path.join(tmp, chip + "-unet"),
                         check, "%s: U-Net stage, ptxas" % chip)
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
