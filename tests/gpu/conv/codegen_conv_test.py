#!/usr/bin/env python3
"""Channels-last convolutions take the implicit-GEMM template, others do not.

    codegen_conv_test.py TCC [PTXAS]

Compiles small conv models with `tcc compile --conv-layout nhwc --emit asm`
for sm_90 and sm_80 and checks the PTX: a groups-1 f16 convolution (alone;
with a ReLU after it, which joins the template's epilogue; with a ReLU and
an add of its own result, which then reads the template's result from
scratch; with a skip connection's add and a ReLU, which join the epilogue:
no kernel of the rest) has a `<kernel>_conv_mma` entry with mma.sync and cp.async; a tf32 one (--allow-tf32) the m16n8k8 tf32 mma; a grouped one and
an f32 one without tf32 no template. A depthwise one (groups = C = O)
takes the depthwise template, `<kernel>_depthwise`, its ReLU fused (no
other conv2d kernel); with a channel multiplier (O = 2C) it keeps the
generic kernels. For sm_90a, a ResNet block at 2x64x96x96 takes the wgmma
template (`<kernel>_conv_wgmma`, the add and ReLU in its epilogue), one at
2x512x16x16 splits K (`<kernel>_conv_wgmma_splitk` sums the partials and
applies the epilogue), both with their operands copied by TMA (an im2col
map for the input; cp.async with --gpu-conv-tma=false), and the small one
keeps `_conv_mma`, as does the
large one given a "conv" schedule (a "matmul" one leaves it on wgmma). With PTXAS, the PTX must assemble
without spills. Exits 77 (skipped) when this tcc has no --conv-layout (the
layout pass, branch `layout`, is not merged yet).
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def model(dtype, groups=1, epilogue=None, o=32):
    """x -> conv (asymmetric pads, stride 2x1, bias) [-> relu [-> + conv]]."""
    c = 16
    nodes = [{"name": "conv", "op": "conv2d", "inputs": ["x", "w", "b"],
              "outputs": ["y"],
              "attrs": {"pads": [1, 0, 2, 1], "strides": [2, 1],
                        "groups": groups}}]
    outputs = ["y"]
    if epilogue:
        nodes.append({"op": "relu", "inputs": ["y"], "outputs": ["r"],
                      "attrs": {}})
        outputs = ["r"]
    if epilogue == "residual":
        nodes.append({"op": "add", "inputs": ["r", "y"], "outputs": ["z"],
                      "attrs": {}})
        outputs = ["z"]
    return {
        "format": "tcc-model", "version": 1, "name": "conv",
        "inputs": [{"name": "x", "dtype": dtype, "shape": [2, c, 19, 23]}],
        "params": [
            {"name": "w", "dtype": dtype, "shape": [o, c // groups, 3, 3],
             "init": {"random": "normal", "mean": 0.0, "std": 0.1,
                      "seed": 1}},
            {"name": "b", "dtype": dtype, "shape": [o],
             "init": {"fill": 0.5}}],
        "nodes": nodes, "outputs": outputs}


def model_skip(dtype, c=16, h=9, w=11):
    """x -> conv -> y; z = relu(conv(y) + y): a ResNet block's skip
    connection, y an argument of the second convolution's kernel."""
    conv = {"op": "conv2d", "attrs": {"pads": [1, 1, 1, 1]}}
    return {
        "format": "tcc-model", "version": 1, "name": "skip",
        "inputs": [{"name": "x", "dtype": dtype, "shape": [2, c, h, w]}],
        "params": [
            {"name": n, "dtype": dtype, "shape": [c, c, 3, 3],
             "init": {"random": "normal", "mean": 0.0, "std": 0.1,
                      "seed": i}} for i, n in enumerate(["w1", "w2"])],
        "nodes": [dict(conv, inputs=["x", "w1"], outputs=["y"]),
                  dict(conv, inputs=["y", "w2"], outputs=["u"]),
                  {"op": "add", "inputs": ["u", "y"], "outputs": ["s"],
                   "attrs": {}},
                  {"op": "relu", "inputs": ["s"], "outputs": ["z"],
                   "attrs": {}}],
        "outputs": ["z"]}


