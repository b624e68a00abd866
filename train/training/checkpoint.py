"""Checkpoints (orbax CheckpointManager) and the workdir's config contract.

A run's workdir holds config.json and tokens.json (written, atomically,
just before its first checkpoint: a step never exists without them),
checkpoints/<step>/{state, data, sha256.json} and, while a trainer runs, a
lock file naming its process. Restarting with the same command resumes
from the newest finished checkpoint; orbax writes each one to a temporary
folder and renames it when complete, so a killed run leaves only finished
checkpoints behind, and each gets a manifest of its files' sha256
(train/training/integrity.py) once finished. A checkpoint that fails its
manifest or cannot be restored is moved aside and the previous one
restored (one warning line); none restorable, or a workdir made with a
different model, data or seed (the field named), is an error: never a
silent fresh start. orbax's own logs and its threads' tracebacks are kept
off the terminal: a failed save is one error line (CheckpointError).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import warnings

import jax
import orbax.checkpoint as ocp

from bottleneck.io import cli, hf, lock
from train.models import build
from train.training import integrity

# Config entries that must match to resume (the rest, e.g. steps, may
# change): the model, and everything that changes the token stream.
COMPATIBLE_KEYS = ("model", "data.source", "data.tokenizer", "data.path",
                   "data.seed", "data.synthetic_stories", "data.val_fraction",
                   "data.spamlang_vocab", "data.spamlang_variant",
                   "train.batch_size", "seed")
LOCK = "trainer.lock"


class CheckpointError(ValueError):
  pass


_ABANDONED_READ = "_read_array_index_and_device_put"  # orbax's coroutine.
_ORBAX = os.sep + "orbax" + os.sep


def _from_orbax(record: logging.LogRecord) -> bool:
  return _ORBAX in (record.pathname or "")


def _quiet_orbax() -> None:
  """Keeps orbax's noise off the terminal (installed once, when a
  Checkpointer is made): its absl log lines (a failed save logs each of its
  threads' tracebacks) and, when a save or restore fails, its abandoned
  reads and writes in flight: each then reports as an unraisable exception
  (the coroutine's own error, or 'Event loop is closed' from tensorstore's
  callback), a 'never awaited' warning or an asyncio log: hundreds of lines
  around the one error that matters, which the Checkpointer raises itself.
  Any other unraisable exception still reaches the default hook."""
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
  logging.getLogger("absl").addFilter(lambda r: not _from_orbax(r))


def _get(cfg: dict, dotted: str):
  for part in dotted.split("."):
    cfg = cfg.get(part, {}) if isinstance(cfg, dict) else {}
  return cfg


def first_difference(saved, new, key: str) -> tuple | None:
  """(dotted field, saved value, new value) of the first field where two
  config values differ (descending into dicts), None if they are equal."""
  if isinstance(saved, dict) and isinstance(new, dict):
    for k in sorted(set(saved) | set(new)):
      diff = first_difference(saved.get(k), new.get(k), f"{key}.{k}")
      if diff:
        return diff
    return None
  return None if saved == new else (key, saved, new)


def finished_steps(workdir: str) -> list[int]:
  """Steps of the finished checkpoints in a workdir (orbax renames a
  checkpoint's folder to its step only when complete)."""
  folder = os.path.join(workdir, "checkpoints")
  names = os.listdir(folder) if os.path.isdir(folder) else []
  return sorted(int(n) for n in names
                if n.isdigit() and os.path.isdir(os.path.join(folder, n)))


def check_workdir(workdir: str, config_dict: dict) -> None:
  """Checks that a workdir's checkpoints may be resumed by this run: its
  config.json agrees on every COMPATIBLE_KEYS field (an error names the
  first that differs). A workdir without checkpoints has nothing to
  resume; its config.json is rewritten at the first checkpoint."""
  cli.writable_dir("workdir", workdir)
  path = os.path.join(workdir, "config.json")
  steps = finished_steps(workdir)
  if steps and not os.path.isfile(path):
    raise CheckpointError(
        f"workdir {workdir!r} holds checkpoints {steps} but no config.json: "
        "this run cannot be checked against the one that wrote them. Put "
        "its config.json back, or use a new --workdir.")
  if not steps:
    return
  saved = hf.read_json(path, "workdir")
  if not isinstance(saved, dict):
    raise CheckpointError(f"workdir {workdir!r}: {path} is not a JSON "
                          "object (a run's config): use a new --workdir.")
  if isinstance(saved.get("model"), dict):
    # A field a run predates had its default's behaviour.
    saved["model"] = {**build.DEFAULTS, **saved["model"]}
  if isinstance(saved.get("data"), dict):  # Likewise SpamLang's variant.
    saved["data"] = {"spamlang_variant": "repeat", **saved["data"]}
  for key in COMPATIBLE_KEYS:
    diff = first_difference(_get(saved, key), _get(config_dict, key), key)
    if diff:
      field, was, now = diff
      raise CheckpointError(
          f"workdir {workdir!r} was created with {field}={was!r}, this run "
          f"has {field}={now!r}: incompatible. Use a new --workdir (or the "
          "original config).")


def write_config(workdir: str, config_dict: dict, streams: dict | None = None
                 ) -> None:
  """config.json and tokens.json (the token stream's size and sha256 per
  split: integrity.token_record), each atomically; called before the first
  checkpoint is saved."""
  tokens = integrity.token_record(streams)
  if tokens is not None:
    integrity.write_json(os.path.join(workdir, "tokens.json"), tokens)
  integrity.write_json(os.path.join(workdir, "config.json"), config_dict)


def check_tokens(workdir: str, streams: dict | None) -> None:
  """A resumed run must read the same token stream it started on: the
  same size and, where tokens.json records them, the same bytes."""
  path = os.path.join(workdir, "tokens.json")
  if streams is None or not os.path.isfile(path):
    return
  mismatch = integrity.token_mismatch(hf.read_json(path, "workdir"), streams)
  if mismatch:
    raise CheckpointError(
        f"workdir {workdir!r} was trained on {mismatch}: the corpus or its "
        "tokenisation changed. Use a new --workdir (or the original data).")


class WorkdirLock(lock.FolderLock):
  """One trainer per workdir (bottleneck.io.lock): a live holder is a
  CheckpointError, a stale lock of a dead process is taken over."""

  def __init__(self, workdir: str):
    super().__init__(workdir, LOCK, "workdir", CheckpointError)


def _os_error(e: Exception) -> str:
  """The operating system's words for an orbax / tensorstore failure
  ('No space left on device'), else its first line."""
  code = re.search(r"os_error_code='(\d+)'", str(e))
  if code:
    return os.strerror(int(code.group(1)))
  if isinstance(e, OSError) and e.strerror:
    return e.strerror
  first = (str(e).strip().splitlines() or [""])[0]
  return f"{type(e).__name__}: {first.split('. See full TensorStore')[0][:200]}"


def aside_path(folder: str, step: int) -> str:
  """A free name for a bad checkpoint of `step` under `folder` (created):
  <step>, else <step>.1, <step>.2, ... (a step moved aside before)."""
  os.makedirs(folder, exist_ok=True)
  name, n = str(step), 0
  while os.path.exists(os.path.join(folder, name)):
    n += 1
    name = f"{step}.{n}"
  return os.path.join(folder, name)


class Checkpointer:
  """Keep-N, optionally asynchronous checkpoints of (train state, data),
  each sealed by a manifest (integrity) once finished."""

  def __init__(self, workdir: str, keep: int, async_save: bool):
    _quiet_orbax()
    options = ocp.CheckpointManagerOptions(
        max_to_keep=keep, enable_async_checkpointing=async_save)
    self.workdir = os.path.abspath(workdir)
    self.directory = os.path.join(self.workdir, "checkpoints")
    self.manager = ocp.CheckpointManager(self.directory, options=options)
    self.async_save = async_save
    self.unsealed = []  # Steps saved, their manifests not yet written.

  def latest_step(self):
    return self.manager.latest_step()

  def all_steps(self) -> list[int]:
    return sorted(self.manager.all_steps())

  def kept(self) -> str:
    """The newest finished checkpoint's step, for messages ('none')."""
    steps = finished_steps(self.workdir)
    return str(steps[-1]) if steps else "none"

  def kept_line(self, event: str) -> str:
    return f"{event}; checkpoint at step {self.kept()} kept in {self.workdir}"

  def _guard(self, step: int, fn) -> None:
    """Runs an orbax save call; its failure is one CheckpointError."""
    try:
      fn()
    except Exception as e:  # pylint: disable=broad-except
      raise CheckpointError(
          f"checkpoint {step} could not be written to {self.directory} "
          f"({_os_error(e)}); the newest checkpoint kept is step "
          f"{self.kept()}. Fix that, and rerun the same command to resume."
      ) from None

  def _seal(self) -> None:
    """Waits for the saves in flight; writes each finished one's manifest."""
    if not self.unsealed:
      return
    self._guard(self.unsealed[-1], self.manager.wait_until_finished)
    for step in self.unsealed:
      folder = os.path.join(self.directory, str(step))
      if jax.process_index() == 0 and os.path.isdir(folder):
        self._guard(step, lambda f=folder: integrity.write_manifest(f))
    self.unsealed = []

  def save(self, step: int, state, data_position: dict) -> None:
    self._seal()
    self._guard(step, lambda: self.manager.save(step, args=ocp.args.Composite(
        state=ocp.args.StandardSave(state),
        data=ocp.args.JsonSave(data_position))))
    self.unsealed.append(step)
    if not self.async_save:
      self._seal()

  def restore(self, step: int, abstract_state):
    """(state, data position) at `step`, with the shardings of the target;
    a checkpoint that fails its manifest is a CheckpointError."""
    folder = os.path.join(self.directory, str(step))
    problem = integrity.manifest_problem(folder)
    if not problem and not os.path.isfile(os.path.join(
        folder, integrity.MANIFEST)):
      print(f"warning: checkpoint {step} in {self.directory} has no "
            f"{integrity.MANIFEST} (older than manifests, or killed between "
            "its save and its manifest): restored unverified.", flush=True)
    if problem:
      raise CheckpointError(f"checkpoint {step} in {self.directory} could not "
                            f"be restored: it fails its checksums ({problem})")
    target = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding),
        abstract_state)
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
        aside = aside_path(os.path.join(self.workdir, "corrupt_checkpoints"),
                           bad)
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
    self._seal()
    self.manager.close()
