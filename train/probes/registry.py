"""The probes by name: what `python -m train.probe --probe=NAME` runs."""

from __future__ import annotations

from train.probes import encoding, gradient, head, subjects

PROBES = ("gradient", "encoding", "edit", "prune", "frequency", "cumulative",
          "rowstats")


def run(probe: str, workdir=None, hf_dir=None, data="", ood_data="",
        n_windows: int = 64, seed: int = 0, model=None, dtype="float32"):
  """(numbers, figures) of one probe on a run folder, an HF folder or a
  `model` spec (smollm2 | gguf:PATH | run:DIR | hf:DIR)."""
  subject = subjects.load_subject(workdir, hf_dir, model, dtype)
  if probe == "frequency":
    return encoding.frequency_probe(subject)
  if probe == "rowstats":
    return head.rowstats_probe(subject.head()[0], subject.name, seed)
  x, y = subjects.windows(subject, data, n_windows, "val", seed)
  if probe == "gradient":
    return gradient.gradient_probe(subject, x, y)
  if probe == "encoding":
    return encoding.encoding_probe(subject, x)
  if probe == "cumulative":
    return head.cumulative_probe(subject, x)
  x_id, _ = subjects.windows(subject, data, n_windows, "val", seed + 1)
  x_ood, _ = subjects.windows(subject,
                              ood_data or subjects.other_source(subject),
                              n_windows, "val", seed)
  if probe == "edit":
    return encoding.edit_probe(subject, x, x_id, x_ood, seed=seed)
  return encoding.prune_probe(subject, x, x_ood)
