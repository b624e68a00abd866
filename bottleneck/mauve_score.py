"""MAUVE (Pillutla et al., 2021) between two sets of text features, the
metric seed 003 reports beside KL (Table 2, Fig. 6; its App. B.3: "the
package mauve-text by default parameters").

`mauve` checks its inputs and calls the package (PCA to 90 % of the
variance, k-means into n / 10 buckets, the divergence frontier's area at
scaling 5); `from_histograms` recomputes the score from the package's two
bucket histograms, an independent check of its last step.
"""

from __future__ import annotations

import numpy as np

from bottleneck import checks

SCALING = 5.0  # The package's mauve_scaling_factor (its default, c = 5).
CURVE_POINTS = 25  # Its divergence_curve_discretization_size.
MIN_BUCKETS = 2  # Its 'auto' buckets: max(2, round(n / 10)).
MIN_PER_BUCKET = 10  # Rows per bucket below which k-means is meaningless.


def _features(name: str, f) -> np.ndarray:
  f = np.asarray(checks.finite_array(name, f, ndim=2), np.float32)
  unit = f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-30)
  if np.all(np.ptp(unit, axis=0) == 0):  # The package L2-normalises rows.
    raise ValueError(f"`{name}`: every row has the same direction (one "
                     "text for every prompt?): MAUVE's clustering is "
                     "undefined.")
  need = MIN_BUCKETS * MIN_PER_BUCKET
  if f.shape[0] < need:
    raise ValueError(f"`{name}` has {f.shape[0]} rows: MAUVE's clustering "
                     f"needs at least {need} per set ({MIN_BUCKETS} buckets "
                     f"of {MIN_PER_BUCKET}).")
  return f


def mauve(p_nxd, q_mxd, seed: int = 25, buckets: int | None = None) -> dict:
  """MAUVE of features P against Q (rows: texts): {'mauve',
  'frontier_integral', 'buckets', 'p_hist', 'q_hist'}; `buckets` None is
  the package's 'auto' (n / 10)."""
  p, q = _features("p_features", p_nxd), _features("q_features", q_mxd)
  if p.shape[1] != q.shape[1]:
    raise ValueError(f"`p_features` {p.shape} and `q_features` {q.shape}: "
                     "expected the same width")
  import mauve as mauve_text  # pylint: disable=g-import-not-at-top
  out = mauve_text.compute_mauve(
      p_features=p, q_features=q, seed=seed,
      num_buckets="auto" if buckets is None else int(buckets),
      mauve_scaling_factor=SCALING,
      divergence_curve_discretization_size=CURVE_POINTS, verbose=False)
  return {"mauve": float(out.mauve),
          "frontier_integral": float(out.frontier_integral),
          "buckets": int(out.num_buckets), "p_hist": out.p_hist.tolist(),
          "q_hist": out.q_hist.tolist()}


def _kl(a, b) -> float:
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  if np.any((a > 0) & (b == 0)):
    return np.inf
  on = (a > 0) & (b > 0)
  return float(np.sum(a[on] * np.log(a[on] / b[on])))


def from_histograms(p_hist, q_hist, scaling: float = SCALING,
                    points: int = CURVE_POINTS) -> float:
  """MAUVE from two bucket histograms (Pillutla et al. eq. (1)-(2)): the
  divergence curve (exp(-c KL(Q || R_w)), exp(-c KL(P || R_w))), R_w = w P
  + (1 - w) Q over `points` weights and its two end points, its area by
  the trapezoid rule read along each axis and averaged."""
  p, q = np.asarray(p_hist, np.float64), np.asarray(q_hist, np.float64)
  curve = [(0.0, np.inf)]
  for w in np.linspace(1e-6, 1 - 1e-6, points):
    r = w * p + (1 - w) * q
    curve.append((_kl(q, r), _kl(p, r)))
  curve.append((np.inf, 0.0))
  x, y = np.exp(-scaling * np.asarray(curve)).T

  def area(a, b):
    i = np.argsort(a)
    return float(np.sum(np.diff(a[i]) * (b[i][1:] + b[i][:-1]) / 2))

  return 0.5 * (area(x, y) + area(y, x))
