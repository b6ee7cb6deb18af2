"""MultiheadAttention with torch's parameter layout (in_proj_weight (3E, E), in_proj_bias,
out_proj Linear) and forward contract (returns (output, head-averaged weights or None))."""
import math

from ... import _C
from .. import functional as F
from .. import _checks, init
from ..module import Module
from ..parameter import Parameter
from .linear import Linear


class NonDynamicallyQuantizableLinear(Linear):
    """torch's out_proj type, kept so the repr and state_dict keys read the same."""


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        _checks.sizes("MultiheadAttention", ("num_heads",), embed_dim=embed_dim, num_heads=num_heads)
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise NotImplementedError("MultiheadAttention: add_bias_kv, add_zero_attn and kdim/vdim != embed_dim "
                                      "are not supported")
        if embed_dim % num_heads:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        self.batch_first = batch_first
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim = True
        dt = dtype or _C.float32
        self.in_proj_weight = Parameter(_C._ops.empty([3 * embed_dim, embed_dim], dtype=dt))
        if bias:
            self.in_proj_bias = Parameter(_C._ops.empty([3 * embed_dim], dtype=dt))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self._reset_parameters()

    def _reset_parameters(self):
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:  # work in (L, N, E) as torch does
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        tgt_len, bsz, E = query.shape
        src_len = key.shape[0]
        if E != self.embed_dim:
            raise ValueError(f"MultiheadAttention: expected embedding dim {self.embed_dim}, got {E}")
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        H, D = self.num_heads, self.head_dim

        def heads(x, w, b, n):  # (n, N, E) -> (N, H, n, D)
            return F.linear(x, w, b).reshape(n, bsz, H, D).permute(1, 2, 0, 3)

        q, k, v = heads(query, w_q, b_q, tgt_len), heads(key, w_k, b_k, src_len), heads(value, w_v, b_v, src_len)
        mask = self._merged_mask(attn_mask, key_padding_mask, is_causal, tgt_len, src_len, bsz, q.dtype)
        scores = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        if mask is not None:
            scores = scores + mask
        attn = F.softmax(scores, dim=-1)
        attn_used = F.dropout(attn, self.dropout, self.training) if self.dropout > 0 else attn
        out = attn_used.matmul(v).permute(2, 0, 1, 3).reshape(tgt_len, bsz, E)
        out = self.out_proj(out)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        weights = None
        if need_weights:
            weights = attn.mean(1) if average_attn_weights else attn
            if not batched:
                weights = weights.squeeze(0)
        return out, weights

    @staticmethod
    def _additive(mask, dtype):
        if mask.dtype == _C.bool:
            return _C._ops.zeros(list(mask.shape), dtype=dtype).masked_fill(mask, float("-inf"))
        return mask.to(dtype)

    def _merged_mask(self, attn_mask, key_padding_mask, is_causal, L, S, N, dtype):
        mask = None
        if attn_mask is None and is_causal:
            attn_mask = _C._ops.ones([L, S], dtype=_C.bool).triu(1)
        if attn_mask is not None:
            m = self._additive(attn_mask, dtype)
            if m.dim() == 3:  # (N*H, L, S)
                m = m.reshape(N, self.num_heads, L, S)
            mask = m
        if key_padding_mask is not None:
            kp = self._additive(key_padding_mask, dtype).reshape(N, 1, 1, S)
            mask = kp if mask is None else mask + kp
        return mask
