# Classify points from three Gaussian blobs with a two-layer MLP, then report test accuracy.
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(42)

centers = torch.tensor([[2.0, 0.0], [-2.0, 1.0], [0.0, -2.5]])
def make_blobs(n_per_class):
    xs, ys = [], []
    for k, c in enumerate(centers):
        xs.append(c + 0.8 * torch.randn(n_per_class, 2))
        ys.append(torch.full((n_per_class,), k))
    return torch.cat(xs), torch.cat(ys)

X_train, y_train = make_blobs(400)
X_test, y_test = make_blobs(100)

train_loader = DataLoader(TensorDataset(X_train, y_train), batch_size=32, shuffle=True)
test_loader = DataLoader(TensorDataset(X_test, y_test), batch_size=50)

model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 3))
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for epoch in range(80):
    model.train()
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
    if epoch % 20 == 19:
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")

# Test
model.eval()
correct, total = 0, 0
for xb, yb in test_loader:
    logits = model(xb)
    correct += (logits.argmax(dim=1) == yb).sum().item()
    total += yb.size(0)
print(f"Test accuracy: {100 * correct / total:.1f}%")
