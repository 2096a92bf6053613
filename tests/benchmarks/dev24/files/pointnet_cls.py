"""PointNet classification on ModelNet40."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from modelnet import ModelNet40


class STN3d(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(3, 64, 1), nn.ReLU(), nn.Conv1d(64, 128, 1), nn.ReLU(),
                                  nn.Conv1d(128, 1024, 1), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(1024, 256), nn.ReLU(), nn.Linear(256, 9))

    def forward(self, x):
        b = x.size(0)
        x = self.conv(x).max(2).values
        x = self.fc(x)
        iden = torch.eye(3, device=x.device, dtype=x.dtype).flatten().unsqueeze(0).repeat(b, 1)
        return (x + iden).view(-1, 3, 3)


class PointNetCls(nn.Module):
    def __init__(self, k=40):
        super().__init__()
        self.stn = STN3d()
        self.feat = nn.Sequential(nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
                                  nn.Conv1d(64, 1024, 1), nn.BatchNorm1d(1024))
        self.head = nn.Sequential(nn.Linear(1024, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Dropout(0.3),
                                  nn.Linear(256, k))

    def forward(self, pts):
        trans = self.stn(pts)
        x = torch.bmm(pts.transpose(2, 1), trans).transpose(2, 1)
        x = self.feat(x).max(2).values
        return self.head(x), trans


def orthogonality_reg(trans):
    d = trans.size(1)
    eye = torch.eye(d, device=trans.device)
    return torch.mean(torch.norm(trans @ trans.transpose(1, 2) - eye, dim=(1, 2)))


def main(epochs=200, device="cuda"):
    loader = DataLoader(ModelNet40("data/modelnet40", "train", npoints=1024), batch_size=32, shuffle=True,
                        num_workers=4, drop_last=True)
    model = PointNetCls().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999))
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
    for epoch in range(epochs):
        model.train()
        for pts, label in loader:
            pts = pts.transpose(2, 1).to(device, non_blocking=True)
            label = label.squeeze(-1).to(device, non_blocking=True)
            jitter = torch.randn(pts.shape, device=device) * 0.01
            logits, trans = model(pts + jitter)
            loss = F.cross_entropy(logits, label) + 0.001 * orthogonality_reg(trans)
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        print(epoch, loss.item())


if __name__ == "__main__":
    main()
