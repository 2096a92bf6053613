import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parameter import Parameter


class GraphConvolution(nn.Module):
    """Simple GCN layer, similar to https://arxiv.org/abs/1609.02907"""

    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        self.bias = Parameter(torch.FloatTensor(out_features)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        return output + self.bias if self.bias is not None else output


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


class JumpingKnowledgeGCN(nn.Module):
    """Deeper GCN with residual connections and jumping-knowledge concatenation."""

    def __init__(self, nfeat, nhid, nclass, nlayers=4, dropout=0.5, edge_drop=0.1):
        super().__init__()
        self.input = nn.Linear(nfeat, nhid)
        self.layers = nn.ModuleList([GraphConvolution(nhid, nhid) for _ in range(nlayers)])
        self.norms = nn.ModuleList([nn.BatchNorm1d(nhid) for _ in range(nlayers)])
        self.out = nn.Linear(nhid * nlayers, nclass)
        self.dropout = dropout
        self.edge_drop = edge_drop

    def _propagate(self, h, adj, layer, norm):
        h_new = F.relu(norm(layer(h, adj)))
        h_new = F.dropout(h_new, p=self.dropout)
        return h + h_new

    def forward(self, x, adj):
        h = F.relu(self.input(x))
        hs = []
        for layer, norm in zip(self.layers, self.norms):
            h = self._propagate(h, adj, layer, norm)
            hs.append(h)
        return F.log_softmax(self.out(torch.cat(hs, dim=1)), dim=1)


def train_step(model, optimizer, features, adj, labels, idx_train):
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss = F.nll_loss(output[idx_train], labels[idx_train])
    loss.backward()
    optimizer.step()
    return loss.item()
