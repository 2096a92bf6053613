"""Convolutional subsampling front-end and conformer conv module for ASR."""
import torch
from torch import nn
import torch.nn.functional as nnf
from torch.nn.functional import dropout


class Conv2dSubsampling(nn.Module):
    """Subsample the time axis by 4 with two strided convolutions."""

    def __init__(self, idim, odim, spec_drop=0.1):
        super().__init__()
        self.conv1 = nn.Conv2d(1, odim, 3, 2)
        self.conv2 = nn.Conv2d(odim, odim, 3, 2)
        self.out = nn.Linear(odim * (((idim - 1) // 2 - 1) // 2), odim)
        self.spec_drop = spec_drop

    def forward(self, feats, lengths):
        x = feats.unsqueeze(1)
        x = nnf.relu(self.conv1(x))
        x = nnf.dropout2d(x, self.spec_drop)
        x = nnf.relu(self.conv2(x))
        b, c, t, f = x.size()
        x = self.out(x.transpose(1, 2).reshape(b, t, c * f))
        return x, ((lengths - 1) // 2 - 1) // 2


class ConvModule(nn.Module):
    def __init__(self, d_model, kernel_size=31, p=0.1):
        super().__init__()
        self.layer_norm = nn.LayerNorm(d_model)
        self.pointwise1 = nn.Conv1d(d_model, 2 * d_model, 1)
        self.depthwise = nn.Conv1d(d_model, d_model, kernel_size, padding=kernel_size // 2, groups=d_model)
        self.batch_norm = nn.BatchNorm1d(d_model)
        self.pointwise2 = nn.Conv1d(d_model, d_model, 1)
        self.p = p

    def forward(self, x):
        y = self.layer_norm(x).transpose(1, 2)
        y = nnf.glu(self.pointwise1(y), dim=1)
        y = nnf.silu(self.batch_norm(self.depthwise(y)))
        y = self.pointwise2(y).transpose(1, 2)
        return x + dropout(y, p=self.p)


class FeedForward(nn.Module):
    def __init__(self, d_model, expansion=4, p=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(d_model), nn.Linear(d_model, d_model * expansion), nn.SiLU(),
                                 nn.Dropout(p), nn.Linear(d_model * expansion, d_model), nn.Dropout(p))

    def forward(self, x):
        return x + 0.5 * self.net(x)


class ConformerEncoderStub(nn.Module):
    def __init__(self, idim=80, d_model=256, n_blocks=4):
        super().__init__()
        self.subsample = Conv2dSubsampling(idim, d_model)
        self.blocks = nn.ModuleList(
            [nn.ModuleList([FeedForward(d_model), ConvModule(d_model), FeedForward(d_model)]) for _ in range(n_blocks)])
        self.final_norm = nn.LayerNorm(d_model)

    def forward(self, feats, lengths):
        x, lengths = self.subsample(feats, lengths)
        for ff1, conv, ff2 in self.blocks:
            x = ff2(conv(ff1(x)))
        return self.final_norm(x), lengths
