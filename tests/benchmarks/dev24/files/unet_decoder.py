"""U-Net decoder with configurable dropout (flags passed positionally in the original code)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class UpBlock(nn.Module):
    def __init__(self, cin, cskip, cout, p=0.1, spatial=True):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, 2, stride=2)
        self.conv1 = nn.Conv2d(cout + cskip, cout, 3, padding=1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.bn1, self.bn2 = nn.BatchNorm2d(cout), nn.BatchNorm2d(cout)
        self.p = p
        self.spatial = spatial

    def forward(self, x, skip):
        x = self.up(x)
        x = torch.cat([x, skip], dim=1)
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.dropout2d(x, p=self.p, training=self.training and self.spatial)
        x = F.relu(self.bn2(self.conv2(x)))
        return F.dropout(x, self.p, self.training)


class Bottleneck(nn.Module):
    def __init__(self, ch, p=0.2):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch * 2, 3, padding=1)
        self.p = p

    def forward(self, x):
        x = F.selu(self.conv(x))
        return F.alpha_dropout(x, self.p, training=self.training)


class UNetDecoder(nn.Module):
    def __init__(self, chans=(512, 256, 128, 64), n_classes=2):
        super().__init__()
        self.bottleneck = Bottleneck(chans[0])
        self.ups = nn.ModuleList()
        cin = chans[0] * 2
        for c in chans:
            self.ups.append(UpBlock(cin, c, c))
            cin = c
        self.head = nn.Conv2d(chans[-1], n_classes, 1)

    def forward(self, feats):
        x = self.bottleneck(feats[-1])
        for up, skip in zip(self.ups, reversed(feats)):
            x = up(x, skip)
        return self.head(x)
