"""U-Net (Ronneberger, Fischer and Brox, MICCAI 2015), in PyTorch.

The paper's network: a contracting path of four stages, each two 3x3
convolutions with ReLU then a 2x2 max pool of stride 2, doubling the channels
from 64 to 1024 at the bottom; an expanding path of four stages, each a 2x2
up-convolution halving the channels, concatenated with the contracting
path's feature map of that level, then two 3x3 convolutions with ReLU; and a
final 1x1 convolution to the classes. Weights are drawn as the paper says:
Gaussian with standard deviation sqrt(2 / N), N the inputs of one neuron.

One departure: the 3x3 convolutions are padded by 1 (the paper's are
unpadded and crop the skip connections), so that any input whose sides are
multiples of 16 gives an output of the same size, as most uses of U-Net do.
"""
import torch
from torch import nn


def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, in_channels=1, classes=2, width=64, depth=4):
        super().__init__()
        chans = [width << i for i in range(depth + 1)]  # 64 ... 1024
        self.down = nn.ModuleList()
        c = in_channels
        for ch in chans:
            self.down.append(double_conv(c, ch))
            c = ch
        self.pool = nn.MaxPool2d(2, 2)
        self.upconv = nn.ModuleList()
        self.up = nn.ModuleList()
        for ch in reversed(chans[:-1]):
            self.upconv.append(nn.ConvTranspose2d(c, ch, 2, stride=2))
            self.up.append(double_conv(2 * ch, ch))
            c = ch
        self.head = nn.Conv2d(c, classes, 1)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
                k = m.kernel_size[0] * m.kernel_size[1]
                # Inputs of one neuron: a transposed conv of stride equal to
                # its kernel reads one input pixel per output, so N = Cin.
                fan_in = m.in_channels * (k if isinstance(m, nn.Conv2d) else 1)
                nn.init.normal_(m.weight, 0.0, (2.0 / fan_in)**0.5)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            if i:
                x = self.pool(x)
            x = block(x)
            skips.append(x)
        skips.pop()
        for upconv, block in zip(self.upconv, self.up):
            x = upconv(x)
            x = block(torch.cat([skips.pop(), x], dim=1))
        return self.head(x)
