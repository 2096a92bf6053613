"""Minimal GPT pre-training loop: micro-batches per optimizer step, token-normalised loss."""
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from gpt_model import GPT, GPTConfig

batch_size = 12
block_size = 1024
micro_steps = 40
max_iters = 600000
learning_rate = 6e-4
grad_clip = 1.0
data_dir = os.path.join("data", "openwebtext")
device = "cuda"
pad_id = -100


def get_batch(split):
    data = np.memmap(os.path.join(data_dir, f"{split}.bin"), dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size].astype(np.int64)) for i in ix])
    return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)


def lr_at(it, warmup=2000, decay=600000, min_lr=6e-5):
    if it < warmup:
        return learning_rate * it / warmup
    ratio = min(1.0, (it - warmup) / (decay - warmup))
    return min_lr + 0.5 * (1.0 + np.cos(np.pi * ratio)) * (learning_rate - min_lr)


model = GPT(GPTConfig(block_size=block_size)).to(device)
optimizer = model.configure_optimizers(weight_decay=0.1, learning_rate=learning_rate, betas=(0.9, 0.95))
ctx = torch.autocast(device_type="cuda", dtype=torch.bfloat16)

t0 = time.time()
for it in range(max_iters):
    for group in optimizer.param_groups:
        group["lr"] = lr_at(it)
    batches = [get_batch("train") for _ in range(micro_steps)]
    n_tokens = sum((y != pad_id).sum() for _, y in batches)
    for x, y in batches:
        with ctx:
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1),
                                   ignore_index=pad_id, reduction="sum") / n_tokens
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if it % 10 == 0:
        dt = time.time() - t0
        t0 = time.time()
        print(f"iter {it}: last micro loss {loss.item() * n_tokens.item() / (batch_size * block_size):.4f}, {dt * 1000:.0f}ms")
