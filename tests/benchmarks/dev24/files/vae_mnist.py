"""VAE on MNIST with KL warm-up."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class VAE(nn.Module):
    def __init__(self, latent=20, hidden=400):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc_mu = nn.Linear(hidden, latent)
        self.fc_logvar = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, 784)

    def encode(self, x):
        h = F.relu(self.fc1(x))
        return self.fc_mu(h), self.fc_logvar(h)

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        std = torch.exp(0.5 * logvar)
        eps = torch.randn(std.size()).cuda()
        z = mu + eps * std
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar, beta):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + beta * kld


def main(epochs=30, warmup_steps=5000, device="cuda"):
    loader = DataLoader(datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor()),
                        batch_size=128, shuffle=True)
    model = VAE().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(epochs):
        model.train()
        train_loss = 0.0
        for data, _ in loader:
            data = data.to(device)
            recon, mu, logvar = model(data)
            beta = torch.tensor(min(1.0, step / warmup_steps)).to(device)
            loss = loss_function(recon, data, mu, logvar, beta)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            train_loss += loss.item()
            step += 1
        print(f"epoch {epoch}: {train_loss / len(loader.dataset):.4f}")


if __name__ == "__main__":
    main()
