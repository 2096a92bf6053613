"""Small VGG-style CNN with BatchNorm on synthetic 'stripe orientation' images."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def conv_bn(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


def make_model():
    return nn.Sequential(
        conv_bn(1, 8), nn.MaxPool2d(2),
        conv_bn(8, 16), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 2),
    )


def stripes(n, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=g)
    grid = torch.arange(16).float()
    horiz = torch.sin(grid).view(1, 16, 1).expand(n, 16, 16)
    vert = torch.sin(grid).view(1, 1, 16).expand(n, 16, 16)
    img = torch.where(labels.view(-1, 1, 1) == 1, horiz, vert)
    img = img + 0.8 * torch.randn(n, 16, 16, generator=g)
    return TensorDataset(img.unsqueeze(1), labels)


def train_one_epoch(model, loader, optimizer, criterion):
    model.train()
    for images, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
    return loss.item()


@torch.no_grad()
def evaluate(model, loader):
    correct = 0
    for images, labels in loader:
        correct += (model(images).argmax(1) == labels).sum().item()
    return correct / len(loader.dataset)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--bs", type=int, default=32)
    args = parser.parse_args()

    torch.manual_seed(0)
    train_loader = DataLoader(stripes(320, 0), batch_size=args.bs, shuffle=True)
    val_loader = DataLoader(stripes(160, 1), batch_size=80)
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        loss = train_one_epoch(model, train_loader, optimizer, criterion)
        acc = evaluate(model, val_loader)
        if epoch % 10 == 0 or epoch == args.epochs - 1:
            print(f"epoch {epoch}: loss {loss:.4f} val acc {acc:.3f}")
