"""ViT fine-tuning on Food-101 with HF accelerate (gradient accumulation handled by accelerate)."""
import argparse

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from torch.utils.data import DataLoader
from transformers import ViTForImageClassification

from food import build_food101


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--accum", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--lr", type=float, default=3e-5)
    args = ap.parse_args()

    accelerator = Accelerator(gradient_accumulation_steps=args.accum, mixed_precision="bf16")
    model = ViTForImageClassification.from_pretrained("google/vit-base-patch16-224", num_labels=101,
                                                      ignore_mismatched_sizes=True)
    train_ds, val_ds = build_food101("data/food-101")
    train_dl = DataLoader(train_ds, batch_size=32, shuffle=True, num_workers=8)
    val_dl = DataLoader(val_ds, batch_size=64, num_workers=8)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    model, optimizer, train_dl, val_dl = accelerator.prepare(model, optimizer, train_dl, val_dl)

    for epoch in range(args.epochs):
        model.train()
        for step, (pixels, labels) in enumerate(train_dl):
            with accelerator.accumulate(model):
                logits = model(pixel_values=pixels).logits
                loss = F.cross_entropy(logits, labels)
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
            if step % 100 == 0:
                accelerator.print(f"epoch {epoch} step {step} loss {loss.item():.4f}")

        model.eval()
        correct = total = 0
        with torch.no_grad():
            for pixels, labels in val_dl:
                preds = model(pixel_values=pixels).logits.argmax(-1)
                preds, labels = accelerator.gather_for_metrics((preds, labels))
                correct += (preds == labels).sum().item()
                total += labels.numel()
        accelerator.print(f"epoch {epoch}: top-1 {correct / total:.4f}")
    accelerator.wait_for_everyone()
    accelerator.save_state("vit_food101")


if __name__ == "__main__":
    main()
