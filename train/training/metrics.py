"""A run's metrics.jsonl: one JSON row per logged step, appended as it
trains; a resumed run drops the rows after its checkpoint."""

from __future__ import annotations

import json
import os
import sys


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

  def __init__(self, path: str, resume_step: int, enabled: bool):
    self.path, self.enabled = path, enabled
    if not enabled:
      return
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

  def rows(self) -> list[dict]:
    return read_metrics(self.path)


def read_metrics(path: str) -> list[dict]:
  """The rows of a metrics.jsonl (lines that are not rows left out)."""
  with open(path, errors="replace") as f:
    return [r for r in map(_row, f) if r is not None]
