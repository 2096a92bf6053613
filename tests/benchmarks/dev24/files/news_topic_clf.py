"""AG News topic classifier: EmbeddingBag + MLP (fastText-style)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader


class TopicClassifier(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class, hidden=256):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, mode="mean")
        self.fc1 = nn.Linear(embed_dim, hidden)
        self.fc2 = nn.Linear(hidden, num_class)
        self.init_weights()

    def init_weights(self):
        r = 0.5
        self.embedding.weight.data.uniform_(-r, r)
        self.fc2.weight.data.uniform_(-r, r)
        self.fc2.bias.data.zero_()

    def forward(self, text, offsets):
        h = F.relu(self.fc1(self.embedding(text, offsets)))
        scores = self.fc2(h)
        return F.softmax(scores, dim=1)


def collate_batch(batch):
    labels, texts, offsets = [], [], [0]
    for label, ids in batch:
        labels.append(label)
        texts.append(torch.tensor(ids, dtype=torch.int64))
        offsets.append(len(ids))
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    return torch.tensor(labels), torch.cat(texts), offsets


def train_epoch(model, loader, optimizer, criterion, log_every=500):
    model.train()
    acc, count = 0, 0
    for idx, (label, text, offsets) in enumerate(loader):
        optimizer.zero_grad()
        predicted = model(text, offsets)
        loss = criterion(predicted, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        acc += (predicted.argmax(1) == label).sum().item()
        count += label.size(0)
        if idx % log_every == 0 and idx > 0:
            print(f"| {idx:5d}/{len(loader):5d} batches | accuracy {acc / count:8.3f}")
            acc, count = 0, 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=5.0)
    parser.add_argument("--emsize", type=int, default=64)
    args = parser.parse_args()

    train_data = torch.load("ag_news_train.pt", weights_only=True)
    vocab_size = int(max(max(ids) for _, ids in train_data)) + 1
    loader = DataLoader(train_data, batch_size=64, shuffle=True, collate_fn=collate_batch)
    model = TopicClassifier(vocab_size, args.emsize, num_class=4)
    criterion = nn.NLLLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    for epoch in range(1, args.epochs + 1):
        train_epoch(model, loader, optimizer, criterion)
        scheduler.step()


if __name__ == "__main__":
    main()
