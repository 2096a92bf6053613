"""Keyword spotting (Speech Commands) trainer with micro-batching to fit a small GPU."""
import torch
import torch.nn as nn


class KWSTrainer:
    def __init__(self, model, lr=1e-3, accum_steps=4, device="cuda"):
        self.model = model.to(device)
        self.device = device
        self.criterion = nn.CrossEntropyLoss(label_smoothing=0.05)
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-2)
        self.accum_steps = accum_steps
        self._micro = 0
        self.updates = 0

    def _compute_loss(self, batch):
        feats, labels = batch
        feats = feats.to(self.device, non_blocking=True)
        labels = labels.to(self.device, non_blocking=True)
        logits = self.model(feats)
        return self.criterion(logits, labels), logits, labels

    def train_step(self, batch):
        loss, logits, labels = self._compute_loss(batch)
        loss.backward()
        self._micro += 1
        if self._micro == self.accum_steps:
            nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            self._micro = 0
            self.updates += 1
        acc = (logits.argmax(-1) == labels).float().mean().item()
        return loss.item(), acc

    def train_epoch(self, loader):
        self.model.train()
        losses, accs = [], []
        for batch in loader:
            l, a = self.train_step(batch)
            losses.append(l)
            accs.append(a)
        return sum(losses) / len(losses), sum(accs) / len(accs)

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        correct = total = 0
        for feats, labels in loader:
            pred = self.model(feats.to(self.device)).argmax(-1).cpu()
            correct += (pred == labels).sum().item()
            total += labels.numel()
        return correct / total

    def fit(self, train_loader, val_loader, epochs):
        best = 0.0
        for epoch in range(epochs):
            loss, acc = self.train_epoch(train_loader)
            val = self.evaluate(val_loader)
            if val > best:
                best = val
                torch.save(self.model.state_dict(), "kws_best.pt")
            print(f"epoch {epoch}: loss {loss:.3f} acc {acc:.3f} val {val:.3f} (best {best:.3f})")
