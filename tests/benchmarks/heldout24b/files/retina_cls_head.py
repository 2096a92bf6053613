"""Dense classification head for a single-stage detector, trained with sigmoid focal loss."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sigmoid_focal_loss(logits, targets, alpha=0.25, gamma=2.0, reduction="sum"):
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * ((1 - p_t) ** gamma)
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    return loss.sum() if reduction == "sum" else loss.mean()


class ClassificationHead(nn.Module):
    def __init__(self, in_channels, num_anchors, num_classes, prior=0.01, num_convs=4):
        super().__init__()
        layers = []
        for _ in range(num_convs):
            layers += [nn.Conv2d(in_channels, in_channels, 3, padding=1), nn.GroupNorm(32, in_channels), nn.ReLU()]
        self.tower = nn.Sequential(*layers)
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, 3, padding=1)
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior) / prior))
        self.num_classes = num_classes

    def forward(self, features):
        outs = []
        for f in features:
            x = self.cls_logits(self.tower(f))
            n, _, h, w = x.shape
            x = x.view(n, -1, self.num_classes, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, self.num_classes)
            outs.append(x)
        logits = torch.cat(outs, dim=1)
        if not self.training:
            return torch.sigmoid(logits)
        return logits


class DetectorLoss(nn.Module):
    def __init__(self, num_classes, use_focal=True):
        super().__init__()
        self.num_classes = num_classes
        self.use_focal = use_focal
        self.bce = nn.BCEWithLogitsLoss(reduction="sum")

    def forward(self, cls_logits, matched_labels, valid_mask):
        target = F.one_hot(matched_labels.clamp(min=0), self.num_classes).float()
        target[matched_labels < 0] = 0.0
        num_pos = max((matched_labels >= 0).sum().item(), 1)
        logits = cls_logits[valid_mask]
        target = target[valid_mask]
        if self.use_focal:
            return sigmoid_focal_loss(logits, target) / num_pos
        return self.bce(logits, target) / num_pos


def train_step(backbone, head, criterion, optimizer, images, matched_labels, valid_mask):
    head.train()
    feats = backbone(images)
    cls_logits = head(feats)
    loss = criterion(cls_logits, matched_labels, valid_mask)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
    optimizer.step()
    return loss.item()
