#!/usr/bin/env python3
"""Exports the OptiFX evaluation CNNs to ONNX with seeded random weights.

For each model: builds it in PyTorch (torchvision's definition with
weights=None, or U-Net from unet.py or NASNet-A Large from nasnet.py here),
draws its weights and BatchNorm statistics from a seeded generator, puts it
in eval mode and writes

  OUT/NAME.onnx          the model (constant folding on)
  OUT/NAME.input.npy     the input it was run on (f32)
  OUT/NAME.output.npy    PyTorch's f32 output: the reference
  OUT/NAME.output64.npy  the same model run in float64 (--f64-reference), to
                         measure how far an f32 result may fairly stray

Everything comes from Debian's python3-torch, python3-torchvision and
python3-onnx: nothing is downloaded. Sizes default to the evaluation's full
ones (224x224; U-Net 256x256; NASNet-A Large 331x331); --small gives
reduced inputs for CI.

With --dtype f16 the exported graph is converted to float16 (initializers,
constants, input and output, casts): the GPU's tensor-core form. Its input
is the f32 one rounded to f16 (NAME.input.npy holds the f16 values), and
the reference is the model in float64 on that input (NAME.output64.npy is
then always written; NAME.output.npy is PyTorch's f32 output).

With --recipe-weights every weight and BatchNorm statistic is drawn from
tcc's random recipe (docs/model-format.md) instead, BatchNorm is exported
as nodes (not folded into the convolutions' weights), and each initializer
whose bytes are a recipe's says so in its doc_string, `tcc.recipe: {...}`
(docs/onnx.md): tcc compile --param-recipes=keep then stores the recipes,
not the bytes. The line per model says how many bytes carry a hint.

usage: export_models.py [--small] [--out DIR] [--seed N] [--opset N]
                        [--size HxW] [--batch N] [--dtype f32|f16]
                        [--f64-reference] [--recipe-weights] [MODEL ...]
MODEL: googlenet resnet50 densenet121 mobilenet_v2 squeezenet1_1 unet
       nasnet_large
(default: all of them). Exits 77 when torch or torchvision is missing.
"""
import argparse
import os
import sys
import time

try:
    import numpy as np
    import torch
    import torchvision
