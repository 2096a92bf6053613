import argparse
import time

import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast
import torchvision
from torchvision import transforms


def get_args():
    p = argparse.ArgumentParser("mixed-precision ImageNet training with gradient accumulation")
    p.add_argument("--data", default="/datasets/imagenet")
    p.add_argument("--arch", default="resnet50")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--accum-iter", type=int, default=4, help="effective batch = batch-size * accum-iter")
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--lr", type=float, default=0.1)
    return p.parse_args()


def main():
    args = get_args()
    device = torch.device("cuda")
    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    train_set = torchvision.datasets.ImageFolder(f"{args.data}/train", tf)
    loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=12,
                                         pin_memory=True, drop_last=True)
    model = torchvision.models.__dict__[args.arch]().to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    scaler = GradScaler()

    for epoch in range(args.epochs):
        model.train()
        t0 = time.time()
        optimizer.zero_grad(set_to_none=True)
        for it, (images, target) in enumerate(loader):
            images = images.to(device, non_blocking=True)
            target = target.to(device, non_blocking=True)
            with autocast():
                output = model(images)
                loss = criterion(output, target)
            scaler.scale(loss).backward()
            if (it + 1) % args.accum_iter == 0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
            if it % 200 == 0:
                print(f"[{epoch}][{it}/{len(loader)}] loss {loss.item():.3f} {time.time() - t0:.0f}s")
        torch.save(model.state_dict(), f"{args.arch}_e{epoch}.pth")


if __name__ == "__main__":
    main()
