"""Tiny CNN on random 'images' with two classes (bright vs dark centre).

Batches are sliced by hand from one big tensor, as in many research scripts.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N, C, H, W = 512, 1, 16, 16
images = torch.randn(N, C, H, W)
labels = (images[:, :, 4:12, 4:12].mean(dim=(1, 2, 3)) > 0).long()


class SmallConvNet(nn.Module):
    def __init__(self, n_classes=2):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 4 * 4, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(x.flatten(1))


model = SmallConvNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
batch_size = 64
epochs = 60

for epoch in range(epochs):
    model.train()
    perm = torch.randperm(N)
    optimizer.zero_grad()
    epoch_loss = 0.0
    for i in range(0, N, batch_size):
        idx = perm[i:i + batch_size]
        xb, yb = images[idx], labels[idx]
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    if (epoch + 1) % 10 == 0:
        model.eval()
        with torch.no_grad():
            acc = (model(images).argmax(1) == labels).float().mean().item()
        print(f"[{epoch + 1}/{epochs}] loss={epoch_loss / (N // batch_size):.3f} acc={acc:.3f}")
