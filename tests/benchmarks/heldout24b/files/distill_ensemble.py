"""Distil an ensemble of teachers into one student; report the ensemble's NLL."""
import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from models import resnet18, resnet50


def kd_loss(student_logits, teacher_logits, labels, T=4.0, alpha=0.9):
    soft_targets = F.softmax(teacher_logits / T, dim=1)
    log_student = F.log_softmax(student_logits / T, dim=1)
    distill = F.kl_div(log_student, soft_targets, reduction="batchmean") * (T * T)
    hard = F.nll_loss(F.log_softmax(student_logits, dim=1), labels)
    return alpha * distill + (1 - alpha) * hard


@torch.no_grad()
def ensemble_nll(teachers, loader, device):
    total, n = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        probs_ens = torch.stack([F.softmax(t(x), dim=1) for t in teachers]).mean(dim=0)
        total += F.nll_loss(torch.log(probs_ens + 1e-8), y, reduction="sum").item()
        n += y.numel()
    return total / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--teachers", nargs="+", required=True)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--T", type=float, default=4.0)
    args = ap.parse_args()
    device = "cuda"
    norm = transforms.Normalize((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762))
    train_tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), norm])
    train_loader = DataLoader(datasets.CIFAR100("data", train=True, transform=train_tf, download=True),
                              batch_size=128, shuffle=True, num_workers=4)
    test_loader = DataLoader(datasets.CIFAR100("data", train=False,
                                               transform=transforms.Compose([transforms.ToTensor(), norm])),
                             batch_size=256, num_workers=4)
    teachers = []
    for path in args.teachers:
        t = resnet50(num_classes=100).to(device)
        t.load_state_dict(torch.load(path, map_location=device))
        t.eval()
        teachers.append(t)
    print("ensemble NLL", ensemble_nll(teachers, test_loader, device))

    student = resnet18(num_classes=100).to(device)
    opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.epochs)
    for epoch in range(args.epochs):
        student.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            with torch.no_grad():
                t_logits = torch.stack([t(x) for t in teachers]).mean(dim=0)
            loss = kd_loss(student(x), t_logits, y, T=args.T)
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
