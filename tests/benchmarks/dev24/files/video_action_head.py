"""3D-CNN action recognition head (R(2+1)D features -> classes), UCF101."""
import torch
import torch.nn as nn

from video_backbones import r2plus1d_18_features


class ActionHead(nn.Module):
    def __init__(self, in_ch=512, num_classes=101, feat_drop=0.2, clip_drop=0.1):
        super().__init__()
        self.feat_drop = feat_drop
        self.clip_drop = clip_drop
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(in_ch, num_classes)

    def forward(self, feats):
        # feats: (B, C, T, H, W)
        feats = nn.functional.dropout3d(feats, p=self.feat_drop)
        pooled = self.pool(feats).flatten(1)
        pooled = nn.functional.feature_alpha_dropout(pooled, self.clip_drop)
        return self.fc(pooled)


class ActionRecognizer(nn.Module):
    def __init__(self, num_classes=101, freeze_backbone=True):
        super().__init__()
        self.backbone = r2plus1d_18_features(pretrained=True)
        if freeze_backbone:
            for p in self.backbone.parameters():
                p.requires_grad_(False)
        self.head = ActionHead(num_classes=num_classes)

    def forward(self, clips):
        return self.head(self.backbone(clips))


def clip_accuracy(model, loader, device="cuda"):
    model.eval()
    hits = n = 0
    with torch.no_grad():
        for clips, labels in loader:
            logits = model(clips.to(device))
            hits += (logits.argmax(1).cpu() == labels).sum().item()
            n += labels.numel()
    return hits / n


def train(model, loader, epochs=10, device="cuda"):
    model.to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        for clips, labels in loader:
            clips, labels = clips.to(device), labels.to(device)
            loss = loss_fn(model(clips), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(epoch, loss.item())
