# Fit a small MLP to a noisy synthetic regression problem.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

n_samples, n_features = 1024, 16
X = torch.randn(n_samples, n_features)
w_true = torch.randn(n_features, 1)
y = X @ w_true + 0.1 * torch.randn(n_samples, 1)

train_ds = TensorDataset(X[:896], y[:896])
val_X, val_y = X[896:], y[896:]
train_loader = DataLoader(train_ds, batch_size=64, shuffle=True)

net = nn.Sequential(
    nn.Linear(n_features, 64),
    nn.ReLU(),
    nn.Linear(64, 64),
    nn.ReLU(),
    nn.Linear(64, 1),
)
criterion = nn.MSELoss()
opt = torch.optim.SGD(net.parameters(), lr=5e-5, momentum=0.9)

num_epochs = 120
opt.zero_grad()
for epoch in range(num_epochs):
    running = 0.0
    for xb, yb in train_loader:
        pred = net(xb)
        loss = criterion(pred, yb)
        loss.backward()
        opt.step()
        running += loss.item() * xb.size(0)
    if epoch % 20 == 0 or epoch == num_epochs - 1:
        net.eval()
        with torch.no_grad():
            val_loss = criterion(net(val_X), val_y).item()
        net.train()
        print(f"epoch {epoch:3d}  train mse {running / len(train_ds):.4f}  val mse {val_loss:.4f}")
