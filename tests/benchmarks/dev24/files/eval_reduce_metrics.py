"""Distributed evaluation helpers (metrics summed across ranks)."""
import torch
import torch.distributed as dist
import torch.nn as nn


def reduce_across_processes(val):
    if not (dist.is_available() and dist.is_initialized()):
        return torch.tensor(val)
    t = torch.tensor(val).cuda()
    dist.barrier()
    dist.all_reduce(t)
    return t


class ClassifierHead(nn.Module):
    def __init__(self, in_dim, n_classes, temperature=1.0):
        super().__init__()
        self.fc = nn.Linear(in_dim, n_classes)
        self.register_buffer("temperature", torch.tensor(temperature))
        self.register_buffer("class_prior", torch.full((n_classes,), 1.0 / n_classes))

    def forward(self, feats):
        logits = self.fc(feats) / self.temperature
        return logits + self.class_prior.log()


@torch.inference_mode()
def evaluate(model, loader, device, topk=(1, 5)):
    model.eval()
    correct = torch.zeros(len(topk), device=device)
    seen = 0
    for images, target in loader:
        images, target = images.to(device, non_blocking=True), target.to(device, non_blocking=True)
        out = model(images)
        pred = out.topk(max(topk), dim=1).indices
        hits = pred.eq(target[:, None])
        for i, k in enumerate(topk):
            correct[i] += hits[:, :k].any(1).sum()
        seen += target.numel()
    totals = reduce_across_processes([seen])
    dist.all_reduce(correct)
    return {f"top{k}": (correct[i] / totals[0]).item() for i, k in enumerate(topk)}


def calibrate_temperature(head, logits_loader, device, steps=50):
    """Fit the temperature on held-out logits (LBFGS, a handful of steps)."""
    t = nn.Parameter(torch.ones(1, device=device))
    opt = torch.optim.LBFGS([t], lr=0.01, max_iter=steps)
    logits, labels = zip(*[(l.to(device), y.to(device)) for l, y in logits_loader])
    logits, labels = torch.cat(logits), torch.cat(labels)

    def closure():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(logits / t, labels)
        loss.backward()
        return loss

    opt.step(closure)
    head.temperature.fill_(t.item())
    return t.item()
