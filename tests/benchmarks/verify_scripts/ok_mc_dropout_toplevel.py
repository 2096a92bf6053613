# MC dropout: after ordinary training, keep dropout on at test time on purpose and
# average several stochastic passes over the same inputs to estimate uncertainty.
import torch
import torch.nn as nn

torch.manual_seed(4)

x = torch.rand(500, 1) * 4 - 2
y = x ** 3 - x + 0.2 * torch.randn_like(x)

model = nn.Sequential(nn.Linear(1, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for epoch in range(100):
    model.train()
    for i in range(0, 500, 50):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x[i:i + 50]), y[i:i + 50])
        loss.backward()
        opt.step()

x_query = torch.linspace(-3, 3, 13).unsqueeze(1)
model.train()  # keep dropout active: Monte Carlo dropout
with torch.no_grad():
    samples = torch.stack([model(x_query) for _ in range(50)])
mean, std = samples.mean(0).squeeze(1), samples.std(0).squeeze(1)
for xq, m, s in zip(x_query.squeeze(1).tolist(), mean.tolist(), std.tolist()):
    print(f"x={xq:+.1f}  pred={m:+.2f} ± {s:.2f}")
