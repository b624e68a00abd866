"""Run folders, read-only: a run's config, model config, tokenizer and
parameters at any checkpoint, for the sampler, the probes and the report.
No Trainer is built; the restore target is the state's shapes, replicated.
"""

from __future__ import annotations

import os

import jax
from ml_collections import config_dict

from bottleneck import sharding
from bottleneck.io import hf
from train.models import gpt
from train.text import data
from train.training import checkpoint, trainer


def read_config(workdir: str) -> config_dict.ConfigDict:
  path = os.path.join(workdir, "config.json")
  if not os.path.isfile(path):
    raise ValueError(f"`workdir` {workdir!r} has no config.json (not a run, "
                     "or its first checkpoint is not written yet).")
  return config_dict.ConfigDict(hf.read_json(path, "workdir"))


def steps(workdir: str) -> list[int]:
  """Steps of every checkpoint kept in the run."""
  ckpt = checkpoint.Checkpointer(workdir, 10**6, False)
  try:
    return ckpt.all_steps()
  finally:
    ckpt.close()


def restore_params(workdir: str, config, step: int | None = None):
  """(params, step) of checkpoint `step` (default: the newest)."""
  abstract = trainer.abstract_state(config)
  target = trainer.state_shardings(abstract, sharding.batch_mesh(), False)
  target = jax.tree.map(
      lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
      abstract, target)
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
  """(params, GPTConfig, tokenizer, config) of a text run's newest step."""
  config = read_config(workdir)
  if config.data.source == "spamlang":
    raise ValueError(f"`workdir` {workdir!r} is a SpamLang run: no text.")
  params, _ = restore_params(workdir, config)
  return (params, gpt.GPTConfig(**config.model.to_dict()),
          data.tokenizer_for(config.data), config)
