"""What a report section returns, and helpers sections share."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

from bottleneck import cli, plots


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
