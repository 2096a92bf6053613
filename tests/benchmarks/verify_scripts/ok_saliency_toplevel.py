# Train a small classifier, then compute input-gradient saliency maps for a few
# test points (the "explain" forward must keep autograd on).
import torch
import torch.nn as nn

torch.manual_seed(9)

X = torch.randn(1000, 8)
y = (X[:, 2] - X[:, 6] > 0).long()
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for epoch in range(50):
    for i in range(0, 1000, 100):
        logits = model(X[i:i + 100])
        loss = nn.functional.cross_entropy(logits, y[i:i + 100])
        opt.zero_grad()
        loss.backward()
        opt.step()

model.eval()
x_explain = X[:5].clone().requires_grad_(True)
scores = model(x_explain)
chosen = scores.gather(1, scores.argmax(1, keepdim=True)).sum()
chosen.backward()
saliency = x_explain.grad.abs()
print("most important feature per sample:", saliency.argmax(1).tolist())
print("mean saliency per feature:", [round(v, 3) for v in saliency.mean(0).tolist()])