except ImportError as e:
    print('SKIP: %s (apt-get install python3-torch python3-torchvision)' % e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nasnet  # noqa: E402
import unet  # noqa: E402

# name: (constructor, full input [C, H, W], small input [C, H, W]).
# The small sizes keep every stage of the model at 2x2 or more before its
# global pool (U-Net: 2x2 at the bottom), so that CI runs the whole graph
# quickly.
MODELS = {
    'googlenet': (lambda: torchvision.models.googlenet(weights=None, aux_logits=False,
                                                       init_weights=True),
                  (3, 224, 224), (3, 64, 64)),
    'resnet50': (lambda: torchvision.models.resnet50(weights=None), (3, 224, 224), (3, 64, 64)),
    'densenet121': (lambda: torchvision.models.densenet121(weights=None),
                    (3, 224, 224), (3, 64, 64)),
    'mobilenet_v2': (lambda: torchvision.models.mobilenet_v2(weights=None),
                     (3, 224, 224), (3, 64, 64)),
    'squeezenet1_1': (lambda: torchvision.models.squeezenet1_1(weights=None),
                      (3, 224, 224), (3, 64, 64)),
    'unet': (lambda: unet.UNet(in_channels=3, classes=2), (3, 256, 256), (3, 32, 32)),
    # 35x35: the smallest input whose last stage is still 2x2 (17, 9, 5, 3,
    # 2 after the stem convolution and each Reduction cell).
    'nasnet_large': (lambda: nasnet.NASNetALarge(), (3, 331, 331), (3, 35, 35)),
}


def randomize_batch_norm(model, gen):
    """Fresh BatchNorm layers are identities in eval mode (mean 0, var 1,
    weight 1, bias 0), which would let an importer that ignores them pass.
    Draw statistics and affine parameters near those values instead."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(n, generator=gen) + 0.5)
                    m.bias.copy_(torch.randn(n, generator=gen) * 0.1)


# --- Weights drawn from tcc's random recipe (--recipe-weights) ---
#
# docs/model-format.md, "The random recipe": one SplitMix64 generator per
# param, seeded with `seed`; draw k (from 1) has state seed + k * GOLDEN, so
# that any draw is computed directly, which vectorises. uniform: top 53 bits
# times 2^-53; normal: two draws per element, Box-Muller's cosine branch; the
# value is computed in f64 and rounded to the param's dtype (to nearest,
# ties to even, as NumPy's astype does).

GOLDEN = 0x9E3779B97F4A7C15
CHUNK = 1 << 21  # elements per step: bounds the temporaries (~100 MB)


def _uniforms(seed, first, count):
    """Draws first+1 .. first+count of the generator seeded with `seed`, as
    uniforms in [0, 1)."""
    z = np.arange(first + 1, first + count + 1, dtype=np.uint64)
    # In place: arithmetic mod 2^64, as SplitMix64's.
    z *= np.uint64(GOLDEN)
    z += np.uint64(seed)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    z >>= np.uint64(11)
    u = z.astype(np.float64)
    u *= 2.0 ** -53
    return u


def _normal_scalar(u1, u2, mean, std):
    """One normal exactly as runtime/src/Random.h computes it, with the C
    library's log and cos (Python's math module calls the same ones)."""
    import math
    return mean + std * math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)


def recipe_values(recipe, n, dtype):
    """The first `n` elements of `recipe` (a model-format `random` or `fill`
    initialiser) rounded to `dtype` (np.float32 or np.float16), as tcc
    computes them (runtime/src/ParamRecipe.cpp)."""
    dtype = np.dtype(dtype)
    if 'fill' in recipe:
        return np.full(n, recipe['fill'], dtype=np.float64).astype(dtype)
    seed = recipe.get('seed', 0)
    out = np.empty(n, dtype=dtype)
    for lo in range(0, n, CHUNK):
        m = min(CHUNK, n - lo)
        if recipe['random'] == 'uniform':
            a, b = recipe.get('low', 0.0), recipe.get('high', 1.0)
            out[lo:lo + m] = (a + (b - a) * _uniforms(seed, lo, m)).astype(dtype)
            continue
        mean, std = recipe.get('mean', 0.0), recipe.get('std', 1.0)
        u = _uniforms(seed, 2 * lo, 2 * m)
        u1, u2 = 1.0 - u[0::2], u[1::2]
        t = np.log(u1)
        t *= -2.0
        np.sqrt(t, out=t)
        t *= std
        t *= np.cos(6.283185307179586 * u2)
        v = mean + t
        r = v.astype(dtype)
        # NumPy's vectorised log and cos may differ from the C library's by
        # a few ulps, which changes the rounded value only where v lies that
        # close to a rounding boundary of the dtype: t moved by 2^-45 of
        # itself either way rounds differently there (rounding is
        # monotonic). Those few (about one in 10^6 for f32) are redone with
        # the C library's functions.
        eps = 2.0 ** -45
        near = (mean + t * (1 - eps)).astype(dtype) != (mean + t * (1 + eps)).astype(dtype)
        for i in np.flatnonzero(near):
            r[i] = np.float64(_normal_scalar(float(u1[i]), float(u2[i]), mean, std)).astype(dtype)
        out[lo:lo + m] = r
    return out


def weight_recipes(model, seed):
    """(state_dict name, recipe) for every float weight and BatchNorm
    statistic. Weights keep the scale of the architecture's own
    initialisation (a normal with the standard deviation of the freshly
    built tensor: He, fan-in or fan-out, as the model chose), which keeps
    activations in range through hundreds of layers; constant ones (zero
    biases) stay fills. BatchNorm draws as randomize_batch_norm does: scale
    and running variance uniform in [0.5, 1.5], shift and running mean
    normal with std 0.1. Seeds differ per tensor."""
    modules = dict(model.named_modules())
    out = []
    for i, (name, t) in enumerate(model.state_dict().items()):
        if not t.is_floating_point():
            continue  # num_batches_tracked: not exported
        owner, _, attr = name.rpartition('.')
        s = (seed + 1) * 1000003 + i
        if isinstance(modules.get(owner), torch.nn.modules.batchnorm._BatchNorm):
            r = ({'random': 'uniform', 'low': 0.5, 'high': 1.5, 'seed': s}
                 if attr in ('weight', 'running_var') else
                 {'random': 'normal', 'mean': 0.0, 'std': 0.1, 'seed': s})
        else:
            t64 = t.double().flatten()
            std = float(t64.std()) if t64.numel() > 1 else 0.0
            r = ({'random': 'normal', 'mean': 0.0, 'std': std, 'seed': s} if std > 0
                 else {'fill': float(t64[0]) if t64.numel() else 0.0})
        out.append((name, r))
    return out


def load_recipe_weights(model, seed, dtype, recipes=None):
    """Replaces every weight of `model` by its recipe's values in `dtype`
    (f16 values are exact in the f32 model, so that the export's f16
    conversion keeps them); returns {(dtype, bytes digest): recipe} to find
    the initializers the export left untouched. `recipes` (weight_recipes'
    list) replaces the ones drawn from the model's own initialisation, which
    depends on PyTorch's version."""
    import hashlib
    npdt = np.float16 if dtype == 'f16' else np.float32
    state = model.state_dict()
    found = {}
    for name, r in recipes if recipes is not None else weight_recipes(model, seed):
        t = state[name]
        v = recipe_values(r, t.numel(), npdt)
        found[(v.dtype.str, hashlib.sha1(v.tobytes()).hexdigest())] = r
        with torch.no_grad():
            t.copy_(torch.from_numpy(v.astype(np.float32).reshape(tuple(t.shape))))
    return found


