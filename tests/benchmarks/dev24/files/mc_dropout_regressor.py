"""Bayesian approximation via Monte Carlo dropout (Gal & Ghahramani): predictive mean and variance."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MCDropoutMLP(nn.Module):
    """Dropout is always on, by design: every forward pass is one posterior sample."""

    def __init__(self, d_in, hidden=100, p=0.1):
        super().__init__()
        self.l1 = nn.Linear(d_in, hidden)
        self.l2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)
        self.p = p

    def forward(self, x):
        h = F.dropout(F.relu(self.l1(x)), p=self.p, training=True)
        h = F.dropout(F.relu(self.l2(h)), p=self.p, training=True)
        return self.out(h).squeeze(-1)


@torch.no_grad()
def predictive(model, x, samples=50):
    preds = torch.stack([model(x) for _ in range(samples)])
    return preds.mean(0), preds.var(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="uci/boston.npz")
    ap.add_argument("--epochs", type=int, default=400)
    ap.add_argument("--tau", type=float, default=1.0)
    args = ap.parse_args()

    d = np.load(args.data)
    x_tr, y_tr = torch.tensor(d["x_train"], dtype=torch.float32), torch.tensor(d["y_train"], dtype=torch.float32)
    x_te, y_te = torch.tensor(d["x_test"], dtype=torch.float32), torch.tensor(d["y_test"], dtype=torch.float32)
    model = MCDropoutMLP(x_tr.shape[1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    for epoch in range(args.epochs):
        perm = torch.randperm(len(x_tr))
        for i in range(0, len(x_tr), 32):
            idx = perm[i:i + 32]
            loss = F.mse_loss(model(x_tr[idx]), y_tr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    mean, var = predictive(model, x_te)
    var = var + 1.0 / args.tau
    rmse = torch.sqrt(((mean - y_te) ** 2).mean())
    ll = (-0.5 * torch.log(2 * np.pi * var) - 0.5 * (y_te - mean) ** 2 / var).mean()
    print(f"test rmse {rmse:.3f}  test ll {ll:.3f}")


if __name__ == "__main__":
    main()
