"""FlexAttention cases of the flex-attention suite (doc/flex-attention.md), as code models.

Each case function (causal_d64, ..., softcap_d128) builds one attention layer: a bias-free
QKV projection, torch.nn.attention.flex_attention with the case's score_mod and the
BlockMask that create_block_mask makes from the case's mask_mod, and an output projection.
compatlab calls the function with the test's batch_size and seq_len (doc/probe.md, "Own
code"); the dtype and the kind (forward, train) are the test's too.

The float64 CPU reference of a test is the same module in float64 (doc/accuracy.md): in
float64 the layer runs a plain attention written with ordinary ops (scores materialised,
the same score_mod and mask_mod evaluated on broadcast index tensors, -inf where masked,
softmax), never flex_attention itself, so that flex_attention's own eager path is judged
against an independent computation too. A test in float64 would therefore not test
flex_attention: the suite has none.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.attention.flex_attention import and_masks, create_block_mask, flex_attention, or_masks

HEADS = 4
# Sliding window: a query sees itself and the WINDOW - 1 keys before it.
WINDOW = 96
# Prefix LM: the first seq_len // PREFIX_DIV positions are the bidirectional prefix.
PREFIX_DIV = 4
# Soft-capping of the attention scores (score -> CAP * tanh(score / CAP)).
SOFTCAP = 20.0
# Document masking: document boundaries as fractions of the sequence (three documents).
DOC_BOUNDS = (0.375, 0.75)
HEAD_DIMS = (64, 128)
VARIANTS = ("causal", "sliding_window", "prefix_lm", "document", "alibi", "softcap")


def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _window_mask(b, h, q_idx, kv_idx):
    return q_idx - kv_idx < WINDOW


class FlexAttentionCase(nn.Module):
    """One attention layer over [batch, seq_len, HEADS * head_dim] hidden states."""

    def __init__(self, variant: str, head_dim: int, seq_len: int):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})")
        self.variant, self.head_dim = variant, head_dim
        hidden = HEADS * head_dim
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = nn.Linear(hidden, hidden, bias=False)
        bounds = torch.tensor([int(seq_len * f) for f in DOC_BOUNDS])
        self.register_buffer("doc_ids", torch.bucketize(torch.arange(seq_len), bounds, right=True),
                             persistent=False)
        slopes = [2.0 ** (-8.0 * (i + 1) / HEADS) for i in range(HEADS)]
        self.register_buffer("alibi_slopes", torch.tensor(slopes), persistent=False)
        self.prefix_len = max(1, seq_len // PREFIX_DIV)

    # The case's mask_mod and score_mod (flex_attention's signatures).
    def mask_mod(self):
        if self.variant == "sliding_window":
            return and_masks(causal_mask, _window_mask)
        if self.variant == "prefix_lm":
            prefix = self.prefix_len

            def prefix_mask(b, h, q_idx, kv_idx):
                return kv_idx < prefix

            return or_masks(causal_mask, prefix_mask)
        if self.variant == "document":
            doc_ids = self.doc_ids

            def same_document(b, h, q_idx, kv_idx):
                return doc_ids[q_idx] == doc_ids[kv_idx]

            return and_masks(causal_mask, same_document)
        return causal_mask

    def score_mod(self):
        if self.variant == "alibi":
            slopes = self.alibi_slopes

            def alibi(score, b, h, q_idx, kv_idx):
                return score + slopes[h] * (kv_idx - q_idx)

            return alibi
        if self.variant == "softcap":
            def softcap(score, b, h, q_idx, kv_idx):
                return SOFTCAP * torch.tanh(score / SOFTCAP)

            return softcap
        return None

    def forward(self, hidden_states, target=None):
        batch, length, _ = hidden_states.shape
        q, k, v = (t.view(batch, length, HEADS, self.head_dim).transpose(1, 2)
                   for t in self.qkv(hidden_states).chunk(3, dim=-1))
        if q.dtype == torch.float64:
            attn = plain_attention(q, k, v, self.score_mod(), self.mask_mod())
        else:
            block_mask = create_block_mask(self.mask_mod(), None, None, length, length, device=q.device)
            attn = flex_attention(q, k, v, score_mod=self.score_mod(), block_mask=block_mask)
        output = self.out(attn.transpose(1, 2).reshape(batch, length, HEADS * self.head_dim))
        if target is None:
            return output
        return {"output": output, "loss": nn.functional.mse_loss(output, target)}


def plain_attention(q, k, v, score_mod, mask_mod):
    """softmax(score_mod(q k^T / sqrt(d)) masked by mask_mod) v, with the index arguments as
    broadcast tensors [B,1,1,1], [1,H,1,1], [1,1,L,1], [1,1,1,S] (the mods are elementwise)."""
    batch, heads, length, dim = q.shape
    kv_len = k.shape[-2]
    dev = q.device
    b = torch.arange(batch, device=dev).view(-1, 1, 1, 1)
    h = torch.arange(heads, device=dev).view(1, -1, 1, 1)
    q_idx = torch.arange(length, device=dev).view(1, 1, -1, 1)
    kv_idx = torch.arange(kv_len, device=dev).view(1, 1, 1, -1)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(dim)
    if score_mod is not None:
        scores = score_mod(scores, b, h, q_idx, kv_idx)
    allowed = mask_mod(b, h, q_idx, kv_idx).expand_as(scores)
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def build(variant: str, head_dim: int, batch_size: int = 1, seq_len: int = 256):
    """(model, inputs): the case's layer and seeded hidden states and loss target."""
    model = FlexAttentionCase(variant, head_dim, seq_len)
    hidden = HEADS * head_dim
    inputs = {"hidden_states": torch.randn(batch_size, seq_len, hidden),
              "target": torch.randn(batch_size, seq_len, hidden)}
    return model, inputs


def _case(variant: str, head_dim: int):
    def case(batch_size: int = 1, seq_len: int = 256):
        return build(variant, head_dim, batch_size, seq_len)

    case.__name__ = case.__qualname__ = f"{variant}_d{head_dim}"
    case.__doc__ = f"The {variant} case at head dim {head_dim}."
    return case


# One function per (variant, head dim): each is its own code model, code:flex.NAME@HASH.
for _variant in VARIANTS:
    for _dim in HEAD_DIMS:
        globals()[f"{_variant}_d{_dim}"] = _case(_variant, _dim)