def add_recipe_hints(path, found):
    """Writes `tcc.recipe: {...}` into the doc_string of every initializer
    whose bytes are a recipe's (docs/onnx.md); the others (tensors the
    export computed: folded constants, shapes) stay plain. Returns
    (hinted bytes, embedded bytes)."""
    import hashlib
    import json
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    hinted = plain = 0
    for t in m.graph.initializer:
        a = numpy_helper.to_array(t)
        r = found.get((a.dtype.str, hashlib.sha1(a.tobytes()).hexdigest()))
        if r is not None and a.size:
            t.doc_string = 'tcc.recipe: ' + json.dumps(r)
            hinted += a.nbytes
        else:
            plain += a.nbytes
    onnx.save(m, path)
    return hinted, plain


def build(name, seed):
    torch.manual_seed(seed)
    model = MODELS[name][0]()
    randomize_batch_norm(model, torch.Generator().manual_seed(seed + 1))
    return model.eval()


def to_float16(path):
    """Rewrites the ONNX model at `path` to compute in float16: every float
    initializer, Constant, graph input and output, and Cast to float."""
    import onnx
    from onnx import numpy_helper
    TP = onnx.TensorProto
    m = onnx.load(path)
    g = m.graph

    def half(t):
        if t.data_type == TP.FLOAT:
            a = numpy_helper.to_array(t).astype(np.float16)
            t.CopyFrom(numpy_helper.from_array(a, t.name))
    for t in g.initializer:
        half(t)
    for n in g.node:
        for a in n.attribute:
            if n.op_type == 'Constant' and a.type == onnx.AttributeProto.TENSOR:
                half(a.t)
            if n.op_type == 'Cast' and a.name == 'to' and a.i == TP.FLOAT:
                a.i = TP.FLOAT16
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TP.FLOAT:
            v.type.tensor_type.elem_type = TP.FLOAT16
    del g.value_info[:]
    onnx.save(m, path)


