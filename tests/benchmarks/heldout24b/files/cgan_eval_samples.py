"""Conditional GAN training on MNIST with a fixed evaluation grid."""
import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from torchvision.utils import save_image


class CondGenerator(nn.Module):
    def __init__(self, nz=100, n_classes=10, img_size=28):
        super().__init__()
        self.label_emb = nn.Embedding(n_classes, n_classes)
        self.img_size = img_size
        self.net = nn.Sequential(nn.Linear(nz + n_classes, 256), nn.LeakyReLU(0.2), nn.Linear(256, 512),
                                 nn.LeakyReLU(0.2), nn.Linear(512, img_size * img_size), nn.Tanh())

    def forward(self, z, labels):
        x = torch.cat([z, self.label_emb(labels)], dim=1)
        return self.net(x).view(-1, 1, self.img_size, self.img_size)


class CondDiscriminator(nn.Module):
    def __init__(self, n_classes=10, img_size=28):
        super().__init__()
        self.label_emb = nn.Embedding(n_classes, n_classes)
        self.net = nn.Sequential(nn.Linear(img_size * img_size + n_classes, 512), nn.LeakyReLU(0.2),
                                 nn.Linear(512, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))

    def forward(self, img, labels):
        return self.net(torch.cat([img.flatten(1), self.label_emb(labels)], dim=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--bs", type=int, default=64)
    ap.add_argument("--nz", type=int, default=100)
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(datasets.MNIST("data", train=True, download=True,
                                       transform=transforms.Compose([transforms.ToTensor(),
                                                                     transforms.Normalize([0.5], [0.5])])),
                        batch_size=args.bs, shuffle=True, drop_last=True)
    G, D = CondGenerator(args.nz).to(device), CondDiscriminator().to(device)
    adv = nn.BCEWithLogitsLoss()
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))

    fixed_z = torch.randn(100, args.nz).to(device)
    fixed_labels = torch.tensor(np.repeat(np.arange(10), 10)).to(device)
    valid = torch.ones(args.bs, 1, device=device)
    fake_t = torch.zeros(args.bs, 1, device=device)

    for epoch in range(args.epochs):
        for imgs, labels in loader:
            imgs, labels = imgs.to(device), labels.to(device)
            z = torch.randn(args.bs, args.nz, device=device)
            gen_labels = torch.randint(0, 10, (args.bs,), device=device)
            gen_imgs = G(z, gen_labels)
            g_loss = adv(D(gen_imgs, gen_labels), valid)
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()

            real_loss = adv(D(imgs, labels), valid)
            fake_loss = adv(D(gen_imgs.detach(), gen_labels), fake_t)
            d_loss = 0.5 * (real_loss + fake_loss)
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
        with torch.no_grad():
            save_image(G(fixed_z, fixed_labels), f"samples/{epoch:03d}.png", nrow=10, normalize=True)
        print(f"epoch {epoch}: D {d_loss.item():.3f} G {g_loss.item():.3f}")


if __name__ == "__main__":
    main()
