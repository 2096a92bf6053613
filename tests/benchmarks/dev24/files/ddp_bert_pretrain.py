"""Masked-LM pretraining on sharded text with torchrun; loaders built by a small factory."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from transformers import BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling, BertTokenizerFast

from mlm_data import TokenizedShards


def make_loader(dataset, collator, batch_size, workers=4):
    sampler = DistributedSampler(dataset, num_replicas=dist.get_world_size(), rank=dist.get_rank(), seed=17)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, collate_fn=collator,
                      num_workers=workers, pin_memory=True, drop_last=True)


def run_epoch(model, loader, optimizer, scheduler, device, epoch):
    model.train()
    loader.sampler.set_epoch(epoch)
    for step, batch in enumerate(loader):
        batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        loss = model(**batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if step % 200 == 0 and dist.get_rank() == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", default="data/shards")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--bs", type=int, default=32)
    args = ap.parse_args()

    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}")
    torch.cuda.set_device(device)

    tok = BertTokenizerFast.from_pretrained("bert-base-uncased")
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=0.15)
    train_loader = make_loader(TokenizedShards(args.shards), collator, args.bs)

    model = DDP(BertForMaskedLM(BertConfig()).to(device), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    total = args.epochs * len(train_loader)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-4, total_steps=total, pct_start=0.06)
    for epoch in range(args.epochs):
        run_epoch(model, train_loader, optimizer, scheduler, device, epoch)
        if dist.get_rank() == 0:
            model.module.save_pretrained(f"ckpt/epoch{epoch}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
