"""DCGAN on CelebA 64x64."""
import argparse

import torch
import torch.nn as nn
import torch.optim as optim
import torchvision.utils as vutils
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from dcgan_nets import Discriminator, Generator, weights_init

parser = argparse.ArgumentParser()
parser.add_argument("--dataroot", default="data/celeba")
parser.add_argument("--nz", type=int, default=100)
parser.add_argument("--niter", type=int, default=25)
parser.add_argument("--batch_size", type=int, default=128)
parser.add_argument("--lr", type=float, default=0.0002)
opt = parser.parse_args()

device = torch.device("cuda:0")
dataset = datasets.ImageFolder(opt.dataroot, transform=transforms.Compose([
    transforms.Resize(64), transforms.CenterCrop(64), transforms.ToTensor(),
    transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))]))
dataloader = DataLoader(dataset, batch_size=opt.batch_size, shuffle=True, num_workers=4)

netG = Generator(opt.nz).to(device)
netG.apply(weights_init)
netD = Discriminator().to(device)
netD.apply(weights_init)
criterion = nn.BCEWithLogitsLoss()
fixed_noise = torch.randn(64, opt.nz, 1, 1, device=device)
real_label, fake_label = 1.0, 0.0
optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(0.5, 0.999))

for epoch in range(opt.niter):
    for i, (real, _) in enumerate(dataloader):
        real = real.to(device)
        b_size = real.size(0)
        # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        label = torch.full((b_size,), real_label).to(device)
        errD_real = criterion(netD(real).view(-1), label)
        errD_real.backward()
        noise = torch.randn(b_size, opt.nz, 1, 1).to(device)
        fake = netG(noise)
        label.fill_(fake_label)
        errD_fake = criterion(netD(fake.detach()).view(-1), label)
        errD_fake.backward()
        optimizerD.step()
        # (2) update G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        errG = criterion(netD(fake).view(-1), label)
        errG.backward()
        optimizerG.step()
        if i % 50 == 0:
            print(f"[{epoch}/{opt.niter}][{i}/{len(dataloader)}] Loss_D {(errD_real + errD_fake).item():.4f} "
                  f"Loss_G {errG.item():.4f}")
    with torch.no_grad():
        samples = netG(fixed_noise).cpu()
    vutils.save_image(samples, f"samples_epoch_{epoch:03d}.png", normalize=True)
    torch.save(netG.state_dict(), f"netG_epoch_{epoch}.pth")
