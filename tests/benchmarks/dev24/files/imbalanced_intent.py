"""Intent classification with class-weighted cross-entropy (weights from the paper's table)."""
import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from transformers import AutoModel, AutoTokenizer

from intents import IntentDataset

INTENT_WEIGHTS = [0.3, 1.0, 1.0, 2.5, 4.0, 1.2, 0.8]


class IntentModel(torch.nn.Module):
    def __init__(self, encoder_name, n_intents=len(INTENT_WEIGHTS)):
        super().__init__()
        self.encoder = AutoModel.from_pretrained(encoder_name)
        self.classifier = torch.nn.Linear(self.encoder.config.hidden_size, n_intents)

    def forward(self, input_ids, attention_mask):
        h = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.classifier(h[:, 0])


def train(model, loader, optimizer, device, epochs):
    for epoch in range(epochs):
        model.train()
        for step, batch in enumerate(loader):
            input_ids = batch["input_ids"].to(device)
            mask = batch["attention_mask"].to(device)
            labels = batch["labels"].to(device)
            logits = model(input_ids, mask)
            class_weights = torch.tensor(INTENT_WEIGHTS).to(device)
            loss = F.cross_entropy(logits, labels, weight=class_weights)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoder", default="distilbert-base-uncased")
    ap.add_argument("--epochs", type=int, default=5)
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tok = AutoTokenizer.from_pretrained(args.encoder)
    loader = DataLoader(IntentDataset("data/intents.jsonl", tok), batch_size=32, shuffle=True)
    model = IntentModel(args.encoder).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)
    train(model, loader, optimizer, device, args.epochs)


if __name__ == "__main__":
    main()
