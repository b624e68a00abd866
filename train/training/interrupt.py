"""Ctrl-C and SIGTERM (a preemption notice) during training.

  with interrupt.Interrupt(again, reached=ckpt.reached_preemption) as stop:
    for step in ...:
      how = stop.check(step)   # None, or (exit status, save first?, word)

Ctrl-C (SIGINT) only sets a flag: the step and a checkpoint being written
finish, and the trainer stops between steps with one line, keeping what is
saved (exit 130). (Python's own KeyboardInterrupt lands in whatever code
runs: orbax's threads, a garbage collector callback that swallows it, the
wait for a save, which then prints its threads' tracebacks.) SIGTERM, what
a scheduler or a cloud's preemption sends before it kills, makes the
trainer save a checkpoint at the step reached, then stop (exit 143); the
same command resumes from it. A second signal prints the line `again()`
gives and quits at once (os._exit, orbax's threads not joined): a
checkpoint still being written is dropped, as after SIGKILL; orbax renames
a checkpoint into place only when it is complete, so every finished one
stays.

In a multi-process run (jax.distributed) every process must stop at the
same step, or the others wait forever in the next step's collectives.
jax.distributed starts JAX's preemption service, whose own SIGTERM handler
(C++) tells the coordinator; `reached(step)` (orbax's
CheckpointManager.reached_preemption, asked at every step) then turns True
at the same step on every process: one past the furthest any has reached.
So there SIGTERM is left to that handler, and a Ctrl-C on any process is
sent on to it as a SIGTERM (a collective stop, with a save). Asking costs
about a microsecond a step on the 2-core CPU (a local flag until a notice
arrives). Without that service (jax_enable_preemption_service off,
or processes that found each other without jax.distributed) a SIGTERM is
left as it was, killing the process it reaches: one process cannot save
alone.

Outside the main thread, where no handler can be installed, this does
nothing.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable

INTERRUPTED, TERMINATED = 130, 143  # 128 + SIGINT, 128 + SIGTERM.


def _preemption_service() -> bool:
  """True when JAX's preemption service runs (jax.distributed started it):
  its C++ handler then owns SIGTERM. (jax has no public query for it.)"""
  try:
    from jax._src import distributed  # pylint: disable=g-import-not-at-top
  except ImportError:
    return False
  state = getattr(distributed, "global_state", None)
  return getattr(state, "preemption_sync_manager", None) is not None


def _process_count() -> int:
  import jax  # pylint: disable=g-import-not-at-top
  return jax.process_count()


class Interrupt:
  """SIGINT / SIGTERM handling for the training loop (module docstring)."""

  def __init__(self, again: Callable[[], str],
               reached: Callable[[int], bool] = lambda step: False,
               collective: bool | None = None):
    self.again, self.reached = again, reached
    self.collective = (_preemption_service() if collective is None
                       else collective)
    self.signum = None  # The first signal received, None before.
    self._previous = {}

  @property
  def requested(self) -> bool:
    return self.signum is not None

  def _handle(self, signum, frame) -> None:
    del frame
    if self.signum is None:
      self.signum = signum
      if self.collective:  # On to JAX's handler: every process stops.
        os.kill(os.getpid(), signal.SIGTERM)
      return
    sys.stderr.write(self.again() + "\n")
    for stream in (sys.stderr, sys.stdout):
      stream.flush()
    os._exit(TERMINATED if signum == signal.SIGTERM  # pylint: disable=protected-access
             else INTERRUPTED)

  def check(self, step: int) -> tuple[int, bool, str] | None:
    """Whether to stop before `step` (the steps done so far): None, or
    (exit status, save a checkpoint of this step first, the word for the
    message). Call at every step, in order, on every process."""
    if self.collective:
      if not self.reached(step):
        return None
      if self.signum == signal.SIGINT:
        return INTERRUPTED, True, "interrupted"
      return TERMINATED, True, "terminated (SIGTERM or preemption)"
    if self.signum == signal.SIGTERM:
      return TERMINATED, True, "terminated (SIGTERM)"
    if self.signum is not None:
      return INTERRUPTED, False, "interrupted"
    return None

  def __enter__(self):
    if threading.current_thread() is threading.main_thread():
      alone = not self.collective and _process_count() == 1
      if not self.collective and not alone:
        sys.stderr.write("warning: several processes without JAX's "
                         "preemption service (jax.distributed not started "
                         "by this run: --distributed=yes on a GCE TPU pod): "
                         "a SIGTERM kills each process without a "
                         "checkpoint.\n")
      signals = [signal.SIGINT] + ([signal.SIGTERM] if alone else [])
      for signum in signals:
        self._previous[signum] = signal.signal(signum, self._handle)
    return self

  def __exit__(self, *exc):
    for signum, previous in self._previous.items():
      signal.signal(signum, previous)
    self._previous = {}
