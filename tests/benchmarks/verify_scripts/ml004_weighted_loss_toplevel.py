# Imbalanced 3-class problem: weight the rare classes more in the loss.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(3)

n = 1500
y = torch.multinomial(torch.tensor([0.7, 0.2, 0.1]), n, replacement=True)
x = torch.randn(n, 10) + F.one_hot(y, 10).float() * 2.0

loader = DataLoader(TensorDataset(x, y), batch_size=50, shuffle=True)

model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=100)

for epoch in range(100):
    total_loss = 0.0
    for inputs, targets in loader:
        optimizer.zero_grad()
        logits = model(inputs)
        class_weights = torch.tensor([1.0, 3.5, 7.0])
        loss = F.cross_entropy(logits, targets, weight=class_weights)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    scheduler.step()
    if epoch % 25 == 0 or epoch == 99:
        print(f"epoch {epoch}: mean loss {total_loss / len(loader):.4f}")

model.eval()
with torch.no_grad():
    pred = model(x).argmax(1)
for k in range(3):
    print(f"class {k}: recall {(pred[y == k] == k).float().mean().item():.3f}")
