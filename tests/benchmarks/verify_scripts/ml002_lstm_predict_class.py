"""Character-level next-token LSTM on a synthetic repeating language; a small
Trainer class trains it for a fixed number of steps and then greedily decodes."""
import torch
import torch.nn as nn


class CharLSTM(nn.Module):
    def __init__(self, vocab, emb=16, hidden=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=2, batch_first=True, dropout=0.1)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, idx):
        h, _ = self.lstm(self.emb(idx))
        return self.out(h)


class Trainer:
    def __init__(self, text, block=24, batch=16, max_steps=400, lr=5e-3):
        chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(chars)}
        self.itos = {i: c for c, i in self.stoi.items()}
        self.data = torch.tensor([self.stoi[c] for c in text])
        self.block, self.batch, self.max_steps = block, batch, max_steps
        self.model = CharLSTM(len(chars))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.loss_fn = nn.CrossEntropyLoss()

    def get_batch(self):
        ix = torch.randint(0, len(self.data) - self.block - 1, (self.batch,))
        x = torch.stack([self.data[i:i + self.block] for i in ix])
        y = torch.stack([self.data[i + 1:i + self.block + 1] for i in ix])
        return x, y

    def train(self):
        self.model.train()
        step = 0
        while step < self.max_steps:
            x, y = self.get_batch()
            logits = self.model(x)
            loss = self.loss_fn(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            step += 1
            if step % 100 == 0:
                print(f"step {step} loss {loss.item():.3f}")

    def predict(self, prompt, n_chars=40):
        self.model.eval()
        idx = torch.tensor([[self.stoi[c] for c in prompt]])
        for _ in range(n_chars):
            logits = self.model(idx[:, -self.block:])
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            idx = torch.cat([idx, nxt], dim=1)
        return "".join(self.itos[int(i)] for i in idx[0])


if __name__ == "__main__":
    torch.manual_seed(0)
    corpus = "the quick brown fox jumps over the lazy dog. " * 60
    trainer = Trainer(corpus)
    trainer.train()
    print(repr(trainer.predict("the quick")))
