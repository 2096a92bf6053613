"""Monte-Carlo dropout regressor for predictive uncertainty (Gal & Ghahramani, 2016)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MCDropoutMLP(nn.Module):
    def __init__(self, in_dim, hidden=(128, 128), p=0.1, heteroscedastic=True):
        super().__init__()
        dims = [in_dim, *hidden]
        self.hidden = nn.ModuleList([nn.Linear(a, b) for a, b in zip(dims, dims[1:])])
        self.mean = nn.Linear(dims[-1], 1)
        self.log_var = nn.Linear(dims[-1], 1) if heteroscedastic else None
        self.p = p

    def forward(self, x):
        for layer in self.hidden:
            x = F.relu(layer(x))
            x = F.dropout(x, p=self.p, training=True)
        mu = self.mean(x).squeeze(-1)
        if self.log_var is None:
            return mu, torch.zeros_like(mu)
        return mu, self.log_var(x).squeeze(-1)


class DeterministicMLP(nn.Module):
    def __init__(self, in_dim, hidden=128, p=0.2, use_dropout=True):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)
        self.p = p
        self.use_dropout = use_dropout

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.dropout(x, self.p, self.training and self.use_dropout)
        x = F.relu(self.fc2(x))
        x = F.dropout(x, p=self.p, training=self.training)
        return self.out(x).squeeze(-1)


def feature_dropout_augment(x, p=0.05):
    """Input-level augmentation applied in the data pipeline, outside any module."""
    return F.dropout(x, p=p) * (1 - p)


def gaussian_nll(mu, log_var, y):
    return 0.5 * (log_var + (y - mu) ** 2 / log_var.exp()).mean()


@torch.no_grad()
def predict_with_uncertainty(model, x, n_samples=50):
    preds, alea = [], []
    for _ in range(n_samples):
        mu, log_var = model(x)
        preds.append(mu)
        alea.append(log_var.exp())
    preds = torch.stack(preds)
    mean = preds.mean(0)
    epistemic = preds.var(0)
    aleatoric = torch.stack(alea).mean(0)
    return mean, epistemic + aleatoric


def fit(model, loader, epochs=100, lr=1e-3, device="cpu"):
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-5)
    model.to(device)
    for epoch in range(epochs):
        model.train()
        losses = []
        for x, y in loader:
            x = feature_dropout_augment(x.to(device))
            y = y.to(device)
            mu, log_var = model(x)
            loss = gaussian_nll(mu, log_var, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        if epoch % 10 == 0:
            print(epoch, np.mean(losses))
    return model
