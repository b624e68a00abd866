"""Uncertainties the seed-003 and real-LLM ledger rows print: each a small
pure function with its reference in tests/ledger_rows_seed003_test.py."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

LEVEL = 0.95  # Every interval's confidence level.


def r2_interval(r2: float, n: int, k: int, level: float = LEVEL
                ) -> tuple[float, float]:
  """R^2 +- z SE, the large-sample standard error of a regression's R^2
  with n observations and k regressors (Olkin & Finn 1995: SE^2 =
  4 R^2 (1 - R^2)^2 (n - k - 1)^2 / ((n^2 - 1)(n + 3))), clipped to
  [0, 1]. Seed 003 Table 1's MLR: n = V tokens, k = D dimensions."""
  if n <= k + 1:
    raise ValueError(f"n = {n} observations for k = {k} regressors")
  r2c = min(max(r2, 0.0), 1.0)
  se = math.sqrt(4 * r2c * (1 - r2c) ** 2 * (n - k - 1) ** 2
                 / ((n * n - 1) * (n + 3)))
  z = stats.norm.ppf(0.5 + level / 2)
  return max(r2 - z * se, 0.0), min(r2 + z * se, 1.0)


def t_interval(values, level: float = LEVEL) -> tuple[float, float, float]:
  """(mean, lo, hi): Student's t interval of the mean of `values` (at least
  two)."""
  x = np.asarray(values, np.float64)
  if x.size < 2:
    raise ValueError(f"{x.size} value(s): an interval needs two")
  mean = float(x.mean())
  half = stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(
      x.size)
  return mean, mean - half, mean + half


def median_interval(values, level: float = LEVEL
                    ) -> tuple[float, float, float]:
  """(median, lo, hi): the distribution-free interval of the median from
  order statistics (the binomial(n, 1/2) quantiles; scipy's
  quantile_test(p=0.5).confidence_interval)."""
  x = np.sort(np.asarray(values, np.float64))
  n = x.size
  k = int(stats.binom.ppf((1 - level) / 2, n, 0.5))
  if k < 1:
    return float(np.median(x)), -math.inf, math.inf
  return float(np.median(x)), float(x[k - 1]), float(x[n - k])
