"""Semi-supervised FixMatch on CIFAR-10 with DDP: labeled and unlabeled streams."""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler

from fixmatch_data import get_cifar10_ssl
from wideresnet import WideResNet


def fixmatch_loss(model, x_l, y_l, x_uw, x_us, threshold=0.95, lambda_u=1.0):
    logits = model(torch.cat([x_l, x_uw, x_us]))
    logits_l = logits[:len(x_l)]
    logits_uw, logits_us = logits[len(x_l):].chunk(2)
    sup = F.cross_entropy(logits_l, y_l)
    probs = torch.softmax(logits_uw.detach(), dim=-1)
    conf, pseudo = probs.max(-1)
    mask = (conf >= threshold).float()
    unsup = (F.cross_entropy(logits_us, pseudo, reduction="none") * mask).mean()
    return sup + lambda_u * unsup


def main(max_epochs=1024, steps_per_epoch=1024, bs=64, mu=7):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    device = torch.device("cuda", rank % torch.cuda.device_count())
    labeled_set, unlabeled_set = get_cifar10_ssl("data", n_labeled=4000)

    labeled_sampler = DistributedSampler(labeled_set, shuffle=True)
    unlabeled_sampler = DistributedSampler(unlabeled_set, shuffle=True)
    labeled_loader = DataLoader(labeled_set, batch_size=bs, sampler=labeled_sampler, num_workers=4, drop_last=True)
    unlabeled_loader = DataLoader(unlabeled_set, batch_size=bs * mu, sampler=unlabeled_sampler, num_workers=4,
                                  drop_last=True)

    model = torch.nn.parallel.DistributedDataParallel(WideResNet(28, 2).to(device), device_ids=[device.index])
    opt = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, nesterov=True, weight_decay=5e-4)

    epoch = 0
    while epoch < max_epochs:
        unlabeled_sampler.set_epoch(epoch)
        model.train()
        l_iter, u_iter = iter(labeled_loader), iter(unlabeled_loader)
        for _ in range(steps_per_epoch):
            try:
                x_l, y_l = next(l_iter)
            except StopIteration:
                l_iter = iter(labeled_loader)
                x_l, y_l = next(l_iter)
            try:
                (x_uw, x_us), _ = next(u_iter)
            except StopIteration:
                u_iter = iter(unlabeled_loader)
                (x_uw, x_us), _ = next(u_iter)
            loss = fixmatch_loss(model, x_l.to(device), y_l.to(device), x_uw.to(device), x_us.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")
        epoch += 1


if __name__ == "__main__":
    main()
