"""Credit-card fraud detection: tabular MLP with a probability output."""
import argparse

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset


class FraudMLP(nn.Module):
    def __init__(self, n_features, hidden=(128, 64), p=0.2):
        super().__init__()
        layers, d = [], n_features
        for h in hidden:
            layers += [nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(p)]
            d = h
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        return torch.sigmoid(self.out(self.body(x))).squeeze(1)


def load(path):
    df = pd.read_csv(path)
    y = df.pop("Class").values.astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(df.values, y, test_size=0.2, stratify=y, random_state=0)
    scaler = StandardScaler().fit(x_tr)
    return (scaler.transform(x_tr).astype(np.float32), y_tr,
            scaler.transform(x_te).astype(np.float32), y_te)


@torch.no_grad()
def validate(model, loader):
    model.eval()
    total, n = 0.0, 0
    for x, y in loader:
        prob = model(x)
        total += F.binary_cross_entropy(prob, y, reduction="sum").item()
        n += len(y)
    return total / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--epochs", type=int, default=15)
    args = ap.parse_args()

    x_tr, y_tr, x_te, y_te = load(args.csv)
    train_dl = DataLoader(TensorDataset(torch.from_numpy(x_tr), torch.from_numpy(y_tr)), batch_size=512, shuffle=True)
    test_dl = DataLoader(TensorDataset(torch.from_numpy(x_te), torch.from_numpy(y_te)), batch_size=2048)

    model = FraudMLP(x_tr.shape[1])
    criterion = nn.BCELoss()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5)
    for epoch in range(args.epochs):
        model.train()
        for x, y in train_dl:
            opt.zero_grad()
            prob = model(x)
            loss = criterion(prob, y)
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: val bce {validate(model, test_dl):.5f}")


if __name__ == "__main__":
    main()
