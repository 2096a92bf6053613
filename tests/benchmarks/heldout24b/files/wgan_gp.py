"""WGAN-GP on CelebA 64x64."""
import argparse
import os

import torch
import torch.nn as nn
import torch.autograd as autograd
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from torchvision.utils import save_image

from gan_models import DCGenerator, DCCritic

parser = argparse.ArgumentParser()
parser.add_argument("--dataroot", default="data/celeba")
parser.add_argument("--n_epochs", type=int, default=30)
parser.add_argument("--batch_size", type=int, default=64)
parser.add_argument("--latent_dim", type=int, default=128)
parser.add_argument("--n_critic", type=int, default=5)
parser.add_argument("--lambda_gp", type=float, default=10.0)
parser.add_argument("--sample_interval", type=int, default=500)
opt = parser.parse_args()
os.makedirs("images", exist_ok=True)
device = torch.device("cuda")


def gradient_penalty(critic, real, fake, alpha):
    interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    d_interpolates = critic(interpolates)
    grads = autograd.grad(outputs=d_interpolates, inputs=interpolates,
                          grad_outputs=torch.ones_like(d_interpolates), create_graph=True, retain_graph=True)[0]
    grads = grads.view(grads.size(0), -1)
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


generator = DCGenerator(opt.latent_dim).to(device)
critic = DCCritic().to(device)
opt_G = torch.optim.Adam(generator.parameters(), lr=1e-4, betas=(0.0, 0.9))
opt_D = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.0, 0.9))

tf = transforms.Compose([transforms.Resize(64), transforms.CenterCrop(64), transforms.ToTensor(),
                         transforms.Normalize([0.5] * 3, [0.5] * 3)])
loader = DataLoader(datasets.ImageFolder(opt.dataroot, tf), batch_size=opt.batch_size, shuffle=True,
                    num_workers=4, drop_last=True)

batches_done = 0
for epoch in range(opt.n_epochs):
    for i, (imgs, _) in enumerate(loader):
        real = imgs.to(device)
        z = torch.randn(opt.batch_size, opt.latent_dim).cuda()
        fake = generator(z)
        alpha = torch.rand(real.size(0), 1, 1, 1).to(device)
        gp = gradient_penalty(critic, real, fake.detach(), alpha)
        d_loss = critic(fake.detach()).mean() - critic(real).mean() + opt.lambda_gp * gp
        opt_D.zero_grad()
        d_loss.backward()
        opt_D.step()

        if i % opt.n_critic == 0:
            g_loss = -critic(generator(z)).mean()
            opt_G.zero_grad()
            g_loss.backward()
            opt_G.step()
            if batches_done % opt.sample_interval == 0:
                print(f"[{epoch}/{opt.n_epochs}] [{i}/{len(loader)}] D {d_loss.item():.3f} G {g_loss.item():.3f}")
                save_image(fake.data[:25], f"images/{batches_done}.png", nrow=5, normalize=True)
            batches_done += opt.n_critic
