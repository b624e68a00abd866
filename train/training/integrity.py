"""Content checks of a run folder: checkpoint manifests and token digests.

Each finished checkpoint gets checkpoints/<step>/sha256.json, the sha256
of every file in its folder (written once the save has finished); a
restore first checks it, so a checkpoint whose bytes changed since (a bad
disk, a stray write) is refused like one that does not restore. A step
without the file (a run killed in the seconds between a save and its
manifest, or one older than manifests) restores unverified.

tokens.json holds the token stream a run trained on: its size and the
sha256 of its bytes per split, so a corpus edited in place, even to the
same size, is another corpus.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

MANIFEST = "sha256.json"
_BLOCK = 1 << 20  # Bytes read at a time.


def file_sha256(path: str) -> str:
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(_BLOCK), b""):
      digest.update(block)
  return digest.hexdigest()


def array_sha256(array) -> str:
  """sha256 of an array's bytes (a memmap read a block at a time)."""
  digest = hashlib.sha256()
  flat = np.ravel(array)
  step = max(1, _BLOCK * 16 // max(1, flat.itemsize))
  for start in range(0, len(flat), step):
    digest.update(np.ascontiguousarray(flat[start:start + step]))
  return digest.hexdigest()


def _files(folder: str) -> list[str]:
  """Every file under `folder` but the manifest, relative, sorted."""
  out = []
  for root, _, names in os.walk(folder):
    out += [os.path.relpath(os.path.join(root, n), folder) for n in names]
  return sorted(p for p in out if p != MANIFEST)


def write_json(path: str, obj) -> None:
  """`obj` to `path` atomically (a temporary file, then os.replace)."""
  tmp = f"{path}.tmp{os.getpid()}"
  with open(tmp, "w") as f:
    json.dump(obj, f, indent=1, sort_keys=True)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)


def write_manifest(folder: str) -> None:
  write_json(os.path.join(folder, MANIFEST),
             {p: file_sha256(os.path.join(folder, p)) for p in _files(folder)})


def manifest_problem(folder: str) -> str | None:
  """Why `folder` does not match its manifest (None: it does, or it has
  none)."""
  path = os.path.join(folder, MANIFEST)
  if not os.path.isfile(path):
    return None
  try:
    with open(path) as f:
      want = json.load(f)
  except (OSError, ValueError) as e:
    return f"its {MANIFEST} is unreadable ({e})"
  if not isinstance(want, dict):
    return f"its {MANIFEST} is not a JSON object"
  have = _files(folder)
  if sorted(want) != have:
    odd = sorted(set(want) ^ set(have))
    return f"files missing or added since it was saved: {odd[:3]}"
  for name in have:
    if file_sha256(os.path.join(folder, name)) != want[name]:
      return f"{name} changed since it was saved (sha256 differs)"
  return None


def token_record(streams: dict | None) -> dict | None:
  """{'train': n, 'val': n, 'sha256': {split: hex}} of a run's token
  arrays by split (None: a generated stream, e.g. SpamLang)."""
  if streams is None:
    return None
  return {**{s: int(len(a)) for s, a in streams.items()},
          "sha256": {s: array_sha256(a) for s, a in streams.items()}}


def token_mismatch(saved, streams: dict | None) -> str | None:
  """How this run's token arrays differ from a tokens.json (None: they do
  not, or there is nothing to compare). Sizes first; digests when the
  record has them (older records hold sizes only)."""
  if streams is None or not isinstance(saved, dict):
    return None
  counts = {s: int(len(a)) for s, a in streams.items()}
  if {s: saved.get(s) for s in counts} != counts:
    return (f"a token cache of {dict((s, saved.get(s)) for s in counts)} "
            f"tokens; this run's cache has {counts}")
  digests = saved.get("sha256")
  if not isinstance(digests, dict):
    return None
  for split, array in streams.items():
    if digests.get(split) != array_sha256(array):
      return (f"a token cache of the same size but other content (the "
              f"sha256 of its {split} split differs)")
  return None
