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

import socket

import jax
import orbax.checkpoint as ocp

from bottleneck.io import cli, hf

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


class WorkdirLock:
  """One trainer per workdir: a lock file with the holder's pid and host.

  A lock left by a process that no longer runs on this host is stale and
  taken over; one held by a live process (or another host) is an error.
  """

  def __init__(self, workdir: str):
    self.path = os.path.join(workdir, LOCK)
    self.me = {"pid": os.getpid(), "host": socket.gethostname()}

  def _alive(self, holder: dict) -> bool:
    if holder.get("host") != self.me["host"]:
      return True  # Cannot tell: assume it runs.
    try:
      os.kill(int(holder.get("pid", -1)), 0)
    except (ProcessLookupError, ValueError):
      return False
    except PermissionError:
      return True
    return True

  def __enter__(self):
    for _ in range(2):
      try:
        fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
      except FileExistsError:
        try:
          with open(self.path) as f:
            holder = json.load(f)
        except (OSError, json.JSONDecodeError):
          holder = {}
        if self._alive(holder):
          raise CheckpointError(
              f"workdir {os.path.dirname(self.path)!r} is in use by pid "
              f"{holder.get('pid')} on {holder.get('host')} (lock "
              f"{self.path}); delete the lock if that run is gone.") from None
        os.remove(self.path)  # Stale: its process is gone.
        continue
      with os.fdopen(fd, "w") as f:
        json.dump(self.me, f)
      return self
    raise CheckpointError(f"could not take the lock {self.path}.")

  def __exit__(self, *exc):
    try:
      os.remove(self.path)
    except FileNotFoundError:
      pass


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
