#!/usr/bin/env python3
"""`tcc run`, `tcc bench` and `tcc inspect` on CUDA bundles, checked with NumPy.

    gpu_cli_test.py TCC TCC_GPU_BUNDLES KERNELS.ptx full|runtime-only

TCC_GPU_BUNDLES (GpuBundles.cpp) writes the bundles over the PTX that
make_ptx.py made from kernels.mlir. The runtime-only tcc takes the device from
the bundle; the full driver is given --target sm_90. Exits with 77 (ctest's SKIP_RETURN_CODE)
when tcc reports that no CUDA device is available, 1 on the first failure.
Inputs are fresh random values; TCC_GPU_TEST_SEED repeats a run.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

SKIP = 77


def fail(message):
    print("FAILED: " + message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def tcc(binary, *args):
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def main():
    binary, generator, ptx, mode = sys.argv[1:5]
    # The device: the bundle's own (runtime-only tcc), or named.
    on_gpu = [] if mode == "runtime-only" else ["--target", "sm_90"]
    seed = int(os.environ.get("TCC_GPU_TEST_SEED",
                              int.from_bytes(os.urandom(4), "little")))
    print(f"random inputs from seed {seed} (TCC_GPU_TEST_SEED repeats it)")
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as d:
        have_ptx = os.path.isfile(ptx)
        if not have_ptx:
            # Bundles to learn whether there is a GPU at all.
            ptx = os.path.join(d, "none.ptx")
            with open(ptx, "w") as f:
                f.write("// no PTX\n")
        subprocess.run([generator, ptx, d], check=True)
        path = lambda name: os.path.join(d, name)

        # Seeded random inputs; the device is the bundle's (sm_90).
        rc, out, err = tcc(binary, "run", path("gather.tccb"), *on_gpu,
                           "--output-dir", path("probe"))
        if rc != 0 and "CUDA devices are not available" in err:
            print("SKIPPED: " + err.strip())
            sys.exit(SKIP)
        check(have_ptx, f"no PTX at {sys.argv[3]}: make it with make_ptx.py")
        check(rc == 0, f"tcc run gather.tccb: {err}")
        check(out.startswith("out: f32 (777,)"), out)
        check("not given; using random values" in err, err)

        # The chain model from .npy inputs, with and without a CUDA graph.
        a = rng.uniform(-1, 1, 4099).astype(np.float32)
        b = rng.uniform(-1, 1, 4099).astype(np.float32)
        m = rng.uniform(-100, 100, (3, 67, 131)).astype(np.float32)
        x = rng.uniform(-1, 1, 8192).astype(np.float32)
        np.save(path("a.npy"), a.astype(np.float64))  # converted by tcc run
        np.save(path("b.npy"), b)
        np.save(path("m.npy"), m)
        np.save(path("x.npy"), x)
        w = np.load(path("w.npy"))
        inputs = [f"--input={n}={path(n + '.npy')}" for n in "abmx"]
        results = []
        for extra in ([], ["--cuda-graph"]):
            outdir = path("out" + "".join(extra))
            rc, out, err = tcc(binary, "run", path("chain.tccb"), *inputs,
                               *on_gpu, "--output-dir", outdir, *extra)
            check(rc == 0, f"tcc run chain.tccb {extra}: {err}")
            check("note: converting a from f64 to f32" in err, err)
            for name in ("y", "z", "mt", "s"):
                check(f"\n{name}: f32" in "\n" + out, out)
            got = {n: np.load(os.path.join(outdir, n + ".npy"))
                   for n in ("y", "z", "mt", "s")}
            # One f32 rounding per operation, as NumPy's f32 arithmetic.
            check(np.array_equal(got["z"], a + b), f"z differs {extra}")
            check(np.array_equal(got["y"], (a + b) * w), f"y differs {extra}")
            check(np.array_equal(got["mt"], m.transpose(0, 2, 1)),
                  f"mt differs {extra}")
            # An f32 tree sum of 256 terms is within 8 * 2^-24 * sum|x|.
            blocks = x.reshape(32, 256).astype(np.float64)
            err_sum = np.abs(got["s"] - blocks.sum(axis=1))
            check(np.all(err_sum <= 1e-6 * np.abs(blocks).sum(axis=1)),
                  f"s differs {extra}: {err_sum.max()}")
            results.append(got)
        for n in results[0]:
            check(np.array_equal(results[0][n], results[1][n]),
                  f"{n}: graph and plain runs differ")

        # A run-time check that fires: the model's message, exit status 1.
        data = rng.uniform(-1, 1, 1000).astype(np.float32)
        idx = rng.integers(0, 1000, 777).astype(np.int32)
        idx[5] = 1000
        np.save(path("data.npy"), data)
        np.save(path("idx.npy"), idx)
        rc, out, err = tcc(binary, "run", path("gather.tccb"), *on_gpu,
                           "--input", "data=" + path("data.npy"),
                           "--input", "idx=" + path("idx.npy"),
                           "--output-dir", path("bad"))
        check(rc == 1 and err == "tcc: error: index out of range in "
              "/nodes/1 (gather)\n", f"bad index: {rc} {err}")

        # bench: device events, with and without a graph.
        medians = {}
        for extra in ([], ["--cuda-graph"]):
            report = path("bench.json")
            rc, out, err = tcc(binary, "bench", path("chain.tccb"), *on_gpu,
                               "--warmup", "3", "--iters", "50",
                               "--json", report, *extra)
            check(rc == 0, f"tcc bench {extra}: {err}")
            with open(report) as f:
                fig = json.load(f)
            check(fig["target"] == "sm_90" and fig["timer"] == "device events"
                  and fig["cuda_graph"] == bool(extra) and fig["iters"] == 50,
                  str(fig))
            check(0 < fig["min_ms"] <= fig["p10_ms"] <= fig["median_ms"]
                  <= fig["p90_ms"] <= fig["max_ms"], str(fig))
            check(out.startswith("gpu_chain on sm_90: 50 runs after 3 warm-up "
                                 "(device events"), out)
            medians["graph" if extra else "plain"] = fig["median_ms"]
        print("bench medians (ms): " + ", ".join(
            f"{k} {v:.4f}" for k, v in medians.items()))

        # Errors: PTX the JIT refuses, a bundle for another device.
        rc, out, err = tcc(binary, "run", path("badptx.tccb"), *on_gpu,
                           "--output-dir", path("x"))
        check(rc == 1 and err.count("\n") == 1 and
              "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX" in err, err)
        rc, out, err = tcc(binary, "run", path("chain.tccb"),
                           "--target", "host", "--output-dir", path("x"))
        check(rc == 1 and "bundle was compiled for sm_90 but this context "
              "runs host" in err, err)

        # inspect shows the launch geometry.
        rc, out, err = tcc(binary, "inspect", path("chain.tccb"))
        check(rc == 0, err)
        manifest = json.loads(out)
        check(manifest["launches"][3]["grid"] == [5, 9, 3] and
              manifest["launches"][3]["block"] == [32, 8, 1], out)
    print("gpu_cli_test: all checks passed")


if __name__ == "__main__":
    main()
