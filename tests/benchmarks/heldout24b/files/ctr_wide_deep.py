"""Wide & Deep click-through-rate model on Criteo-style sparse features."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from sklearn.metrics import log_loss, roc_auc_score

from ctr.data import CriteoDataset


class WideAndDeep(nn.Module):
    def __init__(self, field_dims, embed_dim=16, mlp_dims=(256, 128, 64), dropout=0.2):
        super().__init__()
        n_feats = sum(field_dims)
        self.wide = nn.Embedding(n_feats, 1)
        self.embed = nn.Embedding(n_feats, embed_dim)
        layers, d = [], len(field_dims) * embed_dim
        for h in mlp_dims:
            layers += [nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(dropout)]
            d = h
        layers.append(nn.Linear(d, 1))
        self.deep = nn.Sequential(*layers)
        self.out_act = nn.Sigmoid()

    def forward(self, x):
        wide = self.wide(x).sum(dim=1)
        deep = self.deep(self.embed(x).flatten(1))
        return self.out_act((wide + deep).squeeze(1))


def train(model, loader, optimizer, criterion, device):
    model.train()
    total = 0.0
    for fields, target in loader:
        fields, target = fields.to(device), target.float().to(device)
        y = model(fields)
        loss = criterion(y, target)
        model.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


@torch.no_grad()
def test(model, loader, device):
    model.eval()
    targets, preds = [], []
    for fields, target in loader:
        preds.extend(model(fields.to(device)).tolist())
        targets.extend(target.tolist())
    return roc_auc_score(targets, preds), log_loss(targets, preds)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data/criteo/train.txt")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=2048)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--wd", type=float, default=1e-6)
    args = p.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    ds = CriteoDataset(args.data)
    n = len(ds)
    train_ds, valid_ds = torch.utils.data.random_split(ds, [int(0.9 * n), n - int(0.9 * n)])
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, num_workers=8)
    valid_loader = DataLoader(valid_ds, batch_size=args.batch_size, num_workers=8)

    model = WideAndDeep(ds.field_dims).to(device)
    criterion = torch.nn.BCEWithLogitsLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.wd)
    for epoch in range(args.epochs):
        tr_loss = train(model, train_loader, optimizer, criterion, device)
        auc, ll = test(model, valid_loader, device)
        print(f"epoch {epoch}: train {tr_loss:.5f} valid auc {auc:.5f} logloss {ll:.5f}")


if __name__ == "__main__":
    main()
