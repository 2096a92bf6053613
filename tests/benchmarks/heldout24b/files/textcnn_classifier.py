"""Kim (2014) CNN for sentence classification, SST-2 / MR."""
import argparse
import random

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

from vocab import build_vocab, load_split, batches


class TextCNN(nn.Module):
    def __init__(self, vocab_size, embed_dim=300, n_filters=100, sizes=(3, 4, 5), n_classes=2, p=0.5):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.convs = nn.ModuleList([nn.Conv1d(embed_dim, n_filters, k) for k in sizes])
        self.dropout = nn.Dropout(p)
        self.fc = nn.Linear(n_filters * len(sizes), n_classes)

    def forward(self, tokens):
        x = self.embedding(tokens).transpose(1, 2)
        pooled = [F.relu(conv(x)).max(dim=2).values for conv in self.convs]
        h = self.dropout(torch.cat(pooled, dim=1))
        out = self.fc(h)
        return F.softmax(out, dim=-1)


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def evaluate(model, data, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for tokens, labels in data:
            probs = model(tokens.to(device))
            correct += (probs.argmax(dim=1).cpu() == labels).sum().item()
            total += labels.numel()
    return correct / total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", default="data/sst2/train.tsv")
    ap.add_argument("--dev", default="data/sst2/dev.tsv")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--bs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    set_seed(args.seed)

    train_data = load_split(args.train)
    dev_data = load_split(args.dev)
    vocab = build_vocab(train_data, min_freq=2)
    device = "cuda" if torch.cuda.is_available() else "cpu"

    model = TextCNN(len(vocab)).to(device)
    criterion = nn.NLLLoss()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)

    for epoch in range(args.epochs):
        model.train()
        for tokens, labels in batches(train_data, vocab, args.bs, shuffle=True):
            tokens, labels = tokens.to(device), labels.to(device)
            output = model(tokens)
            loss = criterion(output, labels)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 3.0)
            optimizer.step()
        acc = evaluate(model, batches(dev_data, vocab, args.bs), device)
        print(f"epoch {epoch + 1} dev acc {acc:.4f}")


if __name__ == "__main__":
    main()
