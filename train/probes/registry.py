"""The probes by name: what `python -m train.probe --probe=NAME` runs.

Every probe but `frequency` and `rowstats` reads one forward.Pass of the
subject over its text; `edit` and `prune` read a second Pass over an
out-of-domain text.
"""

from __future__ import annotations

from train.probes import encoding, forward, gradient, head, subjects

# Probe -> the figures it draws (known before it runs: --plot is checked
# before any computation).
FIGURES = {
    "sanity": (),
    "gradient": ("gradient_destroyed", "gradient_profiles", "gradient_rank",
                 "gradient_efficiency"),
    "encoding": ("encoding_mlr", "encoding_spearman"),
    "edit": ("edit_scales",),
    "prune": ("prune",),
    "frequency": ("frequency",),
    "cumulative": ("cumulative",),
    "rowstats": ("rowstats",),
}
PROBES = tuple(FIGURES)
DEFAULT_WINDOW = 1024  # Tokens per window of a real LLM (<= its context).


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
  if probe not in FIGURES:
    raise ValueError(f"`probe` must be one of {PROBES}; got {probe!r}.")
  subjects.check_text_spec(data, "data")
  subjects.check_text_spec(ood_data, "ood_data")
  subject = subjects.load_subject(workdir, hf_dir, model, dtype)
  if probe == "frequency":
    return encoding.frequency_probe(subject)
  if probe == "rowstats":
    return head.rowstats_probe(subject.head()[0], subject.name, seed)
  t = window_length(subject, window)
  x, y = subjects.windows(subject, data, n_windows, "val", seed, t)
  ood = None
  if probe in ("edit", "prune"):  # Its windows before the main forward.
    ood = ood_data or subjects.other_source(subject)
    try:
      ood = (ood, *subjects.windows(subject, ood, max(1, n_windows // 2),
                                    "val", seed, t))
    except ValueError as e:  # Name the flag the user gave.
      raise ValueError(f"`ood_data` {ood!r}: {e}") from None
  pass_ = forward.run(subject, x, y, data, gradient_sums=probe == "gradient",
                      progress=progress)
  numbers, figures = _on_pass(probe, subject, pass_, ood, seed, progress)
  return {"subject": subject.describe(), "pass": pass_.describe(),
          **numbers}, figures


def _on_pass(probe, subject, pass_, ood, seed, progress):
  """`ood`: (spec, x, y) of the out-of-domain windows (edit, prune)."""
  if probe == "sanity":
    return head.sanity_probe(subject, pass_)
  if probe == "gradient":
    return gradient.gradient_probe(subject, pass_)
  if probe == "encoding":
    return encoding.encoding_probe(subject, pass_)
  if probe == "cumulative":
    return head.cumulative_probe(subject, pass_)
  spec, x, y = ood
  ood_pass = forward.run(subject, x, y, spec, gradient_sums=False,
                         progress=progress)
  if probe == "edit":
    return encoding.edit_probe(subject, pass_, ood_pass, seed=seed)
  return encoding.prune_probe(subject, pass_, ood_pass)
