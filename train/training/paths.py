"""A run's workdir: a local folder or an object-store path (etils.epath).

--workdir=gs://bucket/run (or s3://) works wherever that store's file system
package is installed (gcsfs, s3fs: etils.epath reads and lists through
fsspec; orbax writes the arrays through tensorstore, which speaks gs:// and
s3:// itself). Without it, or with a scheme no checkpoint can be written to,
the run stops before anything starts with one line naming `workdir`.

What stays local-only, said rather than done silently:
- the lock file (one trainer per workdir, bottleneck/io/lock.py) is an
  flock(2): an object store has none, so a remote workdir runs without it,
  with one warning line (start one trainer per workdir yourself);
- checkpoint manifests (sha256.json, train/training/integrity.py, which
  hashes files through the OS): written and checked on local workdirs only;
  on an object store the checkpoints rely on orbax's own commit (a step's
  folder appears when complete) and a restore that fails still falls back to
  the previous step;
- metrics.jsonl and curves.png are written to a local staging folder
  (`Staging`) and copied to the workdir with every checkpoint and at the end,
  and fetched from it on resume.
A local workdir behaves exactly as before (os paths, atomic writes).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

from etils import epath

# Object stores a checkpoint can be written to (tensorstore's kvstores),
# with the package etils.epath needs to list and read them.
PACKAGES = {"gs": "gcsfs", "s3": "s3fs"}


def is_remote(path) -> bool:
  return "://" in os.fspath(path)


def resolve(workdir: str, name: str = "workdir") -> epath.Path:
  """The workdir as an epath.Path: a local folder made absolute, or an
  object-store path checked usable here (its package installed, the store
  answering); a ValueError naming `name` otherwise."""
  if not is_remote(workdir):
    return epath.Path(os.path.abspath(workdir))
  scheme = workdir.split("://", 1)[0]
  if scheme not in PACKAGES:
    raise ValueError(
        f"`{name}` {workdir!r}: {scheme}:// is not a store checkpoints can "
        f"be written to (object stores: "
        f"{', '.join(s + '://' for s in PACKAGES)}; or a local folder).")
  path = epath.Path(workdir)
  try:
    path.exists()
  except ImportError as e:
    raise ValueError(
        f"`{name}` {workdir!r} is on {scheme}://, whose file system package "
        f"is not installed ({e}): pip install {PACKAGES[scheme]}, or use a "
        f"local --{name}.") from None
  except Exception as e:  # pylint: disable=broad-except
    first = (str(e).strip().splitlines() or [""])[0][:200]
    raise ValueError(f"`{name}` {workdir!r} cannot be read "
                     f"({type(e).__name__}: {first}).") from None
  return path


def read_json(path: epath.Path, name: str = "workdir"):
  try:
    return json.loads(path.read_text())
  except (OSError, ValueError) as e:
    raise ValueError(f"`{name}` {os.fspath(path)!r} is not readable JSON "
                     f"({type(e).__name__}: {e}).") from None


def write_json(path: epath.Path, obj) -> None:
  """`obj` to `path` atomically: a local temporary file then os.replace; an
  object store's write of one object is atomic itself."""
  if not is_remote(path):
    from train.training import integrity  # pylint: disable=g-import-not-at-top
    integrity.write_json(os.fspath(path), obj)
    return
  path.write_text(json.dumps(obj, indent=1, sort_keys=True))


class Staging:
  """Files the trainer writes with plain `open` (metrics.jsonl, curves.png):
  for a local workdir, the workdir itself; for a remote one, a local
  temporary folder, filled from the workdir on start (`fetch`) and copied
  back by `push`."""

  NAMES = ("metrics.jsonl", "curves.png")
  FOLDERS = ("tensorboard",)  # Copied file by file (event files).

  def __init__(self, workdir: epath.Path):
    self.workdir = workdir
    self.remote = is_remote(workdir)
    self.folder = (tempfile.mkdtemp(prefix="workdir-") if self.remote
                   else os.fspath(workdir))

  def path(self, name: str) -> str:
    return os.path.join(self.folder, name)

  def _names(self, local: bool) -> list[str]:
    """NAMES and each file of FOLDERS ('tensorboard/events...'), as found
    locally (push) or in the workdir (fetch)."""
    names = list(self.NAMES)
    for folder in self.FOLDERS:
      if local and os.path.isdir(self.path(folder)):
        names += [f"{folder}/{n}" for n in sorted(os.listdir(
            self.path(folder)))]
      elif not local and (self.workdir / folder).is_dir():
        names += [f"{folder}/{p.name}" for p in sorted(
            (self.workdir / folder).iterdir())]
    return names

  def fetch(self) -> None:
    for name in self._names(local=False) if self.remote else ():
      src = self.workdir / name
      if src.exists():
        os.makedirs(os.path.dirname(self.path(name)), exist_ok=True)
        with src.open("rb") as f, open(self.path(name), "wb") as g:
          shutil.copyfileobj(f, g)

  def push(self) -> None:
    for name in self._names(local=True) if self.remote else ():
      if os.path.isfile(self.path(name)):
        (self.workdir / name).parent.mkdir(parents=True, exist_ok=True)
        with open(self.path(name), "rb") as f, (self.workdir / name).open(
            "wb") as g:
          shutil.copyfileobj(f, g)
