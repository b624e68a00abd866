"""Llama (1-3.x, SmolLM2) and Mistral: RMSNorm, SwiGLU, grouped-query
attention, RoPE with Llama-3 / linear scaling; Mistral's sliding window on
every layer when config.json sets one. GGUF files of architecture `llama`
have llama.cpp's q/k row permutation undone."""

from __future__ import annotations

import dataclasses

from train.models.families import llamalike

NAME = "llama"
HF_MODEL_TYPES = ("llama", "mistral")
GGUF_ARCHS = ("llama",)


def config_from_hf(config: dict, where: str):
  window = int(config.get("sliding_window") or 0)
  cfg = llamalike.hf_config(config, where, family=config["model_type"],
                            qkv_bias=bool(config.get("attention_bias")))
  if config["model_type"] == "mistral" and window:
    cfg = dataclasses.replace(cfg, sliding_window=window,
                              layer_types=("local",) * cfg.n_layer)
  return cfg


def config_from_gguf(meta, where: str):
  del where
  cfg = llamalike.gguf_config(meta, family=NAME,
                              qkv_bias="blk.0.attn_q.bias" in meta.tensors)
  return dataclasses.replace(cfg, rope_divisors=llamalike.gguf_rope_divisors(
      meta, cfg.rotary_dim, cfg.rope_theta))


def hf_tensors(name: str, w, cfg):
  return llamalike.hf_tensors(name, w, cfg)


def gguf_tensors(name: str, w, cfg):
  return llamalike.gguf_tensors(name, w, cfg, permuted=True)
