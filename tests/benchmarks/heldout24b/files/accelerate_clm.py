#!/usr/bin/env python
"""Causal-LM fine-tuning with Hugging Face Accelerate."""
import argparse
import math

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer, default_data_collator, get_cosine_schedule_with_warmup


def group_texts(examples, block_size=1024):
    concatenated = {k: sum(examples[k], []) for k in examples.keys()}
    total = (len(concatenated["input_ids"]) // block_size) * block_size
    result = {k: [t[i:i + block_size] for i in range(0, total, block_size)] for k, t in concatenated.items()}
    result["labels"] = result["input_ids"].copy()
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="gpt2")
    parser.add_argument("--dataset", default="wikitext")
    parser.add_argument("--config", default="wikitext-103-raw-v1")
    parser.add_argument("--gradient_accumulation_steps", type=int, default=8)
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps, mixed_precision="bf16")
    set_seed(42)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    raw = load_dataset(args.dataset, args.config)
    tokenized = raw.map(lambda ex: tokenizer(ex["text"]), batched=True, remove_columns=["text"])
    lm = tokenized.map(group_texts, batched=True)
    train_loader = DataLoader(lm["train"], shuffle=True, batch_size=args.batch_size, collate_fn=default_data_collator)
    eval_loader = DataLoader(lm["validation"], batch_size=args.batch_size, collate_fn=default_data_collator)

    model = AutoModelForCausalLM.from_pretrained(args.model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    steps = math.ceil(len(train_loader) / args.gradient_accumulation_steps) * args.epochs
    scheduler = get_cosine_schedule_with_warmup(optimizer, 200, steps)
    model, optimizer, train_loader, eval_loader, scheduler = accelerator.prepare(
        model, optimizer, train_loader, eval_loader, scheduler)

    for epoch in range(args.epochs):
        model.train()
        for step, batch in enumerate(train_loader):
            with accelerator.accumulate(model):
                outputs = model(**batch)
                loss = outputs.loss
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()

        model.eval()
        losses = []
        for batch in eval_loader:
            with torch.no_grad():
                out = model(**batch)
            losses.append(accelerator.gather_for_metrics(out.loss.repeat(args.batch_size)))
        ppl = math.exp(torch.cat(losses).mean().item())
        accelerator.print(f"epoch {epoch}: perplexity {ppl:.2f}")

    accelerator.wait_for_everyone()
    accelerator.unwrap_model(model).save_pretrained("clm-out", save_function=accelerator.save)


if __name__ == "__main__":
    main()
