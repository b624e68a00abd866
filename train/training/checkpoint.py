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

Paths go through etils.epath, so a workdir may be an object store
(gs://bucket/run); what is then local-only (the lock, the manifests) is
said in train/training/paths.py. In a multi-process run (jax.distributed)
the workdir must be one folder every process sees (a shared file system or
an object store): process 0 writes config.json, the manifests and moves a
bad checkpoint aside while the others wait for it at a barrier.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import warnings

from etils import epath
import jax
from jax.experimental import multihost_utils
import orbax.checkpoint as ocp

from bottleneck.io import cli, hf, lock
from train.models import build
from train.training import integrity, paths

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


def finished_steps(workdir) -> list[int]:
  """Steps of the finished checkpoints in a workdir (orbax renames a
  checkpoint's folder to its step only when complete)."""
  folder = epath.Path(workdir) / "checkpoints"
  names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
  return sorted(int(n) for n in names if n.isdigit() and (folder / n).is_dir())


def check_workdir(workdir: str, config_dict: dict) -> None:
  """Checks that a workdir's checkpoints may be resumed by this run: its
  config.json agrees on every COMPATIBLE_KEYS field (an error names the
  first that differs). A workdir without checkpoints has nothing to
  resume; its config.json is rewritten at the first checkpoint."""
  folder = paths.resolve(workdir)
  if paths.is_remote(folder):
    folder.mkdir(parents=True, exist_ok=True)
  else:
    cli.writable_dir("workdir", workdir)
  path = folder / "config.json"
  steps = finished_steps(folder)
  if steps and not path.is_file():
    raise CheckpointError(
        f"workdir {workdir!r} holds checkpoints {steps} but no config.json: "
        "this run cannot be checked against the one that wrote them. Put "
        "its config.json back, or use a new --workdir.")
  if not steps:
    return
  saved = _read_json(path)
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


def _read_json(path):
  if paths.is_remote(path):
    return paths.read_json(path)
  return hf.read_json(os.fspath(path), "workdir")


def write_config(workdir, config_dict: dict, streams: dict | None = None
                 ) -> None:
  """config.json and tokens.json (the token stream's size and sha256 per
  split: integrity.token_record), each atomically; called before the first
  checkpoint is saved."""
  folder = epath.Path(workdir)
  tokens = integrity.token_record(streams)
  if tokens is not None:
    paths.write_json(folder / "tokens.json", tokens)
  paths.write_json(folder / "config.json", config_dict)


def check_tokens(workdir, streams: dict | None) -> None:
  """A resumed run must read the same token stream it started on: the
  same size and, where tokens.json records them, the same bytes."""
  path = epath.Path(workdir) / "tokens.json"
  if streams is None or not path.is_file():
    return
  mismatch = integrity.token_mismatch(_read_json(path), streams)
  if mismatch:
    raise CheckpointError(
        f"workdir {workdir!r} was trained on {mismatch}: the corpus or its "
        "tokenisation changed. Use a new --workdir (or the original data).")


class WorkdirLock(lock.FolderLock):
  """One trainer per workdir (bottleneck.io.lock): a live holder is a
  CheckpointError, a stale lock of a dead process is taken over."""

  def __init__(self, workdir: str):
    super().__init__(workdir, LOCK, "workdir", CheckpointError)


def workdir_lock(workdir: str):
  """WorkdirLock for a local workdir; an object store has no file locks:
  no lock, one warning line (paths.py)."""
  if not paths.is_remote(workdir):
    return WorkdirLock(workdir)
  print(f"warning: `workdir` {workdir!r} is an object store: no lock file "
        f"({LOCK} needs a POSIX file system: run one trainer per workdir) "
        "and no sha256 manifests (integrity.py reads local files).",
        file=sys.stderr)
  return contextlib.nullcontext()


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


def aside_path(folder, step: int) -> str:
  """A free name for a bad checkpoint of `step` under `folder` (created):
  <step>, else <step>.1, <step>.2, ... (a step moved aside before)."""
  folder = epath.Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  name, n = str(step), 0
  while (folder / name).exists():
    n += 1
    name = f"{step}.{n}"
  return os.fspath(folder / name)


def _barrier(name: str) -> None:
  """Every process waits here for the others (a no-op alone)."""
  if jax.process_count() > 1:
    multihost_utils.sync_global_devices(name)


class Checkpointer:
  """Keep-N, optionally asynchronous checkpoints of (train state, data),
  each sealed by a manifest (integrity) once finished."""

  def __init__(self, workdir: str, keep: int, async_save: bool):
    _quiet_orbax()
    options = ocp.CheckpointManagerOptions(
        max_to_keep=keep, enable_async_checkpointing=async_save)
    self.path = paths.resolve(workdir)
    self.workdir = os.fspath(self.path)  # For messages.
    self.directory = os.fspath(self.path / "checkpoints")
    # Manifests hash files through the OS: local workdirs only (paths.py).
    self.manifests = not paths.is_remote(self.path)
    self.manager = ocp.CheckpointManager(self.directory, options=options)
    self.async_save = async_save
    self.unsealed = []  # Steps saved, their manifests not yet written.

  def latest_step(self):
    return self.manager.latest_step()

  def all_steps(self) -> list[int]:
    return sorted(self.manager.all_steps())

  def reached_preemption(self, step: int) -> bool:
    """True at the step every process of a jax.distributed run stops at
    after a preemption notice (SIGTERM) to any of them (orbax, through
    JAX's preemption service; False in a single process). Called with
    every step, in order, by every process."""
    return self.manager.reached_preemption(step)

  def kept(self) -> str:
    """The newest finished checkpoint's step, for messages ('none')."""
    steps = finished_steps(self.path)
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
    for step in self.unsealed if self.manifests else ():
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
    problem = self.manifests and integrity.manifest_problem(folder)
    if self.manifests and not problem and not os.path.isfile(os.path.join(
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
      # Process 0 moves them; the others wait until it has (a barrier), so
      # that no two processes race to move the same folder.
      for bad, error in failed if jax.process_index() == 0 else ():
        aside = aside_path(self.path / "corrupt_checkpoints", bad)
        (self.path / "checkpoints" / str(bad)).rename(aside)
        print(f"warning: {error}; moved to {aside}; resuming from step "
              f"{step}.", file=sys.stderr)
      if failed:
        _barrier("checkpoint: bad checkpoints moved aside")
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

  def stop(self, word: str, status: int):
    """Closes (the saves in flight finish), says which checkpoint is kept
    ('<word>; checkpoint at step N kept in DIR') and exits with `status`."""
    self.close()
    sys.stderr.write(self.kept_line(word) + "\n")
    raise SystemExit(status)
