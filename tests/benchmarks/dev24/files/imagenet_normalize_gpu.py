"""GPU-side normalisation of uint8 batches from a fast loader (FFCV-style pipeline)."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models import resnet18

from fastloader import make_uint8_loader

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def train(model, loader, epochs, device, label_smoothing=0.1):
    mean = torch.tensor(MEAN).view(1, 3, 1, 1).to(device)
    std = torch.tensor(STD).view(1, 3, 1, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9, weight_decay=5e-5, nesterov=True)
    iters = epochs * len(loader)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=iters)
    for epoch in range(epochs):
        model.train()
        for images_u8, labels in loader:
            images = torch.from_numpy(images_u8).to(device, non_blocking=True)
            images = (images.permute(0, 3, 1, 2).float() - mean) / std
            labels = torch.as_tensor(labels).to(device, non_blocking=True)
            loss = F.cross_entropy(model(images), labels, label_smoothing=label_smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        print(f"epoch {epoch} loss {loss.item():.3f}")


def build_prototypes(model, n_classes, dim, device):
    """Setup step (runs once): one zero prototype per class, filled later by k-means."""
    protos = []
    for _ in range(n_classes):
        protos.append(torch.zeros(dim).to(device))
    return torch.stack(protos)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--beton", default="data/imagenet_train.beton")
    ap.add_argument("--epochs", type=int, default=16)
    args = ap.parse_args()
    device = torch.device("cuda")
    model = resnet18().to(device).to(memory_format=torch.channels_last)
    loader = make_uint8_loader(args.beton, batch_size=1024)
    train(model, loader, args.epochs, device)
    protos = build_prototypes(model, 1000, 512, device)
    np.save("prototypes.npy", protos.cpu().numpy())


if __name__ == "__main__":
    main()
