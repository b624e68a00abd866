"""What a report section returns, and helpers sections share."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any, Callable

from bottleneck.io import cli, plots


@dataclasses.dataclass
class Section:
  title: str  # Heading in report.md.
  body: str  # Markdown under the heading.
  numbers: dict[str, Any]  # Every number shown, for results.json.
  figures: list[str] = dataclasses.field(default_factory=list)  # PNG names.


SectionFn = Callable[[Any, str], Section]  # (config, outdir) -> Section

# Where `progress` reports: the runner's overall ETA while a section runs.
_progress_sinks: list[Callable[[float], None]] = []


def progress(fraction: float) -> None:
  """A long section's own progress (0..1): the overall ETA then follows the
  section's measured pace instead of its fixed estimate alone."""
  for sink in _progress_sinks:
    sink(min(max(float(fraction), 0.0), 1.0))


@contextlib.contextmanager
def progress_to(sink: Callable[[float], None]):
  """Within the block, `progress(f)` also calls sink(f)."""
  _progress_sinks.append(sink)
  try:
    yield
  finally:
    _progress_sinks.remove(sink)


def table(records, columns=None) -> str:
  return cli.format_records(records, "markdown", columns)


def figure(fig, outdir: str, name: str, caption: str = "") -> str:
  """Saves `fig` as outdir/name; returns the markdown image line and its
  one-line caption (what to look at)."""
  plots.save(fig, os.path.join(outdir, name))
  line = f"![{name}]({name})"
  return f"{line}\n\n*{caption}*" if caption else line


def probe_subject(config, outdir: str):
  """The report's trained probe model (training_runs.probe_model_run)."""
  from train.probes import subjects  # pylint: disable=g-import-not-at-top
  from train.report import training_runs  # pylint: disable=g-import-not-at-top
  return subjects.load_subject(
      workdir=training_runs.probe_model_run(config.probes.steps, outdir,
                                            config.probes.plays))


def text_pass(subject, spec: str, windows: int, seed: int,
              gradient_sums: bool = False, window: int | None = None):
  """One forward of `subject` over `windows` windows of a text."""
  from train.probes import forward, subjects  # pylint: disable=g-import-not-at-top
  x, y = subjects.windows(subject, spec, windows, "val", seed, window)
  return forward.run(subject, x, y, spec, gradient_sums=gradient_sums)
