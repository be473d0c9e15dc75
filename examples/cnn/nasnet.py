"""NASNet-A Large, written from its paper.

Zoph, Vasudevan, Shlens, Le: "Learning Transferable Architectures for
Scalable Image Recognition" (CVPR 2018). The architecture search found two
cells, a Normal cell (keeps the resolution) and a Reduction cell (halves
it), each made of five blocks; a block applies one operation to each of two
hidden states and adds the results (Figure 4 and Appendix A). The ImageNet
network stacks them (Figure 2): a 3x3 stem convolution, two Reduction cells
as the stem, then N Normal cells, a Reduction cell, N Normal cells, a
Reduction cell, N Normal cells, and a classifier. The large model is
"NASNet-A (6 @ 4032)": N = 6, 4032 filters in the penultimate layer (a
Normal cell concatenates six states of F filters: 6 x 672), a stem of 96
filters, 331x331 input; about 88.9 M parameters.

Conventions (Appendix A.1 and the released models): a separable
convolution is applied twice, each time ReLU, depthwise KxK, pointwise 1x1,
BatchNorm; only the first application strides. Operations on a cell's
inputs stride in a Reduction cell; operations on a block's output never do.
Convolutions have no bias (a BatchNorm follows each). Average pooling does
not count padding. The padding is symmetric here (K // 2), which gives the
same shapes as TensorFlow's 'SAME' at every resolution of this network.

Inference only: the auxiliary classifier and drop-path of training are
left out (neither changes the inference graph).

usage: NASNetALarge()(x) with x of shape [N, 3, 331, 331] -> [N, 1000].
"""
import torch
from torch import nn
import torch.nn.functional as F

BN_EPS = 1e-3


def conv_bn(cin, cout):
    """ReLU, 1x1 convolution, BatchNorm: fits a state to F filters."""
    return nn.Sequential(nn.ReLU(), nn.Conv2d(cin, cout, 1, bias=False),
                         nn.BatchNorm2d(cout, eps=BN_EPS))


