"""Correct train/test loop in the style of the classic MNIST example, on synthetic data."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.dropout = nn.Dropout(0.3)
        self.fc = nn.Linear(16 * 4 * 4, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(self.dropout(torch.flatten(x, 1)))


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 1, 16, 16, generator=g)
    for k in range(3):
        x[y == k, :, 5 * k:5 * k + 5, :] += 1.0
    return TensorDataset(x, y)


def train(args, model, loader, optimizer, epoch):
    model.train()
    for data, target in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    if epoch % args.log_interval == 0:
        print(f"Train epoch {epoch}: loss {loss.item():.4f}")


def test(model, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            test_loss += F.cross_entropy(output, target, reduction="sum").item()
            correct += (output.argmax(1) == target).sum().item()
    return test_loss / len(loader.dataset), correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser(description="toy CNN")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.9)
    parser.add_argument("--log-interval", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(1)

    train_loader = DataLoader(make_split(320, 0), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(make_split(200, 1), batch_size=100)
    model = Net()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_loader, optimizer, epoch)
        loss, acc = test(model, test_loader)
        if epoch % args.log_interval == 0:
            print(f"Test: loss {loss:.4f}, accuracy {acc:.3f}")
        scheduler.step()


if __name__ == "__main__":
    main()
