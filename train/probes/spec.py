"""What a probe declares: one `Probe` per probe, in its own module, and one
line in `registry.SPECS`.

A probe names what it reads (the subject alone, one forward Pass over the
probed text, or that Pass and one over an out-of-domain text), how it turns
a `Context` into (numbers, figures), the figures it draws with their
captions (and, for the comparison of several models, how one figure
overlays every model's numbers), its rows of the comparison's tables with
the papers' numbers, and its share of one model's comparison time.
`registry.run` (`python -m train.probe`) and `compare` (`python -m
train.compare`, the report's real_llm section) read nothing else, so
adding a probe touches its module, its registry line and its test.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, NamedTuple

READS = ("subject", "pass", "passes")


@dataclasses.dataclass(frozen=True)
class Settings:
  """How deep each model is probed (configs/report.py: real_llm)."""
  windows: int = 16  # Windows of `window` tokens probed per model.
  window: int = 1024  # Tokens per window (<= the model's context).
  text: str = ""  # Probed text ('' = the packaged Shakespeare).
  ood_text: str = "python_docs"  # Out-of-domain text (modern prose).
  ood_windows: int = 2  # Its windows.
  prompt: str = "The capital of France is"  # Greedy sanity check.
  new_tokens: int = 16  # Its continuation length.
  edit_tokens: int = 10  # Tokens edited (Algorithm 1).
  edit_positions: int = 2048  # Positions per edit set (memory-capped).
  prune_positions: int = 1024  # Out-of-domain positions (Fig. 6).
  # Out-of-domain positions of the shared-matrix probe (each of its 10
  # removals and 4 scales x edit_tokens edits is a forward over them).
  shared_positions: int = 256
  # Seed 003's MAUVE: texts sampled per variant (0: not run) and their new
  # tokens (train/probes/generation.py).
  mauve_samples: int = 128
  mauve_new_tokens: int = 32
  cumulative_positions: int = 1024  # Positions sorted for App. A.
  profile_columns: int = 0  # Fig. 3's profiled PCs and dims (0: all).
  lp_m: str = "30..100:10"  # Figure 1 m values on each head.
  lp_trials: int = 20  # Subsets per m (0 skips every LP).
  natural_m: str = "10,30"  # App. D m values.
  natural_positions: int = 256  # Positions whose distributions are targets.
  lp_batch: int = 32  # LP instances iterated together.
  lp_max_iters: int = 5000  # ADMM cap; still open = 'undecided'.
  # Gaussian twins of a head too large for the SVD (eq. 10; 0: none).
  twin_draws: int = 0
  dtype: str = "float32"  # Parameter / compute dtype.
  seed: int = 0


class Context(NamedTuple):
  """What a probe's `run` gets."""
  subject: Any  # subjects.Subject
  own: Any  # forward.Pass over the probed text (None: reads 'subject').
  ood: Any  # forward.Pass over the out-of-domain text (reads 'passes').
  settings: Settings
  model: str = ""  # The model spec it was loaded from (subjects.SPECS).


@dataclasses.dataclass(frozen=True)
class Row:
  """One row of a comparison table: `cell` reads one model's results
  ({probe name: numbers, 'subject': ..., 'pass': ...}) and returns text."""
  table: str  # TABLES.
  label: str
  paper: str  # The paper's number, quoted beside ours ('' if none).
  cell: Callable[[dict], str]


@dataclasses.dataclass(frozen=True)
class Figure:
  """A figure a probe draws: `overlay` ({model: this probe's numbers} ->
  a matplotlib figure) draws it for several models; None: one model only
  (`python -m train.probe`)."""
  name: str
  caption: str  # What the figure shows, never a result it did not check.
  overlay: Callable[[dict], Any] | None = None


@dataclasses.dataclass(frozen=True)
class Probe:
  name: str
  reads: str  # READS.
  run: Callable[[Context], tuple[dict, dict]]  # -> (numbers, figures).
  figures: tuple[Figure, ...] = ()
  rows: tuple[Row, ...] = ()
  share: float = 0.0  # Of one model's comparison time (0: not compared).
  gradient_sums: bool = False  # Its Pass sums seed 002's gradient terms.

  def __post_init__(self):
    if self.reads not in READS:
      raise ValueError(f"probe {self.name!r}: `reads` must be one of "
                       f"{READS}; got {self.reads!r}.")


# The comparison's tables, in order, and their titles.
TABLES = {"subject": "What was probed", "sanity": "Loaded right?",
          "seed002": "Seed 002: the gradient bottleneck",
          "seed003": "Seed 003: probabilities encoded in W",
          "seed001": "Seed 001: appendices and Figure 1"}


def of_key(draw: Callable[[dict], Any], key: str) -> Callable[[dict], Any]:
  """An overlay drawing `draw({model: numbers[key]})`: the common case of
  a figure that plots one entry of each model's numbers."""
  return lambda by_model: draw({n: r[key] for n, r in by_model.items()})


def captions(*probes: Probe) -> dict[str, str]:
  """{figure name: caption} of the probes' figures."""
  return {f.name: f.caption for p in probes for f in p.figures}


def fmt(value, digits: int = 3) -> str:
  """A number for a table cell ('-' for None or NaN)."""
  return "-" if value is None or (isinstance(value, float) and
                                  math.isnan(value)) else f"{value:.{digits}g}"
