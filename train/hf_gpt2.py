"""Real GPT-2-format weights (HF `model.safetensors` + `config.json`).

Maps the Hugging Face GPT-2 names onto train.model.GPT (tied head, qkv bias,
tanh-GELU): HF's Conv1D weights are already stored [in, out] like Flax
kernels, and c_attn's output is [q | k | v], which GPT's reshape splits the
same way. Weights are read with safetensors (never unpickled); a sharded
`model.safetensors.index.json` works too.
"""

from __future__ import annotations

import json
import os

import jax.numpy as jnp
import numpy as np

from train import model as model_lib

_ACTIVATIONS = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                "gelu": "gelu_exact", "relu": "relu"}


def config_from_hf(hf: dict) -> model_lib.GPTConfig:
  act = hf.get("activation_function", "gelu_new")
  if act not in _ACTIVATIONS:
    raise ValueError(f"`config.json` activation_function {act!r} is not "
                     f"supported; known: {sorted(_ACTIVATIONS)}.")
  return model_lib.GPTConfig(
      vocab_size=hf["vocab_size"], block_size=hf.get("n_positions", 1024),
      n_layer=hf["n_layer"], n_head=hf["n_head"], n_embd=hf["n_embd"],
      qkv_bias=True, head="tied", head_bias=False,
      activation=_ACTIVATIONS[act],
      layer_norm_eps=hf.get("layer_norm_epsilon", 1e-5))


def _read(directory: str) -> dict[str, np.ndarray]:
  from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
  single = os.path.join(directory, "model.safetensors")
  index = os.path.join(directory, "model.safetensors.index.json")
  if os.path.isfile(single):
    files = [single]
  elif os.path.isfile(index):
    with open(index) as f:
      files = sorted({os.path.join(directory, v)
                      for v in json.load(f)["weight_map"].values()})
  else:
    raise ValueError(f"`hf_dir` {directory!r} has neither model.safetensors "
                     "nor model.safetensors.index.json.")
  out = {}
  for path in files:
    for name, value in load_file(path).items():
      out[name.removeprefix("transformer.")] = value.astype(np.float32)
  return out


def load(directory: str):
  """(params, GPTConfig) from an HF GPT-2 folder."""
  path = os.path.join(directory, "config.json")
  if not os.path.isfile(path):
    raise ValueError(f"`hf_dir` {directory!r} needs a config.json.")
  with open(path) as f:
    hf = json.load(f)
  if hf.get("model_type", "gpt2") != "gpt2":
    raise ValueError(f"`hf_dir` holds model_type={hf.get('model_type')!r}; "
                     "only GPT-2-format checkpoints load into this model.")
  cfg = config_from_hf(hf)
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
  head = w.get("lm_head.weight")
  if head is not None and not np.array_equal(head, w["wte.weight"]):
    raise ValueError("`hf_dir` has an lm_head.weight different from wte: "
                     "GPT-2 ties them; this checkpoint is not GPT-2-format.")
  return {"params": params}, cfg
