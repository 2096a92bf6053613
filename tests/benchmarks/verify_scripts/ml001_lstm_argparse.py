#!/usr/bin/env python
"""Sequence classification with an LSTM: is the running sum of the sequence positive?"""
import argparse

import torch
from torch import nn


def get_args():
    p = argparse.ArgumentParser(description="LSTM toy classifier")
    p.add_argument("--seq-len", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--max-steps", type=int, default=600)
    p.add_argument("--log-every", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


class SeqClassifier(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.rnn = nn.LSTM(1, hidden, batch_first=True)
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(hidden, 2)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(self.drop(out[:, -1]))


def sample_batch(batch_size, seq_len):
    x = torch.randn(batch_size, seq_len, 1)
    y = (x.sum(dim=(1, 2)) > 0).long()
    return x, y


if __name__ == "__main__":
    args = get_args()
    torch.manual_seed(args.seed)
    model = SeqClassifier(args.hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=200, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss()

    step = 0
    model.train()
    while step < args.max_steps:
        x, y = sample_batch(args.batch_size, args.seq_len)
        logits = model(x)
        loss = loss_fn(logits, y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        step += 1
        if step % args.log_every == 0:
            acc = (logits.argmax(-1) == y).float().mean()
            print(f"step {step}: loss {loss.item():.4f} acc {acc.item():.2f} lr {scheduler.get_last_lr()[0]:.2e}")
