"""Train/evaluate a small CNN with dropout on synthetic 3-channel 'images'.

Usage: python ml002_cnn_functions.py [--epochs N] [--batch-size B]
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1, padding=1)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.dropout2 = nn.Dropout(0.5)
        self.fc2 = nn.Linear(64, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout1(torch.flatten(x, 1))
        x = self.dropout2(F.relu(self.fc1(x)))
        return self.fc2(x)


def synthetic_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=g)
    x = torch.randn(n, 3, 16, 16, generator=g)
    x[torch.arange(n), y % 3] += (y.view(-1, 1, 1) // 3 * 2 - 1) * 0.8
    return TensorDataset(x, y)


def train(model, loader, optimizer, epoch, log_interval):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.cross_entropy(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % log_interval == 0 and epoch % 10 == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]\tLoss: {loss.item():.6f}")


def evaluate(model, loader):
    model.eval()
    test_loss = 0.0
    correct = 0
    for data, target in loader:
        output = model(data)
        test_loss += F.cross_entropy(output, target, reduction="sum").item()
        correct += output.argmax(dim=1).eq(target).sum().item()
    n = len(loader.dataset)
    return test_loss / n, correct / n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--test-batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--gamma", type=float, default=0.97)
    parser.add_argument("--log-interval", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    train_loader = DataLoader(synthetic_split(384, 0), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(synthetic_split(256, 1), batch_size=args.test_batch_size)

    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(model, train_loader, optimizer, epoch, args.log_interval)
        test_loss, acc = evaluate(model, test_loader)
        if epoch % 10 == 0:
            print(f"Test set: Average loss: {test_loss:.4f}, Accuracy: {100 * acc:.0f}%")
        scheduler.step()


if __name__ == "__main__":
    main()
