"""CTC acoustic-model trainer with gradient accumulation for long utterances."""
import math

import torch
import torch.nn as nn


class CTCTrainer:
    def __init__(self, model, optimizer, train_loader, blank=0, grad_accum=8, clip=5.0, device="cuda"):
        self.model = model.to(device)
        self.optimizer = optimizer
        self.train_loader = train_loader
        self.ctc = nn.CTCLoss(blank=blank, reduction="mean", zero_infinity=True)
        self.grad_accum = grad_accum
        self.clip = clip
        self.device = device
        self._micro = 0
        self.updates = 0

    def _compute_loss(self, feats, feat_lens, targets, target_lens):
        log_probs = self.model(feats).log_softmax(dim=-1)
        out_lens = self.model.output_lengths(feat_lens)
        return self.ctc(log_probs.transpose(0, 1), targets, out_lens, target_lens)

    def _maybe_step(self):
        self._micro += 1
        if self._micro < self.grad_accum:
            return False
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        if math.isfinite(grad_norm):
            self.optimizer.step()
        self.optimizer.zero_grad()
        self._micro = 0
        self.updates += 1
        return True

    def train_epoch(self, epoch):
        self.model.train()
        total, count = 0.0, 0
        for feats, feat_lens, targets, target_lens in self.train_loader:
            feats = feats.to(self.device)
            targets = targets.to(self.device)
            loss = self._compute_loss(feats, feat_lens, targets, target_lens)
            loss.backward()
            stepped = self._maybe_step()
            total += loss.item()
            count += 1
            if stepped and self.updates % 50 == 0:
                print(f"epoch {epoch} update {self.updates} loss {total / count:.3f}")
        return total / max(count, 1)

    def fit(self, epochs):
        for epoch in range(epochs):
            avg = self.train_epoch(epoch)
            print(f"epoch {epoch} done, avg loss {avg:.3f}")
            torch.save({"model": self.model.state_dict(), "updates": self.updates}, f"ctc_ep{epoch}.pt")
