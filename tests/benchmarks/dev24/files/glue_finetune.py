"""Fine-tune BERT on a GLUE task (adapted from the old run_glue.py)."""
import argparse
import logging

import torch
from torch.utils.data import DataLoader, RandomSampler
from tqdm import tqdm
from transformers import AdamW, BertForSequenceClassification, get_linear_schedule_with_warmup

from glue_utils import load_and_cache_examples

logger = logging.getLogger(__name__)


def train(args, train_dataset, model):
    train_sampler = RandomSampler(train_dataset)
    train_dataloader = DataLoader(train_dataset, sampler=train_sampler, batch_size=args.train_batch_size)
    t_total = len(train_dataloader) // args.gradient_accumulation_steps * args.num_train_epochs

    optimizer = AdamW(model.parameters(), lr=args.learning_rate, eps=1e-8)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=args.warmup_steps,
                                                num_training_steps=t_total)
    global_step, tr_loss = 0, 0.0
    model.zero_grad()
    for _ in range(int(args.num_train_epochs)):
        for step, batch in enumerate(tqdm(train_dataloader, desc="Iteration")):
            model.train()
            batch = tuple(t.to(args.device) for t in batch)
            inputs = {"input_ids": batch[0], "attention_mask": batch[1],
                      "token_type_ids": batch[2], "labels": batch[3]}
            outputs = model(**inputs)
            loss = outputs[0]
            if args.n_gpu > 1:
                loss = loss.mean()
            if args.gradient_accumulation_steps > 1:
                loss = loss / args.gradient_accumulation_steps
            loss.backward()
            tr_loss += loss.item()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                scheduler.step()
                model.zero_grad()
                global_step += 1
                if global_step % args.logging_steps == 0:
                    logger.info("step %d loss %.4f", global_step, tr_loss / global_step)
    return global_step, tr_loss / max(global_step, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--task_name", default="mrpc")
    parser.add_argument("--model_name_or_path", default="bert-base-uncased")
    parser.add_argument("--train_batch_size", type=int, default=8)
    parser.add_argument("--gradient_accumulation_steps", type=int, default=4)
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    parser.add_argument("--num_train_epochs", type=float, default=3.0)
    parser.add_argument("--warmup_steps", type=int, default=0)
    parser.add_argument("--max_grad_norm", type=float, default=1.0)
    parser.add_argument("--logging_steps", type=int, default=50)
    args = parser.parse_args()
    args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args.n_gpu = torch.cuda.device_count()
    model = BertForSequenceClassification.from_pretrained(args.model_name_or_path).to(args.device)
    train_dataset = load_and_cache_examples(args, args.task_name, evaluate=False)
    global_step, loss = train(args, train_dataset, model)
    logger.info("global_step = %s, average loss = %s", global_step, loss)


if __name__ == "__main__":
    main()
