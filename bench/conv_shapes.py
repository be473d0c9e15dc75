#!/usr/bin/env python3
"""The distinct convolutions of torchvision's ResNet-50 and MobileNetV2, as
case lines for tests/gpu/conv/run-on-gpu.sh (CONV_CASES=FILE).

    python3 bench/conv_shapes.py [--batch N] [--gen BUILD/tests/gpu/conv/tcc-conv-gen]
                                 [--models resnet50,mobilenet_v2] > cases.txt

Each Conv2d is recorded by a forward hook on a 224x224 input (batch N, f16
NHWC in the case). The epilogue is the one tcc builds after folding batch
norm: a bias, and ReLU where the network applies one right after the
conv's batch norm (ResNet's conv1/conv2 and stem, MobileNetV2's ReLU6
blocks; ReLU6's clamp costs the same). With --gen, each case asks for the
schedule the compiler would choose for sm_90a: the wgmma template's
heuristic where chooseWgmmaConvSchedule takes the shape, mma.sync's
otherwise (the generator says which; its code is the same for sm_90);
depthwise convs have their own template.
"""
import argparse
import subprocess
import sys
import tempfile

import torch
import torchvision


def followed_by_act(names, mods, i):
    """True when the module after the conv's batch norm is ReLU/ReLU6."""
    for j in (i + 1, i + 2):
        if j < len(mods) and isinstance(mods[j], torch.nn.BatchNorm2d):
            continue
        return j < len(mods) and isinstance(mods[j], (torch.nn.ReLU, torch.nn.ReLU6))
    return False


def shapes(model_name, batch):
    model = getattr(torchvision.models, model_name)(weights=None).eval()
    names, mods = zip(*model.named_modules())
    found, seen = [], set()

    def hook(name, i):
        def fn(m, args, out):
            n, c, h, w = args[0].shape
            # ResNet's Bottleneck calls its ReLU module by hand after bn1/bn2
            # (and after the residual add, which conv3 and downsample feed).
            relu = followed_by_act(names, mods, i)
            if model_name.startswith('resnet'):
                leaf = name.rsplit('.', 1)[-1]
                relu = leaf in ('conv1', 'conv2')
            key = (c, m.out_channels, h, w, m.kernel_size, m.stride, m.padding,
                   m.dilation, m.groups, relu)
            if key not in seen:
                seen.add(key)
                found.append((name, key))
        return fn

    for i, (name, m) in enumerate(zip(names, mods)):
        if isinstance(m, torch.nn.Conv2d):
            m.register_forward_hook(hook(name, i))
    with torch.no_grad():
        model(torch.zeros(1, 3, 224, 224))
    out = []
    for name, (c, o, h, w, k, s, p, d, g, relu) in found:
        tag = {'resnet50': 'r50', 'mobilenet_v2': 'mbv2'}.get(model_name, model_name)
        label = '%s_%s%dx%d_%d_%d_%d%s' % (tag, 'dw' if g > 1 else 'k', k[0], k[1], c, o, h,
                                          '_s%d' % s[0] if s[0] > 1 else '')
        flags = ('--n %d --h %d --w %d --c %d --o %d --kernel %d,%d --stride %d,%d '
                 '--pad %d,%d,%d,%d' % (batch, h, w, c, o, k[0], k[1], s[0], s[1],
                                        p[0], p[1], p[0], p[1]))
        if d != (1, 1):
            flags += ' --dilation %d,%d' % d
        if g > 1:
            flags += ' --groups %d' % g
        flags += ' --bias%s --type f16 --out-type f16' % (' --relu' if relu else '')
        out.append((label, name, flags))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--models', default='resnet50,mobilenet_v2')
    ap.add_argument('--gen', help='tcc-conv-gen, to pick wgmma or mma.sync as the compiler would')
    args = ap.parse_args()
    print('# distinct convolutions (bench/conv_shapes.py --batch %d), sm_90a' % args.batch)
    for m in args.models.split(','):
        for label, name, flags in shapes(m, args.batch):
            if args.batch != 1:
                label += '_b%d' % args.batch
            if args.gen and '--groups' not in flags:
                with tempfile.TemporaryDirectory() as d:
                    rc = subprocess.run([args.gen, '--name', 'x', '--out-dir', d] + flags.split()
                                        + ['--chip', 'sm_90a', '--wgmma', 'auto'],
                                        stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL).returncode
                if rc == 0:
                    flags += ' --chip sm_90a --wgmma auto'
            print('# %s %s\n%-26s both %s' % (m, name, label, flags))
    return 0


if __name__ == '__main__':
    sys.exit(main())
