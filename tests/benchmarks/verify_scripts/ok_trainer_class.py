"""A Trainer for a small GRU tagger: correct mode switching and gradient handling."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Tagger(nn.Module):
    def __init__(self, vocab=20, tags=3, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.gru = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(0.25)
        self.out = nn.Linear(2 * d, tags)

    def forward(self, tokens):
        h, _ = self.gru(self.emb(tokens))
        return self.out(self.drop(h))


class Trainer:
    def __init__(self, model, train_loader, val_loader, epochs=25):
        self.model, self.train_loader, self.val_loader, self.epochs = model, train_loader, val_loader, epochs
        self.optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
        self.loss_fn = nn.CrossEntropyLoss()

    def training_epoch(self):
        self.model.train()
        for tokens, tags in self.train_loader:
            logits = self.model(tokens)
            loss = self.loss_fn(logits.flatten(0, 1), tags.flatten())
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        return loss.item()

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        hits = total = 0
        for tokens, tags in self.val_loader:
            pred = self.model(tokens).argmax(-1)
            hits += (pred == tags).sum().item()
            total += tags.numel()
        return hits / total

    def fit(self):
        for epoch in range(self.epochs):
            loss = self.training_epoch()
            acc = self.validate()
            if epoch % 5 == 4:
                print(f"epoch {epoch + 1}: loss {loss:.4f} val tag acc {acc:.3f}")


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 20, (n, 10), generator=g)
    tags = torch.bucketize(tokens, torch.tensor([6, 13]))
    return TensorDataset(tokens, tags)


if __name__ == "__main__":
    torch.manual_seed(0)
    trainer = Trainer(Tagger(), DataLoader(make_data(480, 0), batch_size=32, shuffle=True),
                      DataLoader(make_data(160, 1), batch_size=80))
    trainer.fit()
