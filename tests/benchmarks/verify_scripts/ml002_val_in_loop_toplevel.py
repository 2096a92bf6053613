# Binary classification of synthetic tabular data; hand-rolled minibatches and a
# validation pass after every epoch (like a Kaggle notebook exported to .py).
import torch
import torch.nn as nn

torch.manual_seed(7)

# ---- data -------------------------------------------------------------------
n, d = 2000, 24
X = torch.randn(n, d)
logit = X[:, 0] * 1.5 - X[:, 3] + 0.5 * X[:, 5] * X[:, 7]
Y = (logit + 0.3 * torch.randn(n) > 0).float().unsqueeze(1)
X_tr, Y_tr = X[:1600], Y[:1600]
X_val, Y_val = X[1600:], Y[1600:]

# ---- model ------------------------------------------------------------------
model = nn.Sequential(
    nn.Linear(d, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.3),
    nn.Linear(128, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.3),
    nn.Linear(64, 1),
)
criterion = nn.BCEWithLogitsLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

BS = 128
EPOCHS = 60
best_val = float("inf")
for epoch in range(EPOCHS):
    model.train()
    perm = torch.randperm(len(X_tr))
    X_tr, Y_tr = X_tr[perm], Y_tr[perm]
    for i in range(0, len(X_tr), BS):
        xb = X_tr[i:i + BS]
        yb = Y_tr[i:i + BS]
        optimizer.zero_grad()
        out = model(xb)
        loss = criterion(out, yb)
        loss.backward()
        optimizer.step()

    model.eval()
    val_out = model(X_val)
    val_loss = criterion(val_out, Y_val).item()
    val_acc = ((val_out > 0).float() == Y_val).float().mean().item()
    if val_loss < best_val:
        best_val = val_loss
    if epoch % 10 == 0:
        print(f"Epoch {epoch}: train_loss={loss.item():.4f} val_loss={val_loss:.4f} val_acc={val_acc:.4f}")

print("best val loss", round(best_val, 4))
