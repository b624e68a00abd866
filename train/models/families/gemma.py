"""Gemma 2 and Gemma 3: GeGLU (tanh GELU), RMSNorm with weights applied as
1 + w (HF stores w: +1 is folded in here; llama.cpp's GGUF already stores
1 + w), norms after attention and after the MLP, input embeddings times
sqrt(d), query scale query_pre_attn_scalar^-1/2, a tied head.

  Gemma 2  sliding window on even layers, attention scores soft-capped
           (50) and final logits soft-capped (30), one RoPE base.
  Gemma 3  five sliding-window layers then one global (layer i global iff
           (i + 1) % 6 == 0), QK-norm, RoPE base 1e6 on global layers (with
           the checkpoint's scaling) and 1e4 on sliding ones (HF
           rope_local_base_freq; llama.cpp's constant for GGUF files).
"""

from __future__ import annotations

import dataclasses
import math

from train.models.families import llamalike

NAME = "gemma"
HF_MODEL_TYPES = ("gemma2", "gemma3_text", "gemma3")
GGUF_ARCHS = ("gemma2", "gemma3")
HF_LAYER = dict(llamalike.HF_LAYER,
                post_attention_layernorm="post_attn_norm",
                pre_feedforward_layernorm="mlp_norm",
                post_feedforward_layernorm="post_mlp_norm")
LOCAL_THETA = 10000.0  # Sliding layers of Gemma 3 (llama.cpp's constant).


def _common(kind: str, n_embd: int, n_layer: int) -> dict:
  return dict(family=kind, mlp="geglu", post_attn_norm=True,
              post_mlp_norm=True, qk_norm=kind == "gemma3",
              embed_scale=math.sqrt(n_embd), tied=True,
              layer_types=llamalike.pattern(n_layer,
                                            6 if kind == "gemma3" else 2))


def config_from_hf(config: dict, where: str):
  c = config
  if config["model_type"] == "gemma3":  # Multimodal: the text decoder.
    c = dict(config.get("text_config") or {})
    c.setdefault("vocab_size", config.get("vocab_size"))
  kind = "gemma2" if config["model_type"] == "gemma2" else "gemma3"
  act = c.get("hidden_activation") or c.get("hidden_act") or \
      "gelu_pytorch_tanh"
  if act != "gelu_pytorch_tanh":
    raise ValueError(f"{where}: hidden_activation={act!r}; Gemma's GeGLU "
                     "uses 'gelu_pytorch_tanh'.")
  llamalike.require_int_fields(c, where)
  switches = _common(kind, c["hidden_size"], c["num_hidden_layers"])
  kinds = llamalike.hf_layer_types(c, c["num_hidden_layers"])
  if not kinds and c.get("sliding_window_pattern"):
    kinds = llamalike.pattern(c["num_hidden_layers"],
                              int(c["sliding_window_pattern"]))
  params = c.get("rope_parameters") or {}
  full = params.get("full_attention", {})
  local = params.get("sliding_attention", {})
  if full:  # transformers 5: per attention kind.
    c = dict(c, rope_theta=full.get("rope_theta", 1e6),
             rope_scaling=full if full.get("rope_type", "default") !=
             "default" else None, rope_parameters=None)
  head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
  switches.update(
      layer_types=kinds or switches["layer_types"],
      sliding_window=int(c.get("sliding_window") or 4096),
      rope_local_theta=float(local.get("rope_theta", c.get(
          "rope_local_base_freq", LOCAL_THETA if kind == "gemma3" else 0.0))),
      query_scale=float(c.get("query_pre_attn_scalar", head_dim)) ** -0.5,
      attn_softcap=float(c.get("attn_logit_softcapping") or 0.0),
      final_softcap=float(c.get("final_logit_softcapping") or 0.0),
      tied=bool(c.get("tie_word_embeddings", True)))
  return llamalike.hf_config(c, where, **switches)


def config_from_gguf(meta, where: str):
  del where
  kind = meta.arch
  n_embd = meta.integer("embedding_length")
  n_head = meta.integer("attention.head_count")
  n_layer = meta.integer("block_count")
  big = n_layer == (62 if kind == "gemma3" else 46)  # 27B: d / heads.
  key = meta.integer("attention.key_length", max(n_embd // n_head, 1))
  switches = _common(kind, n_embd, n_layer)
  switches.update(
      sliding_window=meta.integer("attention.sliding_window"),
      query_scale=(n_embd / n_head if big else key) ** -0.5,
      tied="output.weight" not in meta.tensors)
  if kind == "gemma3":
    switches["rope_local_theta"] = LOCAL_THETA
  else:
    switches.update(
        attn_softcap=meta.number("attn_logit_softcapping", 50.0),
        final_softcap=meta.number("final_logit_softcapping", 30.0))
  cfg = llamalike.gguf_config(meta, **switches)
  return dataclasses.replace(cfg, rope_divisors=llamalike.gguf_rope_divisors(
      meta, cfg.rotary_dim, cfg.rope_theta))


def hf_tensors(name: str, w, cfg):
  return llamalike.hf_tensors(name, w, cfg, HF_LAYER, norm_offset=1.0)


def gguf_tensors(name: str, w, cfg):
  return llamalike.gguf_tensors(name, w, cfg)
