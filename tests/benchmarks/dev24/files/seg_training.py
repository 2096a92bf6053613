"""Binary segmentation (lesion masks) with a torchvision FCN backbone."""
import torch
from torch.nn import functional as fn
from torch.utils.data import DataLoader
from torchvision.models.segmentation import fcn_resnet50

from lesion_data import LesionDataset


def predict_mask(model, images):
    """Foreground probability for every pixel."""
    out = model(images)["out"]
    return out.sigmoid()


def soft_dice(probs, target, eps=1.0):
    probs = probs.flatten(1)
    target = target.flatten(1)
    inter = (probs * target).sum(1)
    return 1 - ((2 * inter + eps) / (probs.sum(1) + target.sum(1) + eps)).mean()


def segmentation_loss(model, images, masks, bce_weight=0.5):
    probs = predict_mask(model, images)
    bce = fn.binary_cross_entropy_with_logits(probs, masks)
    dice = soft_dice(probs, masks)
    return bce_weight * bce + (1.0 - bce_weight) * dice


def fit(model, loader, epochs=30, lr=1e-4, device="cuda"):
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for images, masks in loader:
            images, masks = images.to(device), masks.to(device)
            loss = segmentation_loss(model, images, masks)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item()
        sched.step()
        print(f"[{epoch:03d}] loss={total / len(loader):.4f}")
    return model


if __name__ == "__main__":
    net = fcn_resnet50(weights=None, num_classes=1)
    ds = LesionDataset("data/isic", split="train")
    fit(net, DataLoader(ds, batch_size=8, shuffle=True, num_workers=4))
    torch.save(net.state_dict(), "fcn_lesion.pt")
