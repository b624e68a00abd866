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
                    what an experiment varies: vocab_size (0: the
                    architecture's; > 0: a new vocabulary, as SpamLang's),
                    block_size, head / head_rank and dtype. A GPT-2
                    folder's architecture is the GPT family's (family =
                    'gpt', arch = hf:DIR; the block also sets head_bias
                    and dropout).
A field the llama family has no use for is refused unless it holds the one
value it accepts (`UNUSED`: no dropout, no logit bias, the MLP's activation
is `mlp`), as are a head_rank without a low-rank head and a low-rank head
of rank 0 (either family).
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


# Every field of the `model` block and its default (configs/base.py's;
# tests/config_checks_test.py keeps the two equal): what a field meant to
# a run whose config.json predates it (checkpoint.check_workdir).
DEFAULTS = {"family": "gpt", "arch": "", "vocab_size": 50257,
            "block_size": 128, "n_layer": 4, "n_head": 1, "n_embd": 64,
            "dropout": 0.0, "qkv_bias": False, "head": "untied",
            "head_rank": 0, "head_bias": True, "activation": "gelu",
            "layer_norm_eps": 1e-5, "dtype": "float32", "n_kv_head": 0,
            "ffn_dim": 0, "head_dim": 0, "rope_theta": 10000.0,
            "mlp": "swiglu", "remat": False}


# Fields of the `model` block the llama family has no use for: the value
# it accepts (their default but head_bias's, which every llama config sets
# False) and why.
UNUSED = {"dropout": (0.0, "has no dropout"),
          "head_bias": (False, "has no logit bias"),
          "activation": ("gelu", "takes its MLP's activation from model.mlp "
                         f"({' | '.join(MLPS)})")}


def _unused(m, family: str) -> None:
  """One error naming a field `family` ignores that was set (UNUSED)."""
  for key, (allowed, why) in UNUSED.items():
    if key in m and m[key] != allowed:
      raise checks.ArgumentError(
          f"model.{key}", f"`model.{key}` is {m[key]!r}: the {family} family "
          f"{why}; only model.{key}={allowed!r} is accepted.")


def _arch(m, head: dict):
  """The config of `model.arch`'s checkpoint with the block's fields; its
  family must be the block's (a GPT-2 folder is the GPT family's)."""
  checks.int_in_range("model.vocab_size", m.vocab_size, 0, 2**31 - 1,
                      "0 = the architecture's")
  base = loaders.config_of(m.arch)
  family = "gpt" if isinstance(base, gpt.GPTConfig) else "llama"
  if family != m.get("family", "gpt"):
    kind = "GPT-2" if family == "gpt" else f"llama-like ({base.family})"
    raise checks.ArgumentError(
        "model.arch", f"`model.arch` {m.arch!r} is a {kind} architecture: "
        f"set model.family={family!r} to train it; got "
        f"model.family={m.get('family', 'gpt')!r}.")
  fields = dict(block_size=m.block_size, dtype=m.dtype)
  if m.vocab_size > 0:
    fields["vocab_size"] = m.vocab_size
  if family == "gpt":
    return dataclasses.replace(
        base, head=m.head, head_rank=m.head_rank, head_bias=m.head_bias,
        dropout=m.dropout, **fields)
  if m.qkv_bias and not base.qkv_bias:
    raise checks.ArgumentError(
        "model.qkv_bias", f"`model.qkv_bias` is True but `model.arch` "
        f"{m.arch!r} has no q/k/v biases: with model.arch the architecture "
        "sets them (leave model.qkv_bias=False).")
  return dataclasses.replace(
      base, **head, **fields, param_dtype="float32", remat=m.remat,
      context_length=max(base.context_length, m.block_size))


def _model_config(m):
  family = m.get("family", "gpt")
  checks.one_of("model.family", family, FAMILIES)
  checks.one_of("model.head", m.head, gpt.HEADS)
  if m.head != "lowrank" and m.head_rank:
    raise checks.ArgumentError(
        "model.head_rank", f"`model.head_rank` ({m.head_rank}) needs "
        f"model.head='lowrank'; got {m.head!r}.")
  if family == "gpt":
    if m.get("arch"):
      return _arch(m, {})
    return gpt.GPTConfig(**{k: m[k] for k in _GPT_FIELDS if k in m})
  _unused(m, family)
  head = dict(tied=m.head == "tied",
              head_rank=m.head_rank if m.head == "lowrank" else 0)
  if m.arch:
    cfg = _arch(m, head)
  else:
    checks.one_of("model.mlp", m.mlp, MLPS)
    cfg = transformer.TransformerConfig(
        vocab_size=m.vocab_size, n_layer=m.n_layer, n_head=m.n_head,
        n_kv_head=m.n_kv_head or m.n_head, n_embd=m.n_embd,
        ffn_dim=m.ffn_dim or 4 * m.n_embd, head_dim=m.head_dim,
        rope_theta=m.rope_theta, norm_eps=m.layer_norm_eps, mlp=m.mlp,
        qkv_bias=m.qkv_bias, context_length=m.block_size,
        block_size=m.block_size, dtype=m.dtype, param_dtype="float32",
        remat=m.remat, family="llama", **head)
  if m.head == "lowrank" and not cfg.head_rank:  # As GPTConfig refuses it.
    raise checks.ArgumentError(
        "model.head_rank", "`model.head_rank` (D) must be in [1, n_embd = "
        f"{cfg.n_embd}] for a low-rank head; got {m.head_rank}.")
  return cfg


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
