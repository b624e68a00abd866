"""One process per folder: a lock file holding the holder's pid and host.

A lock left by a process that no longer runs on this host is stale and
taken over; one held by a live process (or by another host, which cannot
be checked) is an error naming the holder and the lock file. Used by the
trainer (one run per workdir) and the report (one report per outdir).
"""

from __future__ import annotations

import json
import os
import socket


class FolderLock:
  """`with FolderLock(folder, "trainer.lock", "workdir"):` ..."""

  def __init__(self, folder: str, name: str, what: str, error=ValueError):
    self.path = os.path.join(folder, name)
    self.what, self.error = what, error
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
          raise self.error(
              f"`{self.what}` {os.path.dirname(self.path)!r} is in use by pid "
              f"{holder.get('pid')} on {holder.get('host')} (lock "
              f"{self.path}); delete the lock if that run is gone.") from None
        os.remove(self.path)  # Stale: its process is gone.
        continue
      with os.fdopen(fd, "w") as f:
        json.dump(self.me, f)
      return self
    raise self.error(f"could not take the lock {self.path}.")

  def __exit__(self, *exc):
    try:
      os.remove(self.path)
    except FileNotFoundError:
      pass
