"""Large-batch regression of molecular properties, split into micro-batches to fit in memory."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from mol.data import MoleculeDataset, collate_graphs
from mol.models import MPNN


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/qm9")
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--micro-batches", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--lr", type=float, default=5e-4)
    return ap.parse_args()


def split_batch(batch, n):
    size = (batch.num_graphs + n - 1) // n
    return [batch.slice(i * size, min((i + 1) * size, batch.num_graphs)) for i in range(n)]


def train_epoch(model, loader, optimizer, n_micro, device, target_std):
    model.train()
    epoch_loss = 0.0
    for batch in loader:
        optimizer.zero_grad()
        for mb in split_batch(batch, n_micro):
            mb = mb.to(device)
            pred = model(mb)
            loss = F.mse_loss(pred, mb.y / target_std)
            loss.backward()
            epoch_loss += loss.item()
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
    return epoch_loss / (len(loader) * n_micro)


@torch.no_grad()
def evaluate(model, loader, device, target_std):
    model.eval()
    err, n = 0.0, 0
    for batch in loader:
        batch = batch.to(device)
        err += (model(batch) * target_std - batch.y).abs().sum().item()
        n += batch.num_graphs
    return err / n


def main():
    args = parse()
    device = torch.device("cuda")
    train_ds = MoleculeDataset(args.data, "train")
    val_ds = MoleculeDataset(args.data, "val")
    target_std = train_ds.targets.std()
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, collate_fn=collate_graphs)
    val_loader = DataLoader(val_ds, batch_size=args.batch_size, collate_fn=collate_graphs)
    model = MPNN(hidden=128, n_layers=6).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.7, patience=5)
    for epoch in range(args.epochs):
        tr = train_epoch(model, train_loader, optimizer, args.micro_batches, device, target_std)
        mae = evaluate(model, val_loader, device, target_std)
        sched.step(mae)
        print(f"{epoch:03d} train {tr:.4f} val MAE {mae:.4f}")


if __name__ == "__main__":
    main()
