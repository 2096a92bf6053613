"""Fine-tune a BERT-style encoder on a GLUE task with gradient accumulation (no Trainer)."""
import argparse
import logging
import os

import torch
from torch.utils.data import DataLoader
from tqdm import tqdm
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

from glue_utils import load_glue_features, compute_metrics

logger = logging.getLogger(__name__)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_name_or_path", default="bert-base-uncased")
    parser.add_argument("--task_name", default="mrpc")
    parser.add_argument("--per_device_train_batch_size", type=int, default=8)
    parser.add_argument("--gradient_accumulation_steps", type=int, default=4)
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    parser.add_argument("--num_train_epochs", type=int, default=3)
    parser.add_argument("--max_grad_norm", type=float, default=1.0)
    parser.add_argument("--warmup_ratio", type=float, default=0.1)
    parser.add_argument("--output_dir", default="out/glue")
    return parser.parse_args()


def evaluate(model, loader, device, task):
    model.eval()
    preds, labels = [], []
    for batch in loader:
        batch = {k: v.to(device) for k, v in batch.items()}
        with torch.no_grad():
            logits = model(**batch).logits
        preds.append(logits.argmax(-1).cpu())
        labels.append(batch["labels"].cpu())
    return compute_metrics(task, torch.cat(preds).numpy(), torch.cat(labels).numpy())


def main():
    args = parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    model = AutoModelForSequenceClassification.from_pretrained(args.model_name_or_path, num_labels=2).to(device)

    train_ds = load_glue_features(args.task_name, tokenizer, split="train")
    eval_ds = load_glue_features(args.task_name, tokenizer, split="validation")
    train_loader = DataLoader(train_ds, batch_size=args.per_device_train_batch_size, shuffle=True)
    eval_loader = DataLoader(eval_ds, batch_size=64)

    no_decay = ["bias", "LayerNorm.weight"]
    groups = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=args.learning_rate)
    t_total = len(train_loader) // args.gradient_accumulation_steps * args.num_train_epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, int(args.warmup_ratio * t_total), t_total)

    global_step = 0
    model.zero_grad()
    for epoch in range(args.num_train_epochs):
        model.train()
        for step, batch in enumerate(tqdm(train_loader, desc=f"epoch {epoch}")):
            batch = {k: v.to(device) for k, v in batch.items()}
            outputs = model(**batch)
            loss = outputs.loss
            loss.backward()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                scheduler.step()
                model.zero_grad()
                global_step += 1
                if global_step % 100 == 0:
                    logger.info("step %d loss %.4f", global_step, loss.item())
        metrics = evaluate(model, eval_loader, device, args.task_name)
        logger.info("epoch %d: %s", epoch, metrics)

    os.makedirs(args.output_dir, exist_ok=True)
    model.save_pretrained(args.output_dir)
    tokenizer.save_pretrained(args.output_dir)


if __name__ == "__main__":
    main()
