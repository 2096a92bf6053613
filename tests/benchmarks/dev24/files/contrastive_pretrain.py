"""SimCLR pretraining, multi-GPU. Config comes from a YAML file."""
import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F
import yaml
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler as DS

from simclr.data import TwoCropsDataset
from simclr.model import SimCLR


def build_loader(dataset, batch_size, workers):
    sampler = DS(dataset, shuffle=True, drop_last=True)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=workers,
                      pin_memory=True, drop_last=True, persistent_workers=True)


def nt_xent(z1, z2, temperature=0.2):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.t() / temperature
    n = z1.size(0)
    sim.fill_diagonal_(float("-inf"))
    idx = torch.arange(n, device=z.device)
    targets = torch.cat([idx + n, idx])
    return F.cross_entropy(sim, targets)


def train_one_epoch(model, loader, optimizer, rank):
    model.train()
    for step, (x1, x2) in enumerate(loader):
        x1, x2 = x1.cuda(rank, non_blocking=True), x2.cuda(rank, non_blocking=True)
        loss = nt_xent(*model(x1, x2))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0 and step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/simclr_r18.yaml")
    cfg = yaml.safe_load(open(ap.parse_args().config))
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())

    dataset = TwoCropsDataset(cfg["data_root"], size=cfg["image_size"])
    loader = build_loader(dataset, cfg["batch_size"], cfg["workers"])
    model = DistributedDataParallel(SimCLR(cfg["arch"]).cuda(), device_ids=[torch.cuda.current_device()])
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9, weight_decay=1e-6)

    start_epoch = cfg.get("start_epoch", 0)
    for epoch in range(start_epoch, cfg["epochs"]):
        train_one_epoch(model, loader, optimizer, rank)
        if rank == 0 and (epoch + 1) % 10 == 0:
            torch.save({"epoch": epoch, "model": model.module.state_dict()}, f"simclr_{epoch + 1}.pth")


if __name__ == "__main__":
    main()