class SepConv(nn.Module):
    """'sep KxK' of Figure 4: twice (ReLU, depthwise KxK, pointwise 1x1,
    BatchNorm); the first depthwise convolution carries the stride and the
    first pointwise one maps cin to cout filters."""

    def __init__(self, cin, cout, k, stride):
        super().__init__()
        layers = []
        for i in range(2):
            c = cin if i == 0 else cout
            layers += [nn.ReLU(),
                       nn.Conv2d(c, c, k, stride if i == 0 else 1, k // 2, groups=c, bias=False),
                       nn.Conv2d(c, cout, 1, bias=False),
                       nn.BatchNorm2d(cout, eps=BN_EPS)]
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


def avg3(stride):
    return nn.AvgPool2d(3, stride, 1, count_include_pad=False)


def max3(stride):
    return nn.MaxPool2d(3, stride, 1)


class FactorizedReduction(nn.Module):
    """Halves a state's resolution and sets its filters to cout (Appendix
    A.1): ReLU, then two strided 1x1 convolutions of cout / 2 filters each,
    one on the input and one on the input shifted by one pixel right and
    down, so that together they see every pixel; concatenated, BatchNorm."""

    def __init__(self, cin, cout):
        super().__init__()
        self.path1 = nn.Conv2d(cin, cout // 2, 1, 2, bias=False)
        # The shifted path samples odd rows and columns, and a zero past
        # the end when a side is odd. Written as a zero padding of 1 on
        # each side whose first output row and column are dropped: the same
        # values, without F.pad (which PyTorch exports as a computed Pad).
        self.path2 = nn.Conv2d(cin, cout - cout // 2, 1, 2, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=BN_EPS)

    def forward(self, x):
        x = F.relu(x)
        shifted = self.path2(x)[:, :, 1:, 1:]
        return self.bn(torch.cat([self.path1(x), shifted], 1))


class Cell(nn.Module):
    """What both cells share: their two inputs, h_i (the previous cell's
    output, `cur`) and h_{i-1} (the one before, `prev`), are first fitted to
    F filters at the cell's input resolution. `cur` always gets ReLU, 1x1
    conv, BN; `prev` gets a factorized reduction if its resolution is
    higher (it comes from before a Reduction cell), a ReLU, 1x1 conv, BN if
    only its filters differ, and is used as is otherwise. The first stem
    cell has no h_{i-1} and uses the stem convolution's output for both,
    unfitted for `prev` (its operations take cin filters then)."""

    def __init__(self, cur_shape, prev_shape, f):
        super().__init__()
        self.cur = conv_bn(cur_shape[0], f)
        if prev_shape is None:
            self.prev = nn.Identity()
            self.prev_c = cur_shape[0]
        else:
            if prev_shape[1] != cur_shape[1]:
                self.prev = FactorizedReduction(prev_shape[0], f)
            elif prev_shape[0] != f:
                self.prev = conv_bn(prev_shape[0], f)
            else:
                self.prev = nn.Identity()
            self.prev_c = f

    def inputs(self, cur, prev):
        return self.cur(cur), self.prev(cur if prev is None else prev)


class NormalCell(Cell):
    """NASNet-A Normal cell (Figure 4, left). With h = h_i, p = h_{i-1}:
      b0 = sep5x5(h) + sep3x3(p)      b1 = sep5x5(p) + sep3x3(p)
      b2 = avg3x3(h) + p              b3 = avg3x3(p) + avg3x3(p)
      b4 = sep3x3(h) + h
    Output: the states no block consumed, p and b0..b4, concatenated: 6F."""

    def __init__(self, cur_shape, prev_shape, f):
        super().__init__(cur_shape, prev_shape, f)
        pc = self.prev_c
        self.b0_h, self.b0_p = SepConv(f, f, 5, 1), SepConv(pc, f, 3, 1)
        self.b1_a, self.b1_b = SepConv(pc, f, 5, 1), SepConv(pc, f, 3, 1)
        self.b2_h = avg3(1)
        self.b3_a, self.b3_b = avg3(1), avg3(1)
        self.b4_h = SepConv(f, f, 3, 1)
        self.out_c = 6 * f

    def forward(self, cur, prev):
        h, p = self.inputs(cur, prev)
        b0 = self.b0_h(h) + self.b0_p(p)
        b1 = self.b1_a(p) + self.b1_b(p)
        b2 = self.b2_h(h) + p
        b3 = self.b3_a(p) + self.b3_b(p)
        b4 = self.b4_h(h) + h
        return torch.cat([p, b0, b1, b2, b3, b4], 1)


class ReductionCell(Cell):
    """NASNet-A Reduction cell (Figure 4, right). Operations on h = h_i and
    p = h_{i-1} have stride 2, those on block outputs stride 1:
      b0 = sep5x5(h) + sep7x7(p)      b1 = max3x3(h) + sep7x7(p)
      b2 = avg3x3(h) + sep5x5(p)      b3 = b1 + avg3x3(b0)
      b4 = sep3x3(b0) + max3x3(h)
    Output: the blocks no other block consumed, b1..b4: 4F at half size."""

    def __init__(self, cur_shape, prev_shape, f):
        super().__init__(cur_shape, prev_shape, f)
        pc = self.prev_c
        self.b0_h, self.b0_p = SepConv(f, f, 5, 2), SepConv(pc, f, 7, 2)
        self.b1_h, self.b1_p = max3(2), SepConv(pc, f, 7, 2)
        self.b2_h, self.b2_p = avg3(2), SepConv(pc, f, 5, 2)
        self.b3_b0 = avg3(1)
        self.b4_b0, self.b4_h = SepConv(f, f, 3, 1), max3(2)
        self.out_c = 4 * f

    def forward(self, cur, prev):
        h, p = self.inputs(cur, prev)
        b0 = self.b0_h(h) + self.b0_p(p)
        b1 = self.b1_h(h) + self.b1_p(p)
        b2 = self.b2_h(h) + self.b2_p(p)
        b3 = b1 + self.b3_b0(b0)
        b4 = self.b4_b0(b0) + self.b4_h(h)
        return torch.cat([b1, b2, b3, b4], 1)


class NASNetALarge(nn.Module):
    """NASNet-A (N @ penultimate filters), ImageNet form (Figure 2). The
    defaults are the large model: N = 6, F = 168 in the first stack (672 x 6
    = 4032 in the last), stem of 96 filters."""

    def __init__(self, num_classes=1000, n=6, filters=168, stem_filters=96):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, stem_filters, 3, 2, bias=False),
                                  nn.BatchNorm2d(stem_filters, eps=BN_EPS))
        # Shapes are tracked as (filters, resolution step) to decide which
        # cells need a factorized reduction; step counts halvings.
        cells = []
        shapes = [None, (stem_filters, 0)]
        # Two stem Reduction cells at F/4 and F/2 filters.
        for f in (filters // 4, filters // 2):
            cells.append(ReductionCell(shapes[-1], shapes[-2], f))
            shapes.append((cells[-1].out_c, shapes[-1][1] + 1))
        # Three stacks of N Normal cells at F, 2F, 4F, a Reduction cell
        # between stacks. The Normal cell after a Reduction cell takes as
        # h_{i-1} the Reduction cell's h_{i-1}, as in the released large
        # model ('skip_reduction_layer_input'), so it reduces that state.
        # Per cell: the index of its h_{i-1} among the network's outputs
        # (see forward); the stem cells take none and the stem convolution.
        wiring = [None, 1]
        for stack in range(3):
            f = filters * 2**stack
            for i in range(n):
                if stack > 0 and i == 0:
                    cells.append(ReductionCell(shapes[-1], shapes[-2], f))
                    wiring.append(len(shapes) - 2)
                    shapes.append((cells[-1].out_c, shapes[-1][1] + 1))
                    prev = len(shapes) - 3
                else:
                    prev = len(shapes) - 2
                cells.append(NormalCell(shapes[-1], shapes[prev], f))
                wiring.append(prev)
                shapes.append((cells[-1].out_c, shapes[-1][1]))
        self.cells = nn.ModuleList(cells)
        self.wiring = wiring
        self.classifier = nn.Linear(shapes[-1][0], num_classes)

    def forward(self, x):
        # outs[k]: output k of the network so far; outs[0] stands for the
        # missing h_{i-1} of the first stem cell.
        outs = [None, self.stem(x)]
        for cell, prev in zip(self.cells, self.wiring):
            outs.append(cell(outs[-1], outs[prev] if prev is not None else None))
        x = F.relu(outs[-1])
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        # Dropout (0.5 in the paper) is the identity in inference.
        return self.classifier(x)


if __name__ == '__main__':
    m = NASNetALarge().eval()
    print('parameters: %d' % sum(p.numel() for p in m.parameters()))
    print('with BatchNorm statistics: %d' % (sum(p.numel() for p in m.parameters()) +
                                             sum(b.numel() for n, b in m.named_buffers()
                                                 if not n.endswith('num_batches_tracked'))))
    with torch.no_grad():
        print('output:', tuple(m(torch.zeros(1, 3, 331, 331)).shape))
