"""Trainer class for a small ResNet-ish block on synthetic RGB images.

Images arrive as raw [0, 1] tensors and are standardised per channel on the fly.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

CHANNEL_MEAN = 0.45
CHANNEL_STD = [0.229, 0.224, 0.225]


class Block(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.c1 = nn.Conv2d(ch, ch, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(ch)
        self.c2 = nn.Conv2d(ch, ch, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(ch)

    def forward(self, x):
        return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))


class TinyResNet(nn.Module):
    def __init__(self, n_classes=3):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.block = Block(16)
        self.fc = nn.Linear(16, n_classes)

    def forward(self, x):
        x = self.block(self.stem(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class Trainer:
    def __init__(self, model, loader, epochs=30, lr=0.05):
        self.model = model
        self.loader = loader
        self.epochs = epochs
        self.opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
        self.sched = torch.optim.lr_scheduler.OneCycleLR(self.opt, max_lr=lr, total_steps=epochs * len(loader))

    def train(self):
        self.model.train()
        for epoch in range(self.epochs):
            seen = correct = 0
            for images, labels in self.loader:
                std = torch.tensor(CHANNEL_STD).view(1, 3, 1, 1)
                images = (images - CHANNEL_MEAN) / std
                out = self.model(images)
                loss = F.cross_entropy(out, labels)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                self.sched.step()
                seen += labels.size(0)
                correct += (out.argmax(1) == labels).sum().item()
            if epoch % 5 == 4:
                print(f"epoch {epoch + 1}/{self.epochs} loss {loss.item():.3f} train acc {correct / seen:.3f}")


def make_images(n=256, seed=0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 3, (n,), generator=g)
    images = torch.rand(n, 3, 12, 12, generator=g) * 0.6
    images[torch.arange(n), labels] += 0.4
    return TensorDataset(images, labels)


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(make_images(), batch_size=32, shuffle=True)
    Trainer(TinyResNet(), loader).train()
