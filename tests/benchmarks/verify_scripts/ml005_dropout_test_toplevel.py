# Regression of a noisy sine wave with a dropout MLP; test error at the end.
import math

import torch
import torch.nn as nn

torch.manual_seed(0)

x_train = torch.linspace(-math.pi, math.pi, 600).unsqueeze(1)
y_train = torch.sin(x_train) + 0.1 * torch.randn_like(x_train)
x_test = torch.rand(200, 1) * 2 * math.pi - math.pi
y_test = torch.sin(x_test)

model = nn.Sequential(
    nn.Linear(1, 64), nn.ReLU(), nn.Dropout(p=0.2),
    nn.Linear(64, 64), nn.ReLU(), nn.Dropout(p=0.2),
    nn.Linear(64, 1),
)
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
mse = nn.MSELoss()

batch_size = 32
for epoch in range(150):
    perm = torch.randperm(x_train.size(0))
    for start in range(0, x_train.size(0), batch_size):
        idx = perm[start:start + batch_size]
        optimizer.zero_grad()
        loss = mse(model(x_train[idx]), y_train[idx])
        loss.backward()
        optimizer.step()
    if (epoch + 1) % 50 == 0:
        print(f"epoch {epoch + 1}: batch loss {loss.item():.4f}")

with torch.no_grad():
    test_pred = model(x_test)
    test_mse = mse(test_pred, y_test).item()
print(f"test MSE: {test_mse:.5f}")
