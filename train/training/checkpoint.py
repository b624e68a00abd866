"""Checkpoints (orbax CheckpointManager) and the workdir's config contract.

A run's workdir holds config.json (written once its first checkpoint
exists), checkpoints/<step>/{state, data} and, while a trainer runs, a lock
file naming its process. Restarting with the same command resumes
from the newest finished checkpoint; orbax writes each one to a temporary
folder and renames it when complete, so a killed run leaves only finished
checkpoints behind. A checkpoint that cannot be restored is moved aside
and the previous one restored (one warning line); none restorable, or a
workdir made with a different model or data, is an error: never a silent
fresh start.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings

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


_ABANDONED_READ = "_read_array_index_and_device_put"  # orbax's coroutine.


def _quiet_abandoned_reads() -> None:
  """When a restore fails, orbax abandons its other reads in flight: each
  then reports as an unraisable exception (the coroutine's own error, or
  'Event loop is closed' from tensorstore's callback), a 'never awaited'
  warning or an asyncio log: thousands of lines after the one error that
  matters. Those are dropped (installed once, before restores); any other
  unraisable exception still reaches the default hook."""
  if getattr(sys.unraisablehook, "quiet_reads", False):
    return
  default = sys.unraisablehook

  def hook(unraisable):
    obj = unraisable.object
    closed = (isinstance(unraisable.exc_value, RuntimeError) and
              "Event loop is closed" in str(unraisable.exc_value))
    if not closed and _ABANDONED_READ not in getattr(obj, "__qualname__",
                                                     ""):
      default(unraisable)

  hook.quiet_reads = True
  sys.unraisablehook = hook
  warnings.filterwarnings("ignore", message=f"coroutine '{_ABANDONED_READ}'")
  logging.getLogger("asyncio").setLevel(logging.CRITICAL)


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
    if isinstance(saved, dict) and isinstance(saved.get("model"), dict):
      # A field a run predates had its default's behaviour.
      from configs import base  # pylint: disable=g-import-not-at-top
      saved["model"] = {**base.get_config().model.to_dict(),
                        **saved["model"]}
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
    _quiet_abandoned_reads()
    try:
      out = self.manager.restore(step, args=ocp.args.Composite(
          state=ocp.args.StandardRestore(target),
          data=ocp.args.JsonRestore()))
    except Exception as e:  # pylint: disable=broad-except
      first = (str(e).strip().splitlines() or [""])[0]
      first = first.split(". See full TensorStore details")[0][:200]
      raise CheckpointError(
          f"checkpoint {step} in {self.directory} could not be restored "
          f"({type(e).__name__}: {first})") from None
    return out["state"], out["data"]

  def restore_newest(self, abstract_state, usable=lambda state: True):
    """(state, data position, step) of the newest checkpoint that restores
    and is `usable`; the newer ones that do not are then moved to
    <workdir>/corrupt_checkpoints/ (kept for a look, out of the way of the
    steps to come), one warning line each. None if there is no checkpoint;
    CheckpointError, with nothing moved, if none restores."""
    steps, failed = self.all_steps(), []
    for step in reversed(steps):
      try:
        state, data = self.restore(step, abstract_state)
        if not usable(state):
          raise CheckpointError(f"checkpoint {step} in {self.directory} "
                                "holds non-finite values")
      except CheckpointError as e:
        failed.append((step, e))
        continue
      for bad, error in failed:
        aside = os.path.join(os.path.dirname(self.directory),
                             "corrupt_checkpoints", str(bad))
        os.makedirs(os.path.dirname(aside), exist_ok=True)
        os.replace(os.path.join(self.directory, str(bad)), aside)
        print(f"warning: {error}; moved to {aside}; resuming from step "
              f"{step}.", file=sys.stderr)
      if failed:
        self.manager.reload()
      return state, data, step
    if failed:
      raise CheckpointError(
          f"none of the checkpoints {steps} in {self.directory} could be "
          f"restored (newest: {failed[0][1]}). Refusing to start from "
          "scratch: repair or delete them, or use a new --workdir.")
    return None

  def close(self) -> None:
    self.manager.wait_until_finished()
    self.manager.close()
