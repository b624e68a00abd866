"""Statistics of output distributions and OPM rows (seed 001, App. A and E)."""

from __future__ import annotations

import numpy as np

from bottleneck import checks


def cumulative_top_m(probs_nxv, m_values) -> np.ndarray:
  """App. A: per position, the total probability of its m likeliest tokens.

  Returns [n, len(m_values)].
  """
  p = checks.finite_array("probs", probs_nxv, ndim=2)
  m_values = np.asarray(m_values)
  if m_values.min() < 1 or m_values.max() > p.shape[1]:
    raise ValueError(f"`m` must be in [1, V={p.shape[1]}].")
  top = -np.sort(-p, axis=1)[:, :int(m_values.max())]
  return np.cumsum(top, axis=1)[:, m_values - 1]


def tokens_for_mass(probs_nxv, mass: float = 0.9) -> np.ndarray:
  """Per position, how many top tokens it takes to reach `mass` (nucleus)."""
  mass = checks.open_interval("mass", mass, 0.0, 1.0)
  p = -np.sort(-checks.finite_array("probs", probs_nxv, ndim=2), axis=1)
  return np.argmax(np.cumsum(p, axis=1) >= mass, axis=1) + 1


def row_norms(w_vxd) -> np.ndarray:
  return np.linalg.norm(np.asarray(w_vxd, np.float64), axis=1)


def random_like(w_vxd, seed: int = 0) -> np.ndarray:
  """Gaussian matrix of W's shape scaled to W's mean row norm (App. E)."""
  w = np.asarray(w_vxd, np.float64)
  g = np.random.default_rng(seed).standard_normal(w.shape)
  return g * (row_norms(w).mean() / row_norms(g).mean())


def pairwise_cosines(w_vxd, pairs: int = 10000, seed: int = 0) -> np.ndarray:
  """Cosine similarity of `pairs` random pairs of distinct rows."""
  w = np.asarray(w_vxd, np.float64)
  rng = np.random.default_rng(seed)
  i = rng.integers(0, w.shape[0], pairs)
  j = (i + rng.integers(1, w.shape[0], pairs)) % w.shape[0]
  norms = row_norms(w)
  keep = (norms[i] > 0) & (norms[j] > 0)
  i, j = i[keep], j[keep]
  return np.sum(w[i] * w[j], axis=1) / (norms[i] * norms[j])


def summary(w_vxd, seed: int = 0) -> dict:
  """Row-norm and cosine statistics of W and of a same-size random matrix."""
  out = {}
  for label, m in (("trained", w_vxd), ("random", random_like(w_vxd, seed))):
    n, c = row_norms(m), pairwise_cosines(m, seed=seed)
    out[label] = {"norm_mean": float(n.mean()), "norm_std": float(n.std()),
                  "cos_mean": float(c.mean()), "cos_std": float(c.std()),
                  "cos_positive": float(np.mean(c > 0))}
  return out
