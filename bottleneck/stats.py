"""Small statistics the report's verdicts share: a line through 0 with a
bootstrap interval (seed 001 Fig. 3's m ~ d/5), the pooled two-proportion
test and Fisher's exact test (trained against Gaussian selectability,
Fig. 1), and the Clopper-Pearson interval of a fraction (the ledger's
brackets)."""

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


def _log_binom_pmf(i: int, n: int, p: float) -> float:
  if p in (0.0, 1.0):
    return 0.0 if i == (0 if p == 0.0 else n) else -math.inf
  return (math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
          + i * math.log(p) + (n - i) * math.log1p(-p))


def binomial_interval(k: int, n: int, level: float = 0.95
                      ) -> tuple[float, float]:
  """Clopper-Pearson interval of a fraction k/n: the p whose binomial tails
  at k are each at least (1 - level) / 2 (exact; bisection on the tails)."""
  checks.positive_int("n", n)
  if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not (
      0 <= k <= n):
    raise ValueError(f"`k` must be an integer in [0, n = {n}]; got {k!r}.")
  checks.open_interval("level", level, 0.0, 1.0)
  alpha = (1 - level) / 2

  def at_most_k(p):  # P(X <= k | p), decreasing in p.
    return sum(math.exp(_log_binom_pmf(i, n, p)) for i in range(k + 1))

  def solve(f, target):  # f decreasing on [0, 1]: the p with f(p) = target.
    lo, hi = 0.0, 1.0
    for _ in range(60):
      mid = (lo + hi) / 2
      lo, hi = (mid, hi) if f(mid) > target else (lo, mid)
    return (lo + hi) / 2

  # P(X >= k | p) = 1 - P(X <= k - 1 | p) is alpha at the lower end.
  lower = 0.0 if k == 0 else solve(
      lambda p: sum(math.exp(_log_binom_pmf(i, n, p)) for i in range(k)),
      1 - alpha)
  upper = 1.0 if k == n else solve(at_most_k, alpha)
  return lower, upper


def _log_comb(n: int, k: int) -> float:
  return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
  """Two-sided p of Fisher's exact test of k1/n1 against k2/n2: the
  hypergeometric probability of tables no likelier than the observed."""
  for name, k, n in (("k1", k1, n1), ("k2", k2, n2)):
    checks.positive_int(name.replace("k", "n"), n)
    if isinstance(k, bool) or not 0 <= k <= n:
      raise ValueError(f"`{name}` must be an integer in [0, {n}]; got {k!r}.")
  total, n = k1 + k2, n1 + n2

  def pmf(a):
    return math.exp(_log_comb(n1, a) + _log_comb(n2, total - a)
                    - _log_comb(n, total))

  observed = pmf(k1)
  support = range(max(0, total - n2), min(n1, total) + 1)
  return min(1.0, sum(p for p in map(pmf, support)
                      if p <= observed * (1 + 1e-7)))
