"""Multi-label attribute prediction on CelebA (40 binary attributes).

Usage: python celeba_attributes.py --data ~/data/celeba --epochs 20
"""
import argparse
import os
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

NUM_ATTRS = 40


def conv_block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
    )


def build_model(width=32):
    return nn.Sequential(
        conv_block(3, width),
        conv_block(width, width * 2),
        conv_block(width * 2, width * 4),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(width * 4, NUM_ATTRS),
        nn.Sigmoid(),
    )


def get_loaders(root, batch_size, workers):
    tf = transforms.Compose([
        transforms.CenterCrop(178),
        transforms.Resize(96),
        transforms.ToTensor(),
    ])
    train = datasets.CelebA(root, split="train", target_type="attr", transform=tf)
    valid = datasets.CelebA(root, split="valid", target_type="attr", transform=tf)
    return (DataLoader(train, batch_size, shuffle=True, num_workers=workers, pin_memory=True),
            DataLoader(valid, batch_size, num_workers=workers))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=os.path.expanduser("~/data/celeba"))
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--bs", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--workers", type=int, default=4)
    args = p.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader, valid_loader = get_loaders(args.data, args.bs, args.workers)
    model = build_model().to(device)
    # attributes are imbalanced: weight positives a bit more
    criterion = nn.BCEWithLogitsLoss(pos_weight=torch.full((NUM_ATTRS,), 2.0, device=device))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        model.train()
        t0 = time.time()
        for i, (images, attrs) in enumerate(train_loader):
            images = images.to(device, non_blocking=True)
            attrs = attrs.float().to(device, non_blocking=True)
            out = model(images)
            loss = criterion(out, attrs)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if i % 100 == 0:
                print(f"epoch {epoch} it {i} loss {loss.item():.4f}")

        model.eval()
        correct, total = 0, 0
        with torch.no_grad():
            for images, attrs in valid_loader:
                pred = model(images.to(device)) > 0.5
                correct += (pred.cpu() == attrs.bool()).sum().item()
                total += attrs.numel()
        print(f"epoch {epoch}: val acc {correct / total:.4f} ({time.time() - t0:.0f}s)")


if __name__ == "__main__":
    main()
