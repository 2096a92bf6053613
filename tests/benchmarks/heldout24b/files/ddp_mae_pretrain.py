"""Masked-autoencoder pre-training (DDP) followed by a single distributed evaluation pass."""
import argparse
import math

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms

from mae import mae_vit_base_patch16


def adjust_lr(optimizer, epoch, args):
    if epoch < args.warmup_epochs:
        lr = args.lr * epoch / args.warmup_epochs
    else:
        lr = args.lr * 0.5 * (1.0 + math.cos(math.pi * (epoch - args.warmup_epochs) / (args.epochs - args.warmup_epochs)))
    for g in optimizer.param_groups:
        g["lr"] = lr


def main(args):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    device = torch.device("cuda", rank % torch.cuda.device_count())
    tf = transforms.Compose([transforms.RandomResizedCrop(224, scale=(0.2, 1.0)), transforms.RandomHorizontalFlip(),
                             transforms.ToTensor()])
    train_set = datasets.ImageFolder(f"{args.data}/train", tf)
    val_set = datasets.ImageFolder(f"{args.data}/val", transforms.Compose([transforms.CenterCrop(224),
                                                                           transforms.ToTensor()]))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, num_workers=10, pin_memory=True, drop_last=True,
                              sampler=DistributedSampler(train_set, shuffle=True))
    val_sampler = DistributedSampler(val_set)
    val_loader = DataLoader(val_set, batch_size=args.batch_size, sampler=val_sampler, num_workers=10)

    model = mae_vit_base_patch16().to(device)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.05)

    for epoch in range(args.epochs):
        train_loader.sampler.set_epoch(epoch)
        adjust_lr(optimizer, epoch, args)
        model.train()
        for samples, _ in train_loader:
            samples = samples.to(device, non_blocking=True)
            loss, _, _ = model(samples, mask_ratio=args.mask_ratio)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
            torch.save(model.module.state_dict(), f"mae_{epoch}.pth")

    model.eval()
    total = torch.zeros(2, device=device)
    with torch.no_grad():
        for samples, _ in val_loader:
            loss, _, _ = model(samples.to(device), mask_ratio=args.mask_ratio)
            total += torch.stack([loss * samples.size(0), torch.tensor(float(samples.size(0)), device=device)])
    dist.all_reduce(total)
    if rank == 0:
        print(f"val reconstruction loss {(total[0] / total[1]).item():.4f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/datasets/imagenet")
    p.add_argument("--epochs", type=int, default=400)
    p.add_argument("--warmup-epochs", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1.5e-4)
    p.add_argument("--mask-ratio", type=float, default=0.75)
    main(p.parse_args())
