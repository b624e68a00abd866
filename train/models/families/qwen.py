"""Qwen2 (q/k/v biases) and Qwen3 (QK-norm, explicit head_dim, no biases):
RMSNorm, SwiGLU, grouped-query attention; sliding windows per `layer_types`
(or Qwen2's use_sliding_window from layer max_window_layers on). llama.cpp
stores their q/k rows unpermuted (its RoPE for them is the half-split
'NEOX' kind)."""

from __future__ import annotations

import dataclasses

from train.models.families import llamalike

NAME = "qwen"
HF_MODEL_TYPES = ("qwen2", "qwen3")
GGUF_ARCHS = ("qwen2", "qwen3")


def config_from_hf(config: dict, where: str):
  kind = config["model_type"]
  cfg = llamalike.hf_config(
      config, where, family=kind, qk_norm=kind == "qwen3",
      qkv_bias=kind == "qwen2" or bool(config.get("attention_bias")))
  kinds = llamalike.hf_layer_types(config, cfg.n_layer)
  if not kinds and config.get("use_sliding_window"):
    first = int(config.get("max_window_layers", cfg.n_layer))
    kinds = tuple("local" if i >= first else "global"
                  for i in range(cfg.n_layer))
  if "local" in kinds:
    cfg = dataclasses.replace(cfg, layer_types=kinds,
                              sliding_window=int(config["sliding_window"]))
  return cfg


def config_from_gguf(meta, where: str):
  del where
  return llamalike.gguf_config(
      meta, family=meta.arch, qk_norm="blk.0.attn_q_norm.weight" in
      meta.tensors, qkv_bias="blk.0.attn_q.bias" in meta.tensors)


def hf_tensors(name: str, w, cfg):
  return llamalike.hf_tensors(name, w, cfg)


def gguf_tensors(name: str, w, cfg):
  return llamalike.gguf_tensors(name, w, cfg)
