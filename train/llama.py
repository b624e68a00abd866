"""A Flax decoder for the Llama family (Llama, Mistral, Qwen2, SmolLM2).

Pre-norm blocks: RMSNorm -> grouped-query attention with rotary position
embeddings (RoPE, HF layout: dimension i pairs with i + head_dim/2) ->
residual; RMSNorm -> SwiGLU MLP -> residual; final RMSNorm; a tied or untied
LM head. Qwen2's q/k/v biases are a config switch (`qkv_bias`).

The interface matches train.model.GPT (`hidden`, `head`, `__call__`), so the
probes of train/probes/ take either model. Parameters are a plain dict:
  embed/embedding [V, D]; layer_i/{attn_norm, mlp_norm}/scale [D];
  layer_i/{q, k, v, o, gate, up, down}/kernel [in, out] (+ bias on q, k, v
  when qkv_bias); norm/scale [D]; lm_head/kernel [D, V] when untied.
"""

from __future__ import annotations

import dataclasses
import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from bottleneck import checks


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
  vocab_size: int
  n_layer: int
  n_head: int
  n_kv_head: int
  n_embd: int
  ffn_dim: int
  rope_theta: float = 10000.0
  rms_eps: float = 1e-5
  tied: bool = True  # Head = the input embedding (SmolLM2).
  qkv_bias: bool = False  # Qwen2.
  block_size: int = 2048  # Longest window the probes feed at once.
  dtype: str = "float32"  # Compute dtype: float32 | bfloat16.
  head_bias: bool = False  # Llama heads have none (probes ask).
  head: str = "tied"  # 'tied' | 'untied' (probes ask).
  # RoPE frequency divisors, one per rotated pair (head_dim / 2 of them):
  # inv_freq_i = theta^(-2i/h) / divisor_i. () = plain RoPE; Llama-3.1's
  # scaling and 'linear' come from `rope_divisors` below, GGUF files store
  # them as the rope_freqs tensor.
  rope_divisors: tuple = ()

  def __post_init__(self):
    for name in ("vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd",
                 "ffn_dim", "block_size"):
      checks.positive_int(name, getattr(self, name))
    if self.n_embd % self.n_head or self.n_head % self.n_kv_head:
      raise ValueError(
          f"`n_head` ({self.n_head}) must divide `n_embd` ({self.n_embd}) and "
          f"be a multiple of `n_kv_head` ({self.n_kv_head}).")
    if (self.n_embd // self.n_head) % 2:
      raise ValueError("RoPE needs an even head dimension; got "
                       f"{self.n_embd // self.n_head}.")
    if self.rope_divisors and len(self.rope_divisors) != self.head_dim // 2:
      raise ValueError(f"`rope_divisors` needs head_dim / 2 = "
                       f"{self.head_dim // 2} entries; got "
                       f"{len(self.rope_divisors)}.")
    object.__setattr__(self, "head", "tied" if self.tied else "untied")

  @property
  def head_dim(self) -> int:
    return self.n_embd // self.n_head

  @property
  def compute_dtype(self):
    return jnp.bfloat16 if self.dtype == "bfloat16" else jnp.float32


class RMSNorm(nn.Module):
  eps: float

  @nn.compact
  def __call__(self, x):
    scale = self.param("scale", nn.initializers.ones, (x.shape[-1],))
    x32 = x.astype(jnp.float32)
    y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, -1, keepdims=True) + self.eps)
    return (y * scale[None, None, :]).astype(x.dtype)


def rope_divisors(scaling: dict | None, head_dim: int, theta: float,
                  where: str = "rope_scaling") -> tuple:
  """Per-frequency divisors of an HF `rope_scaling` dict (() for none).

  'linear': every frequency / factor. 'llama3' (Llama 3.1+, HF
  `_compute_llama3_parameters`): wavelengths above
  original_max_position_embeddings / low_freq_factor are divided by
  `factor`, those below .../high_freq_factor kept, the band between
  interpolated smoothly.
  """
  if not scaling:
    return ()
  kind = scaling.get("rope_type", scaling.get("type", "default"))
  n = head_dim // 2
  if kind == "default":
    return ()
  try:
    factor = float(scaling["factor"])
    if kind == "linear":
      return (factor,) * n
    if kind != "llama3":
      raise ValueError(f"`{where}` rope_type={kind!r} is not supported "
                       "(default, linear, llama3).")
    low, high = (float(scaling["low_freq_factor"]),
                 float(scaling["high_freq_factor"]))
    old = float(scaling["original_max_position_embeddings"])
  except (KeyError, TypeError) as e:
    raise ValueError(f"`{where}` {scaling!r} lacks a numeric field: {e}."
                     ) from None
  out = []
  for i in range(n):
    wavelen = 2 * math.pi * theta ** (2 * i / head_dim)
    if wavelen < old / high:
      out.append(1.0)
    elif wavelen > old / low:
      out.append(factor)
    else:
      smooth = (old / wavelen - low) / (high - low)
      out.append(1.0 / ((1 - smooth) / factor + smooth))
  return tuple(out)


