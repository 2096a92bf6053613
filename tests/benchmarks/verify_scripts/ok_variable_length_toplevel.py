# Variable-length sequences: each batch has its own length, so the position ids are
# rebuilt per batch from the batch's shape. Validation uses inference_mode.
import torch
import torch.nn as nn

torch.manual_seed(2)

MAX_LEN, D = 24, 32
emb_pos = nn.Embedding(MAX_LEN, D)
proj = nn.Linear(1, D)
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 4, 64, dropout=0.1, batch_first=True), 1)
out = nn.Linear(D, 1)
model = nn.ModuleList([emb_pos, proj, encoder, out])
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def forward(x):
    pos = torch.arange(x.size(1))
    h = proj(x.unsqueeze(-1)) + emb_pos(pos)
    return out(encoder(h).mean(1)).squeeze(-1)


def batch(bs=32):
    length = int(torch.randint(6, MAX_LEN + 1, ()))
    x = torch.randn(bs, length)
    return x, x.max(dim=1).values


val = [batch(64) for _ in range(4)]
for epoch in range(30):
    model.train()
    for _ in range(10):
        x, y = batch()
        loss = nn.functional.mse_loss(forward(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.inference_mode():
        val_loss = sum(nn.functional.mse_loss(forward(x), y).item() for x, y in val) / len(val)
    if epoch % 10 == 9:
        print(f"epoch {epoch + 1}: train {loss.item():.3f} val {val_loss:.3f}")
