"""Real GPT-2-format weights (HF `model.safetensors` + `config.json`).

Maps the Hugging Face GPT-2 names onto train.model.GPT (tied head, qkv bias,
tanh-GELU): HF's Conv1D weights are already stored [in, out] like Flax
kernels, and c_attn's output is [q | k | v], which GPT's reshape splits the
same way. Weights are read with safetensors (never unpickled); a sharded
`model.safetensors.index.json` works too.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bottleneck.io import hf
from train import model as model_lib

_ACTIVATIONS = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                "gelu": "gelu_exact", "relu": "relu"}


def config_from_hf(hf_config: dict) -> model_lib.GPTConfig:
  missing = [k for k in ("vocab_size", "n_layer", "n_head", "n_embd")
             if not isinstance(hf_config.get(k), int)]
  if missing:
    raise ValueError(f"`config.json` lacks the integer field(s) {missing} "
                     "of a GPT-2 config.")
  act = hf_config.get("activation_function", "gelu_new")
  if act not in _ACTIVATIONS:
    raise ValueError(f"`config.json` activation_function {act!r} is not "
                     f"supported; known: {sorted(_ACTIVATIONS)}.")
  return model_lib.GPTConfig(
      vocab_size=hf_config["vocab_size"],
      block_size=hf_config.get("n_positions", 1024),
      n_layer=hf_config["n_layer"], n_head=hf_config["n_head"],
      n_embd=hf_config["n_embd"],
      qkv_bias=True, head="tied", head_bias=False,
      activation=_ACTIVATIONS[act],
      layer_norm_eps=hf_config.get("layer_norm_epsilon", 1e-5))


def _read(directory: str) -> dict[str, np.ndarray]:
  return {name.removeprefix("transformer."): value.astype(np.float32)
          for name, value in hf.read_tensors(directory, "hf_dir").items()}


def load(directory: str):
  """(params, GPTConfig) from an HF GPT-2 folder."""
  hf_config = hf.read_config(directory, "hf_dir")
  if hf_config.get("model_type", "gpt2") != "gpt2":
    raise ValueError(f"`hf_dir` holds model_type="
                     f"{hf_config.get('model_type')!r}; "
                     "only GPT-2-format checkpoints load into this model.")
  cfg = config_from_hf(hf_config)
  w = _read(directory)

  def get(name):
    if name not in w:
      raise ValueError(f"`hf_dir` {directory!r} lacks tensor {name!r}.")
    return jnp.asarray(w[name])

  def ln(prefix):
    return {"scale": get(f"{prefix}.weight"), "bias": get(f"{prefix}.bias")}

  def dense(prefix):
    return {"kernel": get(f"{prefix}.weight"), "bias": get(f"{prefix}.bias")}

  params = {"wte": {"embedding": get("wte.weight")},
            "wpe": {"embedding": get("wpe.weight")}, "ln_f": ln("ln_f")}
  for i in range(cfg.n_layer):
    p = f"h.{i}"
    params[f"h_{i}"] = {
        "ln_1": ln(f"{p}.ln_1"), "ln_2": ln(f"{p}.ln_2"),
        "attn": {"c_attn": dense(f"{p}.attn.c_attn"),
                 "c_proj": dense(f"{p}.attn.c_proj")},
        "mlp": {"c_fc": dense(f"{p}.mlp.c_fc"),
                "c_proj": dense(f"{p}.mlp.c_proj")}}
  expected = jax.eval_shape(lambda: model_lib.init_params(cfg))
  for path, want in jax.tree_util.tree_leaves_with_path(expected):
    got = functools.reduce(lambda t, k: t[k.key], path, {"params": params})
    if tuple(got.shape) != tuple(want.shape):
      name = "/".join(k.key for k in path[1:])
      raise ValueError(
          f"`hf_dir` {directory!r}: tensor {name} has shape "
          f"{tuple(got.shape)} but config.json (n_embd={cfg.n_embd}, "
          f"vocab_size={cfg.vocab_size}, n_positions={cfg.block_size}) "
          f"implies {tuple(want.shape)}.")
  head = w.get("lm_head.weight")
  if head is not None and not np.array_equal(head, w["wte.weight"]):
    raise ValueError("`hf_dir` has an lm_head.weight different from wte: "
                     "GPT-2 ties them; this checkpoint is not GPT-2-format.")
  return {"params": params}, cfg
