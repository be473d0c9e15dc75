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

usage: export_models.py [--small] [--out DIR] [--seed N] [--opset N]
                        [--size HxW] [--batch N] [--dtype f32|f16]
                        [--f64-reference] [MODEL ...]
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


def export(name, out, seed, opset, shape, f64_reference, batch=1, dtype='f32'):
    model = build(name, seed)
    x = torch.randn((batch,) + tuple(shape), generator=torch.Generator().manual_seed(seed + 2))
    if dtype == 'f16':
        x = x.half().float()
        f64_reference = True
    with torch.no_grad():
        y = model(x)
    path = os.path.join(out, name + '.onnx')
    torch.onnx.export(model, (x,), path, opset_version=opset, do_constant_folding=True,
                      input_names=['input'], output_names=['output'])
    if dtype == 'f16':
        to_float16(path)
    np.save(os.path.join(out, name + '.input.npy'),
            x.half().numpy() if dtype == 'f16' else x.numpy())
    np.save(os.path.join(out, name + '.output.npy'), y.numpy())
    if f64_reference:
        with torch.no_grad():
            y64 = model.double()(x.double())
        np.save(os.path.join(out, name + '.output64.npy'), y64.numpy())
    return path


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
    args = ap.parse_args()
    names = args.models or list(MODELS)
    for n in names:
        if n not in MODELS:
            print('error: unknown model "%s" (one of: %s)' % (n, ' '.join(MODELS)))
            return 1
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
        path = export(n, args.out, args.seed, args.opset, shape, args.f64_reference,
                      args.batch, args.dtype)
        print('%s: %s, input %dx%s (%.1f s)' % (n, path, args.batch, 'x'.join(map(str, shape)),
                                                time.time() - t), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
