"""Prototypical networks for few-shot classification (Omniglot / miniImageNet)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

from fewshot.data import EpisodeSampler, load_dataset


def conv_bn(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
        nn.MaxPool2d(2),
    )


class ProtoEncoder(nn.Module):
    def __init__(self, in_ch=1, hid=64, out=64):
        super().__init__()
        self.encoder = nn.Sequential(conv_bn(in_ch, hid), conv_bn(hid, hid), conv_bn(hid, hid), conv_bn(hid, out))

    def forward(self, x):
        return self.encoder(x).flatten(1)


def euclidean_dist(x, y):
    n, m = x.size(0), y.size(0)
    x = x.unsqueeze(1).expand(n, m, -1)
    y = y.unsqueeze(0).expand(n, m, -1)
    return ((x - y) ** 2).sum(dim=2)


def episode_scores(encoder, support, query, n_way, k_shot):
    z_support = encoder(support)
    z_query = encoder(query)
    prototypes = z_support.view(n_way, k_shot, -1).mean(dim=1)
    dists = euclidean_dist(z_query, prototypes)
    p_y = F.softmax(-dists, dim=1)
    return p_y, dists


def run_episode(encoder, episode, n_way, k_shot, n_query, device):
    support, query = episode
    support, query = support.to(device), query.to(device)
    target = torch.arange(n_way, device=device).repeat_interleave(n_query)
    p_y, _ = episode_scores(encoder, support, query, n_way, k_shot)
    loss = F.nll_loss(p_y, target)
    acc = (p_y.argmax(dim=1) == target).float().mean()
    return loss, acc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="omniglot")
    parser.add_argument("--way", type=int, default=60)
    parser.add_argument("--shot", type=int, default=5)
    parser.add_argument("--query", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=200)
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set = load_dataset(args.dataset, "train")
    sampler = EpisodeSampler(train_set, args.way, args.shot, args.query, args.episodes)
    encoder = ProtoEncoder(in_ch=1 if args.dataset == "omniglot" else 3).to(device)
    optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)

    for epoch in range(args.epochs):
        encoder.train()
        losses, accs = [], []
        for episode in sampler:
            loss, acc = run_episode(encoder, episode, args.way, args.shot, args.query, device)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            accs.append(acc.item())
        scheduler.step()
        print(f"epoch {epoch}: loss {sum(losses) / len(losses):.4f} acc {sum(accs) / len(accs):.4f}")


if __name__ == "__main__":
    main()
