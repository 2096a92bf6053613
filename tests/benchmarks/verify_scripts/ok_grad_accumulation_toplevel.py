# Gradient accumulation: an effective batch of 128 built from micro-batches of 32.
import torch
import torch.nn as nn

torch.manual_seed(5)

X = torch.randn(2048, 20)
w = torch.randn(20)
Y = (X @ w > 0).float()

model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.BCEWithLogitsLoss()

micro_bs = 32
accum_steps = 4
for epoch in range(40):
    perm = torch.randperm(len(X))
    optimizer.zero_grad()
    for it, i in enumerate(range(0, len(X), micro_bs)):
        idx = perm[i:i + micro_bs]
        logits = model(X[idx]).squeeze(1)
        loss = loss_fn(logits, Y[idx]) / accum_steps
        loss.backward()
        if (it + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    if epoch % 10 == 9:
        with torch.no_grad():
            acc = ((model(X).squeeze(1) > 0).float() == Y).float().mean().item()
        print(f"epoch {epoch + 1}: acc {acc:.3f}")
