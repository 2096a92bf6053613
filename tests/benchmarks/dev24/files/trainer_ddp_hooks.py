"""A tiny generic trainer used across our DDP experiments."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def set_loader_epoch(loader, epoch):
    """Reshuffle distributed samplers (no-op for other samplers)."""
    sampler = getattr(loader, "sampler", None)
    if isinstance(sampler, DistributedSampler):
        sampler.set_epoch(epoch)


class DDPTrainer:
    def __init__(self, model, optimizer, loss_fn, train_set, batch_size=64, epochs=50, device="cuda"):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.epochs = epochs
        self.device = device
        self.sampler = DistributedSampler(train_set, shuffle=True, seed=1234)
        self.loader = DataLoader(train_set, batch_size=batch_size, sampler=self.sampler, num_workers=4,
                                 pin_memory=True)

    def _step(self, x, y):
        loss = self.loss_fn(self.model(x.to(self.device)), y.to(self.device))
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def train_epoch(self):
        self.model.train()
        total = torch.zeros((), device=self.device)
        for x, y in self.loader:
            total += self._step(x, y)
        dist.all_reduce(total)
        return total.item() / (len(self.loader) * dist.get_world_size())

    def fit(self):
        for epoch in range(self.epochs):
            set_loader_epoch(self.loader, epoch)
            loss = self.train_epoch()
            if dist.get_rank() == 0:
                print(f"epoch {epoch}: loss {loss:.4f}")
