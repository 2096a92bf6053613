"""Distributed trainer for semantic segmentation (Cityscapes)."""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler


class SegTrainer:
    def __init__(self, model, train_set, val_set, cfg):
        self.cfg = cfg
        self.rank = dist.get_rank()
        self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        self.model = DistributedDataParallel(model.to(self.device), device_ids=[self.device.index])
        self.train_sampler = DistributedSampler(train_set, num_replicas=dist.get_world_size(), rank=self.rank)
        self.train_loader = DataLoader(train_set, batch_size=cfg.batch_size, sampler=self.train_sampler,
                                       num_workers=cfg.workers, drop_last=True, pin_memory=True)
        self.val_sampler = DistributedSampler(val_set, shuffle=False)
        self.val_loader = DataLoader(val_set, batch_size=1, sampler=self.val_sampler, num_workers=cfg.workers)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=0.9, weight_decay=1e-4)
        self.max_iters = cfg.epochs * len(self.train_loader)
        self.iter = 0

    def _poly_lr(self):
        lr = self.cfg.lr * (1 - self.iter / self.max_iters) ** 0.9
        for g in self.optimizer.param_groups:
            g["lr"] = lr

    def _train_one_epoch(self, epoch):
        self.model.train()
        for images, labels in self.train_loader:
            images = images.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            logits = self.model(images)
            logits = F.interpolate(logits, size=labels.shape[-2:], mode="bilinear", align_corners=False)
            loss = F.cross_entropy(logits, labels, ignore_index=255)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self._poly_lr()
            self.iter += 1
        if self.rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")

    @torch.no_grad()
    def _validate(self):
        self.model.eval()
        n_cls = self.cfg.num_classes
        hist = torch.zeros(n_cls, n_cls, device=self.device)
        for images, labels in self.val_loader:
            pred = self.model(images.to(self.device)).argmax(1)
            labels = labels.to(self.device)
            k = labels != 255
            hist += torch.bincount(n_cls * labels[k] + pred[k], minlength=n_cls ** 2).view(n_cls, n_cls)
        dist.all_reduce(hist)
        iou = hist.diag() / (hist.sum(0) + hist.sum(1) - hist.diag()).clamp(min=1)
        return iou.mean().item()

    def train(self):
        best = 0.0
        for epoch in range(self.cfg.epochs):
            self._train_one_epoch(epoch)
            if (epoch + 1) % self.cfg.val_every == 0:
                miou = self._validate()
                if self.rank == 0 and miou > best:
                    best = miou
                    torch.save(self.model.module.state_dict(), os.path.join(self.cfg.out_dir, "best.pth"))
        return best
