"""Statistics of output distributions and OPM rows (seed 001, App. A and E).

Memory: everything on a V x D matrix works in row blocks (float64 per
block), so a 262144 x 640 head needs no float64 copy; the random matrix of
App. E is drawn block by block and never held.
"""

from __future__ import annotations

import numpy as np

from bottleneck import checks

_BLOCK = 1 << 14  # Rows per block.


def top_mass(probs_nxv, m_values, mass: float = 0.9):
  """App. A from one sort: ([n, len(m)] per position, the total
  probability of its m likeliest tokens; [n] tokens needed for `mass`
  (nucleus); and the paper's App. A statistic: the
  smallest m at which the cumulative mass averaged over positions reaches
  `mass`)."""
  p = checks.finite_array("probs", probs_nxv, ndim=2)
  mass = checks.open_interval("mass", mass, 0.0, 1.0)
  m_values = np.asarray(m_values)
  if m_values.min() < 1 or m_values.max() > p.shape[1]:
    raise ValueError(f"`m` must be in [1, V={p.shape[1]}].")
  cum = np.cumsum(-np.sort(-p, axis=1), axis=1)
  need = np.argmax(cum >= mass, axis=1) + 1
  of_mean = int(np.argmax(cum.mean(0) >= mass)) + 1
  return cum[:, m_values - 1], need, of_mean


def nucleus(probs_nxv, masses=(0.9, 0.95), rank: int = 1000) -> dict:
  """Seed 001 App. A's conjecture (tokens past the top `rank` do not
  matter under nucleus sampling), per position: the nucleus's size at
  each top-p `mass` (the fewest likeliest tokens holding it) and the mass
  past rank `rank`. {'sizes': {mass: [n] ints}, 'past_rank': [n]}."""
  p = checks.finite_array("probs", probs_nxv, ndim=2)
  rank = checks.int_in_range("rank", rank, 1, p.shape[1])
  cum = np.cumsum(-np.sort(-p.astype(np.float64), axis=1), axis=1)
  sizes = {}
  for mass in masses:
    mass = checks.open_interval("mass", mass, 0.0, 1.0)
    reached = cum >= mass * cum[:, -1:]  # Of each row's own total.
    sizes[mass] = np.argmax(reached, axis=1) + 1
  past = np.clip(cum[:, -1] - cum[:, rank - 1], 0.0, None)
  return {"sizes": sizes, "past_rank": past}


def row_norms(w_vxd) -> np.ndarray:
  """|w_i| for every row, float64, block by block."""
  w = np.asarray(w_vxd)
  return np.concatenate([np.linalg.norm(w[i:i + _BLOCK].astype(np.float64),
                                        axis=1)
                         for i in range(0, len(w), _BLOCK)])


def random_like(w_vxd, seed: int = 0) -> np.ndarray:
  """Gaussian matrix of W's shape scaled to W's mean row norm (App. E)."""
  w = np.asarray(w_vxd)
  g = np.random.default_rng(seed).standard_normal(w.shape)
  return g * (row_norms(w).mean() / row_norms(g).mean())


def pairwise_cosines(w_vxd, pairs: int = 10000, seed: int = 0,
                     norms=None) -> np.ndarray:
  """Cosine similarity of `pairs` random pairs of distinct rows."""
  w = np.asarray(w_vxd)
  rng = np.random.default_rng(seed)
  i = rng.integers(0, w.shape[0], pairs)
  j = (i + rng.integers(1, w.shape[0], pairs)) % w.shape[0]
  norms = row_norms(w) if norms is None else norms
  keep = (norms[i] > 0) & (norms[j] > 0)
  i, j = i[keep], j[keep]
  return np.sum(w[i].astype(np.float64) * w[j], axis=1) / (norms[i] *
                                                           norms[j])


def _random_statistics(shape, mean_norm: float, pairs: int, seed: int):
  """Row norms and pair cosines of a Gaussian matrix of `shape` scaled to
  `mean_norm`, drawn block by block: its rows are i.i.d., so fresh pairs of
  rows have the law of random pairs of its rows."""
  v, d = shape
  rng = np.random.default_rng(seed)
  norms = np.concatenate([np.linalg.norm(rng.standard_normal(
      (min(_BLOCK, v - i), d)), axis=1) for i in range(0, v, _BLOCK)])
  a, b = rng.standard_normal((2, pairs, d))
  cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) *
                                 np.linalg.norm(b, axis=1))
  return norms * (mean_norm / norms.mean()), cos


def _both(w_vxd, seed: int, pairs: int = 10000):
  """{'trained': (norms, cosines), 'random': (norms, cosines)}."""
  w = checks.finite_array("w", w_vxd, ndim=2)
  norms = row_norms(w)
  return {"trained": (norms, pairwise_cosines(w, pairs, seed, norms)),
          "random": _random_statistics(w.shape, float(norms.mean()), pairs,
                                       seed)}


def summary(w_vxd, seed: int = 0) -> dict:
  """Row-norm and cosine statistics of W and of a same-size random matrix."""
  out = {}
  for label, (n, c) in _both(w_vxd, seed).items():
    out[label] = {"norm_mean": float(n.mean()), "norm_std": float(n.std()),
                  "cos_mean": float(c.mean()), "cos_std": float(c.std()),
                  "cos_positive": float(np.mean(c > 0)),
                  "pairs": int(c.size)}  # App. E's sample, for its interval.
  return out


def row_histograms(w_vxd, seed: int = 0, bins: int = 60) -> dict:
  """Density histograms of row norms (relative to the mean) and of pair
  cosines, trained and random: plain lists, for figures and JSON."""
  out = {}
  for label, (n, c) in _both(w_vxd, seed).items():
    ratio, cos_edges = n / n.mean(), np.linspace(-1.0, 1.0, bins + 1)
    top = max(2.0, float(np.quantile(ratio, 0.999)))
    norm_counts, norm_edges = np.histogram(ratio, bins, (0.0, top),
                                           density=True)
    cos_counts, _ = np.histogram(c, cos_edges, density=True)
    out[label] = {"norm_edges": norm_edges.tolist(),
                  "norm_density": norm_counts.tolist(),
                  "cos_edges": cos_edges.tolist(),
                  "cos_density": cos_counts.tolist()}
  return out


def identical_row_groups(w_vxd) -> list[np.ndarray]:
  """Groups (>= 2 tokens each) of bit-identical rows: such tokens always
  share their logit, so an m-subset holding some of a group but not all
  is never the strict top m (seed 001's LP: t* >= the subset's logit)."""
  w = np.ascontiguousarray(np.asarray(w_vxd) + 0.0)  # -0.0 as +0.0.
  keys = w.view(np.dtype((np.void, w.dtype.itemsize * w.shape[1]))).ravel()
  _, inverse, counts = np.unique(keys, return_inverse=True,
                                 return_counts=True)
  return [np.flatnonzero(inverse == g) for g in np.flatnonzero(counts > 1)]


def splits_a_group(subset, groups) -> bool:
  """Whether `subset` holds some but not all tokens of one of `groups`."""
  chosen = set(np.asarray(subset).tolist())
  return any(0 < sum(int(t) in chosen for t in g) < len(g) for g in groups)

