"""SimCLR pre-training with a large effective batch built from chunks; gradients averaged by hand."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

from ssl_data import TwoViewImageFolder
from ssl_models import ResNetBackbone


class ProjectionHead(nn.Module):
    def __init__(self, dim_in=2048, hidden=2048, dim_out=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(inplace=True),
                                 nn.Linear(hidden, dim_out))

    def forward(self, x):
        return self.net(x)


def nt_xent(z1, z2, temperature=0.5):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.t() / temperature
    n = z1.size(0)
    sim.fill_diagonal_(float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n, device=z.device), torch.arange(0, n, device=z.device)])
    return F.cross_entropy(sim, targets)


def train(args):
    device = torch.device("cuda")
    backbone = ResNetBackbone("resnet50").to(device)
    head = ProjectionHead().to(device)
    params = list(backbone.parameters()) + list(head.parameters())
    optimizer = torch.optim.SGD(params, lr=args.lr, momentum=0.9, weight_decay=1e-6)
    loader = torch.utils.data.DataLoader(TwoViewImageFolder(args.data), batch_size=args.chunk, shuffle=True,
                                         num_workers=16, drop_last=True)
    data_iter = iter(loader)
    for step in range(args.steps):
        optimizer.zero_grad()
        for _ in range(args.chunks_per_step):
            try:
                v1, v2 = next(data_iter)
            except StopIteration:
                data_iter = iter(loader)
                v1, v2 = next(data_iter)
            z1 = head(backbone(v1.to(device, non_blocking=True)))
            z2 = head(backbone(v2.to(device, non_blocking=True)))
            loss = nt_xent(z1, z2, args.temperature)
            loss.backward()
        for p in params:
            if p.grad is not None:
                p.grad.div_(args.chunks_per_step)
        optimizer.step()
        if step % 100 == 0:
            print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/datasets/imagenet/train")
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--chunks_per_step", type=int, default=16)
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--lr", type=float, default=4.8)
    ap.add_argument("--temperature", type=float, default=0.1)
    train(ap.parse_args())
