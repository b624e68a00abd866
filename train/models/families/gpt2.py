"""GPT-2 (HF `model_type: gpt2`) as train.models.gpt.GPT: learned positions,
pre-LayerNorm blocks, tanh GELU, q/k/v biases, a tied head. HF's Conv1D
weights are stored [in, out] like Flax kernels (no transpose), and c_attn's
output is [q | k | v], which GPT's reshape splits the same way.

The thesis GPT's exports (train/training/export.py) also load:
`tie_word_embeddings: false` is an untied head (`lm_head.weight`, an
nn.Linear's [V, D]), and `bottleneck_head.bias: true` a logit bias
(`lm_head.bias`; HF's GPT2LMHeadModel has none and would drop it)."""

from __future__ import annotations

from train.models import gpt
from train.models.families import llamalike

NAME = "gpt2"
HF_MODEL_TYPES = ("gpt2",)
GGUF_ARCHS = ()
_ACTIVATIONS = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                "gelu": "gelu_exact", "relu": "relu"}
_BUFFERS = ("attn.bias", "attn.masked_bias")


def config_from_hf(c: dict, where: str) -> gpt.GPTConfig:
  llamalike.require_int_fields(c, where, ("vocab_size", "n_layer", "n_head",
                                          "n_embd"))
  act = c.get("activation_function", "gelu_new")
  if act not in _ACTIVATIONS:
    raise ValueError(f"{where}: config.json activation_function {act!r} is "
                     f"not supported; known: {sorted(_ACTIVATIONS)}.")
  extra = c.get("bottleneck_head")
  head_bias = isinstance(extra, dict) and extra.get("bias") is True
  return gpt.GPTConfig(
      vocab_size=c["vocab_size"], block_size=c.get("n_positions", 1024),
      n_layer=c["n_layer"], n_head=c["n_head"], n_embd=c["n_embd"],
      qkv_bias=True,
      head="tied" if c.get("tie_word_embeddings", True) else "untied",
      head_bias=head_bias,
      activation=_ACTIVATIONS[act],
      layer_norm_eps=c.get("layer_norm_epsilon", 1e-5))


def config_from_gguf(meta, where: str):
  raise ValueError(f"{where}: GPT-2 loads from HF folders only.")


def hf_tensors(name: str, w, cfg):
  name = name.removeprefix("transformer.")
  stem, _, kind = name.rpartition(".")
  leaf = {"weight": "kernel", "bias": "bias"}
  if name in ("wte.weight", "wpe.weight"):
    yield f"{name[:3]}/embedding", w
  elif name == "lm_head.weight":
    if not cfg.tied:  # Tied checkpoints may store a copy of wte: not used.
      yield "lm_head/kernel", w.T
  elif name == "lm_head.bias":
    yield "head_bias" if cfg.tied else "lm_head/bias", w
  elif stem.split(".", 2)[-1] in _BUFFERS:
    return  # Attention-mask buffers.
  elif stem == "ln_f":
    yield f"ln_f/{'scale' if kind == 'weight' else 'bias'}", w
  elif name.startswith("h."):
    _, i, module = stem.split(".", 2)
    if module in ("ln_1", "ln_2"):
      yield f"h_{i}/{module}/{'scale' if kind == 'weight' else 'bias'}", w
    elif module in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
      yield f"h_{i}/{module.replace('.', '/')}/{leaf[kind]}", w
    else:
      raise llamalike.UnknownTensor(name)
  else:
    raise llamalike.UnknownTensor(name)


def gguf_tensors(name: str, w, cfg):
  raise llamalike.UnknownTensor(name)
