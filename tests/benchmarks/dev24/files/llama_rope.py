"""Rotary position embeddings and a RoPE attention layer (LLaMA-style)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, max_position=4096, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        t = torch.arange(max_position, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, seq_len):
        return self.cos_cached[:seq_len], self.sin_cached[:seq_len]


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class RopeAttention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.rope = RotaryEmbedding(self.head_dim)
        self.register_buffer("scale", torch.tensor(self.head_dim ** -0.5), persistent=False)

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        cos, sin = self.rope(T)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        positions = torch.arange(T, device=x.device)
        causal = positions[None, :] <= positions[:, None]
        if attention_mask is not None:
            causal = causal & attention_mask[:, None, None, :].bool()
        bias = torch.zeros(T, T, dtype=q.dtype, device=x.device).masked_fill(~causal, float("-inf"))
        att = F.softmax((q @ k.transpose(-1, -2)) * self.scale + bias, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.o(y)


class KVCache:
    def __init__(self, layers, batch, heads, max_len, head_dim, device, dtype=torch.float16):
        shape = (layers, 2, batch, heads, max_len, head_dim)
        self.buf = torch.empty(shape, device=device, dtype=dtype)
        self.pos = 0

    def append(self, layer, k, v):
        t = k.size(2)
        self.buf[layer, 0, :, :, self.pos:self.pos + t] = k
        self.buf[layer, 1, :, :, self.pos:self.pos + t] = v
        return self.buf[layer, :, :, :, :self.pos + t]
