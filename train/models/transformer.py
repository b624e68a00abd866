"""One llama-like decoder with switches: Llama, Mistral, Qwen2, Qwen3,
Gemma 2, Gemma 3 and GPT-NeoX (Pythia) are configurations of it.

The pattern of penzai's `llamalike_common`: a single frozen config whose
fields switch the pieces on and off, and thin per-family mappers
(train/models/families/) that turn an HF config.json or GGUF metadata into
it. Per block (pre-norm):

  a = Attn(norm_attn(x))            [post_attn_norm: a = norm(a)]
  parallel_residual:  x + a + MLP(norm_mlp(x))                 (NeoX)
  otherwise:          x <- x + a; x + MLP(norm_mlp(x))  [post_mlp_norm]

Attention: q/k/v projections (optional biases), optional QK-norm (RMSNorm
over head_dim, Qwen3 / Gemma 3), RoPE on `rotary_fraction` of each head
with base `rope_theta` (global layers) or `rope_local_theta` (sliding-
window layers, Gemma 3), grouped / multi-query KV heads, an explicit head
dimension (Gemma: 256 != d / heads), query scale, score soft-capping.
MLP: SwiGLU, GeGLU (tanh GELU) or an ungated GELU (NeoX). Input embeddings
scaled by `embed_scale` (Gemma: sqrt(d)); the head is tied or untied, with
optional final-logit soft-capping (Gemma 2).

Parameters (plain dict; loaders write the same tree):
  embed/embedding [V, D]; layer_i/attn_norm, mlp_norm, post_attn_norm,
  post_mlp_norm (scale, + bias for LayerNorm); layer_i/attn/{q,k,v,o}
  (kernel [in, out], + bias); layer_i/attn/{q_norm,k_norm}/scale [hd];
  layer_i/{gate,up,down} (kernel, + bias); norm; lm_head/kernel [D, V]
  (a low-rank head: head_b/kernel [D, r] and lm_head/kernel [r, V]).
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp

from bottleneck import checks
from train.models import layers

NORMS = ("rms", "layer")
MLPS = {"swiglu": ("silu", True), "geglu": ("gelu_tanh", True),
        "gelu": ("gelu_exact", False)}  # name -> (activation, gated)
LAYER_TYPES = ("global", "local")
# Fresh weights (training from scratch): N(0, 0.02), as GPT-2 and Llama.
INIT = nn.initializers.normal(0.02)


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
  """Every switch of the llama-like family (see the module docstring)."""
  vocab_size: int
  n_layer: int
  n_head: int  # Query heads.
  n_kv_head: int  # KV heads (1 = multi-query; n_head = multi-head).
  n_embd: int  # d, the width of the residual stream and of the head.
  ffn_dim: int
  head_dim: int = 0  # Per-head width; 0 = n_embd // n_head.
  rope_theta: float = 10000.0  # RoPE base of global layers.
  rope_local_theta: float = 0.0  # RoPE base of sliding layers (0 = theta).
  # Per-frequency divisors on global layers (Llama 3.1 / linear scaling).
  rope_divisors: tuple = ()
  rotary_fraction: float = 1.0  # Fraction of head_dim rotated (NeoX 0.25).
  sliding_window: int = 0  # Keys a 'local' layer sees (0 = no window).
  layer_types: tuple = ()  # 'global' | 'local' per layer; () = all global.
  qk_norm: bool = False  # RMSNorm on q and k per head (Qwen3, Gemma 3).
  qkv_bias: bool = False  # Biases on q, k, v (Qwen2, NeoX).
  o_bias: bool = False  # Bias on the attention output (NeoX).
  query_scale: float = 0.0  # Score scale; 0 = head_dim ** -0.5.
  attn_softcap: float = 0.0  # tanh cap on attention scores (0 = off).
  norm: str = "rms"  # 'rms' | 'layer' (LayerNorm with bias: NeoX).
  norm_eps: float = 1e-5
  post_attn_norm: bool = False  # Norm after attention (Gemma 2 / 3).
  post_mlp_norm: bool = False  # Norm after the MLP (Gemma 2 / 3).
  parallel_residual: bool = False  # x + attn + mlp (NeoX).
  mlp: str = "swiglu"  # 'swiglu' | 'geglu' | 'gelu' (ungated, NeoX).
  mlp_bias: bool = False  # Biases in the MLP (NeoX).
  embed_scale: float = 1.0  # Input embeddings times this (Gemma: sqrt(d)).
  final_softcap: float = 0.0  # tanh cap on the logits (Gemma 2; 0 = off).
  tied: bool = True  # Head = the input embedding.
  # D of an untied low-rank head W = A B (seed 002 §3.1: A [V, D], B [D,
  # n_embd]); 0 = full rank.
  head_rank: int = 0
  context_length: int = 2048  # Longest context the model was trained on.
  block_size: int = 2048  # Longest window fed at once (<= context_length).
  dtype: str = "float32"  # Compute dtype: float32 | bfloat16.
  # Parameter dtype ('' = dtype; training keeps float32 parameters under a
  # bfloat16 compute dtype).
  param_dtype: str = ""
  # Recompute each block's activations in the backward pass (jax.checkpoint)
  # instead of keeping them: training memory for depth.
  remat: bool = False
  family: str = "llama"  # Registry name (messages and reports).

  def __post_init__(self):
    for name in ("vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd",
                 "ffn_dim", "context_length", "block_size"):
      checks.positive_int(name, getattr(self, name))
    if self.n_head % self.n_kv_head:
      raise ValueError(f"`n_head` ({self.n_head}) must be a multiple of "
                       f"`n_kv_head` ({self.n_kv_head}).")
    if not self.head_dim:
      if self.n_embd % self.n_head:
        raise ValueError(f"`n_head` ({self.n_head}) must divide `n_embd` "
                         f"({self.n_embd}) unless `head_dim` is given.")
      object.__setattr__(self, "head_dim", self.n_embd // self.n_head)
    if not 0.0 < self.rotary_fraction <= 1.0 or self.rotary_dim % 2 or (
        self.rotary_dim < 2):
      raise ValueError(f"`rotary_fraction` must be in (0, 1] and give an "
                       f"even rotary dimension >= 2; got "
                       f"{self.rotary_fraction} of head_dim {self.head_dim}.")
    if self.rope_divisors and len(self.rope_divisors) != self.rotary_dim // 2:
      raise ValueError(f"`rope_divisors` needs rotary_dim / 2 = "
                       f"{self.rotary_dim // 2} entries; got "
                       f"{len(self.rope_divisors)}.")
    if self.layer_types and (len(self.layer_types) != self.n_layer or any(
        t not in LAYER_TYPES for t in self.layer_types)):
      raise ValueError(f"`layer_types` must list {LAYER_TYPES[0]!r} or "
                       f"{LAYER_TYPES[1]!r} for each of the {self.n_layer} "
                       f"layers; got {self.layer_types!r}.")
    if "local" in self.layer_types and self.sliding_window < 1:
      raise ValueError("`sliding_window` must be >= 1 when a layer is "
                       f"'local'; got {self.sliding_window}.")
    if self.norm not in NORMS:
      raise ValueError(f"`norm` must be one of {NORMS}; got {self.norm!r}.")
    if self.mlp not in MLPS:
      raise ValueError(f"`mlp` must be one of {tuple(MLPS)}; got "
                       f"{self.mlp!r}.")
    for name in ("dtype", "param_dtype"):
      if getattr(self, name) not in ("float32", "bfloat16") and not (
          name == "param_dtype" and getattr(self, name) == ""):
        raise ValueError(f"`{name}` must be float32 or bfloat16; got "
                         f"{getattr(self, name)!r}.")
    if self.head_rank and (self.tied or not 1 <= self.head_rank <=
                           self.n_embd):
      raise checks.ArgumentError(
          "head_rank", f"`head_rank` (D of a low-rank head) must be in [1, "
          f"n_embd = {self.n_embd}] with an untied head; got "
          f"{self.head_rank} ({'tied' if self.tied else 'untied'}).")
    if self.block_size > self.context_length:
      raise ValueError(f"`block_size` ({self.block_size}) exceeds the "
                       f"model's context length ({self.context_length}).")
    inf = float("inf")
    for name, lo, lo_closed in (
        ("norm_eps", 0.0, False), ("rope_theta", 0.0, False),
        ("embed_scale", 0.0, False), ("rope_local_theta", 0.0, True),
        ("query_scale", 0.0, True), ("attn_softcap", 0.0, True),
        ("final_softcap", 0.0, True)):
      checks.number_in(name, getattr(self, name), lo, inf,
                       lo_closed=lo_closed)
    for divisor in self.rope_divisors:
      checks.number_in("rope_divisors", divisor, 0.0, inf)
    checks.int_in_range("sliding_window", self.sliding_window, 0, 2**31 - 1)

  # -- what the probes, the sampler and the comparison read (protocol.py) --
  @property
  def rotary_dim(self) -> int:
    return int(self.head_dim * self.rotary_fraction)

  @property
  def compute_dtype(self):
    return jnp.bfloat16 if self.dtype == "bfloat16" else jnp.float32

  @property
  def params_dtype(self):
    kind = self.param_dtype or self.dtype
    return jnp.bfloat16 if kind == "bfloat16" else jnp.float32

  @property
  def head(self) -> str:
    if self.tied:
      return "tied"
    return "lowrank" if self.head_rank else "untied"

  @property
  def head_bias(self) -> bool:
    return False  # No family of this decoder has a logit bias.

  @property
  def logit_softcap(self) -> float:
    return self.final_softcap

  def layer_type(self, i: int) -> str:
    return self.layer_types[i] if self.layer_types else "global"

  def module(self) -> "Transformer":
    return Transformer(self)

  def init_params(self, seed: int = 0):
    return Transformer(self).init(jax.random.key(seed),
                                  jnp.zeros((1, 4), jnp.int32))

  def head_weights(self, params):
    """(W [V, D], None): the output projection as stored (A B for a
    low-rank head)."""
    p = params["params"] if "params" in params else params
    if self.tied:
      return p["embed"]["embedding"], None
    w = p["lm_head"]["kernel"].T
    return (w @ p["head_b"]["kernel"].T if self.head_rank else w), None

  def head_linear(self, params):
    """The head as (project, K [D', V], None, soft-cap): logits =
    cap tanh(project(h) K / cap), project = h B^T for a low-rank head, else
    None (the trainer's fused cross-entropy, training/loss.py)."""
    p = params["params"] if "params" in params else params
    if self.tied:
      return None, p["embed"]["embedding"].T, None, self.final_softcap
    project = None
    if self.head_rank:
      project = lambda h: h.astype(jnp.float32) @ p["head_b"]["kernel"]
    return project, p["lm_head"]["kernel"], None, self.final_softcap

  def input_embeddings(self, params):
    p = params["params"] if "params" in params else params
    return p["embed"]["embedding"]

  def replace_embeddings(self, params, e_vxd):
    """`params` with the input embedding (a tied head's shared matrix)
    replaced by e_vxd; every other leaf shared, not copied."""
    outer = "params" in params
    p = dict(params["params"] if outer else params)
    p["embed"] = {**p["embed"], "embedding": e_vxd}
    return {**params, "params": p} if outer else p


def _norm(cfg: TransformerConfig, name: str):
  if cfg.norm == "rms":
    return layers.RMSNorm(cfg.norm_eps, name=name)
  return nn.LayerNorm(cfg.norm_eps, dtype=cfg.compute_dtype, name=name)


class Attention(nn.Module):
  cfg: TransformerConfig
  local: bool

  @nn.compact
  def __call__(self, x_btd, cache=None, pos=None):
    """[B, T, D] -> [B, T, D]; with `cache` (k, v [B, L, K, hd]) one token
    (T = 1) at position `pos`: -> (y, the cache with its k, v written)."""
    c = self.cfg
    b, t, _ = x_btd.shape
    dense = lambda n, name, bias: nn.Dense(
        n, use_bias=bias, dtype=c.compute_dtype, param_dtype=c.params_dtype,
        kernel_init=INIT, name=name)
    q = dense(c.n_head * c.head_dim, "q", c.qkv_bias)(x_btd)
    k = dense(c.n_kv_head * c.head_dim, "k", c.qkv_bias)(x_btd)
    v = dense(c.n_kv_head * c.head_dim, "v", c.qkv_bias)(x_btd)
    q = q.reshape(b, t, c.n_head, c.head_dim)
    k = k.reshape(b, t, c.n_kv_head, c.head_dim)
    v = v.reshape(b, t, c.n_kv_head, c.head_dim)
    if c.qk_norm:
      q = layers.RMSNorm(c.norm_eps, name="q_norm")(q)
      k = layers.RMSNorm(c.norm_eps, name="k_norm")(k)
    theta = (c.rope_local_theta or c.rope_theta) if self.local else \
        c.rope_theta
    divisors = () if self.local else c.rope_divisors
    offset = 0 if cache is None else pos
    q = layers.rope(q, theta, divisors, c.rotary_dim, offset)
    k = layers.rope(k, theta, divisors, c.rotary_dim, offset)
    scale = c.query_scale or c.head_dim ** -0.5
    window = c.sliding_window if self.local else None
    if cache is None:
      y = layers.attention(q, k, v, scale=scale, window=window,
                           softcap=c.attn_softcap or None)
      return dense(c.n_embd, "o", c.o_bias)(y)
    k_all = jax.lax.dynamic_update_slice_in_dim(cache[0], k.astype(
        cache[0].dtype), pos, axis=1)
    v_all = jax.lax.dynamic_update_slice_in_dim(cache[1], v.astype(
        cache[1].dtype), pos, axis=1)
    y = layers.attend_cached(q, k_all, v_all, pos, scale=scale,
                             window=window, softcap=c.attn_softcap or None)
    return dense(c.n_embd, "o", c.o_bias)(y), (k_all, v_all)


class Block(nn.Module):
  cfg: TransformerConfig
  local: bool

  @nn.compact
  def __call__(self, x, cache=None, pos=None):
    """x -> x; with a KV `cache`, one cached step (Attention's) -> (x,
    cache)."""
    c = self.cfg
    act, gated = MLPS[c.mlp]
    dense = lambda n, name: nn.Dense(
        n, use_bias=c.mlp_bias, dtype=c.compute_dtype,
        param_dtype=c.params_dtype, kernel_init=INIT, name=name)

    def mlp(h):
      up = layers.ACTIVATIONS[act](dense(c.ffn_dim, "gate" if gated else "up"
                                         )(h))
      if gated:
        up = up * dense(c.ffn_dim, "up")(h)
      out = dense(c.n_embd, "down")(up)
      return _norm(c, "post_mlp_norm")(out) if c.post_mlp_norm else out

    a = Attention(c, self.local, name="attn")(_norm(c, "attn_norm")(x),
                                              cache, pos)
    if cache is not None:
      a, cache = a
    if c.post_attn_norm:
      a = _norm(c, "post_attn_norm")(a)
    if c.parallel_residual:
      x = x + a + mlp(_norm(c, "mlp_norm")(x))
    else:
      x = x + a
      x = x + mlp(_norm(c, "mlp_norm")(x))
    return x if cache is None else (x, cache)


class Transformer(nn.Module):
  """Token ids [B, T] -> logits [B, T, V] (float32); `hidden` gives the
  head's input H [B, T, D] and `head` the logits from H."""
  cfg: TransformerConfig

  def setup(self):
    c = self.cfg
    self.embed = nn.Embed(c.vocab_size, c.n_embd, param_dtype=c.params_dtype,
                          embedding_init=INIT, name="embed")
    block = nn.remat(Block) if c.remat else Block
    self.layers = [block(c, c.layer_type(i) == "local", name=f"layer_{i}")
                   for i in range(c.n_layer)]
    self.norm = _norm(c, "norm")
    if c.head_rank:  # h -> h B^T -> (h B^T) A^T, as the thesis GPT's.
      self.head_b = nn.Dense(c.head_rank, use_bias=False,
                             param_dtype=c.params_dtype, kernel_init=INIT,
                             name="head_b")
    if not c.tied:
      self.lm_head = nn.Dense(c.vocab_size, use_bias=False,
                              param_dtype=c.params_dtype, kernel_init=INIT,
                              name="lm_head")

  def hidden(self, idx_bt, deterministic: bool = True):
    """Final-norm hidden states H [B, T, D] in float32."""
    del deterministic  # No dropout: inference only.
    c = self.cfg
    x = self.embed(idx_bt).astype(c.compute_dtype)
    if c.embed_scale != 1.0:  # Gemma casts the scale to the compute dtype.
      x = x * jnp.asarray(c.embed_scale, c.compute_dtype)
    for layer in self.layers:
      x = layer(x)
    return self.norm(x).astype(jnp.float32)

  def init_cache(self, batch: int, length: int):
    """Zero keys and values, one (k, v) [B, L, K, hd] per layer."""
    c = self.cfg
    shape = (batch, length, c.n_kv_head, c.head_dim)
    return [(jnp.zeros(shape, c.compute_dtype),) * 2
            for _ in range(c.n_layer)]

  def hidden_step(self, tok_b, pos, cache):
    """One cached decoding step: tokens [B] at position `pos` (the same for
    every row) -> (H [B, D] float32, the cache with their keys and
    values); equal to `hidden`'s row at pos of the whole prefix."""
    c = self.cfg
    x = self.embed(tok_b[:, None]).astype(c.compute_dtype)
    if c.embed_scale != 1.0:
      x = x * jnp.asarray(c.embed_scale, c.compute_dtype)
    out = []
    for layer, kv in zip(self.layers, cache):
      x, kv = layer(x, kv, pos)
      out.append(kv)
    return self.norm(x).astype(jnp.float32)[:, 0], out

  def head(self, h):
    """Logits [..., V] (float32) from hidden states."""
    h = h.astype(jnp.float32)
    if self.cfg.head_rank:
      h = self.head_b(h)
    logits = self.embed.attend(h) if self.cfg.tied else self.lm_head(h)
    cap = self.cfg.final_softcap
    return cap * jnp.tanh(logits / cap) if cap else logits

  def __call__(self, idx_bt, deterministic: bool = True):
    return self.head(self.hidden(idx_bt, deterministic))
