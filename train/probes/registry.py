"""The probes by name: what `python -m train.probe --probe=NAME` runs and
what `compare` runs on every model (train/probes/spec.py: one Probe per
probe, one line here).
"""

from __future__ import annotations

from train.probes import (batches, encoding, forward, frequency, generation,
                          gradient, head, pruning, shared, spec, subjects)

SPECS = {p.name: p for p in (
    head.SANITY,
    gradient.GRADIENT,
    encoding.ENCODING,
    encoding.EDIT,
    pruning.PRUNE,
    head.CUMULATIVE,
    head.ROWSTATS,
    frequency.FREQUENCY,
    batches.BATCHES,
    shared.SHARED,
    generation.MAUVE,
)}
PROBES = tuple(SPECS)
DEFAULT_WINDOW = 1024  # Tokens per window of a real LLM (<= its context).


def figures_of(probe: str) -> tuple[str, ...]:
  """The figures `probe` draws (known before it runs: --plot is checked
  before any computation)."""
  return tuple(f.name for f in SPECS[probe].figures)


def compared() -> list[spec.Probe]:
  """The probes the comparison runs on every model, in order."""
  return [p for p in SPECS.values() if p.share]


def window_length(subject, window: int | None) -> int:
  """The probe window: `window`, else 1024 for real LLMs and the block size
  of this project's runs; at most the model's block size."""
  if window is not None and window < 2:
    raise ValueError(f"`window` must be >= 2 tokens; got {window}.")
  default = subject.cfg.block_size if subject.config is not None else \
      DEFAULT_WINDOW
  return min(window or default, subject.cfg.block_size)


def run(probe: str, workdir=None, hf_dir=None, data="", ood_data="",
        n_windows: int = 16, seed: int = 0, model=None, dtype="float32",
        window: int | None = None, progress=None):
  """(numbers, figures) of one probe on a run folder, an HF folder or a
  `model` spec (subjects.SPECS)."""
  if probe not in SPECS:
    raise ValueError(f"`probe` must be one of {PROBES}; got {probe!r}.")
  p = SPECS[probe]
  subjects.check_text_spec(data, "data")
  subjects.check_text_spec(ood_data, "ood_data")
  subject = subjects.load_subject(workdir, hf_dir, model, dtype)
  settings = spec.Settings(windows=n_windows, window=window or 0, seed=seed,
                           dtype=dtype)
  model = model or ""
  if p.reads == "subject":
    return p.run(spec.Context(subject, None, None, settings, model))
  t = window_length(subject, window)
  x, y = subjects.windows(subject, data, n_windows, "val", seed, t)
  ood = None
  if p.reads == "passes":  # Its windows before the main forward.
    name = ood_data or subjects.other_source(subject)
    try:
      ood = (name, *subjects.windows(subject, name, max(1, n_windows // 2),
                                     "val", seed, t))
    except ValueError as e:  # Name the flag the user gave.
      raise ValueError(f"`ood_data` {name!r}: {e}") from None
  own = forward.run(subject, x, y, data, gradient_sums=p.gradient_sums,
                    progress=progress)
  if ood is not None:
    ood = forward.run(subject, *ood[1:], ood[0], gradient_sums=False,
                      progress=progress)
  numbers, figures = p.run(spec.Context(subject, own, ood, settings, model))
  return {"subject": subject.describe(), "pass": own.describe(),
          **numbers}, figures
