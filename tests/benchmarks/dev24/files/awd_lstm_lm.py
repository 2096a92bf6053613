"""AWD-LSTM-style language model: embedding dropout, locked dropout, weight-tied decoder."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def embedded_dropout(embed, words, dropout=0.1, scale=None):
    if dropout:
        mask = embed.weight.new_empty((embed.weight.size(0), 1)).bernoulli_(1 - dropout) / (1 - dropout)
        weight = mask * embed.weight
    else:
        weight = embed.weight
    if scale:
        weight = scale.expand_as(weight) * weight
    return F.embedding(words, weight, embed.padding_idx)


class LockedDropout(nn.Module):
    def forward(self, x, p=0.5):
        if not self.training or not p:
            return x
        mask = x.new_empty(1, x.size(1), x.size(2)).bernoulli_(1 - p) / (1 - p)
        return mask.expand_as(x) * x


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp=400, nhid=1150, nlayers=3, dropout=0.4, dropouth=0.25,
                 dropouti=0.4, dropoute=0.1):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.lockdrop = LockedDropout()
        self.rnns = nn.ModuleList([
            nn.LSTM(ninp if l == 0 else nhid, nhid if l != nlayers - 1 else ninp, 1) for l in range(nlayers)
        ])
        self.decoder = nn.Linear(ninp, ntoken)
        self.decoder.weight = self.encoder.weight
        self.dropout, self.dropouth, self.dropouti, self.dropoute = dropout, dropouth, dropouti, dropoute

    def _run_rnns(self, emb, hidden):
        new_hidden, out = [], emb
        for l, rnn in enumerate(self.rnns):
            out, h = rnn(out, hidden[l])
            new_hidden.append(h)
            if l != len(self.rnns) - 1:
                out = F.dropout(out, p=self.dropouth, training=self.training)
        return out, new_hidden

    def forward(self, input, hidden):
        emb = embedded_dropout(self.encoder, input, dropout=self.dropoute if self.training else 0)
        emb = self.lockdrop(emb, self.dropouti)
        output, hidden = self._run_rnns(emb, hidden)
        output = F.dropout(output, self.dropout, training=self.training)
        return self.decoder(output), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return [(weight.new_zeros(1, bsz, rnn.hidden_size), weight.new_zeros(1, bsz, rnn.hidden_size))
                for rnn in self.rnns]
