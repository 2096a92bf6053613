"""Sequence tagger with word-level augmentation done in the collate function."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence


def word_dropout(embeddings, p=0.1):
    """Augmentation on precomputed embeddings: zero whole tokens (data side, not the model)."""
    return F.dropout(embeddings, p=p)


def collate_with_noise(batch, p=0.1):
    embs = [word_dropout(e, p) for e, _ in batch]
    tags = [t for _, t in batch]
    return pad_sequence(embs, batch_first=True), pad_sequence(tags, batch_first=True, padding_value=-100)


class CharCNN(nn.Module):
    def __init__(self, n_chars, dim=30, filters=50):
        super().__init__()
        self.emb = nn.Embedding(n_chars, dim, padding_idx=0)
        self.conv = nn.Conv1d(dim, filters, 3, padding=1)
        self.drop = nn.Dropout(0.25)

    def forward(self, chars):
        x = self.drop(self.emb(chars)).transpose(1, 2)
        return F.relu(self.conv(x)).max(-1).values


class BiLSTMTagger(nn.Module):
    def __init__(self, emb_dim, hidden, n_tags, dropout=0.5):
        super().__init__()
        self.lstm = nn.LSTM(emb_dim, hidden, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(dropout)
        self.spatial = nn.Dropout1d(0.1)
        self.out = nn.Linear(2 * hidden, n_tags)

    def forward(self, embs):
        embs = self.spatial(embs.transpose(1, 2)).transpose(1, 2)
        h, _ = self.lstm(self.drop(embs))
        return self.out(self.drop(h))


def train(model, loader, epochs=20, lr=1e-3):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        model.train()
        for embs, tags in loader:
            logits = model(embs)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tags.reshape(-1), ignore_index=-100)
            opt.zero_grad()
            loss.backward()
            opt.step()
