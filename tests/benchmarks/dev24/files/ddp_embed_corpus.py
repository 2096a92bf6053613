"""Embed a corpus with a trained sentence encoder on all GPUs (one pass, no training)."""
import argparse

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from encoder import load_encoder
from corpus import JsonlCorpus


@torch.inference_mode()
def embed(model, loader, device):
    model.eval()
    ids, vecs = [], []
    for doc_ids, batch in loader:
        batch = {k: v.to(device) for k, v in batch.items()}
        out = model(**batch)
        vecs.append(torch.nn.functional.normalize(out, dim=-1).cpu().numpy())
        ids.append(doc_ids.numpy())
    return np.concatenate(ids), np.concatenate(vecs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--out", default="embeddings")
    ap.add_argument("--bs", type=int, default=256)
    args = ap.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", rank % torch.cuda.device_count())
    model = load_encoder(args.ckpt).to(device)

    corpus = JsonlCorpus(args.corpus)
    sampler = DistributedSampler(corpus, num_replicas=world, rank=rank)
    loader = DataLoader(corpus, batch_size=args.bs, sampler=sampler, num_workers=8,
                        collate_fn=corpus.collate)
    doc_ids, vectors = embed(model, loader, device)
    np.save(f"{args.out}/ids_{rank}.npy", doc_ids)
    np.save(f"{args.out}/vecs_{rank}.npy", vectors.astype(np.float16))
    dist.barrier()
    if rank == 0:
        print(f"wrote {world} shards to {args.out}")


if __name__ == "__main__":
    main()
