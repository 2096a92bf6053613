"""Lightning DataModule that builds its own DistributedSampler (legacy code path)."""
import pytorch_lightning as pl
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms


class CIFARDataModule(pl.LightningDataModule):
    def __init__(self, root="data", batch_size=128):
        super().__init__()
        self.root, self.batch_size = root, batch_size

    def setup(self, stage=None):
        tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor()])
        self.train_set = datasets.CIFAR10(self.root, train=True, download=True, transform=tf)
        self.val_set = datasets.CIFAR10(self.root, train=False, transform=transforms.ToTensor())

    def train_dataloader(self):
        sampler = None
        if dist.is_available() and dist.is_initialized():
            sampler = DistributedSampler(self.train_set, shuffle=True)
        return DataLoader(self.train_set, batch_size=self.batch_size, sampler=sampler,
                          shuffle=sampler is None, num_workers=8)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=256, num_workers=8)


class LitResNet(pl.LightningModule):
    def __init__(self, net: nn.Module, lr=0.05):
        super().__init__()
        self.net, self.lr = net, lr

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_acc", (self.net(x).argmax(1) == y).float().mean(), sync_dist=True)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9, weight_decay=5e-4)
        return [opt], [torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.trainer.max_epochs)]


if __name__ == "__main__":
    from torchvision.models import resnet18

    trainer = pl.Trainer(max_epochs=30, accelerator="gpu", devices=4, strategy="ddp",
                         use_distributed_sampler=False)
    trainer.fit(LitResNet(resnet18(num_classes=10)), datamodule=CIFARDataModule())
