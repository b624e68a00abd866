"""The layers every model family is built from: one RMSNorm, one RoPE, one
attention core (train/models/gpt.py and train/models/transformer.py).

  RMSNorm     x / sqrt(mean(x^2) + eps) * scale, computed in float32; the
              scale is stored as applied (Gemma's 1 + w is folded in by its
              loaders), so one norm serves every family.
  rope        rotary embedding in the half-split layout (dimension i pairs
              with i + r/2 over the first r = rotary_dim dimensions; RoFormer
              eq. (34)), per-frequency divisors for Llama-3 / linear scaling.
  attention   causal attention with grouped (or multi-query) KV heads, an
              optional sliding window (a query at i sees keys j with
              0 <= i - j < window), tanh soft-capping of the scores (Gemma 2)
              and an explicit query scale; scores and softmax in float32.
              $BOTTLENECK_ATTENTION picks its implementation (IMPLEMENTATIONS).
"""

from __future__ import annotations

import os

import flax.linen as nn
import jax
import jax.numpy as jnp


class RMSNorm(nn.Module):
  """RMSNorm over the last axis (any rank: [B, T, D] or per head [.., hd])."""
  eps: float

  @nn.compact
  def __call__(self, x):
    scale = self.param("scale", nn.initializers.ones, (x.shape[-1],))
    x32 = x.astype(jnp.float32)
    y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, -1, keepdims=True) + self.eps)
    return (y * scale.reshape((1,) * (x.ndim - 1) + (-1,))).astype(x.dtype)


def inverse_frequencies(rotary_dim: int, theta: float, divisors=()):
  """theta^(-2i/r) / divisor_i for the r / 2 rotated pairs."""
  inv = 1.0 / theta ** (jnp.arange(0, rotary_dim, 2, dtype=jnp.float32) /
                        rotary_dim)
  return inv / jnp.asarray(divisors, jnp.float32) if divisors else inv


def rope(x_bthd, theta: float, divisors=(), rotary_dim: int | None = None,
         offset=0):
  """Rotary embedding on the first `rotary_dim` dims (all by default):
  (x_i, x_{i+r/2}) rotate by pos * theta^(-2i/r) / divisor_i, pos = offset
  + i (a traced offset: one cached decoding step at its position)."""
  t, h = x_bthd.shape[1], x_bthd.shape[-1]
  r = h if rotary_dim is None else rotary_dim
  inv = inverse_frequencies(r, theta, divisors)
  pos = jnp.arange(t, dtype=jnp.float32) + jnp.asarray(offset, jnp.float32)
  ang = pos[:, None] * inv[None, :]  # [T, r/2]
  cos = jnp.cos(ang)[None, :, None, :]
  sin = jnp.sin(ang)[None, :, None, :]
  x = x_bthd.astype(jnp.float32)
  x1, x2 = x[..., :r // 2], x[..., r // 2:r]
  out = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., r:]],
                        -1)
  return out.astype(x_bthd.dtype)


def causal_mask(t: int, window: int | None = None, start: int = 0,
                keys: tuple[int, int] | None = None):
  """[T, T] bool: query i may attend key j (j <= i, and i - j < window);
  for queries start..start+t-1 and keys keys[0]..keys[1]-1 when given."""
  lo, hi = keys or (0, t)
  i = jnp.arange(start, start + t)[:, None]
  j = jnp.arange(lo, hi)[None, :]
  allowed = j <= i
  return allowed & (i - j < window) if window else allowed


QUERY_BLOCK = 256  # Queries per block of `attention` (see there).
# $BOTTLENECK_ATTENTION, read when a model is traced: 'blocks' (this
# module's query blocks, any backend, the default), or
# jax.nn.dot_product_attention's 'xla' or 'cudnn' (a fused kernel: a GPU,
# bfloat16 or float16 operands, head_dim <= 128; no score soft-capping).
IMPLEMENTATIONS = ("blocks", "xla", "cudnn")


