"""What a report section returns, and helpers sections share."""

from __future__ import annotations

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


def table(records, columns=None) -> str:
  return cli.format_records(records, "markdown", columns)


def figure(fig, outdir: str, name: str) -> str:
  """Saves `fig` as outdir/name and returns the markdown image line."""
  plots.save(fig, os.path.join(outdir, name))
  return f"![{name}]({name})"


def probe_subject(config, outdir: str):
  """The report's trained probe model (train/experiments.py), loaded."""
  from train import experiments  # pylint: disable=g-import-not-at-top
  from train.probes import subjects  # pylint: disable=g-import-not-at-top
  return subjects.load_subject(
      workdir=experiments.probe_model_run(config.probes.steps, outdir))
