"""A run's metrics.jsonl: one JSON row per logged step, appended as it
trains; a resumed run drops the rows after its checkpoint.

With `config.tensorboard` on, the same rows also go to TensorBoard event
files in WORKDIR/tensorboard (tensorboardX: no TensorFlow, no torch), one
scalar per numeric field, tagged by its name (loss, val_loss, lr, ...;
a probe's `name/key`); `tensorboard --logdir WORKDIR` shows them. A resumed
run purges the events after its checkpoint's step as metrics.jsonl drops
its rows. Off by default: the CPU runs keep metrics.jsonl alone.
"""

from __future__ import annotations

import json
import os
import sys
import time


def _row(line: str):
  """A metrics.jsonl row, or None if the line is not one (cut off by a
  kill mid-write, or edited): a JSON object with an integer step."""
  try:
    row = json.loads(line)
  except json.JSONDecodeError:
    return None
  ok = isinstance(row, dict) and isinstance(row.get("step"), int)
  return row if ok else None


class MetricsLog:
  """metrics.jsonl; rows after the resume step are dropped on restart, and
  lines that are not rows (the last one cut off by a kill) with a warning:
  the log never blocks a resume."""

  def __init__(self, path: str, resume_step: int, enabled: bool,
               tensorboard: bool = False):
    self.path, self.enabled = path, enabled
    self.board = None
    if not enabled:
      return
    if tensorboard:
      self.board = TensorBoard(
          os.path.join(os.path.dirname(path), TENSORBOARD_DIR), resume_step)
    rows, bad = [], []
    if os.path.isfile(path):
      with open(path, errors="replace") as f:
        for number, line in enumerate(f, start=1):
          if line.strip():
            row = _row(line)
            if row is None:
              bad.append(number)
            elif row["step"] <= resume_step:
              rows.append(row)
    if bad:
      print(f"warning: {path}: dropped line(s) {bad[:5]} (not a metrics "
            "row: cut off by a kill, or edited).", file=sys.stderr)
    with open(path, "w") as f:
      f.writelines(json.dumps(r) + "\n" for r in rows)

  def write(self, row: dict) -> None:
    if self.enabled:
      with open(self.path, "a") as f:
        f.write(json.dumps(row) + "\n")
    if self.board is not None:
      self.board.write(row)

  def close(self) -> None:
    """Flushes and closes the TensorBoard writer (metrics.jsonl is closed
    after every row)."""
    if self.board is not None:
      self.board.close()
      self.board = None

  def rows(self) -> list[dict]:
    return read_metrics(self.path)


TENSORBOARD_DIR = "tensorboard"  # Beside metrics.jsonl, in the workdir.


class TensorBoard:
  """Event files of a run's rows (tensorboardX's SummaryWriter): every
  numeric field a scalar at the row's step, flushed after each row so a
  kill loses nothing that metrics.jsonl kept."""

  def __init__(self, logdir: str, resume_step: int):
    try:
      from tensorboardX import SummaryWriter  # pylint: disable=g-import-not-at-top
    except ImportError:
      raise ValueError("`tensorboard`=True needs the package tensorboardX "
                       "(pip install tensorboardX; setup.cfg declares "
                       "it).") from None
    # purge_step: TensorBoard hides the events of steps > resume_step that
    # an earlier (killed) run wrote, as MetricsLog drops those rows.
    # The suffix: tensorboardX names a file by the second it opened, and a
    # second writer in the same second would overwrite the first's file.
    self.writer = SummaryWriter(logdir, purge_step=resume_step + 1,
                                filename_suffix=f".{time.time_ns()}")

  def write(self, row: dict) -> None:
    step = row["step"]
    for key, value in row.items():
      if key != "step" and isinstance(value, (int, float)) and not \
          isinstance(value, bool):
        self.writer.add_scalar(key, value, step)
    self.writer.flush()

  def close(self) -> None:
    self.writer.close()


def read_metrics(path: str) -> list[dict]:
  """The rows of a metrics.jsonl (lines that are not rows left out)."""
  with open(path, errors="replace") as f:
    return [r for r in map(_row, f) if r is not None]
