"""Small statistics the report's verdicts share: a line through 0 with a
bootstrap interval (seed 001 Fig. 3's m ~ d/5) and the pooled
two-proportion test (trained against Gaussian selectability, Fig. 1)."""

from __future__ import annotations

import math

import numpy as np

from bottleneck import checks


def slope_through_zero(x, y) -> float:
  """Least-squares c of y ~ c x (no intercept): x.y / x.x."""
  x = checks.finite_array("x", x, ndim=1).astype(np.float64)
  y = checks.finite_array("y", y, ndim=1).astype(np.float64)
  if x.shape != y.shape or not np.any(x):
    raise ValueError(f"`x` and `y` must be equal-length with x != 0; got "
                     f"{x.shape} and {y.shape}.")
  return float(x @ y / (x @ x))


def bootstrap_slope(x, y, resamples: int = 2000, level: float = 0.9,
                    seed: int = 0) -> tuple[float, float]:
  """Percentile interval of slope_through_zero over points resampled with
  replacement (resamples drawing only x = 0 are skipped)."""
  x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
  checks.positive_int("resamples", resamples)
  checks.open_interval("level", level, 0.0, 1.0)
  rng = np.random.default_rng(seed)
  idx = rng.integers(0, len(x), (resamples, len(x)))
  xs, ys = x[idx], y[idx]
  keep = np.any(xs != 0, axis=1)
  slopes = (xs * ys).sum(1)[keep] / (xs * xs).sum(1)[keep]
  lo, hi = np.quantile(slopes, [(1 - level) / 2, (1 + level) / 2])
  return float(lo), float(hi)


def two_proportion_z(k1: int, n1: int, k2: int, n2: int) -> float:
  """z of the pooled two-proportion test of k1/n1 against k2/n2 (0 where
  both proportions are 0 or both 1)."""
  p = (k1 + k2) / (n1 + n2)
  se = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
  return 0.0 if se == 0 else (k1 / n1 - k2 / n2) / se
