"""What the llama-like families share: config readers (HF config.json,
GGUF metadata) and tensor-name maps onto train.models.transformer's tree.

HF stores nn.Linear weights [out, in] (Flax kernels are [in, out]) with
q/k rows in the half-split RoPE layout the Transformer uses. GGUF names are
llama.cpp's (`blk.N.attn_q.weight`, ...) and say what a tensor does, so one
map serves every architecture; only llama.cpp's `llama` converter permutes
q/k rows (its RoPE pairs dimensions 2i, 2i+1), which `unpermute` undoes.
"""

from __future__ import annotations

import math

import numpy as np

from train.models import transformer

# GGUF layer tensor -> parameter path (every llama-like architecture).
GGUF_LAYER = {
    "attn_norm": "attn_norm", "ffn_norm": "mlp_norm",
    "post_attention_norm": "post_attn_norm", "post_ffw_norm": "post_mlp_norm",
    "attn_q": "attn/q", "attn_k": "attn/k", "attn_v": "attn/v",
    "attn_output": "attn/o", "attn_q_norm": "attn/q_norm",
    "attn_k_norm": "attn/k_norm", "ffn_gate": "gate", "ffn_up": "up",
    "ffn_down": "down"}
# HF layer module -> parameter path (Llama, Mistral, Qwen2, Qwen3).
HF_LAYER = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "mlp_norm",
    "self_attn.q_proj": "attn/q", "self_attn.k_proj": "attn/k",
    "self_attn.v_proj": "attn/v", "self_attn.o_proj": "attn/o",
    "self_attn.q_norm": "attn/q_norm", "self_attn.k_norm": "attn/k_norm",
    "mlp.gate_proj": "gate", "mlp.up_proj": "up", "mlp.down_proj": "down"}
# Buffers some HF checkpoints store that no model uses.
HF_BUFFERS = ("rotary_emb.inv_freq", "attention.bias", "attention.masked_bias")
_NORM_LEAVES = {"weight": "scale", "bias": "bias"}
_DENSE_LEAVES = {"weight": "kernel", "bias": "bias"}


def leaf(path: str, kind: str, w) -> tuple[str, np.ndarray]:
  """A module's 'weight' / 'bias' as (parameter path, array): norms keep
  their vectors, dense weights are transposed to [in, out]."""
  if path.endswith("norm"):
    return f"{path}/{_NORM_LEAVES[kind]}", w
  return f"{path}/{_DENSE_LEAVES[kind]}", w.T if kind == "weight" else w


class UnknownTensor(KeyError):
  """A checkpoint tensor the family cannot place (the loader names it)."""


def hf_tensors(name: str, w, cfg, layer_map=None, norm_offset: float = 0.0):
  """(path, array) of one HF tensor; `norm_offset` is added to every norm
  scale (Gemma stores w and applies 1 + w)."""
  layer_map = layer_map or HF_LAYER
  for prefix in ("model.language_model.", "language_model.model.",
                 "model.", "language_model."):
    if name.startswith(prefix):
      name = name[len(prefix):]
      break
  if name == "embed_tokens.weight":
    yield "embed/embedding", w
  elif name == "norm.weight":
    yield "norm/scale", w + norm_offset
  elif name == "lm_head.weight":
    if not cfg.tied:  # Tied checkpoints may store a copy: not used.
      yield "lm_head/kernel", w.T
  elif name.startswith("layers."):
    _, i, rest = name.split(".", 2)
    stem, _, kind = rest.rpartition(".")
    if rest in HF_BUFFERS or stem in HF_BUFFERS:
      return
    if stem not in layer_map or kind not in _DENSE_LEAVES:
      raise UnknownTensor(name)
    path, arr = leaf(f"layer_{i}/{layer_map[stem]}", kind, w)
    yield path, arr + norm_offset if path.endswith("norm/scale") else arr
  elif not any(s in name for s in ("vision_tower", "multi_modal_projector")
               + HF_BUFFERS):
    raise UnknownTensor(name)


