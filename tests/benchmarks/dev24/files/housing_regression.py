"""California housing regression; tiny batches + accumulation to mimic the paper's setup."""
import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import fetch_california_housing
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset

BATCH_SIZE = 16
ACCUMULATION_STEPS = 8
EPOCHS = 40


def make_model(d_in):
    return nn.Sequential(nn.Linear(d_in, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 1))


def compute_loss(model, x, y, criterion):
    pred = model(x).squeeze(-1)
    return criterion(pred, y)


def run_epoch(model, loader, criterion, optimizer):
    model.train()
    optimizer.zero_grad()
    seen = 0.0
    for i, (x, y) in enumerate(loader):
        loss = compute_loss(model, x, y, criterion)
        loss.backward()
        seen += loss.item()
        if (i + 1) % ACCUMULATION_STEPS == 0 or (i + 1) == len(loader):
            optimizer.step()
            optimizer.zero_grad()
    return seen / len(loader)


@torch.no_grad()
def rmse(model, x, y):
    model.eval()
    return torch.sqrt(((model(x).squeeze(-1) - y) ** 2).mean()).item()


if __name__ == "__main__":
    X, y = fetch_california_housing(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=42)
    sc = StandardScaler().fit(X_tr)
    X_tr, X_te = sc.transform(X_tr).astype(np.float32), sc.transform(X_te).astype(np.float32)
    train_loader = DataLoader(TensorDataset(torch.from_numpy(X_tr), torch.from_numpy(y_tr.astype(np.float32))),
                              batch_size=BATCH_SIZE, shuffle=True)
    model = make_model(X_tr.shape[1])
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for epoch in range(EPOCHS):
        train_mse = run_epoch(model, train_loader, criterion, optimizer)
        test_rmse = rmse(model, torch.from_numpy(X_te), torch.from_numpy(y_te.astype(np.float32)))
        print(f"epoch {epoch:2d} train_mse={train_mse:.4f} test_rmse={test_rmse:.4f}")
