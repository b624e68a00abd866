"""Ctrl-C during training: stop between steps, keep what is saved.

  with interrupt.Interrupt(lambda: "interrupted again; ...") as stop:
    for step in ...:
      if stop.requested: break

The first SIGINT only sets `requested`: the step and a checkpoint being
written finish, and the trainer stops with one line. (Python's own
KeyboardInterrupt lands in whatever code runs: orbax's threads, a garbage
collector callback that swallows it, the wait for a save, which then
prints its threads' tracebacks.) A second SIGINT prints the line `again()`
gives and quits at once (os._exit, orbax's threads not joined): a
checkpoint still being written is dropped, as after SIGKILL; orbax renames
a checkpoint into place only when it is complete, so every finished one
stays. Outside the main thread, where no handler can be installed, this
does nothing.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable


class Interrupt:
  """SIGINT handler for the training loop (see the module docstring)."""

  def __init__(self, again: Callable[[], str]):
    self.again, self.requested, self._previous = again, False, None

  def _handle(self, signum, frame) -> None:
    del signum, frame
    if not self.requested:
      self.requested = True
      return
    sys.stderr.write(self.again() + "\n")
    for stream in (sys.stderr, sys.stdout):
      stream.flush()
    os._exit(130)  # pylint: disable=protected-access

  def __enter__(self):
    if threading.current_thread() is threading.main_thread():
      self._previous = signal.signal(signal.SIGINT, self._handle)
    return self

  def __exit__(self, *exc):
    if self._previous is not None:
      signal.signal(signal.SIGINT, self._previous)
      self._previous = None
