"""A minimal Trainer around a tiny Transformer encoder that learns to sort-classify tokens."""
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

VOCAB = 16
SEQ = 12


def build_dataset(n=768, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (n, SEQ), generator=g)
    # label: does the first token appear again later in the sequence?
    labels = (tokens[:, 1:] == tokens[:, :1]).any(dim=1).long()
    return TensorDataset(tokens, labels)


class TinyTransformer(nn.Module):
    def __init__(self, d_model=32, nhead=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d_model)
        self.pos = nn.Parameter(torch.randn(1, SEQ, d_model) / math.sqrt(d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.cls = nn.Linear(d_model, 2)

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens) + self.pos)
        return self.cls(h.mean(dim=1))


class Trainer:
    def __init__(self, model, train_loader, val_loader, epochs=40, lr=1e-3):
        self.model = model
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.epochs = epochs
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        self.criterion = nn.CrossEntropyLoss()

    def train_epoch(self):
        self.model.train()
        total = 0.0
        for tokens, labels in self.train_loader:
            logits = self.model(tokens)
            loss = self.criterion(logits, labels)
            loss.backward()
            self.optimizer.step()
            total += loss.item()
        return total / len(self.train_loader)

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        correct = n = 0
        for tokens, labels in self.val_loader:
            correct += (self.model(tokens).argmax(1) == labels).sum().item()
            n += labels.numel()
        return correct / n

    def fit(self):
        self.optimizer.zero_grad()
        for epoch in range(1, self.epochs + 1):
            train_loss = self.train_epoch()
            if epoch % 5 == 0:
                print(f"epoch {epoch:02d} train_loss {train_loss:.4f} val_acc {self.validate():.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    data = build_dataset()
    train_set = TensorDataset(*data[:640])
    val_set = TensorDataset(*data[640:])
    trainer = Trainer(
        TinyTransformer(),
        DataLoader(train_set, batch_size=32, shuffle=True),
        DataLoader(val_set, batch_size=64),
    )
    trainer.fit()
