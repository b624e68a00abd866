"""Continued pretraining: a run's first parameters from a checkpoint.

`train.init` = smollm2 | gemma3 | gguf:PATH | hf:DIR names the weights; the
model (train/models/build.py) must have that checkpoint's architecture
(every field but the head's form, the window length and the dtypes; a
field that differs is named). The head may change form:
  untied <- tied      the embedding copied into the head;
  lowrank <- either   (seed 002 §3.1) `train.init_head` = svd: W's best
                      rank-D approximation, A = U_D S_D^1/2, B = S_D^1/2
                      V_D^T (Eckart-Young), or fresh: the new model's own
                      initial A, B.
A tied model cannot start from an untied checkpoint (which head would it
keep?).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bottleneck import checks
from train.models import loaders, weights

INIT_HEADS = ("svd", "fresh")
# Fields that may differ between the checkpoint and the model.
_FREE = ("tied", "head_rank", "block_size", "context_length", "dtype",
         "param_dtype", "remat")


def check(t, cfg) -> None:
  """train.init / init_head against the model config, before anything is
  read but the checkpoint's metadata."""
  checks.one_of("train.init_head", t.init_head, INIT_HEADS)
  if not t.init:
    return
  if cfg.family == "gpt" or not hasattr(cfg, "head_rank"):
    raise ValueError("`train.init` needs model.family='llama' (the thesis "
                     "GPT has no checkpoints to start from).")
  _agree(loaders.config_of(t.init), cfg, t.init)


def _agree(loaded, cfg, spec: str) -> None:
  for field in dataclasses.fields(cfg):
    if field.name in _FREE:
      continue
    want, got = getattr(cfg, field.name), getattr(loaded, field.name, None)
    if want != got:
      raise ValueError(f"`train.init` {spec!r}: the checkpoint's {field.name}"
                       f" is {got!r}, the model's (--config.model) "
                       f"{want!r}: its architecture must be the model's "
                       f"(model.arch={spec!r} reads it).")
  if cfg.tied and not loaded.tied:
    raise ValueError(f"`train.init` {spec!r} has an untied head: a tied "
                     "model (model.head='tied') cannot start from it.")


def low_rank(w_vxd: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
  """(A [V, r], B [r, d]) with A B W's best rank-r approximation (float64
  SVD; the singular values split evenly between the factors)."""
  u, s, vt = np.linalg.svd(np.asarray(w_vxd, np.float64), full_matrices=False)
  root = np.sqrt(s[:rank])
  return u[:, :rank] * root, root[:, None] * vt[:rank]


def params(t, cfg, fresh: dict) -> dict:
  """The run's first parameters: the checkpoint's, its head in the model's
  form; `fresh`: the model's own initial parameters (shapes, and a fresh
  low-rank head)."""
  loaded, loaded_cfg, _ = loaders.load(t.init, "float32")
  _agree(loaded_cfg, cfg, t.init)
  tree, new = dict(loaded["params"]), fresh["params"]
  w = loaded_cfg.head_weights({"params": tree})[0]
  tree.pop("lm_head", None)
  if cfg.head == "lowrank":
    if t.init_head == "svd":
      a, b = low_rank(w, cfg.head_rank)
      tree["head_b"] = {"kernel": b.T.astype(np.float32)}
      tree["lm_head"] = {"kernel": a.T.astype(np.float32)}
    else:
      tree["head_b"], tree["lm_head"] = new["head_b"], new["lm_head"]
  elif cfg.head == "untied":
    tree["lm_head"] = {"kernel": np.asarray(w, np.float32).T.copy()}
  weights.check_tree(tree, new, cfg, f"`train.init` {t.init!r}")
  return {"params": tree}
