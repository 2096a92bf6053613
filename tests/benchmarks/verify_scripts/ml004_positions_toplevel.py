# A one-layer self-attention model that learns to find the position of the
# largest value in a fixed-length sequence. Positional embeddings are indexed
# with an arange over the (fixed) sequence length.
import torch
import torch.nn as nn

torch.manual_seed(0)

SEQ_LEN = 16
D_MODEL = 32
BATCH = 64
STEPS_PER_EPOCH = 8
EPOCHS = 50

data = torch.randn(BATCH * STEPS_PER_EPOCH, SEQ_LEN)
target = data.argmax(dim=1)

value_proj = nn.Linear(1, D_MODEL)
pos_emb = nn.Embedding(SEQ_LEN, D_MODEL)
attn = nn.MultiheadAttention(D_MODEL, num_heads=4, batch_first=True, dropout=0.1)
head = nn.Linear(D_MODEL, 1)
model = nn.ModuleList([value_proj, pos_emb, attn, head])
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(EPOCHS):
    for i in range(0, len(data), BATCH):
        xb = data[i:i + BATCH]
        yb = target[i:i + BATCH]
        positions = torch.arange(SEQ_LEN)
        h = value_proj(xb.unsqueeze(-1)) + pos_emb(positions)
        h, _ = attn(h, h, h)
        scores = head(h).squeeze(-1)
        loss = loss_fn(scores, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if epoch % 10 == 9:
        acc = (scores.argmax(1) == yb).float().mean().item()
        print(f"epoch {epoch + 1}: loss {loss.item():.3f}, last-batch acc {acc:.2f}")
