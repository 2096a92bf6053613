"""Transformer NMT training step with token-level normalisation over an update (fairseq-style)."""
import torch
import torch.nn.functional as F

PAD = 1


def num_tokens(batch):
    return int((batch["target"] != PAD).sum())


def train_update(model, optimizer, micro_batches, clip_norm=0.1, label_smoothing=0.1):
    """One optimizer update over several micro-batches.

    Each micro-batch loss is summed over tokens and divided by the number of
    target tokens in the whole update, so the gradient is a per-token mean
    regardless of how the update was split.
    """
    model.train()
    optimizer.zero_grad()
    total_tokens = sum(num_tokens(b) for b in micro_batches)
    logging_loss = 0.0
    for batch in micro_batches:
        logits = model(batch["source"], batch["prev_output_tokens"])
        loss = F.cross_entropy(
            logits.view(-1, logits.size(-1)),
            batch["target"].view(-1),
            ignore_index=PAD,
            reduction="sum",
            label_smoothing=label_smoothing,
        )
        (loss / total_tokens).backward()
        logging_loss += loss.item()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    return logging_loss / total_tokens, grad_norm.item()


def train(model, optimizer, scheduler, batch_iterator, update_freq=4, max_updates=100000):
    buffer, updates = [], 0
    for i, batch in enumerate(batch_iterator):
        batch = {k: v.cuda(non_blocking=True) for k, v in batch.items()}
        buffer.append(batch)
        if len(buffer) < update_freq:
            continue
        loss, gnorm = train_update(model, optimizer, buffer)
        scheduler.step_update(updates)
        buffer = []
        updates += 1
        if updates % 100 == 0:
            print(f"update {updates} loss/token {loss:.3f} gnorm {gnorm:.2f}")
        if updates >= max_updates:
            break


def train_simple(model, optimizer, loader, accum=8):
    """Variant used by the ablations: per-sample sum, normalised by samples per update."""
    model.train()
    samples_per_update = accum * loader.batch_size
    for step, batch in enumerate(loader):
        logits = model(batch["source"], batch["prev_output_tokens"])
        loss = F.cross_entropy(logits.transpose(1, 2), batch["target"], ignore_index=PAD,
                               reduction="sum") / samples_per_update
        loss.backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
