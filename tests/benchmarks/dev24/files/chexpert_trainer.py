"""Multi-label chest X-ray classifier; AUROC is computed on probabilities."""
import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import roc_auc_score


class ChexTrainer:
    def __init__(self, model, optimizer, scheduler=None, device="cuda", log_every=50):
        self.model = model.to(device)
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.device = device
        self.log_every = log_every
        self.step = 0

    def _forward(self, batch):
        images = batch["image"].to(self.device, non_blocking=True)
        labels = batch["labels"].to(self.device, non_blocking=True).float()
        logits = self.model(images)
        return logits, labels

    def training_step(self, batch):
        logits, labels = self._forward(batch)
        probs = torch.sigmoid(logits)
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()
        self.step += 1
        if self.step % self.log_every == 0:
            hit = ((probs > 0.5) == labels.bool()).float().mean()
            print(f"step {self.step}: loss {loss.item():.4f} acc {hit.item():.3f}")
        return loss.detach()

    @torch.no_grad()
    def validate(self, loader):
        self.model.eval()
        all_probs, all_labels, total = [], [], 0.0
        for batch in loader:
            logits, labels = self._forward(batch)
            total += F.binary_cross_entropy_with_logits(logits, labels, reduction="sum").item()
            all_probs.append(torch.sigmoid(logits).cpu().numpy())
            all_labels.append(labels.cpu().numpy())
        self.model.train()
        probs, labels = np.concatenate(all_probs), np.concatenate(all_labels)
        aucs = [roc_auc_score(labels[:, k], probs[:, k]) for k in range(labels.shape[1])]
        return total / len(probs), float(np.mean(aucs))

    def train_epoch(self, loader):
        self.model.train()
        for batch in loader:
            self.training_step(batch)


class SoftmaxMetricsMixin:
    """For the single-label variant: loss on logits, softmax only for calibration stats."""

    def single_label_step(self, images, targets):
        logits = self.model(images)
        probs = F.softmax(logits, dim=-1)
        loss = F.cross_entropy(logits, targets, label_smoothing=0.1)
        confidence = probs.max(dim=-1).values.mean()
        return loss, confidence