def implementation() -> str:
  """The attention implementation $BOTTLENECK_ATTENTION names."""
  name = os.environ.get("BOTTLENECK_ATTENTION", "") or IMPLEMENTATIONS[0]
  if name not in IMPLEMENTATIONS:
    raise ValueError(f"$BOTTLENECK_ATTENTION must be one of "
                     f"{', '.join(IMPLEMENTATIONS)}; got {name!r}.")
  return name


def attention(q_bthd, k_btkd, v_btkd, *, scale: float,
              window: int | None = None, softcap: float | None = None):
  """Causal attention; query head h reads KV head h // (H / K) (HF's
  repeat_kv order). q [B, T, H, hd], k / v [B, T, K, hd] -> [B, T, H * hd].

  Queries go QUERY_BLOCK at a time against only the keys they may see
  (up to the block's last query; from its first query's window start), so
  a 1024-token window computes 10/16 of the causal score matrix, fewer with
  a sliding window (benchmarks/forward_parts.py times it); each block's softmax is exact (it holds every key its queries see)."""
  b, t, h, d = q_bthd.shape
  impl = implementation()
  if impl != "blocks":
    if softcap:
      raise ValueError(f"$BOTTLENECK_ATTENTION={impl} has no score "
                       f"soft-capping (this model's attn_softcap is "
                       f"{softcap}); use 'blocks'.")
    y = jax.nn.dot_product_attention(
        q_bthd, k_btkd, v_btkd, scale=scale, is_causal=True,
        local_window_size=(window - 1, 0) if window else None,
        implementation=impl)
    return y.reshape(b, t, h * v_btkd.shape[-1])
  kv = k_btkd.shape[2]
  q = q_bthd.reshape(b, t, kv, h // kv, d)
  out = []
  for start in range(0, t, QUERY_BLOCK):
    end = min(t, start + QUERY_BLOCK)
    lo = max(0, start - window + 1) if window else 0
    scores = jnp.einsum("btkgd,bskd->bkgts", q[:, start:end],
                        k_btkd[:, lo:end]).astype(jnp.float32) * scale
    if softcap:
      scores = softcap * jnp.tanh(scores / softcap)
    scores = jnp.where(
        causal_mask(end - start, window, start, (lo, end))[None, None, None],
        scores, -jnp.inf)  # The diagonal is always allowed: no NaN.
    probs = jax.nn.softmax(scores, axis=-1).astype(v_btkd.dtype)
    out.append(jnp.einsum("bkgts,bskd->btkgd", probs, v_btkd[:, lo:end]))
  y = out[0] if len(out) == 1 else jnp.concatenate(out, axis=1)
  return y.reshape(b, t, h * v_btkd.shape[-1])


def attend_cached(q_b1hd, k_blkd, v_blkd, pos, *, scale: float,
                  window: int | None = None, softcap: float | None = None):
  """`attention` for one query at position `pos` against a cache of L keys
  (slots past `pos` are masked, as are those outside the window): q [B, 1,
  H, hd], k / v [B, L, K, hd] -> [B, 1, H * hd]."""
  b, _, h, d = q_b1hd.shape
  kv, length = k_blkd.shape[2], k_blkd.shape[1]
  q = q_b1hd.reshape(b, 1, kv, h // kv, d)
  scores = jnp.einsum("btkgd,bskd->bkgts", q, k_blkd).astype(
      jnp.float32) * scale
  if softcap:
    scores = softcap * jnp.tanh(scores / softcap)
  j = jnp.arange(length)
  allowed = (j <= pos) & ((pos - j < window) if window else True)
  scores = jnp.where(allowed[None, None, None, None], scores, -jnp.inf)
  probs = jax.nn.softmax(scores, axis=-1).astype(v_blkd.dtype)
  y = jnp.einsum("bkgts,bskd->btkgd", probs, v_blkd)
  return y.reshape(b, 1, h * v_blkd.shape[-1])


ACTIVATIONS = {
    "silu": jax.nn.silu,
    "gelu_tanh": lambda x: jax.nn.gelu(x, approximate=True),
    "gelu_exact": lambda x: jax.nn.gelu(x, approximate=False),
    "relu": jax.nn.relu,
}
