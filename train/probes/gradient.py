"""Seed 002 on a trained head: how much of the logit gradient survives W^T."""

from __future__ import annotations

import numpy as np

from bottleneck import gradient
from train.probes import plots
from train.probes.subjects import Subject, forward


def gradient_probe(subject: Subject, x, y, chunk: int = 1024):
  """Seed 002: eq. (10), App. D cosine, Fig. 2 rank, Fig. 7, Fig. 8."""
  h, _ = forward(subject, x)
  y = np.asarray(y).reshape(-1)
  w, b = subject.head()
  out = gradient.destroyed_fraction(h, w, b, y, chunk)
  n_small = min(len(y), 512)
  prof = gradient.coefficient_profiles(h[:n_small], w, b, y[:n_small])
  counts = [c for c in (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
            if c <= min(len(y), 2048)]
  ranks = gradient.rank_vs_tokens(h[:max(counts)], w, b, y[:max(counts)],
                                  counts)
  eff = gradient.update_efficiency(h[:1024], w, b, y[:1024],
                                   [1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3])
  out.update(rank_vs_tokens=ranks, efficiency=eff,
             profile={k: np.asarray(v).tolist() for k, v in prof.items()})
  return out, {"gradient_profiles": plots.profiles(prof),
               "gradient_rank": plots.ranks(ranks),
               "gradient_efficiency": plots.efficiency(eff)}
