"""Seed 001 App. A and E on a trained head: top-m mass, row statistics."""

from __future__ import annotations

import numpy as np

from bottleneck import head_stats
from train.probes import plots
from train.probes.subjects import Subject, forward


def cumulative_probe(subject: Subject, x):
  """Seed 001 App. A / Fig. 4: mass of the top-m tokens, averaged."""
  _, p = forward(subject, x)
  m_values = np.unique(np.geomspace(1, p.shape[1], 30).astype(int))
  cum = head_stats.cumulative_top_m(p, m_values)
  per_window = cum.reshape(len(x), -1, len(m_values)).mean(1)
  need = head_stats.tokens_for_mass(p, 0.9)
  out = {"m": m_values.tolist(), "mean": cum.mean(0).tolist(),
         "std_over_windows": per_window.std(0).tolist(),
         "tokens_for_0.9_mean": float(need.mean()),
         "tokens_for_0.9_median": float(np.median(need))}
  return out, {"cumulative": plots.cumulative(out)}


def rowstats_probe(w_vxd, label: str, seed: int = 0):
  """Seed 001 App. E / Fig. 7: trained rows vs a random matrix."""
  out = head_stats.summary(w_vxd, seed)
  return out, {"rowstats": plots.rowstats(w_vxd, label, seed)}
