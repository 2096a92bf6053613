"""Joint identity classification + occlusion flag on face crops."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiTaskHead(nn.Module):
    def __init__(self, backbone, feat_dim, num_ids):
        super().__init__()
        self.backbone = backbone
        self.id_head = nn.Linear(feat_dim, num_ids)
        self.occ_head = nn.Sequential(nn.Linear(feat_dim, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        feat = self.backbone(x).flatten(1)
        id_logits = self.id_head(feat)
        id_probs = torch.softmax(id_logits, dim=-1)
        occluded = torch.sigmoid(self.occ_head(feat)).squeeze(-1)
        return id_logits, id_probs, occluded


class Trainer:
    def __init__(self, model, optimizer, device, occ_weight=0.3):
        self.model = model.to(device)
        self.optimizer = optimizer
        self.device = device
        self.occ_weight = occ_weight

    def losses(self, images, ids, occ):
        _, probs, occ_pred = self.model(images)
        id_loss = F.nll_loss(probs, ids)
        occ_loss = F.binary_cross_entropy_with_logits(occ_pred, occ.float())
        return id_loss, occ_loss

    def train_epoch(self, loader):
        self.model.train()
        stats = {"id": 0.0, "occ": 0.0}
        for images, ids, occ in loader:
            images = images.to(self.device)
            ids, occ = ids.to(self.device), occ.to(self.device)
            id_loss, occ_loss = self.losses(images, ids, occ)
            loss = id_loss + self.occ_weight * occ_loss
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            stats["id"] += id_loss.item()
            stats["occ"] += occ_loss.item()
        return {k: v / len(loader) for k, v in stats.items()}

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        hits = n = 0
        for images, ids, _ in loader:
            logits, _, _ = self.model(images.to(self.device))
            hits += (logits.argmax(-1).cpu() == ids).sum().item()
            n += ids.numel()
        return hits / max(n, 1)

    def fit(self, train_loader, val_loader, epochs):
        for epoch in range(epochs):
            stats = self.train_epoch(train_loader)
            acc = self.evaluate(val_loader)
            print(epoch, stats, f"val_acc={acc:.3f}")