def compile_ptx(tcc, tmp, m, chip, extra):
    path = os.path.join(tmp, "m.json")
    with open(path, "w") as f:
        json.dump(m, f)
    out = os.path.join(tmp, "m.ptx")
    done = subprocess.run(
        [tcc, "compile", path, "--target", chip, "--conv-layout", "nhwc",
         "--emit", "asm", "-o", out] + extra, capture_output=True, text=True)
    if done.returncode != 0:
        return None, done.stderr.strip()
    with open(out) as f:
        return f.read(), ""


def main():
    tcc = sys.argv[1]
    ptxas = sys.argv[2] if len(sys.argv) > 2 else ""
    helps = subprocess.run([tcc, "compile", "--help"], capture_output=True,
                           text=True).stdout
    if "conv-layout" not in helps:
        print("skipped: tcc compile has no --conv-layout")
        return 77
    cases = [
        # name, model, flags, template expected, patterns
        ("f16", model("f16"), [], True,
         ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
          "cp.async.cg.shared.global"]),
        # The ReLU joins the template's epilogue.
        ("f16_relu", model("f16", epilogue="relu"), [], True,
         ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
          "max.NaN.f32"]),
        ("f16_residual", model("f16", epilogue="residual"), [], True,
         ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"]),
        ("bf16", model("bf16"), [], True,
         ["mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"]),
        ("tf32", model("f32"), ["--allow-tf32"], True,
         ["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"]),
        # The skip connection's add and the ReLU join the second
        # convolution's epilogue: no kernel of the rest (checked below).
        ("f16_skip", model_skip("f16"), [], True,
         ["max.NaN.f32"]),
        ("grouped", model("f16", groups=4), [], False, []),
        ("depthwise", model("f16", groups=16, epilogue="relu", o=16), [],
         "depthwise", ["fma.rn.f32", "max.NaN.f32"]),
        ("depthwise_tf32", model("f32", groups=16, o=16), ["--allow-tf32"],
         "depthwise", ["fma.rn.f32"]),
        ("depthwise_x2", model("f16", groups=16, o=32), [], False, []),
        ("f32", model("f32"), [], False, []),
    ]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, m, flags, want, patterns in cases:
            for chip in ("sm_90", "sm_80"):
                ptx, err = compile_ptx(tcc, tmp, m, chip, flags)
                problems = []
                if ptx is None:
                    problems.append("compile failed: " + err)
                else:
                    entries = re.findall(r"\.entry\s+(\w+)", ptx)
                    suffix = "_depthwise" if want == "depthwise" else "_conv_mma"
                    has = any(e.endswith(suffix) for e in entries)
                    if has != bool(want):
                        problems.append(
                            ("no " if want else "a ") + suffix + " entry: " +
                            " ".join(entries))
                    if want != "depthwise" and any(
                            e.endswith("_depthwise") for e in entries):
                        problems.append("a _depthwise entry")
                    problems += ["no " + p for p in patterns if p not in ptx]
                    rest = [e for e in entries
                            if "conv2d" in e and not e.endswith(suffix)]
                    if name in ("f16_skip", "depthwise") and rest:
                        problems.append("unfused: " + " ".join(rest))
                    if ptxas and not problems:
                        path = os.path.join(tmp, "m.ptx")
                        rep = subprocess.run(
                            [ptxas, "-arch=" + chip, "-v", path, "-o",
                             os.devnull], capture_output=True, text=True)
                        log = rep.stdout + rep.stderr
                        spills = re.findall(r"(\d+) bytes spill stores", log)
                        if rep.returncode != 0 or any(int(s) for s in spills):
                            problems.append("ptxas: " + log[-500:])
                status = "ok  " if not problems else "FAIL"
                print(f"{status} {name} {chip} {'; '.join(problems)}")
                failed += bool(problems)
        # sm_90a: convolutions whose tiles fill the GPU take the wgmma
        # template, the skip connection's add and ReLU in its epilogue; small
        # ones keep mma.sync (which can split K).
        # A "conv" schedule keeps mma.sync; a "matmul" one leaves them be.
        big = model_skip("f16", c=64, h=96, w=96)
        scheds = {}
        for key in ("conv", "matmul"):
            scheds[key] = os.path.join(tmp, key + ".json")
            with open(scheds[key], "w") as f:
                json.dump({key: {"stages": 3}}, f)
        for name, m, flags, want in (
                ("wgmma_skip", big, [], True),
                ("wgmma_splitk", model_skip("f16", c=512, h=16, w=16), [],
                 "split"),
                ("wgmma_small", model_skip("f16"), [], False),
                ("wgmma_conv_schedule", big, ["--schedule", scheds["conv"]],
                 False),
                ("wgmma_matmul_schedule", big,
                 ["--schedule", scheds["matmul"]], True),
                ("wgmma_cpasync", big, ["--gpu-conv-tma=false"], True)):
            ptx, err = compile_ptx(tcc, tmp, m, "sm_90a", flags)
            problems = []
            if ptx is None:
                problems.append("compile failed: " + err)
            else:
                entries = re.findall(r"\.entry\s+(\w+)", ptx)
                wg = [e for e in entries if e.endswith("_conv_wgmma")]
                mma = [e for e in entries if e.endswith("_conv_mma")]
                split = [e for e in entries if e.endswith("_wgmma_splitk")]
                if want and (len(wg) != 2 or mma):
                    problems.append("want two _conv_wgmma: " + " ".join(entries))
                if (len(split) == 2) != (want == "split"):
                    problems.append("split-K reductions: " + " ".join(split))
                if not want and (wg or not mma):
                    problems.append("want _conv_mma: " + " ".join(entries))
                rest = [e for e in entries
                        if "conv2d" in e and e not in wg + mma + split]
                if rest:
                    problems.append("unfused: " + " ".join(rest))
                if want:
                    problems += ["no " + p for p in
                                 ("wgmma.mma_async.sync.aligned.m64n64k16."
                                  "f32.f16.f16", "max.NaN.f32") if p not in ptx]
                    # 64 and 512 channels: the operands come by TMA (an
                    # im2col map for the input), unless turned off.
                    tma = "--gpu-conv-tma=false" not in flags
                    for p in ("cp.async.bulk.tensor.4d.shared::cluster.global."
                              "im2col", "cp.async.bulk.tensor.2d.shared::"
                              "cluster.global.tile"):
                        if (p in ptx) != tma:
                            problems.append(("no " if tma else "unwanted ") + p)
                if ptxas and not problems:
                    path = os.path.join(tmp, "m.ptx")
                    rep = subprocess.run(
                        [ptxas, "-arch=sm_90a", "-v", path, "-o", os.devnull],
                        capture_output=True, text=True)
                    log = rep.stdout + rep.stderr
                    spills = re.findall(r"(\d+) bytes spill stores", log)
                    # C7515: wgmmas serialized (accumulators moved between
                    # them), as a split's k-loop of unknown trip count got.
                    if (rep.returncode != 0 or any(int(s) for s in spills) or
                            "C7515" in log):
                        problems.append("ptxas: " + log[-500:])
            print(f"{'ok  ' if not problems else 'FAIL'} {name} sm_90a "
                  f"{'; '.join(problems)}")
            failed += bool(problems)
        # "conv" in --schedule sets the template's tiles (64 threads here);
        # an invalid one is a one-line error.
        total = len(cases) * 2 + 8
        for body, want_ok in (({"tile_m": 64, "tile_n": 32, "warps_m": 2,
                                "warps_n": 1, "stages": 2}, True),
                              ({"tile_m": 48}, False)):
            sched = os.path.join(tmp, "sched.json")
            with open(sched, "w") as f:
                json.dump({"conv": body}, f)
            ptx, err = compile_ptx(tcc, tmp, model("f16"), "sm_90",
                                   ["--schedule", sched])
            if want_ok:
                ok = ptx is not None and re.search(
                    r"_conv_mma\([^)]*\)\s*\.maxntid 64, 1, 1", ptx)
            else:
                ok = ptx is None and "conv schedule" in err and \
                    len(err.splitlines()) == 1
            print(f"{'ok  ' if ok else 'FAIL'} --schedule conv "
                  f"{json.dumps(body)} {'' if ok else err}")
            failed += not ok
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
