"""Multi-class logistic regression trained with an MSE loss on one-hot targets
(as in older tutorials), step-based loop with argparse defaults."""
import argparse

import torch
import torch.nn as nn

NUM_CLASSES = 5


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--dim", type=int, default=20)
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(0)
    protos = torch.randn(NUM_CLASSES, args.dim) * 2
    model = nn.Sequential(nn.Linear(args.dim, NUM_CLASSES), nn.Softmax(dim=1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    step = 0
    while step < args.steps:
        labels = torch.randint(0, NUM_CLASSES, (args.batch_size,))
        inputs = protos[labels] + torch.randn(args.batch_size, args.dim)
        onehot = torch.eye(NUM_CLASSES)[labels]
        probs = model(inputs)
        loss = ((probs - onehot) ** 2).sum(dim=1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if step % 300 == 0:
            acc = (probs.argmax(1) == labels).float().mean().item()
            print(f"step {step:5d} | loss {loss.item():.4f} | acc {acc:.3f}")


if __name__ == "__main__":
    main()
