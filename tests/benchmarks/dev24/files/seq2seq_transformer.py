"""Seq2seq Transformer for translation (nn.Transformer), masks built on the fly."""
import math

import torch
import torch.nn as nn

PAD_IDX = 1


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(0)])


class Seq2SeqTransformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=512, nhead=8, layers=3, ff=2048, dropout=0.1):
        super().__init__()
        self.src_emb = nn.Embedding(src_vocab, d_model, padding_idx=PAD_IDX)
        self.tgt_emb = nn.Embedding(tgt_vocab, d_model, padding_idx=PAD_IDX)
        self.pos = PositionalEncoding(d_model, dropout)
        self.transformer = nn.Transformer(d_model, nhead, layers, layers, ff, dropout)
        self.generator = nn.Linear(d_model, tgt_vocab)
        self.d_model = d_model

    def forward(self, src, tgt):
        # src: (S, B), tgt: (T, B)
        T = tgt.size(0)
        tgt_mask = torch.full((T, T), float("-inf")).to(src.device)
        tgt_mask = torch.triu(tgt_mask, diagonal=1)
        src_pad = (src == PAD_IDX).transpose(0, 1)
        tgt_pad = (tgt == PAD_IDX).transpose(0, 1)
        scale = math.sqrt(self.d_model)
        out = self.transformer(self.pos(self.src_emb(src) * scale), self.pos(self.tgt_emb(tgt) * scale),
                               tgt_mask=tgt_mask, src_key_padding_mask=src_pad,
                               tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return self.generator(out)


class TinyRNNDecoder(nn.Module):
    def __init__(self, vocab, hidden=256, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.rnn = nn.GRU(hidden, hidden, layers)
        self.out = nn.Linear(hidden, vocab)
        self.layers, self.hidden = layers, hidden

    def forward(self, tokens):
        h0 = torch.zeros(self.layers, tokens.size(1), self.hidden).cuda()
        out, _ = self.rnn(self.emb(tokens), h0)
        return self.out(out)


def train_epoch(model, loader, optimizer, device):
    model.train()
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    for src, tgt in loader:
        src, tgt = src.to(device), tgt.to(device)
        logits = model(src, tgt[:-1])
        loss = loss_fn(logits.reshape(-1, logits.size(-1)), tgt[1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
