"""A Flax GPT-NeoX decoder (Pythia) and its HF-folder loader.

Pre-LayerNorm blocks with the parallel residual of GPT-J / Pythia,
  x <- x + Attn(LN_1(x)) + MLP(LN_2(x))      (use_parallel_residual)
  x <- x + Attn(LN_1(x)); x <- x + MLP(LN_2(x))   (otherwise),
rotary embeddings on the first rotary_pct of each head's dimensions (HF
half-split layout, train/llama.rope), exact-erf GELU MLP, a final LayerNorm
and an untied head `embed_out` without bias. Same `hidden` / `head`
interface as train.model.GPT and train.llama.Llama, so every probe takes it.

Parameters (plain dict): embed/embedding [V, D]; layer_i/{ln_attn, ln_mlp}/
{scale, bias}; layer_i/{qkv, o, up, down}/{kernel, bias};
norm/{scale, bias}; lm_head/kernel [D, V]. HF's fused
query_key_value rows are ordered per head as (q, k, v) blocks of head_dim;
the kernel here keeps that order ([D, n_head * 3 * head_dim]).
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import checks
from bottleneck.io import hf
from train import llama, weights

MODEL_TYPES = ("gpt_neox",)


@dataclasses.dataclass(frozen=True)
class NeoXConfig:
  vocab_size: int
  n_layer: int
  n_head: int
  n_embd: int
  ffn_dim: int
  rotary_pct: float = 0.25  # Fraction of head_dim rotated (Pythia: 0.25).
  rope_theta: float = 10000.0
  ln_eps: float = 1e-5
  parallel_residual: bool = True
  block_size: int = 2048  # Longest window the probes feed at once.
  dtype: str = "float32"  # Compute dtype: float32 | bfloat16.
  head_bias: bool = False  # embed_out has none (probes ask).
  head: str = "untied"  # Pythia's head is not tied (probes ask).

  def __post_init__(self):
    for name in ("vocab_size", "n_layer", "n_head", "n_embd", "ffn_dim",
                 "block_size"):
      checks.positive_int(name, getattr(self, name))
    if self.n_embd % self.n_head:
      raise ValueError(f"`n_head` ({self.n_head}) must divide `n_embd` "
                       f"({self.n_embd}).")
    if (not 0.0 < self.rotary_pct <= 1.0 or self.rotary_dim % 2 or
        self.rotary_dim < 2):
      raise ValueError(f"`rotary_pct` must be in (0, 1] and give an even "
                       f"rotary dimension >= 2; got {self.rotary_pct} -> "
                       f"{self.rotary_dim}.")

  @property
  def head_dim(self) -> int:
    return self.n_embd // self.n_head

  @property
  def rotary_dim(self) -> int:
    return int(self.head_dim * self.rotary_pct)

  @property
  def compute_dtype(self):
    return jnp.bfloat16 if self.dtype == "bfloat16" else jnp.float32


class Block(nn.Module):
  cfg: NeoXConfig

  @nn.compact
  def __call__(self, x):
    c = self.cfg
    b, t, _ = x.shape
    dense = lambda n, name: nn.Dense(n, dtype=c.compute_dtype, name=name)
    norm = lambda name: nn.LayerNorm(c.ln_eps, dtype=c.compute_dtype,
                                     name=name)
    h = norm("ln_attn")(x)
    qkv = dense(3 * c.n_embd, "qkv")(h).reshape(b, t, c.n_head, 3, c.head_dim)
    q, k, v = qkv[:, :, :, 0], qkv[:, :, :, 1], qkv[:, :, :, 2]
    r = c.rotary_dim  # Rotate the first r dimensions of q and k only.
    q = jnp.concatenate([llama.rope(q[..., :r], c.rope_theta), q[..., r:]],
                        -1)
    k = jnp.concatenate([llama.rope(k[..., :r], c.rope_theta), k[..., r:]],
                        -1)
    att = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32)
    att = att / jnp.sqrt(c.head_dim)
    att = jnp.where(jnp.tril(jnp.ones((t, t), bool)), att, -jnp.inf)
    att = jax.nn.softmax(att, axis=-1).astype(v.dtype)
    y = jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, t, -1)
    attn_out = dense(c.n_embd, "o")(y)
    mlp = lambda z: dense(c.n_embd, "down")(
        jax.nn.gelu(dense(c.ffn_dim, "up")(z), approximate=False))
    if c.parallel_residual:
      return x + attn_out + mlp(norm("ln_mlp")(x))
    x = x + attn_out
    return x + mlp(norm("ln_mlp")(x))


class NeoX(nn.Module):
  cfg: NeoXConfig

  def setup(self):
    c = self.cfg
    self.embed = nn.Embed(c.vocab_size, c.n_embd, name="embed")
    self.layers = [Block(c, name=f"layer_{i}") for i in range(c.n_layer)]
    self.norm = nn.LayerNorm(c.ln_eps, name="norm")
    self.lm_head = nn.Dense(c.vocab_size, use_bias=False, name="lm_head")

  def hidden(self, idx_bt, deterministic: bool = True):
    """Final-norm hidden states H [B, T, D] (the LM head's input)."""
    del deterministic  # No dropout: inference only.
    x = self.embed(idx_bt).astype(self.cfg.compute_dtype)
    for layer in self.layers:
      x = layer(x)
    return self.norm(x.astype(jnp.float32))

  def head(self, h):
    """Logits [..., V] from hidden states (float32)."""
    return self.lm_head(h.astype(jnp.float32))

  def __call__(self, idx_bt, deterministic: bool = True):
    return self.head(self.hidden(idx_bt, deterministic))


def head_matrix(params, cfg: NeoXConfig):
  """The output projection W [V, D]."""
  del cfg
  p = params["params"] if "params" in params else params
  return p["lm_head"]["kernel"].T


def init_params(cfg: NeoXConfig, seed: int = 0):
  return NeoX(cfg).init(jax.random.key(seed), jnp.zeros((1, 4), jnp.int32))


def config_from_hf(c: dict, path: str) -> NeoXConfig:
  weights.require_int_fields(c, path)
  if c.get("rope_scaling"):
    raise ValueError(f"`hf_dir` {path!r}: rope_scaling={c['rope_scaling']!r}"
                     " is not supported for gpt_neox.")
  if c.get("hidden_act", "gelu") != "gelu":
    raise ValueError(f"`hf_dir` {path!r}: hidden_act={c['hidden_act']!r}; "
                     "only 'gelu' (exact) is supported for gpt_neox.")
  if c.get("tie_word_embeddings"):
    raise ValueError(f"`hf_dir` {path!r}: tie_word_embeddings=true is not "
                     "supported for gpt_neox (Pythia heads are untied).")
  return NeoXConfig(
      vocab_size=c["vocab_size"], n_layer=c["num_hidden_layers"],
      n_head=c["num_attention_heads"], n_embd=c["hidden_size"],
      ffn_dim=c["intermediate_size"],
      rotary_pct=float(c.get("rotary_pct", 0.25)),
      rope_theta=float(c.get("rotary_emb_base", c.get("rope_theta", 10000))),
      ln_eps=float(c.get("layer_norm_eps", 1e-5)),
      parallel_residual=bool(c.get("use_parallel_residual", True)),
      block_size=min(int(c.get("max_position_embeddings", 2048)), 2048))


_LAYER = {"input_layernorm": "ln_attn", "post_attention_layernorm": "ln_mlp",
          "attention.query_key_value": "qkv", "attention.dense": "o",
          "mlp.dense_h_to_4h": "up", "mlp.dense_4h_to_h": "down"}


def load(directory: str, dtype: str = "float32"):
  """(params, NeoXConfig) from an HF gpt_neox folder (Pythia); parameters
  stored in `dtype` (float32 | bfloat16; also the compute dtype)."""
  cfg = config_from_hf(hf.read_config(directory, "hf_dir"), directory)
  cfg = dataclasses.replace(cfg, dtype=dtype)
  where = f"`hf_dir` {directory!r}"
  shapes = weights.expected_shapes(init_params, cfg)
  weights.check_memory(shapes, dtype, where)
  p, to = {}, weights.np_dtype(dtype)
  for name, w in hf.read_tensors(directory, "hf_dir").items():
    w = np.asarray(w, to)
    name = name.removeprefix("gpt_neox.")
    stem, _, leaf = name.rpartition(".")
    if name == "embed_in.weight":
      p["embed"] = {"embedding": w}
    elif name == "embed_out.weight":
      p["lm_head"] = {"kernel": w.T}
    elif stem == "final_layer_norm":
      p.setdefault("norm", {})["scale" if leaf == "weight" else "bias"] = w
    elif name.startswith("layers."):
      _, i, rest = stem.split(".", 2)
      if rest not in _LAYER:
        continue  # Rotary inv_freq, attention masks stored as buffers.
      node = p.setdefault(f"layer_{i}", {})
      for k in _LAYER[rest].split("/"):
        node = node.setdefault(k, {})
      if "norm" in rest:
        node["scale" if leaf == "weight" else "bias"] = w
      else:
        node["kernel" if leaf == "weight" else "bias"] = (
            w.T if leaf == "weight" else w)
  weights.check_shapes(p, shapes, where)
  return {"params": p}, cfg
