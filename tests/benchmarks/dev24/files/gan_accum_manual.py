"""Critic pretraining with large effective batches: gradients averaged by hand before each step."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class Critic(nn.Module):
    def __init__(self, ch=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, ch, 4, 2, 1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch, ch * 2, 4, 2, 1), nn.InstanceNorm2d(ch * 2, affine=True), nn.LeakyReLU(0.2),
            nn.Conv2d(ch * 2, ch * 4, 4, 2, 1), nn.InstanceNorm2d(ch * 4, affine=True), nn.LeakyReLU(0.2),
            nn.Conv2d(ch * 4, 1, 4, 1, 0),
        )

    def forward(self, x):
        return self.net(x).view(-1)


def average_gradients(model, n):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.div_(n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--accum", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=10)
    args = ap.parse_args()
    device = torch.device("cuda")

    tf = transforms.Compose([transforms.Resize(32), transforms.ToTensor(), transforms.Normalize([0.5] * 3, [0.5] * 3)])
    loader = DataLoader(datasets.CIFAR10("data", train=True, download=True, transform=tf),
                        batch_size=32, shuffle=True, drop_last=True)
    critic = Critic().to(device)
    opt = torch.optim.Adam(critic.parameters(), lr=2e-4, betas=(0.5, 0.999))
    criterion = nn.BCEWithLogitsLoss()

    for epoch in range(args.epochs):
        for i, (real, _) in enumerate(loader):
            real = real.to(device)
            fake = torch.rand_like(real) * 2 - 1
            scores = critic(torch.cat([real, fake]))
            targets = torch.cat([torch.ones_like(scores[:len(real)]), torch.zeros_like(scores[len(real):])])
            loss = criterion(scores, targets)
            loss.backward()
            if (i + 1) % args.accum == 0:
                average_gradients(critic, args.accum)
                opt.step()
                opt.zero_grad()
        print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
