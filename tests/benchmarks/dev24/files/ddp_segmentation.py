"""DeepLabV3 on Cityscapes, DDP. Validation every epoch on a non-shuffled distributed split."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision.models.segmentation import deeplabv3_resnet50

from cityscapes import Cityscapes


def confusion(pred, target, n):
    k = target != 255
    return torch.bincount(n * target[k] + pred[k], minlength=n * n).reshape(n, n)


def evaluate(model, loader, n_classes, device):
    model.eval()
    cm = torch.zeros(n_classes, n_classes, dtype=torch.long, device=device)
    with torch.no_grad():
        for img, mask in loader:
            out = model(img.to(device))["out"]
            cm += confusion(out.argmax(1), mask.to(device), n_classes)
    dist.all_reduce(cm)
    iou = cm.diag() / (cm.sum(0) + cm.sum(1) - cm.diag()).clamp(min=1)
    return iou.float().mean().item()


def main(epochs=120, bs=4, n_classes=19):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)

    train_ds, val_ds = Cityscapes("data/cityscapes", "train"), Cityscapes("data/cityscapes", "val")
    train_sampler = DistributedSampler(train_ds)
    val_sampler = DistributedSampler(val_ds, shuffle=False)
    train_loader = DataLoader(train_ds, batch_size=bs, sampler=train_sampler, num_workers=8, drop_last=True)
    val_loader = DataLoader(val_ds, batch_size=1, sampler=val_sampler, num_workers=4)

    model = nn.SyncBatchNorm.convert_sync_batchnorm(deeplabv3_resnet50(num_classes=n_classes)).to(device)
    model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    criterion = nn.CrossEntropyLoss(ignore_index=255)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)

    for epoch in range(epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        for img, mask in train_loader:
            out = model(img.to(device))["out"]
            loss = criterion(out, mask.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        miou = evaluate(model, val_loader, n_classes, device)
        if rank == 0:
            print(f"epoch {epoch}: mIoU {miou:.4f}")


if __name__ == "__main__":
    main()
