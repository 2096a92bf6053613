# Linear regression with nn.Linear (no dropout, no batch norm), evaluated under
# no_grad without switching modes: the result is the same in either mode.
import torch
import torch.nn as nn

torch.manual_seed(0)

X = torch.randn(800, 5)
true_w = torch.tensor([[1.5], [-2.0], [0.3], [0.0], [4.0]])
y = X @ true_w + 0.7 + 0.05 * torch.randn(800, 1)
X_train, y_train, X_test, y_test = X[:600], y[:600], X[600:], y[600:]

reg = nn.Linear(5, 1)
optimizer = torch.optim.SGD(reg.parameters(), lr=0.05)

for epoch in range(200):
    for i in range(0, 600, 50):
        optimizer.zero_grad()
        loss = ((reg(X_train[i:i + 50]) - y_train[i:i + 50]) ** 2).mean()
        loss.backward()
        optimizer.step()

with torch.no_grad():
    test_mse = ((reg(X_test) - y_test) ** 2).mean().item()
print("weights", [round(v, 2) for v in reg.weight.view(-1).tolist()], "bias", round(reg.bias.item(), 2))
print(f"test mse {test_mse:.5f}")
