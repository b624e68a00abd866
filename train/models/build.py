"""The model a run config's `model` block describes, for the trainer.

  family = 'gpt'    the thesis GPT (train/models/gpt.py): learned
                    positions, LayerNorm, GELU MLP; every field of the block
                    but the llama-only ones.
  family = 'llama'  the llama-like Transformer (train/models/transformer.py):
                    RMSNorm, RoPE, SwiGLU / GeGLU, grouped-query attention.
                    `arch` = '' builds it from the block's own fields;
                    smollm2 | gemma3 | gguf:PATH | hf:DIR reads the
                    architecture of that checkpoint's metadata (no weights:
                    `train.init` loads those), and the block then sets only
                    what an experiment varies: vocab_size (> 0: a new
                    vocabulary, as SpamLang's), block_size, head / head_rank
                    and dtype.
Parameters are float32 under either compute dtype (mixed precision).
"""

from __future__ import annotations

import dataclasses

from bottleneck import checks
from train.models import gpt, loaders, transformer

FAMILIES = ("gpt", "llama")
_GPT_FIELDS = tuple(f.name for f in dataclasses.fields(gpt.GPTConfig))
MLPS = tuple(transformer.MLPS)


def model_config(m):
  """GPTConfig or TransformerConfig of a config's `model` block; a field
  out of range is named as the block's (`model.head_rank`)."""
  try:
    return _model_config(m)
  except checks.ArgumentError as e:
    if e.name.startswith("model."):
      raise
    raise checks.ArgumentError(
        f"model.{e.name}", str(e).replace(f"`{e.name}`", f"`model.{e.name}`")
    ) from None


def _model_config(m):
  family = m.get("family", "gpt")
  checks.one_of("model.family", family, FAMILIES)
  if family == "gpt":
    return gpt.GPTConfig(**{k: m[k] for k in _GPT_FIELDS if k in m})
  checks.one_of("model.head", m.head, gpt.HEADS)
  if m.head != "lowrank" and m.head_rank:
    raise checks.ArgumentError(
        "model.head_rank", f"`model.head_rank` ({m.head_rank}) needs "
        f"model.head='lowrank'; got {m.head!r}.")
  head = dict(tied=m.head == "tied",
              head_rank=m.head_rank if m.head == "lowrank" else 0)
  if m.arch:
    base = loaders.config_of(m.arch)
    fields = dict(head, block_size=m.block_size, dtype=m.dtype,
                  param_dtype="float32", remat=m.remat,
                  context_length=max(base.context_length, m.block_size))
    if m.vocab_size > 0:
      fields["vocab_size"] = m.vocab_size
    return dataclasses.replace(base, **fields)
  checks.one_of("model.mlp", m.mlp, MLPS)
  return transformer.TransformerConfig(
      vocab_size=m.vocab_size, n_layer=m.n_layer, n_head=m.n_head,
      n_kv_head=m.n_kv_head or m.n_head, n_embd=m.n_embd,
      ffn_dim=m.ffn_dim or 4 * m.n_embd, head_dim=m.head_dim,
      rope_theta=m.rope_theta, norm_eps=m.layer_norm_eps, mlp=m.mlp,
      context_length=m.block_size, block_size=m.block_size, dtype=m.dtype,
      param_dtype="float32", remat=m.remat, family="llama", **head)


def flops_per_token(cfg, n_params: int) -> float:
  """Training FLOPs per token of either family: 6 N + 12 L T d (PaLM /
  nanoGPT), N without the input and position embeddings (a gather) but
  with the head's V x D (a tied head's matmul counted once more)."""
  if isinstance(cfg, gpt.GPTConfig):
    return gpt.flops_per_token(cfg, n_params)
  n = n_params - cfg.vocab_size * cfg.n_embd
  if cfg.tied:
    n += cfg.vocab_size * cfg.n_embd
  attention = 12 * cfg.n_layer * cfg.block_size * cfg.n_head * cfg.head_dim
  return 6.0 * n + attention
