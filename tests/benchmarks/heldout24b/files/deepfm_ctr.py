"""DeepFM with an auxiliary logit head for conversion prediction (CVR)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FactorizationMachine(nn.Module):
    def forward(self, emb):
        square_of_sum = emb.sum(dim=1) ** 2
        sum_of_square = (emb ** 2).sum(dim=1)
        return 0.5 * (square_of_sum - sum_of_square).sum(dim=1, keepdim=True)


class DeepFM(nn.Module):
    def __init__(self, field_dims, embed_dim=10, hidden=(400, 400)):
        super().__init__()
        n = sum(field_dims)
        self.linear = nn.Embedding(n, 1)
        self.embedding = nn.Embedding(n, embed_dim)
        self.fm = FactorizationMachine()
        dims = [len(field_dims) * embed_dim, *hidden]
        self.mlp = nn.Sequential(*[m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.ReLU())],
                                 nn.Linear(dims[-1], 1))
        self.cvr_head = nn.Linear(dims[-1], 1)

    def forward(self, x):
        emb = self.embedding(x)
        logit = self.linear(x).sum(dim=1) + self.fm(emb) + self.mlp(emb.flatten(1))
        return torch.sigmoid(logit.squeeze(1))

    def cvr_logits(self, x):
        h = self.mlp[:-1](self.embedding(x).flatten(1))
        return self.cvr_head(h).squeeze(1)


class CTRCVRTrainer:
    def __init__(self, model, lr=1e-3, cvr_weight=0.5, device="cuda"):
        self.model = model.to(device)
        self.device = device
        self.ctr_loss = nn.BCELoss()
        self.cvr_loss = nn.BCEWithLogitsLoss()
        self.cvr_weight = cvr_weight
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)

    def step(self, x, click, convert):
        x = x.to(self.device)
        click, convert = click.float().to(self.device), convert.float().to(self.device)
        p_click = self.model(x)
        cvr_logit = self.model.cvr_logits(x)
        loss = self.ctr_loss(p_click, click) + self.cvr_weight * self.cvr_loss(cvr_logit, convert)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        with torch.no_grad():
            p_convert = torch.sigmoid(cvr_logit)
            ctcvr = F.binary_cross_entropy(p_click * p_convert, click * convert)
        return loss.item(), ctcvr.item()

    def fit(self, loader, epochs=3):
        for epoch in range(epochs):
            self.model.train()
            tot = 0.0
            for x, click, convert in loader:
                l, _ = self.step(x, click, convert)
                tot += l
            print(f"epoch {epoch}: {tot / len(loader):.5f}")
