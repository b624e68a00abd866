"""A nanoGPT-style decoder in Flax linen (seed 004's models, seed 002's heads).

Pre-LN blocks (x + attn(ln1 x); x + mlp(ln2 x)), learned positions, and an
output head that is
  untied   Dense(V) with bias (the thesis's parameter counts imply this)
  tied     logits = h . wte^T (+ optional bias)          (GPT-2)
  lowrank  W = A B with A in R^{V x D}, B in R^{D x n}   (seed 002, §3.1)

Why linen: parameters are a plain nested dict, which orbax checkpoints,
`NamedSharding` rules, the probes of `bottleneck/` (they take the head matrix
W as an array) and the HF weight loader all use directly; `apply` is a pure
function, so the train step is one jitted function of (params, batch).
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp

from bottleneck import checks
from train.models import layers

HEADS = ("untied", "tied", "lowrank")
ACTIVATIONS = {"gelu": nn.gelu,
               "gelu_exact": lambda x: nn.gelu(x, approximate=False),
               "relu": nn.relu}


@dataclasses.dataclass(frozen=True)
class GPTConfig:
  vocab_size: int = 50257  # V (GPT-Neo / GPT-2 BPE).
  block_size: int = 128  # Context length (positions).
  n_layer: int = 4
  n_head: int = 1
  n_embd: int = 64  # Width (seed 002's D when the head is full rank).
  dropout: float = 0.0
  qkv_bias: bool = False  # nanoGPT/Karpathy: no bias; GPT-2: bias.
  head: str = "untied"  # untied | tied | lowrank
  head_rank: int = 0  # D of the low-rank head W = A B.
  head_bias: bool = True  # Bias on the output logits.
  activation: str = "gelu"  # gelu (tanh approx., GPT-2) | gelu_exact | relu
  layer_norm_eps: float = 1e-5
  dtype: str = "float32"  # Compute dtype: float32 | bfloat16 (params f32).

  def __post_init__(self):
    for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
      value = getattr(self, name)
      if not isinstance(value, int) or value < 1:
        raise ValueError(f"`model.{name}` must be an integer >= 1; got "
                         f"{value!r}.")
    if self.n_embd % self.n_head:
      raise ValueError(f"`model.n_head` must divide `model.n_embd`; got "
                       f"n_embd={self.n_embd}, n_head={self.n_head}.")
    if self.head not in HEADS:
      raise ValueError(f"`model.head` must be one of {HEADS}; got "
                       f"{self.head!r}.")
    if self.head == "lowrank" and not 1 <= self.head_rank <= self.n_embd:
      raise ValueError("`model.head_rank` (D) must be in [1, n_embd = "
                       f"{self.n_embd}] for a low-rank head; got "
                       f"{self.head_rank}.")
    if self.activation not in ACTIVATIONS:
      raise ValueError(f"`model.activation` must be one of "
                       f"{tuple(ACTIVATIONS)}; got {self.activation!r}.")
    if self.dtype not in ("float32", "bfloat16"):
      raise ValueError("`model.dtype` must be float32 or bfloat16; got "
                       f"{self.dtype!r}.")
    checks.number_in("model.dropout", self.dropout, 0.0, 1.0,
                     lo_closed=True)
    checks.number_in("model.layer_norm_eps", self.layer_norm_eps, 0.0,
                     float("inf"))

  @property
  def compute_dtype(self):
    return jnp.bfloat16 if self.dtype == "bfloat16" else jnp.float32

  # -- the model protocol (train/models/protocol.py) --
  @property
  def tied(self) -> bool:
    return self.head == "tied"

  @property
  def logit_softcap(self) -> float:
    return 0.0

  @property
  def context_length(self) -> int:
    return self.block_size

  @property
  def family(self) -> str:
    return "gpt"

  def module(self) -> "GPT":
    return GPT(self)

  def init_params(self, seed: int = 0):
    return init_params(self, seed)

  def head_weights(self, params):
    """(W [V, D], b [V] or None) as stored (W = A B for a low-rank head)."""
    return head_matrix(params, self), head_bias(params, self)

  def head_linear(self, params):
    """The head as (project, K [D', V], b [V] or None, soft-cap): logits =
    project(h) K + b, project = h B^T for a low-rank head, else None (the
    trainer's fused cross-entropy, training/loss.py)."""
    p = params["params"] if "params" in params else params
    bias = head_bias(params, self)
    if self.head == "tied":
      return None, p["wte"]["embedding"].T, bias, 0.0
    project = None
    if self.head == "lowrank":
      project = lambda h: h.astype(jnp.float32) @ p["head_b"]["kernel"]
    return project, p["lm_head"]["kernel"], bias, 0.0

  def input_embeddings(self, params):
    p = params["params"] if "params" in params else params
    return p["wte"]["embedding"]


class CausalSelfAttention(nn.Module):
  cfg: GPTConfig

  @nn.compact
  def __call__(self, x_btc, deterministic: bool):
    c = self.cfg
    b, t, _ = x_btc.shape
    head_dim = c.n_embd // c.n_head
    qkv = nn.Dense(3 * c.n_embd, use_bias=c.qkv_bias, dtype=c.compute_dtype,
                   name="c_attn")(x_btc)
    q, k, v = jnp.split(qkv.reshape(b, t, 3 * c.n_head, head_dim), 3, axis=2)
    y = layers.attention(q, k, v, scale=head_dim ** -0.5)
    y = nn.Dense(c.n_embd, dtype=c.compute_dtype, name="c_proj")(y)
    return nn.Dropout(c.dropout)(y, deterministic=deterministic)


class MLP(nn.Module):
  cfg: GPTConfig

  @nn.compact
  def __call__(self, x, deterministic: bool):
    c = self.cfg
    h = nn.Dense(4 * c.n_embd, dtype=c.compute_dtype, name="c_fc")(x)
    h = ACTIVATIONS[c.activation](h)
    h = nn.Dense(c.n_embd, dtype=c.compute_dtype, name="c_proj")(h)
    return nn.Dropout(c.dropout)(h, deterministic=deterministic)


class Block(nn.Module):
  cfg: GPTConfig

  @nn.compact
  def __call__(self, x, deterministic: bool):
    eps = self.cfg.layer_norm_eps
    x = x + CausalSelfAttention(self.cfg, name="attn")(
        nn.LayerNorm(epsilon=eps, name="ln_1")(x), deterministic)
    return x + MLP(self.cfg, name="mlp")(
        nn.LayerNorm(epsilon=eps, name="ln_2")(x), deterministic)


class GPT(nn.Module):
  """Token ids [B, T] -> logits [B, T, V] (float32)."""
  cfg: GPTConfig

  def setup(self):
    c = self.cfg
    init = nn.initializers.normal(0.02)
    self.wte = nn.Embed(c.vocab_size, c.n_embd, embedding_init=init,
                        name="wte")
    self.wpe = nn.Embed(c.block_size, c.n_embd, embedding_init=init,
                        name="wpe")
    self.drop = nn.Dropout(c.dropout)
    self.blocks = [Block(c, name=f"h_{i}") for i in range(c.n_layer)]
    self.ln_f = nn.LayerNorm(epsilon=c.layer_norm_eps, name="ln_f")
    if c.head == "untied":
      self.lm_head = nn.Dense(c.vocab_size, use_bias=c.head_bias,
                              kernel_init=init, name="lm_head")
    elif c.head == "lowrank":  # x -> x B^T -> (x B^T) A^T (+ bias)
      self.head_b = nn.Dense(c.head_rank, use_bias=False, kernel_init=init,
                             name="head_b")
      self.lm_head = nn.Dense(c.vocab_size, use_bias=c.head_bias,
                              kernel_init=init, name="lm_head")
    elif c.head_bias:
      self.head_bias_param = self.param("head_bias", nn.initializers.zeros,
                                        (c.vocab_size,))

  def hidden(self, idx_bt, deterministic: bool = True):
    """Final hidden states H [B, T, n] (after ln_f): the input of the head."""
    c = self.cfg
    t = idx_bt.shape[1]
    if t > c.block_size:
      raise ValueError(f"sequence length {t} exceeds `model.block_size` "
                       f"{c.block_size}.")
    x = self.wte(idx_bt) + self.wpe(jnp.arange(t))[None]
    x = self.drop(x.astype(c.compute_dtype), deterministic=deterministic)
    for block in self.blocks:
      x = block(x, deterministic)
    return self.ln_f(x)

  def head(self, h):
    """Logits from hidden states (float32)."""
    c = self.cfg
    h = h.astype(jnp.float32)
    if c.head == "untied":
      return self.lm_head(h)
    if c.head == "lowrank":
      return self.lm_head(self.head_b(h))
    logits = self.wte.attend(h)
    if not c.head_bias:
      return logits
    return logits + self.head_bias_param.reshape(  # [V] on [..., V].
        (1,) * (logits.ndim - 1) + (-1,))

  def __call__(self, idx_bt, deterministic: bool = True):
    return self.head(self.hidden(idx_bt, deterministic))


def head_matrix(params, cfg: GPTConfig):
  """The output projection W (V x n) of a parameter tree (A B if low-rank)."""
  p = params["params"] if "params" in params else params
  if cfg.head == "untied":
    return p["lm_head"]["kernel"].T
  if cfg.head == "lowrank":
    return p["lm_head"]["kernel"].T @ p["head_b"]["kernel"].T
  return p["wte"]["embedding"]


def head_bias(params, cfg: GPTConfig):
  """The output bias b (V,) of a parameter tree, or None without one."""
  if not cfg.head_bias:
    return None
  p = params["params"] if "params" in params else params
  return p["head_bias"] if cfg.head == "tied" else p["lm_head"]["bias"]


def init_params(cfg: GPTConfig, seed: int = 0):
  model = GPT(cfg)
  return model.init(jax.random.key(seed), jnp.zeros((1, cfg.block_size),
                                                    jnp.int32))


def flops_per_token(cfg: GPTConfig, n_params: int) -> float:
  """Training FLOPs per token: 6 N (non-embedding) + 12 L T n (attention).

  The PaLM/nanoGPT estimate; embeddings (wte, wpe) excluded from N, the
  output head included.
  """
  n = n_params - cfg.vocab_size * cfg.n_embd - cfg.block_size * cfg.n_embd
  if cfg.head == "tied":
    n += cfg.vocab_size * cfg.n_embd  # The tied head still multiplies.
  return 6.0 * n + 12.0 * cfg.n_layer * cfg.block_size * cfg.n_embd