def export(name, out, seed, opset, shape, f64_reference, batch=1, dtype='f32',
           recipe_weights=False, reference=True, dynamic_batch=False):
    """Writes the files above; returns the model's path and, with
    `recipe_weights`, the (hinted, embedded) initializer bytes. Without
    `reference` only the model is written (and, with `recipe_weights`,
    NAME.recipes.json: each weight's recipe by state_dict name, from which
    a machine with PyTorch rebuilds the same weights and computes the
    reference itself). With `dynamic_batch` the model is traced at batch 1
    and exported with a symbolic batch (fix it with tcc compile
    --input-shape): tracing NASNet-A Large at batch 32 takes more than 23 GB."""
    model = build(name, seed)
    if recipe_weights and not reference:
        import json
        with open(os.path.join(out, name + '.recipes.json'), 'w') as f:
            json.dump(weight_recipes(model, seed), f)
    found = load_recipe_weights(model, seed, dtype) if recipe_weights else None
    x = torch.randn((1 if dynamic_batch else batch,) + tuple(shape),
                    generator=torch.Generator().manual_seed(seed + 2))
    if dtype == 'f16':
        x = x.half().float()
        f64_reference = True
    y = None
    if reference:
        with torch.no_grad():
            y = model(x)
    path = os.path.join(out, name + '.onnx')
    # TrainingMode.EVAL folds each BatchNorm into the convolution before it,
    # which changes the convolution's weights: recipe weights export with
    # PRESERVE (the model is in eval mode, so BatchNormalization nodes in
    # inference form), and tcc folds them itself.
    training = torch.onnx.TrainingMode.PRESERVE if recipe_weights else torch.onnx.TrainingMode.EVAL
    import warnings
    with warnings.catch_warnings():
        # The advice against constant folding in PRESERVE mode is for models
        # in training mode.
        warnings.filterwarnings('ignore', message='It is recommended that constant folding')
        torch.onnx.export(model, (x,), path, opset_version=opset, do_constant_folding=True,
                          training=training, input_names=['input'], output_names=['output'],
                          dynamic_axes=({'input': {0: 'batch'}, 'output': {0: 'batch'}}
                                        if dynamic_batch else None))
    if dtype == 'f16':
        to_float16(path)
    sizes = add_recipe_hints(path, found) if recipe_weights else None
    if not reference:
        return path, sizes
    np.save(os.path.join(out, name + '.input.npy'),
            x.half().numpy() if dtype == 'f16' else x.numpy())
    np.save(os.path.join(out, name + '.output.npy'), y.numpy())
    if f64_reference:
        with torch.no_grad():
            y64 = model.double()(x.double())
        np.save(os.path.join(out, name + '.output64.npy'), y64.numpy())
    return path, sizes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('models', nargs='*', metavar='MODEL')
    ap.add_argument('--out', default='.', help='output folder (default: .)')
    ap.add_argument('--small', action='store_true', help='reduced input sizes (CI)')
    ap.add_argument('--size', help='HxW input size, overriding the default')
    ap.add_argument('--seed', type=int, default=0)
    # torch 1.13 exports opsets 7-17; tcc reads 13-18.
    ap.add_argument('--opset', type=int, default=17)
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--dtype', choices=['f32', 'f16'], default='f32')
    ap.add_argument('--f64-reference', action='store_true',
                    help='also write NAME.output64.npy, the model run in float64')
    ap.add_argument('--dynamic-batch', action='store_true',
                    help='trace at batch 1 and export the batch as a symbolic dimension '
                         '(tcc compile --input-shape fixes it); with --no-reference')
    ap.add_argument('--no-reference', action='store_true',
                    help='write the model only (with --recipe-weights also NAME.recipes.json), '
                         'not its input and outputs')
    ap.add_argument('--recipe-weights', action='store_true',
                    help="draw the weights from tcc's random recipe and say so in "
                         "each initializer's doc_string (tcc compile "
                         "--param-recipes=keep then keeps the recipe, not the bytes)")
    args = ap.parse_args()
    names = args.models or list(MODELS)
    for n in names:
        if n not in MODELS:
            print('error: unknown model "%s" (one of: %s)' % (n, ' '.join(MODELS)))
            return 1
    if args.dynamic_batch and not args.no_reference:
        ap.error('--dynamic-batch needs --no-reference (the reference is at batch 1)')
    os.makedirs(args.out, exist_ok=True)
    if args.small:
        # One thread: the models are small at CI sizes, and OpenMP workers
        # spin-waiting on a loaded 2-core machine cost more than they give
        # (40 s of CPU instead of 9 for the six models).
        torch.set_num_threads(1)
    for n in names:
        shape = MODELS[n][2 if args.small else 1]
        if args.size:
            h, w = (int(v) for v in args.size.lower().split('x'))
            shape = (shape[0], h, w)
        t = time.time()
        path, sizes = export(n, args.out, args.seed, args.opset, shape, args.f64_reference,
                             args.batch, args.dtype, args.recipe_weights,
                             not args.no_reference, args.dynamic_batch)
        extra = ''
        if sizes:
            extra = ', recipe hints on %.1f MB of weights, %d bytes without' % (
                sizes[0] / 1e6, sizes[1])
        print('%s: %s, input %dx%s%s (%.1f s)' % (n, path, args.batch, 'x'.join(map(str, shape)),
                                                  extra, time.time() - t), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
