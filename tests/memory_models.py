"""Small models for the memory estimator's tests (TARGET functions for `mllint memory`).

Each function returns (model, example_inputs) or (model, example_inputs, loss_fn); those with a
batch_size parameter are called with the batch size being estimated.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp(batch_size=32):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(512, 10))
    return model, torch.randn(batch_size, 256)


def mlp_model_only():
    return nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 4))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)), inplace=True)
        y = self.b2(self.c2(y))
        s = x if self.short is None else self.short(x)
        return F.relu(y + s, inplace=True)


class SmallResNet(nn.Module):
    def __init__(self, n_cls=10, widths=(16, 32)):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]),
                                  nn.ReLU(inplace=True))
        layers, cin = [], widths[0]
        for i, w in enumerate(widths):
            layers += [Block(cin, w, 1 if i == 0 else 2)]
            cin = w
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, n_cls)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def cnn(batch_size=8):
    torch.manual_seed(0)
    return SmallResNet(), torch.randn(batch_size, 3, 32, 32)


class Attn(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class TBlock(nn.Module):
    def __init__(self, d, h, p=0.1):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attn(d, h)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.Dropout(p))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """A small GPT whose output head shares the token embedding's weight (tied)."""

    def __init__(self, vocab=1000, d=64, h=4, n_layer=2, ctx=64, dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(TBlock(d, h, dropout) for _ in range(n_layer))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def gpt_medium():
    """GPT-2-medium's shape (~355M parameters: 24 layers, d=1024, 16 heads, vocab 50257, tied head,
    context 1024), without dropout; for tests/benchmarks/bench_memory.py."""
    return GPT(vocab=50257, d=1024, h=16, n_layer=24, ctx=1024, dropout=0.0)


def gpt(batch_size=4):
    torch.manual_seed(0)
    model = GPT()
    idx = torch.randint(0, 1000, (batch_size, 32))
    targets = torch.randint(0, 1000, (batch_size, 32))

    def loss_fn(logits):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    return model, idx, loss_fn


class LSTMTagger(nn.Module):
    def __init__(self, vocab=500, d=32, hidden=64, n_tags=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, n_tags)

    def forward(self, x):
        y, _ = self.lstm(self.emb(x))
        return self.out(y)


def lstm(batch_size=6):
    torch.manual_seed(0)
    return LSTMTagger(), torch.randint(0, 500, (batch_size, 20))


class MaskedPool(nn.Module):
    """Uses boolean-mask indexing (a data-dependent output shape): fake tensors cannot run it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 64)
        self.out = nn.Linear(64, 2)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        kept = h[h.sum(dim=1) > -1.0]  # every row (values are >= 0), but the shape depends on data
        return self.out(kept)


def masked(batch_size=16):
    torch.manual_seed(0)
    return MaskedPool(), torch.randn(batch_size, 32)


def raises():
    raise ValueError("this model cannot be built")


def not_a_model():
    return 42


def encoder(batch_size=8):
    """nn.TransformerEncoder: in inference PyTorch runs its fused fast path
    (``_transformer_encoder_layer_fwd``) unless a hook is attached to one of its modules."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False), torch.randn(batch_size, 32, 64)


class TinyViT(nn.Module):
    """Patch embedding, class token and positions initialised with trunc_normal_ (which redraws
    values in a data-dependent loop), then nn.TransformerEncoder."""

    def __init__(self, patch=8, dim=48, depth=2, classes=10):
        super().__init__()
        self.embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, 1 + (32 // patch) ** 2, dim))
        nn.init.trunc_normal_(self.pos, std=0.02)
        nn.init.trunc_normal_(self.cls, std=0.02)
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        tokens = self.embed(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], dim=1) + self.pos
        return self.head(self.encoder(tokens)[:, 0])


def vit(batch_size=8):
    torch.manual_seed(0)
    return TinyViT(), torch.randn(batch_size, 3, 32, 32)


class Seq2Seq(nn.Module):
    """nn.Transformer with a causal target mask (torch compares it with a causal mask: data-dependent)."""

    def __init__(self, vocab=200, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.transformer = nn.Transformer(dim, 4, 1, 1, 64, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.out(self.transformer(self.embed(src), self.embed(tgt), tgt_mask=mask))


def seq2seq(batch_size=8):
    torch.manual_seed(0)
    return Seq2Seq(), (torch.randint(0, 200, (batch_size, 12)), torch.randint(0, 200, (batch_size, 10)))


class NanoCausalSelfAttention(nn.Module):
    """nanoGPT's CausalSelfAttention (model.py, the `flash` branch): one qkv projection, SDPA with
    attention dropout in training, a residual dropout after the output projection."""

    def __init__(self, n_embd, n_head, dropout, bias=True):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head, self.n_embd, self.dropout = n_head, n_embd, dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class NanoBlock(nn.Module):
    def __init__(self, n_embd, n_head, dropout, bias=True):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, bias=bias)
        self.attn = NanoCausalSelfAttention(n_embd, n_head, dropout, bias)
        self.ln_2 = nn.LayerNorm(n_embd, bias=bias)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd, bias=bias), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd, bias=bias), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    """nanoGPT's GPT: token and position embeddings, embedding dropout, blocks, final LayerNorm and a
    head tied to the token embedding. Dropout layers outside attention: 1 + 2 per block."""

    def __init__(self, vocab_size=512, block_size=64, n_layer=2, n_head=4, n_embd=64, dropout=0.0, bias=True):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(NanoBlock(n_embd, n_head, dropout, bias) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd, bias=bias)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx):
        T = idx.size(1)
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(T, dtype=torch.long, device=idx.device)))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def _nanogpt(batch_size, dropout, **config):
    torch.manual_seed(0)
    model = NanoGPT(dropout=dropout, **config)
    vocab, T = model.lm_head.weight.shape[0], model.wpe.weight.shape[0]
    idx = torch.randint(0, vocab, (batch_size, T))
    targets = torch.randint(0, vocab, (batch_size, T))

    def loss_fn(logits):
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

    return model, idx, loss_fn


def nanogpt(batch_size=4):
    """A small nanoGPT without dropout (2 layers, d=64, 4 heads of 16, context 64)."""
    return _nanogpt(batch_size, 0.0)


def nanogpt_dropout(batch_size=4):
    """The same with dropout 0.2 (attention, residual, MLP and embedding dropout)."""
    return _nanogpt(batch_size, 0.2)


GPT2_124M = dict(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768)


def nanogpt_124m(batch_size=12):
    """nanoGPT's GPT-2 124M (vocab padded to 50304, context 1024) without dropout, for measurements."""
    return _nanogpt(batch_size, 0.0, **GPT2_124M)


def nanogpt_124m_dropout(batch_size=12):
    """nanoGPT's GPT-2 124M with dropout 0.2."""
    return _nanogpt(batch_size, 0.2, **GPT2_124M)