def unpermute(w_oxi, n_head: int):
  """Inverse of llama.cpp's `permute` of q/k rows (per head, interleaved ->
  half-split), on a weight [out, in] or a bias [out]."""
  shape = w_oxi.shape
  w = w_oxi.reshape(n_head, shape[0] // n_head // 2, 2, *shape[1:])
  return w.swapaxes(1, 2).reshape(shape)


def gguf_tensors(name: str, w, cfg, permuted: bool = False):
  """(path, array) of one dequantised GGUF tensor."""
  if name == "token_embd.weight":
    yield "embed/embedding", w
  elif name == "output_norm.weight":
    yield "norm/scale", w
  elif name == "output.weight":
    yield "lm_head/kernel", w.T
  elif name == "rope_freqs.weight":
    return  # Read into the config (rope_divisors).
  elif name.startswith("blk."):
    _, i, stem, kind = name.split(".")
    if stem not in GGUF_LAYER or kind not in _DENSE_LEAVES:
      raise UnknownTensor(name)
    if permuted and stem in ("attn_q", "attn_k"):
      w = unpermute(w, cfg.n_head if stem == "attn_q" else cfg.n_kv_head)
    yield leaf(f"layer_{i}/{GGUF_LAYER[stem]}", kind, w)
  else:
    raise UnknownTensor(name)


def rope_divisors(scaling: dict | None, rotary_dim: int, theta: float,
                  where: str) -> tuple:
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
  if kind == "default":
    return ()
  n = rotary_dim // 2
  try:
    factor = float(scaling["factor"])
    if kind == "linear":
      return (factor,) * n
    if kind != "llama3":
      raise ValueError(f"{where}: rope_type={kind!r} is not supported "
                       "(default, linear, llama3).")
    low, high = (float(scaling["low_freq_factor"]),
                 float(scaling["high_freq_factor"]))
    old = float(scaling["original_max_position_embeddings"])
  except (KeyError, TypeError) as e:
    raise ValueError(f"{where}: {scaling!r} lacks a numeric field: {e}."
                     ) from None
  out = []
  for i in range(n):
    wavelen = 2 * math.pi * theta ** (2 * i / rotary_dim)
    if wavelen < old / high:
      out.append(1.0)
    elif wavelen > old / low:
      out.append(factor)
    else:
      smooth = (old / wavelen - low) / (high - low)
      out.append(1.0 / ((1 - smooth) / factor + smooth))
  return tuple(out)


INT_FIELDS = ("vocab_size", "num_hidden_layers", "num_attention_heads",
              "hidden_size", "intermediate_size")


def require_int_fields(config: dict, where: str, fields=INT_FIELDS) -> None:
  """Each field present as an integer >= 1 (sizes the config divides by)."""
  missing = [k for k in fields if not isinstance(config.get(k), int) or
             isinstance(config.get(k), bool)]
  if missing:
    raise ValueError(f"{where}: config.json lacks the integer field(s) "
                     f"{missing}.")
  for k in fields:
    if config[k] < 1:
      raise ValueError(f"{where}: config.json {k} = {config[k]} must be an "
                       "integer >= 1.")


def hf_rope(config: dict, where: str, head_dim: int, default_theta=10000.0):
  """(theta, divisors) from config.json: `rope_theta` + `rope_scaling`, or
  transformers 5's `rope_parameters`."""
  params = config.get("rope_parameters") or {}
  theta = float(config.get("rope_theta", params.get("rope_theta",
                                                    default_theta)))
  scaling = config.get("rope_scaling") or (
      params if params.get("rope_type", "default") != "default" else None)
  return theta, rope_divisors(scaling, head_dim, theta,
                              f"{where}: config.json rope_scaling")


def hf_layer_types(config: dict, n_layer: int) -> tuple:
  """'local' / 'global' per layer from config.json's `layer_types`
  ('sliding_attention' / 'full_attention'), or () if it has none."""
  kinds = config.get("layer_types")
  if not kinds:
    return ()
  return tuple("local" if k == "sliding_attention" else "global"
               for k in kinds[:n_layer])


def hf_config(c: dict, where: str, **switches) -> transformer.TransformerConfig:
  """The fields every llama-like config.json shares, plus `switches`."""
  require_int_fields(c, where)
  n_head = c["num_attention_heads"]
  head_dim = c.get("head_dim") or c["hidden_size"] // n_head
  theta, divisors = hf_rope(c, where, head_dim)
  context = int(c.get("max_position_embeddings") or 2048)
  fields = dict(
      vocab_size=c["vocab_size"], n_layer=c["num_hidden_layers"],
      n_head=n_head, n_kv_head=c.get("num_key_value_heads") or n_head,
      n_embd=c["hidden_size"], ffn_dim=c["intermediate_size"],
      head_dim=head_dim, rope_theta=theta, rope_divisors=divisors,
      norm_eps=float(c.get("rms_norm_eps", 1e-6)),
      tied=bool(c.get("tie_word_embeddings", False)),
      context_length=context, block_size=min(context, 2048))
  fields.update(switches)
  return transformer.TransformerConfig(**fields)


def gguf_config(meta, **switches) -> transformer.TransformerConfig:
  """The fields every llama-like GGUF file shares, plus `switches`."""
  n_head = meta.integer("attention.head_count")
  n_embd = meta.integer("embedding_length")
  head_dim = meta.integer("attention.key_length", max(n_embd // n_head, 1))
  n_vocab = meta.integer("vocab_size", 0, lo=0) or len(meta.raw_list(
      "tokenizer.ggml.tokens"))
  context = meta.integer("context_length", 2048)
  fields = dict(
      vocab_size=n_vocab, n_layer=meta.integer("block_count"),
      n_head=n_head,
      n_kv_head=meta.integer("attention.head_count_kv", n_head),
      n_embd=n_embd, ffn_dim=meta.integer("feed_forward_length"),
      head_dim=head_dim, rope_theta=meta.number("rope.freq_base", 1e4),
      norm_eps=meta.number("attention.layer_norm_rms_epsilon"),
      tied="output.weight" not in meta.tensors,
      context_length=context, block_size=min(context, 2048))
  fields.update(switches)
  return transformer.TransformerConfig(**fields)


def gguf_rope_divisors(meta, rotary_dim: int, theta: float) -> tuple:
  """Llama 3.1's rope_freqs tensor, or `rope.scaling.type` linear."""
  if "rope_freqs.weight" in meta.tensors:
    return tuple(float(f) for f in meta.tensor("rope_freqs.weight").ravel())
  kind = meta.get("rope.scaling.type", "none")
  return rope_divisors(
      {"rope_type": "default" if kind == "none" else kind,
       "factor": meta.number("rope.scaling.factor", 1.0)}, rotary_dim, theta,
      f"`model` {meta.path!r}: {meta.arch}.rope.scaling")


def pattern(n_layer: int, every: int) -> tuple:
  """Gemma's layer pattern: layer i is global iff (i + 1) % every == 0
  (llama.cpp's set_swa_pattern; HF sliding_window_pattern)."""
  return tuple("global" if (i + 1) % every == 0 else "local"
               for i in range(n_layer))
