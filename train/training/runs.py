"""Run folders, read-only: a run's config, model config, tokenizer and
parameters at any checkpoint, for the sampler, the probes and the report.
No Trainer is built (nor imported): the restore target is the state's
shapes (train/training/state.py), replicated.
"""

from __future__ import annotations

import os

import jax
from ml_collections import config_dict

from bottleneck import sharding
from bottleneck.io import hf
from train.models import build, validate
from train.text import data
from train.training import checkpoint, metrics as metrics_lib
from train.training import state as state_lib


def read_config(workdir: str) -> config_dict.ConfigDict:
  path = os.path.join(workdir, "config.json")
  if not os.path.isfile(path):
    raise ValueError(f"`workdir` {workdir!r} has no config.json (not a run, "
                     "or its first checkpoint is not written yet).")
  saved = hf.read_json(path, "workdir")
  if not isinstance(saved, dict) or not all(
      isinstance(saved.get(k), dict) for k in ("model", "data", "train")):
    raise ValueError(f"`workdir` {path!r} is not a run's config (a JSON "
                     "object with model, data and train sections).")
  return config_dict.ConfigDict(saved)


def steps(workdir: str) -> list[int]:
  """Steps of every checkpoint kept in the run."""
  ckpt = checkpoint.Checkpointer(workdir, 10**6, False)
  try:
    return ckpt.all_steps()
  finally:
    ckpt.close()


def metrics(workdir: str) -> list[dict]:
  """The rows of the run's metrics.jsonl (none if it has not logged)."""
  path = os.path.join(workdir, "metrics.jsonl")
  return metrics_lib.read_metrics(path) if os.path.isfile(path) else []


def restore_params(workdir: str, config, step: int | None = None,
                   cfg=None):
  """(params, step) of checkpoint `step` (default: the newest), replicated
  over the devices; `cfg`: the run's model config, if already built. The
  one way to read a run's parameters (trainer.load_params calls it)."""
  abstract = state_lib.abstract_state(config, cfg)
  target = state_lib.restore_target(abstract, state_lib.state_shardings(
      abstract, sharding.batch_mesh(), False))
  ckpt = checkpoint.Checkpointer(workdir, 10**6, False)
  try:
    step = ckpt.latest_step() if step is None else step
    if step is None:
      raise ValueError(f"`workdir` {workdir!r} has no checkpoint.")
    state, _ = ckpt.restore(step, target)
  finally:
    ckpt.close()
  return state.params, step


def load(workdir: str):
  """(params, model config, tokenizer, config) of a text run's newest
  step."""
  config = read_config(workdir)
  if config.data.source == "spamlang":
    raise ValueError(f"`workdir` {workdir!r} is a SpamLang run: no text.")
  where = f"`model` run:{workdir!r}"
  cfg = validate.config(lambda: build.model_config(config.model), {},
                        "config.json ", where)
  tok = data.tokenizer_for(config.data)
  validate.tokenizer(tok, cfg, where)
  params, step = restore_params(workdir, config, cfg=cfg)
  for path, leaf in jax.tree_util.tree_leaves_with_path(params):
    validate.finite(f"{jax.tree_util.keystr(path)} (step {step})", leaf,
                    where)
  return params, cfg, tok, config
