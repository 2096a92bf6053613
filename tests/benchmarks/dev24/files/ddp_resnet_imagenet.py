"""ImageNet ResNet-50 training with DistributedDataParallel (torchrun --nproc_per_node=8)."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, models, transforms


def train_one_epoch(model, loader, criterion, optimizer, epoch, device):
    model.train()
    for i, (images, target) in enumerate(loader):
        images, target = images.to(device, non_blocking=True), target.to(device, non_blocking=True)
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % 100 == 0 and dist.get_rank() == 0:
            print(f"epoch {epoch} [{i}/{len(loader)}] loss {loss.item():.4f}")


@torch.no_grad()
def validate(model, loader, device):
    model.eval()
    correct = torch.zeros(2, device=device)
    for images, target in loader:
        out = model(images.to(device, non_blocking=True))
        correct[0] += (out.argmax(1) == target.to(device)).sum()
        correct[1] += target.numel()
    dist.all_reduce(correct)
    return (correct[0] / correct[1]).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--epochs", type=int, default=90)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--workers", type=int, default=8)
    args = ap.parse_args()

    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)

    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_set = datasets.ImageFolder(os.path.join(args.data, "train"), transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(), normalize]))
    val_set = datasets.ImageFolder(os.path.join(args.data, "val"), transforms.Compose([
        transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(), normalize]))

    train_sampler = DistributedSampler(train_set)
    val_sampler = DistributedSampler(val_set, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler,
                              num_workers=args.workers, pin_memory=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=args.batch_size, sampler=val_sampler,
                            num_workers=args.workers, pin_memory=True)

    model = DDP(models.resnet50().to(device), device_ids=[local_rank])
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[30, 60, 80], gamma=0.1)

    for epoch in range(args.epochs):
        train_one_epoch(model, train_loader, criterion, optimizer, epoch, device)
        acc = validate(model, val_loader, device)
        scheduler.step()
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: top-1 {acc:.4f}")
            torch.save(model.module.state_dict(), "resnet50_ddp.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
