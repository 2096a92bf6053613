"""BiLSTM tagger for named-entity recognition (CoNLL-2003)."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class BiLSTMTagger(nn.Module):
    def __init__(self, vocab_size, tagset_size, embedding_dim=100, hidden_dim=256, num_layers=2, dropout=0.5,
                 pretrained=None):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        if pretrained is not None:
            self.embedding.weight.data.copy_(pretrained)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=num_layers, bidirectional=True,
                            batch_first=True, dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

    def init_hidden(self, batch_size):
        h0 = torch.zeros(2 * self.num_layers, batch_size, self.hidden_dim // 2)
        c0 = torch.zeros(2 * self.num_layers, batch_size, self.hidden_dim // 2)
        return h0, c0

    def forward(self, sentences, lengths):
        batch_size = sentences.size(0)
        h0 = torch.zeros(2 * self.num_layers, batch_size, self.hidden_dim // 2).cuda()
        c0 = torch.zeros(2 * self.num_layers, batch_size, self.hidden_dim // 2).cuda()
        embeds = self.dropout(self.embedding(sentences))
        packed = pack_padded_sequence(embeds, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed, (h0, c0))
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=sentences.size(1))
        return self.hidden2tag(self.dropout(out))


def train_epoch(model, loader, optimizer, criterion):
    model.train()
    total = 0.0
    for words, tags, lengths in loader:
        words, tags = words.cuda(), tags.cuda()
        scores = model(words, lengths)
        loss = criterion(scores.view(-1, scores.size(-1)), tags.view(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        total += loss.item()
    return total / len(loader)


@torch.no_grad()
def predict(model, loader, id2tag):
    model.eval()
    results = []
    for words, _, lengths in loader:
        scores = model(words.cuda(), lengths)
        best = scores.argmax(-1).cpu()
        for seq, n in zip(best, lengths.tolist()):
            results.append([id2tag[i] for i in seq[:n].tolist()])
    return results


if __name__ == "__main__":
    from ner_data import load_conll, make_loader

    train, dev, vocab, tags = load_conll("data/conll2003")
    model = BiLSTMTagger(len(vocab), len(tags)).cuda()
    crit = nn.CrossEntropyLoss(ignore_index=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.015, momentum=0.9)
    for ep in range(50):
        print(ep, train_epoch(model, make_loader(train, 10, shuffle=True), opt, crit))
