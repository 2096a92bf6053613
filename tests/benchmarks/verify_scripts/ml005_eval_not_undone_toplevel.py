# Train a BatchNorm+Dropout MLP on synthetic data, checking validation accuracy every
# few epochs. Batches are sliced by hand.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

N_TRAIN, N_VAL, D, K = 1200, 300, 32, 4
W = torch.randn(D, K)
X = torch.randn(N_TRAIN + N_VAL, D)
Y = (X @ W + 0.5 * torch.randn(N_TRAIN + N_VAL, K)).argmax(1)
Xtr, Ytr, Xva, Yva = X[:N_TRAIN], Y[:N_TRAIN], X[N_TRAIN:], Y[N_TRAIN:]

net = nn.Sequential(
    nn.Linear(D, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.4),
    nn.Linear(128, K),
)
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True)
sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[40, 80], gamma=0.1)

bs = 100
net.train()
for epoch in range(100):
    order = torch.randperm(N_TRAIN)
    for b in range(0, N_TRAIN, bs):
        idx = order[b:b + bs]
        out = net(Xtr[idx])
        loss = F.cross_entropy(out, Ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    sched.step()

    if epoch % 10 == 0:
        net.eval()
        with torch.no_grad():
            val_acc = (net(Xva).argmax(1) == Yva).float().mean().item()
        print(f"epoch {epoch:3d} loss {loss.item():.4f} val_acc {val_acc:.3f}")
