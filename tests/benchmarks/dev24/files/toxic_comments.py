"""Toxic comment classification (6 labels) with a BiGRU encoder."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

LABELS = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]


class BiGRUClassifier(nn.Module):
    def __init__(self, vocab_size, emb_dim=300, hidden=128, n_labels=len(LABELS), dropout=0.3):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        self.gru = nn.GRU(emb_dim, hidden, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(4 * hidden, n_labels)

    def forward(self, tokens, return_probs=False):
        h, _ = self.gru(self.drop(self.emb(tokens)))
        pooled = torch.cat([h.mean(1), h.max(1).values], dim=-1)
        logits = self.fc(self.drop(pooled))
        if return_probs:
            return torch.sigmoid(logits)
        return logits


def label_frequencies(dataset):
    counts = torch.zeros(len(LABELS))
    for _, y in dataset:
        counts += y
    return counts / len(dataset)


def train(model, train_set, epochs=4, lr=2e-3, device="cuda"):
    freq = label_frequencies(train_set)
    pos_weight = ((1 - freq) / freq.clamp(min=1e-4)).sqrt().to(device)
    criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    loader = DataLoader(train_set, batch_size=256, shuffle=True, num_workers=2)
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        model.train()
        for tokens, y in loader:
            tokens, y = tokens.to(device), y.to(device)
            logits = model(tokens)
            loss = criterion(logits, y)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        print(f"epoch {epoch}: last loss {loss.item():.4f}")


@torch.no_grad()
def predict(model, loader, device="cuda"):
    model.eval()
    out = []
    for tokens in loader:
        out.append(model(tokens.to(device), return_probs=True).cpu())
    return torch.cat(out)
