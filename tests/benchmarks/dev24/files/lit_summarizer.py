"""Abstractive summarisation with PyTorch Lightning; accumulation is configured on the Trainer."""
import argparse

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from cnndm import CNNDailyMail


class Summarizer(pl.LightningModule):
    def __init__(self, model_name="t5-small", lr=3e-4):
        super().__init__()
        self.save_hyperparameters()
        self.model = AutoModelForSeq2SeqLM.from_pretrained(model_name)

    def training_step(self, batch, batch_idx):
        out = self.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                         labels=batch["labels"])
        self.log("train_loss", out.loss, prog_bar=True)
        return out.loss

    def validation_step(self, batch, batch_idx):
        out = self.model(**batch)
        self.log("val_loss", out.loss, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)


class ManualAccumSummarizer(Summarizer):
    """Same model with manual optimisation (needed for the two-optimizer variant)."""

    def __init__(self, accum=4, **kw):
        super().__init__(**kw)
        self.automatic_optimization = False
        self.accum = accum

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        out = self.model(**batch)
        self.manual_backward(out.loss / self.accum)
        if (batch_idx + 1) % self.accum == 0:
            opt.step()
            opt.zero_grad()
        self.log("train_loss", out.loss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--accumulate", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    tok = AutoTokenizer.from_pretrained("t5-small")
    train_dl = DataLoader(CNNDailyMail("train", tok), batch_size=8, shuffle=True, num_workers=4)
    val_dl = DataLoader(CNNDailyMail("validation", tok), batch_size=16, num_workers=4)
    trainer = pl.Trainer(max_epochs=args.epochs, accumulate_grad_batches=args.accumulate,
                         gradient_clip_val=1.0, precision="16-mixed")
    trainer.fit(Summarizer(), train_dl, val_dl)


if __name__ == "__main__":
    main()
