"""Two-layer GCN for Cora / Citeseer node classification (Kipf & Welling)."""
import argparse

import torch
import torch.nn as nn
from torch.nn import functional as fn


class GraphConv(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_dim, out_dim))
        self.bias = nn.Parameter(torch.zeros(out_dim)) if bias else None
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x, adj):
        out = torch.sparse.mm(adj, x @ self.weight)
        return out + self.bias if self.bias is not None else out


class GCN(nn.Module):
    def __init__(self, n_feat, n_hid, n_class, dropout=0.5):
        super().__init__()
        self.gc1 = GraphConv(n_feat, n_hid)
        self.gc2 = GraphConv(n_hid, n_class)
        self.dropout = dropout

    def _hidden(self, x, adj):
        h = fn.relu(self.gc1(x, adj))
        return fn.dropout(h, self.dropout)

    def forward(self, x, adj):
        x = fn.dropout(x, p=self.dropout, training=self.training)
        h = self._hidden(x, adj)
        return fn.log_softmax(self.gc2(h, adj), dim=1)


def accuracy(output, labels):
    return (output.argmax(1) == labels).float().mean().item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    args = ap.parse_args()

    data = torch.load("cora.pt", weights_only=True)
    features, adj, labels = data["features"], data["adj"], data["labels"]
    idx_train, idx_val, idx_test = data["idx_train"], data["idx_val"], data["idx_test"]
    model = GCN(features.shape[1], args.hidden, int(labels.max()) + 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        out = model(features, adj)
        loss = fn.nll_loss(out[idx_train], labels[idx_train])
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            out = model(features, adj)
        print(f"epoch {epoch:3d} loss {loss.item():.4f} val {accuracy(out[idx_val], labels[idx_val]):.3f}")

    model.eval()
    with torch.no_grad():
        out = model(features, adj)
    print("test acc", accuracy(out[idx_test], labels[idx_test]))


if __name__ == "__main__":
    main()
