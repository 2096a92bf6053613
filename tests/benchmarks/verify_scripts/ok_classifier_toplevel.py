# Plain, correct training of a dropout MLP classifier with DataLoaders, then a test pass.
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

X = torch.randn(1200, 12)
y = ((X[:, 0] > 0).long() + (X[:, 1] > 0.5).long())
train_loader = DataLoader(TensorDataset(X[:1000], y[:1000]), batch_size=32, shuffle=True)
test_loader = DataLoader(TensorDataset(X[1000:], y[1000:]), batch_size=100)

model = nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Dropout(0.2), nn.Linear(48, 3))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(60):
    model.train()
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
    if epoch % 15 == 14:
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}")

model.eval()
correct = 0
with torch.no_grad():
    for xb, yb in test_loader:
        correct += (model(xb).argmax(1) == yb).sum().item()
print(f"test accuracy {correct / len(test_loader.dataset):.3f}")
