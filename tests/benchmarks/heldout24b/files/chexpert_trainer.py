"""Multi-label chest X-ray classifier trainer (14 findings)."""
import logging
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from sklearn.metrics import roc_auc_score

log = logging.getLogger(__name__)

FINDINGS = [
    "No Finding", "Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity",
    "Lung Lesion", "Edema", "Consolidation", "Pneumonia", "Atelectasis",
    "Pneumothorax", "Pleural Effusion", "Pleural Other", "Fracture", "Support Devices",
]


class MultiLabelTrainer:
    def __init__(self, model, train_loader, val_loader, pos_weight, lr=1e-4, device="cuda"):
        self.model = model.to(device)
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.device = device
        self.criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight.to(device))
        self.optimizer = optim.Adam(self.model.parameters(), lr=lr, betas=(0.9, 0.999))
        self.scheduler = optim.lr_scheduler.ReduceLROnPlateau(self.optimizer, mode="max", patience=2)
        self.history = []

    def _forward(self, images):
        logits = self.model(images)
        probs = logits.sigmoid()
        return probs, logits

    def train_epoch(self):
        self.model.train()
        running, n = 0.0, 0
        start = time.time()
        for images, labels in self.train_loader:
            images = images.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True).float()
            probs, _ = self._forward(images)
            loss = self.criterion(probs, labels)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            running += loss.item() * images.size(0)
            n += images.size(0)
        log.info("train loss %.4f (%.0fs)", running / n, time.time() - start)
        return running / n

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        all_probs, all_labels, val_loss = [], [], 0.0
        for images, labels in self.val_loader:
            images = images.to(self.device)
            labels = labels.to(self.device).float()
            probs, logits = self._forward(images)
            val_loss += self.criterion(logits, labels).item()
            all_probs.append(probs.cpu().numpy())
            all_labels.append(labels.cpu().numpy())
        probs = np.concatenate(all_probs)
        labels = np.concatenate(all_labels)
        aucs = []
        for k, name in enumerate(FINDINGS):
            if labels[:, k].min() != labels[:, k].max():
                aucs.append(roc_auc_score(labels[:, k], probs[:, k]))
        mean_auc = float(np.mean(aucs)) if aucs else 0.0
        log.info("val loss %.4f mean AUC %.4f", val_loss / len(self.val_loader), mean_auc)
        return mean_auc

    def fit(self, epochs, ckpt_path="chexpert_best.pt"):
        best = -1.0
        for epoch in range(epochs):
            tr = self.train_epoch()
            auc = self.validate()
            self.scheduler.step(auc)
            self.history.append((epoch, tr, auc))
            if auc > best:
                best = auc
                torch.save(self.model.state_dict(), ckpt_path)
        return best
