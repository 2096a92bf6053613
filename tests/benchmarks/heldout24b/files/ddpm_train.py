"""Train a small DDPM noise-prediction U-Net on CIFAR-10."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from unet_blocks import UNetBody


class SinusoidalTimeEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 4), nn.SiLU(), nn.Linear(dim * 4, dim * 4))

    def forward(self, t):
        half = self.dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32).to(t.device) / half)
        args = t.float()[:, None] * freqs[None]
        emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
        return self.mlp(emb)


class NoisePredictor(nn.Module):
    def __init__(self, ch=128):
        super().__init__()
        self.time = SinusoidalTimeEmbedding(ch)
        self.body = UNetBody(ch, time_dim=ch * 4)

    def forward(self, x, t):
        return self.body(x, self.time(t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timesteps", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=800)
    ap.add_argument("--batch-size", type=int, default=128)
    args = ap.parse_args()
    device = torch.device("cuda")

    betas = torch.linspace(1e-4, 0.02, args.timesteps, device=device)
    alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
    sqrt_ac = alphas_cumprod.sqrt()
    sqrt_1m_ac = (1.0 - alphas_cumprod).sqrt()

    tf = transforms.Compose([transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                             transforms.Normalize((0.5,) * 3, (0.5,) * 3)])
    loader = DataLoader(datasets.CIFAR10("data", train=True, transform=tf, download=True),
                        batch_size=args.batch_size, shuffle=True, num_workers=4, drop_last=True)
    model = NoisePredictor().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)

    step = 0
    for epoch in range(args.epochs):
        for x0, _ in loader:
            x0 = x0.to(device)
            t = torch.randint(0, args.timesteps, (x0.size(0),)).to(device)
            noise = torch.randn_like(x0)
            xt = sqrt_ac[t].view(-1, 1, 1, 1) * x0 + sqrt_1m_ac[t].view(-1, 1, 1, 1) * noise
            loss = F.mse_loss(model(xt, t), noise)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            if step % 1000 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
        torch.save(model.state_dict(), "ddpm_cifar10.pt")


if __name__ == "__main__":
    main()
