"""One process per folder: a lock file holding the holder's pid and host.

The lock is an flock(2) on the file, held while the holder runs: the
kernel drops it when that process dies, however it dies (SIGKILL, the
out-of-memory killer), so a stale lock is taken over by exactly one of the
processes that find it. The pid and host recorded in the file name the
holder in the error a second process gets; a lock recorded by another host
(whose process this host cannot see) is refused as in use, and a file that
is not such a record (not a JSON object with pid and host) is refused by
name rather than overwritten. Used by the trainer (one run per workdir),
the report, prepare and compare (one per outdir).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket

_RETRIES = 100  # Lock files released (unlinked) under us in a row.


def parse_holder(raw: bytes) -> dict | None:
  """The holder a lock file records: {'pid': int, 'host': str}, None for
  an empty file (created, not yet written); ValueError for anything else."""
  if not raw.strip():
    return None
  try:
    holder = json.loads(raw)
  except (ValueError, UnicodeDecodeError):
    holder = None
  pid = holder.get("pid") if isinstance(holder, dict) else None
  if (not isinstance(pid, int) or isinstance(pid, bool)
      or not isinstance(holder.get("host"), str)):
    raise ValueError(raw[:60])
  return holder


def _read(fd: int) -> bytes:
  return os.pread(fd, 1 << 16, 0)


class FolderLock:
  """`with FolderLock(folder, "trainer.lock", "workdir"):` ..."""

  def __init__(self, folder: str, name: str, what: str, error=ValueError):
    self.path = os.path.join(folder, name)
    self.what, self.error = what, error
    self.me = {"pid": os.getpid(), "host": socket.gethostname()}
    self.fd = None

  def _in_use(self, holder: dict | None) -> Exception:
    who = (f"pid {holder['pid']} on {holder['host']}" if holder else
           "another process")
    return self.error(
        f"`{self.what}` {os.path.dirname(self.path)!r} is in use by {who} "
        f"(lock {self.path}); delete the lock if that run is gone.")

  def _foreign(self, raw: str) -> Exception:
    return self.error(
        f"the lock file {self.path} of `{self.what}` "
        f"{os.path.dirname(self.path)!r} is not a lock of this program (it "
        f"holds {raw!r}, not a JSON object with an integer pid and a host): "
        "delete it if no run uses that folder.")

  def _open(self) -> int:
    try:
      return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
      raise self.error(f"the lock file {self.path} of `{self.what}` cannot be "
                       f"opened: {e.strerror}.") from None

  def _take(self, fd: int) -> bool:
    """flock `fd`; False if the file was released (unlinked) meanwhile."""
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
      if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
        raise self.error(
            f"the lock file {self.path} cannot be locked ({e.strerror}): the "
            f"`{self.what}` folder's file system has no file locks; use a "
            "local folder.") from None
      try:
        holder = parse_holder(_read(fd))
      except ValueError:
        holder = None
      raise self._in_use(holder) from None
    try:
      return os.stat(self.path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
      return False

  def __enter__(self):
    for _ in range(_RETRIES):
      fd = self._open()
      try:
        if not self._take(fd):
          os.close(fd)
          continue
        try:
          holder = parse_holder(_read(fd))
        except ValueError as e:
          raise self._foreign(e.args[0].decode("utf-8", "replace")) from None
        if holder and holder["host"] != self.me["host"]:
          raise self._in_use(holder)  # Cannot tell: assume it runs.
      except BaseException:
        os.close(fd)
        raise
      # Ours: a fresh file, or a dead holder's (its flock went with it).
      record = json.dumps(self.me).encode()
      os.ftruncate(fd, 0)
      os.pwrite(fd, record, 0)
      self.fd = fd
      return self
    raise self.error(f"could not take the lock {self.path}.")

  def __exit__(self, *exc):
    """Unlinks the file while still holding it (a process waiting on the
    old file then sees it gone and retries), then lets go."""
    try:
      if os.stat(self.path).st_ino == os.fstat(self.fd).st_ino:
        os.remove(self.path)
    except FileNotFoundError:
      pass
    finally:
      os.close(self.fd)
      self.fd = None
