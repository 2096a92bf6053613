"""Person re-identification training on several GPUs (triplet + ID loss)."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler

from reid.datasets import Market1501
from reid.losses import TripletLoss
from reid.models import build_backbone


def train_one_epoch(model, loader, optimizer, id_loss, tri_loss, device, epoch):
    if isinstance(loader.sampler, DistributedSampler):
        loader.sampler.set_epoch(epoch)
    model.train()
    meter = 0.0
    for imgs, pids, _ in loader:
        imgs, pids = imgs.to(device), pids.to(device)
        feats, logits = model(imgs)
        loss = id_loss(logits, pids) + tri_loss(feats, pids)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        meter += loss.item()
    return meter / len(loader)


@torch.no_grad()
def extract(model, loader, device):
    model.eval()
    feats, pids, cams = [], [], []
    for imgs, pid, cam in loader:
        f, _ = model(imgs.to(device))
        feats.append(nn.functional.normalize(f, dim=1).cpu())
        pids.append(pid)
        cams.append(cam)
    return torch.cat(feats), torch.cat(pids), torch.cat(cams)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="data/market1501")
    ap.add_argument("--epochs", type=int, default=120)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device(f"cuda:{local_rank}")
    torch.cuda.set_device(device)

    data = Market1501(args.root)
    train_loader = DataLoader(data.train, batch_size=args.batch_size, sampler=DistributedSampler(data.train),
                              num_workers=8, drop_last=True)
    query_loader = DataLoader(data.query, batch_size=256, sampler=DistributedSampler(data.query, shuffle=False))

    model = build_backbone("resnet50_ibn", num_classes=data.num_train_pids).to(device)
    model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.Adam(model.parameters(), lr=3.5e-4, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[40, 70], gamma=0.1)
    id_loss = nn.CrossEntropyLoss(label_smoothing=0.1)
    tri_loss = TripletLoss(margin=0.3)

    for epoch in range(args.epochs):
        loss = train_one_epoch(model, train_loader, optimizer, id_loss, tri_loss, device, epoch)
        scheduler.step()
        if (epoch + 1) % 10 == 0:
            qf, qp, qc = extract(model, query_loader, device)
            if dist.get_rank() == 0:
                print(f"epoch {epoch}: loss {loss:.4f}, query feats {tuple(qf.shape)}")


if __name__ == "__main__":
    main()
