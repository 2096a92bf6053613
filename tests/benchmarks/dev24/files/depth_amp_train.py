"""Monocular depth regression with mixed precision and gradient accumulation."""
import argparse

import torch
import torch.nn.functional as F
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader

from depth_models import UNetDepth
from nyu import NYUDepthV2

ACCUM = 4


def scale_invariant_loss(pred, target, lam=0.85):
    valid = target > 0
    d = torch.log(pred[valid].clamp(min=1e-3)) - torch.log(target[valid])
    return torch.sqrt((d ** 2).mean() - lam * d.mean() ** 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="data/nyu")
    ap.add_argument("--epochs", type=int, default=25)
    ap.add_argument("--bs", type=int, default=4)
    args = ap.parse_args()

    model = UNetDepth(pretrained=True).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    scaler = GradScaler()
    loader = DataLoader(NYUDepthV2(args.root, "train"), batch_size=args.bs, shuffle=True,
                        num_workers=8, pin_memory=True, drop_last=True)

    for epoch in range(args.epochs):
        model.train()
        for it, (rgb, depth) in enumerate(loader):
            rgb, depth = rgb.cuda(non_blocking=True), depth.cuda(non_blocking=True)
            with autocast():
                pred = model(rgb)
                pred = F.interpolate(pred, size=depth.shape[-2:], mode="bilinear", align_corners=False)
                loss = scale_invariant_loss(pred.float(), depth)
            scaler.scale(loss).backward()
            if (it + 1) % ACCUM == 0:
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)
            if it % 200 == 0:
                print(f"epoch {epoch} it {it} silog {loss.item():.4f}")
        torch.save(model.state_dict(), f"depth_e{epoch}.pt")


if __name__ == "__main__":
    main()
