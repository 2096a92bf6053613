"""Autoencoder on synthetic low-rank data; a Trainer runs a fixed number of steps
and evaluates the reconstruction error on held-out data every eval_interval steps."""
import torch
import torch.nn as nn


class AutoEncoder(nn.Module):
    def __init__(self, d=48, bottleneck=6):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, 64), nn.BatchNorm1d(64), nn.GELU(), nn.Dropout(0.1), nn.Linear(64, bottleneck))
        self.dec = nn.Sequential(nn.Linear(bottleneck, 64), nn.GELU(), nn.Linear(64, d))

    def forward(self, x):
        return self.dec(self.enc(x))


class Trainer:
    def __init__(self, model, train_x, val_x, max_steps=1200, batch_size=64, eval_interval=200):
        self.model = model
        self.train_x, self.val_x = train_x, val_x
        self.max_steps, self.batch_size, self.eval_interval = max_steps, batch_size, eval_interval
        self.optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: min(1.0, (s + 1) / 100))

    def estimate_loss(self):
        self.model.eval()
        with torch.no_grad():
            recon = self.model(self.val_x)
            return nn.functional.mse_loss(recon, self.val_x).item()

    def run(self):
        self.model.train()
        step = 0
        while step < self.max_steps:
            idx = torch.randint(0, self.train_x.size(0), (self.batch_size,))
            batch = self.train_x[idx]
            loss = nn.functional.mse_loss(self.model(batch), batch)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            step += 1
            if step % self.eval_interval == 0:
                print(f"step {step}: train {loss.item():.4f} val {self.estimate_loss():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    basis = torch.randn(6, 48)
    data = torch.randn(2000, 6) @ basis + 0.05 * torch.randn(2000, 48)
    Trainer(AutoEncoder(), data[:1600], data[1600:]).run()