def inverse_frequencies(head_dim: int, theta: float, divisors=()):
  """theta^(-2i/h) / divisor_i for the head_dim / 2 rotated pairs."""
  inv = 1.0 / theta ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) /
                        head_dim)
  return inv / jnp.asarray(divisors, jnp.float32) if divisors else inv


def rope(x_bthd, theta: float, divisors=()):
  """Rotary embedding, HF layout: (x_i, x_{i+h/2}) rotate by
  pos * theta^(-2i/h) / divisor_i (RoFormer eq. (34); Llama-3 scaling)."""
  t, h = x_bthd.shape[1], x_bthd.shape[-1]
  inv = inverse_frequencies(h, theta, divisors)
  ang = jnp.arange(t, dtype=jnp.float32)[:, None] * inv[None, :]  # [T, h/2]
  cos = jnp.cos(ang)[None, :, None, :]
  sin = jnp.sin(ang)[None, :, None, :]
  x1, x2 = jnp.split(x_bthd.astype(jnp.float32), 2, axis=-1)
  out = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)
  return out.astype(x_bthd.dtype)


class Attention(nn.Module):
  cfg: LlamaConfig

  @nn.compact
  def __call__(self, x_btd):
    c = self.cfg
    b, t, _ = x_btd.shape
    dense = lambda n, name, bias=False: nn.Dense(
        n, use_bias=bias, dtype=c.compute_dtype, name=name)
    q = dense(c.n_head * c.head_dim, "q", c.qkv_bias)(x_btd)
    k = dense(c.n_kv_head * c.head_dim, "k", c.qkv_bias)(x_btd)
    v = dense(c.n_kv_head * c.head_dim, "v", c.qkv_bias)(x_btd)
    q = rope(q.reshape(b, t, c.n_head, c.head_dim), c.rope_theta,
             c.rope_divisors)
    k = rope(k.reshape(b, t, c.n_kv_head, c.head_dim), c.rope_theta,
             c.rope_divisors)
    v = v.reshape(b, t, c.n_kv_head, c.head_dim)
    group = c.n_head // c.n_kv_head  # Grouped-query: each kv head serves
    k, v = (jnp.repeat(z, group, axis=2) for z in (k, v))  # `group` q heads.
    att = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32)
    att = att / jnp.sqrt(c.head_dim)
    att = jnp.where(jnp.tril(jnp.ones((t, t), bool)), att, -jnp.inf)
    att = jax.nn.softmax(att, axis=-1).astype(v.dtype)
    y = jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, t, -1)
    return dense(c.n_embd, "o")(y)


class Block(nn.Module):
  cfg: LlamaConfig

  @nn.compact
  def __call__(self, x):
    c = self.cfg
    x = x + Attention(c, name="attn")(RMSNorm(c.rms_eps, name="attn_norm")(x))
    h = RMSNorm(c.rms_eps, name="mlp_norm")(x)
    dense = lambda n, name: nn.Dense(n, use_bias=False, dtype=c.compute_dtype,
                                     name=name)
    h = jax.nn.silu(dense(c.ffn_dim, "gate")(h)) * dense(c.ffn_dim, "up")(h)
    return x + dense(c.n_embd, "down")(h)


class Llama(nn.Module):
  cfg: LlamaConfig

  def setup(self):
    c = self.cfg
    self.embed = nn.Embed(c.vocab_size, c.n_embd, name="embed")
    self.layers = [Block(c, name=f"layer_{i}") for i in range(c.n_layer)]
    self.norm = RMSNorm(c.rms_eps, name="norm")
    if not c.tied:
      self.lm_head = nn.Dense(c.vocab_size, use_bias=False, name="lm_head")

  def hidden(self, idx_bt, deterministic: bool = True):
    """Final-norm hidden states H [B, T, D] (the LM head's input)."""
    del deterministic  # No dropout: inference only.
    x = self.embed(idx_bt).astype(self.cfg.compute_dtype)
    for layer in self.layers:
      x = layer(x)
    return self.norm(x).astype(jnp.float32)

  def head(self, h):
    """Logits [..., V] from hidden states (float32)."""
    if self.cfg.tied:
      return self.embed.attend(h.astype(jnp.float32))
    return self.lm_head(h)

  def __call__(self, idx_bt, deterministic: bool = True):
    return self.head(self.hidden(idx_bt, deterministic))


def head_matrix(params, cfg: LlamaConfig):
  """The output projection W [V, D]."""
  p = params["params"] if "params" in params else params
  return p["embed"]["embedding"] if cfg.tied else p["lm_head"]["kernel"].T


def init_params(cfg: LlamaConfig, seed: int = 0):
  return Llama(cfg).init(jax.random.key(seed), jnp.zeros((1, 4), jnp.int32))
