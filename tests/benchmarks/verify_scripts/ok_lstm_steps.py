"""Stateful LSTM forecaster trained for a fixed number of steps; the initial hidden
state depends on the batch size, gradients are cleared by setting them to None."""
import argparse

import torch
import torch.nn as nn


class Forecaster(nn.Module):
    def __init__(self, hidden=32, layers=2):
        super().__init__()
        self.hidden, self.layers = hidden, layers
        self.lstm = nn.LSTM(1, hidden, layers, batch_first=True, dropout=0.2)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        h0 = torch.zeros(self.layers, x.size(0), self.hidden)
        c0 = torch.zeros(self.layers, x.size(0), self.hidden)
        y, _ = self.lstm(x, (h0, c0))
        return self.head(y[:, -1])


def series_batch(bs, length):
    t0 = torch.rand(bs, 1) * 6.28
    t = t0 + torch.arange(length + 1).float() * 0.3
    s = torch.sin(t) + 0.05 * torch.randn_like(t)
    return s[:, :-1].unsqueeze(-1), s[:, -1:]


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-steps", type=int, default=500)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--seq", type=int, default=20)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Forecaster()
    opt = torch.optim.RMSprop(model.parameters(), lr=2e-3)
    xv, yv = series_batch(128, args.seq)
    step = 0
    while step < args.max_steps:
        model.train()
        x, y = series_batch(32, args.seq)
        loss = nn.functional.mse_loss(model(x), y)
        for p in model.parameters():
            p.grad = None
        loss.backward()
        opt.step()
        step += 1
        if step % args.eval_every == 0:
            model.eval()
            with torch.no_grad():
                val = nn.functional.mse_loss(model(xv), yv).item()
            print(f"step {step}: train {loss.item():.4f} val {val:.4f}")
