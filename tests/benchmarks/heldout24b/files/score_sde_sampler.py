"""Variance-preserving diffusion: training loss and ancestral sampler, written to avoid host allocations."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class VPSchedule(nn.Module):
    def __init__(self, timesteps=1000, beta_start=1e-4, beta_end=0.02):
        super().__init__()
        betas = torch.linspace(beta_start, beta_end, timesteps)
        alphas = 1.0 - betas
        ac = torch.cumprod(alphas, dim=0)
        self.register_buffer("betas", betas)
        self.register_buffer("alphas", alphas)
        self.register_buffer("alphas_cumprod", ac)
        self.register_buffer("ac_prev", F.pad(ac[:-1], (1, 0), value=1.0))
        self.timesteps = timesteps


class TimeEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        half = dim // 2
        self.register_buffer("freqs", torch.exp(-torch.arange(half).float() * (9.21 / half)))
        self.proj = nn.Linear(dim, dim)

    def forward(self, t):
        args = t[:, None].float() * self.freqs[None]
        return self.proj(torch.cat([args.sin(), args.cos()], dim=-1))


class Diffusion(nn.Module):
    def __init__(self, denoiser, schedule: VPSchedule):
        super().__init__()
        self.denoiser = denoiser
        self.schedule = schedule

    def forward(self, x0):
        b = x0.shape[0]
        t = torch.randint(0, self.schedule.timesteps, (b,), device=x0.device)
        noise = torch.randn_like(x0)
        ac = self.schedule.alphas_cumprod[t].view(b, 1, 1, 1)
        xt = ac.sqrt() * x0 + (1 - ac).sqrt() * noise
        return F.mse_loss(self.denoiser(xt, t), noise)

    @torch.no_grad()
    def sample(self, shape, device):
        x = torch.randn(shape, device=device)
        for i in reversed(range(self.schedule.timesteps)):
            t = torch.full((shape[0],), i, device=device, dtype=torch.long)
            eps = self.denoiser(x, t)
            alpha = self.schedule.alphas[i]
            ac = self.schedule.alphas_cumprod[i]
            mean = (x - (1 - alpha) / (1 - ac).sqrt() * eps) / alpha.sqrt()
            if i > 0:
                var = self.schedule.betas[i] * (1 - self.schedule.ac_prev[i]) / (1 - ac)
                x = mean + var.sqrt() * torch.randn(shape, device=device)
            else:
                x = mean
        return x.clamp(-1, 1)


def train(diffusion, loader, epochs, device, lr=2e-4):
    diffusion.to(device)
    opt = torch.optim.AdamW(diffusion.denoiser.parameters(), lr=lr)
    ema_loss = None
    for epoch in range(epochs):
        for x0, _ in loader:
            loss = diffusion(x0.to(device, non_blocking=True))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            ema_loss = loss.item() if ema_loss is None else 0.99 * ema_loss + 0.01 * loss.item()
        print(f"epoch {epoch}: loss {ema_loss:.4f}")
