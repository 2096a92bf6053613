"""FixMatch semi-supervised training, distributed over GPUs."""
import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from ssl_lib.datasets import get_cifar10_ssl
from ssl_lib.models import WideResNet


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--num-labeled", type=int, default=4000)
    ap.add_argument("--epochs", type=int, default=1024)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--mu", type=int, default=7)
    ap.add_argument("--threshold", type=float, default=0.95)
    ap.add_argument("--lambda-u", type=float, default=1.0)
    ap.add_argument("--local_rank", type=int, default=0)
    args = ap.parse_args()

    dist.init_process_group("nccl")
    torch.cuda.set_device(args.local_rank)
    device = torch.device("cuda", args.local_rank)
    labeled_set, unlabeled_set, _ = get_cifar10_ssl("./data", args.num_labeled)

    labeled_sampler = DistributedSampler(labeled_set)
    unlabeled_sampler = DistributedSampler(unlabeled_set)
    labeled_loader = DataLoader(labeled_set, batch_size=args.batch_size, sampler=labeled_sampler,
                                num_workers=4, drop_last=True)
    unlabeled_loader = DataLoader(unlabeled_set, batch_size=args.batch_size * args.mu, sampler=unlabeled_sampler,
                                  num_workers=4, drop_last=True)

    model = WideResNet(depth=28, widen_factor=2, num_classes=10).to(device)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, nesterov=True, weight_decay=5e-4)

    for epoch in range(args.epochs):
        labeled_sampler.set_epoch(epoch)
        model.train()
        for (x_l, y_l), ((x_w, x_s), _) in zip(labeled_loader, unlabeled_loader):
            bs = x_l.size(0)
            inputs = torch.cat([x_l, x_w, x_s]).to(device, non_blocking=True)
            y_l = y_l.to(device, non_blocking=True)
            logits = model(inputs)
            logits_l = logits[:bs]
            logits_w, logits_s = logits[bs:].chunk(2)
            loss_l = F.cross_entropy(logits_l, y_l)
            pseudo = torch.softmax(logits_w.detach(), dim=-1)
            conf, targets_u = pseudo.max(dim=-1)
            mask = conf.ge(args.threshold).float()
            loss_u = (F.cross_entropy(logits_s, targets_u, reduction="none") * mask).mean()
            loss = loss_l + args.lambda_u * loss_u
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: Lx {loss_l.item():.3f} Lu {loss_u.item():.3f} mask {mask.mean().item():.2f}")


if __name__ == "__main__":
    main()
