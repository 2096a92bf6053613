#!/usr/bin/env python
"""Benchmark `mllint memory` on a ~350M-parameter GPT (GPT-2-medium shape: 24 layers, d=1024, 16 heads,
vocab 50257, tied embeddings, context 1024), fp32 AdamW, two training steps.

Runs the real command in a subprocess and reports its wall time and peak RSS (ru_maxrss of the child),
so the number includes importing torch. Not a test: nothing here asserts a time.

    python tests/benchmarks/bench_memory.py                  # batch 8 x 1024 tokens
    python tests/benchmarks/bench_memory.py --batch 2 --seq 512 --mode inference
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import textwrap

MODEL = textwrap.dedent('''
    import torch, torch.nn as nn, torch.nn.functional as F

    class Attn(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.h = h
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).reshape(B, T, C))

    class Block(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = Attn(d, h)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, vocab=50257, d=1024, h=16, n_layer=24, ctx=1024):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
            self.blocks = nn.ModuleList(Block(d, h) for _ in range(n_layer))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)
            self.head.weight = self.tok.weight
        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln(x))

    def gpt_medium():
        return GPT()
''')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--mode", default="train")
    ap.add_argument("--extra", nargs="*", default=[])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gpt_medium.py")
        with open(path, "w") as f:
            f.write(MODEL)
        cmd = [sys.executable, "-m", "mllint", "memory", f"{path}:gpt_medium", "--input",
               f"{args.batch}x{args.seq}:int64:50257", "--mode", args.mode, "--format", "json", *args.extra]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if proc.returncode != 0:
        sys.exit(f"bench_memory: exit {proc.returncode}: {proc.stderr.strip()}")
    data = json.loads(proc.stdout)
    print(json.dumps({
        "params": data["parameters"], "batch": args.batch, "seq": args.seq, "mode": args.mode,
        "wall_seconds": round(seconds, 2), "estimator_seconds": data["seconds"],
        "peak_rss_bytes": rss, "peak_rss_gib": round(rss / 2**30, 3),
        "predicted_peak_gib": round(data["peak_bytes"] / 2**30, 3), "phase": data["phase"],
        "parameters_gib": round(data["parameters_bytes"] / 2**30, 3),
        "optimizer_gib": round(data["optimizer_bytes"] / 2**30, 3),
        "activations_gib": round(data["activations_bytes"] / 2**30, 3),
    }, indent=2))


if __name__ == "__main__":
    main()
