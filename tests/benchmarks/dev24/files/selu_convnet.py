"""Self-normalising CNN (SELU + alpha dropout) for CIFAR-10."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def lecun_init(module):
    if isinstance(module, (nn.Conv2d, nn.Linear)):
        nn.init.kaiming_normal_(module.weight, nonlinearity="linear")
        if module.bias is not None:
            nn.init.zeros_(module.bias)


class SNNConvNet(nn.Module):
    def __init__(self, num_classes=10, width=64, p_spatial=0.1, p_alpha=0.05):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, width * 2, 3, padding=1)
        self.conv3 = nn.Conv2d(width * 2, width * 4, 3, padding=1)
        self.fc1 = nn.Linear(width * 4 * 4 * 4, 512)
        self.fc2 = nn.Linear(512, num_classes)
        self.p_spatial = p_spatial
        self.p_alpha = p_alpha
        self.apply(lecun_init)

    def features(self, x):
        x = F.max_pool2d(F.selu(self.conv1(x)), 2)
        x = F.max_pool2d(F.selu(self.conv2(x)), 2)
        x = F.dropout2d(x, self.p_spatial)
        x = F.max_pool2d(F.selu(self.conv3(x)), 2)
        return x.flatten(1)

    def forward(self, x):
        h = F.selu(self.fc1(self.features(x)))
        h = F.alpha_dropout(h, p=self.p_alpha)
        return self.fc2(h)


def train_one_epoch(model, loader, optimizer, device):
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


@torch.no_grad()
def test(model, loader, device):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x.to(device)).argmax(1).cpu() == y).sum().item()
    return correct / len(loader.dataset)
