"""Checkpoints (orbax CheckpointManager) and the workdir's config contract.

A run's workdir holds config.json (written once its first checkpoint
exists), checkpoints/<step>/{state, data} and, while a trainer runs, a lock
file naming its process. Restarting with the same command resumes
from the newest finished checkpoint; orbax writes each one to a temporary
folder and renames it when complete, so a killed run leaves only finished
checkpoints behind. A checkpoint that cannot be restored, or a workdir made
with a different model or data, is an error: never a silent fresh start.
"""

from __future__ import annotations

import json
import os


import jax
import orbax.checkpoint as ocp

from bottleneck.io import cli, hf, lock

# Config entries that must match to resume (the rest, e.g. steps, may
# change): the model, and everything that changes the token stream.
COMPATIBLE_KEYS = ("model", "data.source", "data.tokenizer", "data.path",
                   "data.seed", "data.synthetic_stories", "data.val_fraction",
                   "data.spamlang_vocab", "train.batch_size", "seed")
LOCK = "trainer.lock"


class CheckpointError(ValueError):
  pass


def _get(cfg: dict, dotted: str):
  for part in dotted.split("."):
    cfg = cfg.get(part, {}) if isinstance(cfg, dict) else {}
  return cfg


def check_workdir(workdir: str, config_dict: dict) -> None:
  """Checks that an existing config.json is compatible with this run."""
  cli.writable_dir("workdir", workdir)
  path = os.path.join(workdir, "config.json")
  if os.path.isfile(path):
    saved = hf.read_json(path, "workdir")
    for key in COMPATIBLE_KEYS:
      if _get(saved, key) != _get(config_dict, key):
        raise CheckpointError(
            f"workdir {workdir!r} was created with {key}="
            f"{_get(saved, key)!r}, this run has {_get(config_dict, key)!r}: "
            "incompatible. Use a new --workdir (or the original config).")


def write_config(workdir: str, config_dict: dict,
                 token_counts: dict | None = None) -> None:
  """config.json (and tokens.json: the token cache's size per split),
  atomically, once the first checkpoint exists."""
  for name, obj in (("tokens.json", token_counts),
                    ("config.json", config_dict)):
    if obj is None:
      continue
    path = os.path.join(workdir, name)
    with open(path + ".tmp", "w") as f:
      json.dump(obj, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def check_tokens(workdir: str, token_counts: dict | None) -> None:
  """A resumed run must read the same token stream it started on."""
  path = os.path.join(workdir, "tokens.json")
  if token_counts is None or not os.path.isfile(path):
    return
  saved = hf.read_json(path, "workdir")
  if saved != token_counts:
    raise CheckpointError(
        f"workdir {workdir!r} was trained on a token cache of {saved} "
        f"tokens; this run's cache has {token_counts}: the corpus or its "
        "tokenisation changed. Use a new --workdir (or the original data).")


class WorkdirLock(lock.FolderLock):
  """One trainer per workdir (bottleneck.io.lock): a live holder is a
  CheckpointError, a stale lock of a dead process is taken over."""

  def __init__(self, workdir: str):
    super().__init__(workdir, LOCK, "workdir", CheckpointError)


class Checkpointer:
  """Keep-N, optionally asynchronous checkpoints of (train state, data)."""

  def __init__(self, workdir: str, keep: int, async_save: bool):
    options = ocp.CheckpointManagerOptions(
        max_to_keep=keep, enable_async_checkpointing=async_save)
    self.directory = os.path.join(os.path.abspath(workdir), "checkpoints")
    self.manager = ocp.CheckpointManager(self.directory, options=options)

  def latest_step(self):
    return self.manager.latest_step()

  def all_steps(self) -> list[int]:
    return sorted(self.manager.all_steps())

  def save(self, step: int, state, data_position: dict) -> None:
    self.manager.save(step, args=ocp.args.Composite(
        state=ocp.args.StandardSave(state),
        data=ocp.args.JsonSave(data_position)))

  def restore(self, step: int, abstract_state):
    """(state, data position) at `step`, with the shardings of the target."""
    target = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding),
        abstract_state)
    try:
      out = self.manager.restore(step, args=ocp.args.Composite(
          state=ocp.args.StandardRestore(target),
          data=ocp.args.JsonRestore()))
    except Exception as e:  # pylint: disable=broad-except
      raise CheckpointError(
          f"checkpoint {step} in {self.directory} could not be restored "
          f"({type(e).__name__}: {str(e)[:300]}). Refusing to start from "
          "scratch: repair or delete it, or use a new --workdir.") from e
    return out["state"], out["data"]

  def close(self) -> None:
    self.manager.wait_until_finished()
    self.manager.close()
