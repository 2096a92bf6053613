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
import time

# GPT-2-medium's shape, defined with the test models (tests/memory_models.py:gpt_medium).
MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "memory_models.py")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--mode", default="train")
    ap.add_argument("--extra", nargs="*", default=[])
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "mllint", "memory", f"{MODELS}:gpt_medium", "--input",
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
        "allocator_peak_gib": (round(data["allocator_peak_bytes"] / 2**30, 3)
                               if data.get("allocator_peak_bytes") is not None else None),
        "allocator_calls_measured_now": (data.get("allocator") or {}).get("measured_now"),
        "parameters_gib": round(data["parameters_bytes"] / 2**30, 3),
        "optimizer_gib": round(data["optimizer_bytes"] / 2**30, 3),
        "activations_gib": round(data["activations_bytes"] / 2**30, 3),
    }, indent=2))


if __name__ == "__main__":
    main()
