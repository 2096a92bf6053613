"""Dual-encoder passage retrieval: in-batch negatives, EMA of the weights, recall@k evaluation."""
import copy
import json

import torch
import torch.nn.functional as F


def load_config(path):
    with open(path) as f:
        cfg = json.load(f)
    cfg.setdefault("ema_every", 10)
    cfg.setdefault("ema_decay", 0.999)
    cfg.setdefault("log_every", 100)
    return cfg


@torch.no_grad()
def ema_update(ema_model, model, decay):
    for pe, p in zip(ema_model.parameters(), model.parameters()):
        pe.mul_(decay).add_(p.detach(), alpha=1 - decay)


def contrastive_loss(q, p, temperature=0.05):
    scores = q @ p.t() / temperature
    labels = torch.arange(q.size(0), device=q.device)
    return F.cross_entropy(scores, labels)


def train(model, loader, cfg, device="cuda"):
    model.to(device)
    ema_model = copy.deepcopy(model).eval()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01)
    for epoch in range(cfg["epochs"]):
        model.train()
        for step, batch in enumerate(loader):
            q = model.encode_query(batch["query_ids"].to(device), batch["query_mask"].to(device))
            p = model.encode_passage(batch["passage_ids"].to(device), batch["passage_mask"].to(device))
            loss = contrastive_loss(q, p, cfg.get("temperature", 0.05))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % cfg["ema_every"] == 0:
                ema_update(ema_model, model, cfg["ema_decay"])
            if step % cfg["log_every"] == 0:
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")
    return ema_model


@torch.no_grad()
def recall_at_k(model, query_loader, passage_embs, ks=(1, 5, 20), device="cuda"):
    model.eval()
    passage_embs = passage_embs.to(device)
    hits = {k: 0 for k in ks}
    n = 0
    for batch in query_loader:
        q = model.encode_query(batch["query_ids"].to(device), batch["query_mask"].to(device))
        gold = torch.tensor(batch["gold_passage_idx"]).cuda()
        topk = (q @ passage_embs.t()).topk(max(ks), dim=1).indices
        for k in ks:
            hits[k] += (topk[:, :k] == gold[:, None]).any(dim=1).sum().item()
        n += q.size(0)
    return {f"R@{k}": hits[k] / n for k in ks}
