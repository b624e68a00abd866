"""Where the chains of one family have their transitions: a pooled model.

A chain of nested subsets (lp.chains) is FEASIBLE up to its transition q
(the position of its last FEASIBLE member, -1 to n - 1) and INFEASIBLE
above. A chain still being bisected knows only lo <= q < hi, a finished one
knows q. The chains of a family (one matrix, problem and m grid) share a
distribution of q: Figure 1's curve is its survival function. This module
fits that distribution from all chains' brackets at once, so a chain can
aim its probes where the others say the transition lies long before any
chain has finished:

  P(q >= k) = sigmoid((mu - k + 1/2) / s),  k = 0 .. n - 1,

a discretized logistic with a flat prior over a grid of (mu, s); each
bracket is interval-censored evidence, L = P(q >= lo) - P(q >= hi), and the
posterior predictive of q is what `predictive` returns. A logistic is the
shape of the random matrices' curves (paper-size Figure 1: q spans 6
positions of 30); chain_feed.Feed adds it to the finished chains' own histogram
and a uniform pseudo-count, so a family it does not fit (a trained head's
outlying chains) still falls back to bisection.
"""

from __future__ import annotations

import functools

import numpy as np

_SCALES = (0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0)  # s, in positions.
_MU_STEP = 0.25  # Grid step of mu, in positions.


@functools.lru_cache(maxsize=16)
def _grid(n: int) -> tuple[np.ndarray, np.ndarray]:
  """(surv [G, n + 2], pmf [G, n + 1]) over the (mu, s) grid: surv[:, j] =
  P(q >= j - 1) for j = 0 .. n + 1, pmf[:, j] = P(q = j - 1)."""
  mu = np.arange(-1.0, n + _MU_STEP / 2, _MU_STEP)
  scales = np.array(_SCALES + (max(_SCALES[-1], n / 3.0),))
  mu_g, s_g = (g.ravel() for g in np.meshgrid(mu, scales, indexing="ij"))
  k = np.arange(-1, n + 1)
  z = np.clip((mu_g[:, None] - k[None, :] + 0.5) / s_g[:, None], -60, 60)
  surv = 1.0 / (1.0 + np.exp(-z))
  surv[:, 0], surv[:, -1] = 1.0, 0.0
  return surv, surv[:, :-1] - surv[:, 1:]


def predictive(lo, hi, n: int) -> np.ndarray:
  """P(q = j - 1), j = 0 .. n, for a new chain of the family, given chains
  known to have lo_c <= q_c < hi_c (lo = -1: no FEASIBLE member known; hi
  = n: no INFEASIBLE one). With no bracket: the flat prior's predictive."""
  lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
  if lo.shape != hi.shape or np.any(lo < -1) or np.any(hi > n) or np.any(
      lo >= hi):
    raise ValueError(f"brackets must satisfy -1 <= lo < hi <= n = {n}")
  surv, pmf = _grid(n)
  like = surv[:, lo + 1] - surv[:, hi + 1]  # [G, chains]
  log_post = np.log(np.maximum(like, 1e-300)).sum(axis=1)
  post = np.exp(log_post - log_post.max())
  return post @ pmf / post.sum()


def van_der_corput(k: int) -> float:
  """The k-th point (k >= 0) of the base-2 van der Corput sequence, from
  1/2: 1/2, 1/4, 3/4, 1/8, ... Quantiles that spread a family's first
  probes over its curve (chain_feed.Feed): one probe per chain, at a different
  quantile each, tells the model more than all of them at the median."""
  value, denominator, k = 0.0, 1.0, k + 1
  while k:
    denominator *= 2.0
    value += (k % 2) / denominator
    k //= 2
  return value
