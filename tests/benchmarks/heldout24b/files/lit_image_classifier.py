"""LightningModule for fine-tuning an image classifier on a multi-GPU node."""
import argparse

import pytorch_lightning as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchmetrics.classification import MulticlassAccuracy


class LitClassifier(pl.LightningModule):
    def __init__(self, data_dir, num_classes=200, lr=1e-3, batch_size=64, use_ddp_sampler=True):
        super().__init__()
        self.save_hyperparameters()
        backbone = torchvision.models.resnet50(weights="IMAGENET1K_V2")
        backbone.fc = nn.Linear(backbone.fc.in_features, num_classes)
        self.net = backbone
        self.val_acc = MulticlassAccuracy(num_classes=num_classes)

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.val_acc(logits.softmax(dim=-1), y)
        self.log("val/acc", self.val_acc, on_epoch=True)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.05)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.trainer.max_epochs)
        return [opt], [sched]

    def train_dataloader(self):
        ds = torchvision.datasets.ImageFolder(f"{self.hparams.data_dir}/train", transform=train_transform())
        sampler = DistributedSampler(ds) if self.hparams.use_ddp_sampler else None
        return DataLoader(ds, batch_size=self.hparams.batch_size, sampler=sampler, shuffle=sampler is None,
                          num_workers=8)

    def val_dataloader(self):
        ds = torchvision.datasets.ImageFolder(f"{self.hparams.data_dir}/val", transform=eval_transform())
        return DataLoader(ds, batch_size=self.hparams.batch_size, num_workers=8)


def train_transform():
    T = torchvision.transforms
    return T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                      T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])


def eval_transform():
    T = torchvision.transforms
    return T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                      T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/cub200")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--accumulate", type=int, default=4)
    args = ap.parse_args()
    model = LitClassifier(args.data)
    trainer = pl.Trainer(accelerator="gpu", devices=4, strategy="ddp", max_epochs=args.epochs,
                         accumulate_grad_batches=args.accumulate, use_distributed_sampler=False,
                         precision="16-mixed")
    trainer.fit(model)
