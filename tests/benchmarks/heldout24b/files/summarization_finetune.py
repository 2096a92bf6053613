"""Fine-tune a seq2seq summariser (BART/T5) with gradient accumulation and AMP."""
import argparse
import math

import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq, get_scheduler

from sum_data import load_cnn_dm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="facebook/bart-base")
    ap.add_argument("--batch_size", type=int, default=4)
    ap.add_argument("--accumulation_steps", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=3e-5)
    args = ap.parse_args()

    device = "cuda"
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForSeq2SeqLM.from_pretrained(args.model).to(device)
    train_ds = load_cnn_dm(tok, "train")
    collator = DataCollatorForSeq2Seq(tok, model=model)
    loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, collate_fn=collator)

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    updates_per_epoch = math.ceil(len(loader) / args.accumulation_steps)
    scheduler = get_scheduler("linear", optimizer, num_warmup_steps=500,
                              num_training_steps=updates_per_epoch * args.epochs)
    scaler = torch.cuda.amp.GradScaler()

    step = 0
    for epoch in range(args.epochs):
        model.train()
        for i, batch in enumerate(loader):
            batch = {k: v.to(device) for k, v in batch.items()}
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(**batch).loss
                loss = loss / args.accumulation_steps
            scaler.scale(loss).backward()
            last = i + 1 == len(loader)
            if (i + 1) % args.accumulation_steps == 0 or last:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                optimizer.zero_grad()
                step += 1
                if step % 50 == 0:
                    print(f"epoch {epoch} update {step} loss {loss.item() * args.accumulation_steps:.4f}")
        model.save_pretrained(f"ckpt/epoch{epoch}")


if __name__ == "__main__":
    main()
