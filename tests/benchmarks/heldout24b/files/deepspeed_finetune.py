"""Instruction fine-tuning with a DeepSpeed engine (ZeRO-2, gradient accumulation set in the config)."""
import argparse
import json

import deepspeed
import torch
from torch.utils.data import DataLoader, DistributedSampler
from transformers import AutoModelForCausalLM, AutoTokenizer

from sft_data import SFTDataset, collate


DS_CONFIG = {
    "train_micro_batch_size_per_gpu": 4,
    "gradient_accumulation_steps": 8,
    "gradient_clipping": 1.0,
    "bf16": {"enabled": True},
    "zero_optimization": {"stage": 2, "overlap_comm": True},
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-5, "weight_decay": 0.0}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 100, "total_num_steps": 5000}},
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="meta-llama/Llama-2-7b-hf")
    parser.add_argument("--data", default="data/alpaca.json")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--local_rank", type=int, default=-1)
    args = parser.parse_args()

    deepspeed.init_distributed()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.bfloat16)
    model.gradient_checkpointing_enable()
    with open(args.data) as f:
        records = json.load(f)
    dataset = SFTDataset(records, tokenizer, max_len=2048)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=DS_CONFIG["train_micro_batch_size_per_gpu"], sampler=sampler,
                        collate_fn=collate)

    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=DS_CONFIG)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        engine.train()
        for step, batch in enumerate(loader):
            batch = {k: v.to(engine.device) for k, v in batch.items()}
            loss = engine(**batch).loss
            engine.backward(loss)
            engine.step()
            if engine.global_rank == 0 and step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
        engine.save_checkpoint("ckpt", tag=f"epoch{epoch}")


if __name__ == "__main__":
    main()
