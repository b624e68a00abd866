"""Candidate polishing for the top-m LP: from a solver's rough iterate to a
point that a float64 certificate can accept (the checks themselves are
`bottleneck.lp.certificates`; nothing here is trusted).

For the LP  min t  s.t.  A_S x = y,  a_j . x <= t (j not in S)  in d + 1
unknowns (x, t), a vertex has the m equality rows and d + 1 - m active rows
J. First-order iterates find t* to a few digits long before they are
accurate enough to certify, and their largest other logits / largest
multipliers already name (most of) J:

  `vertex`: the primal vertex on the d + 1 - m rows of largest logit at x
    (one (d+1) x (d+1) solve): its max other logit is t* up to the rows
    guessed wrong, often enough to prove t* < threshold;
  `dual`: multipliers moved onto {mu >= 0, sum mu = 1, A_R^T mu in the row
    space of A_S} (an active-set projection), which the global dual
    certificate then encloses exactly.
"""

from __future__ import annotations

import numpy as np

from bottleneck import linalg


def vertex(a, subset, y, x):
  """The LP vertex whose active rows are the d + 1 - m largest other logits
  at x: solves A_S x_v = y, a_j . x_v = t_v (j in J) exactly in float64.

  Returns x_v, or None if that system is singular (degenerate guesses, or
  rows of the matrix that coincide).
  """
  a = getattr(a, "a", a)  # A matrix or certificates.MatrixFacts.
  subset = np.asarray(subset)
  d, m = a.shape[1], subset.size
  logits = a @ np.asarray(x, np.float64)
  logits[subset] = -np.inf
  k = d + 1 - m
  rows = np.argpartition(-logits, k - 1)[:k]
  system = np.zeros((d + 1, d + 1))
  system[:m, :d], system[m:, :d], system[m:, d] = a[subset], a[rows], -1.0
  rhs = np.zeros(d + 1)
  rhs[:m] = y
  try:
    solution = np.linalg.solve(system, rhs)
  except np.linalg.LinAlgError:
    return None
  return solution[:d] if np.all(np.isfinite(solution)) else None


def dual(a, subset, mu, x=None, support_factor: float = 2.0,
           rounds: int = 30):  # pylint: disable=too-many-locals
  """Moves mu so that A_R^T mu lies in the row space of A_S (to ~1e-15).

  Projects mu onto {mu_K >= 0, sum mu_K = 1, P_perp A_K^T mu_K = 0} by an
  active-set loop: minimum-norm correction of mu_K, drop the entries that
  turn negative, repeat from the original mu (staying close to mu keeps its
  dual bound). A dual vertex has d - m + 1 active rows, so the support K
  holds support_factor * (d - m + 1) rows: those where mu > 0, filled up with
  the rows of largest logit at `x` (the solver's best primal point, whose
  active rows carry the optimal multipliers).
  """
  a = getattr(a, "a", a)  # A matrix or certificates.MatrixFacts.
  subset = np.asarray(subset)
  n, d = a.shape
  mu0 = np.clip(np.asarray(mu, np.float64), 0.0, None)
  mu0[subset] = 0.0
  k = min(n - subset.size, int(support_factor * (d - subset.size + 1)))
  rank = mu0.copy()
  if x is not None:  # Fill with active rows: below every positive mu.
    logits = a @ np.asarray(x, np.float64)
    logits[subset] = -np.inf
    order = np.argsort(-logits)
    rank[order] = np.where(mu0[order] > 0, mu0[order], 0) - 1.0 - np.arange(
        n) / n
    rank[subset] = -np.inf
  support = np.argsort(-rank)[:k]
  _, q = linalg.rowspace(a[subset], np.zeros(subset.size))
  for _ in range(rounds):
    a_k = a[support]
    b = np.vstack([a_k.T - q @ (q.T @ a_k.T), np.ones((1, support.size))])
    target = np.zeros(b.shape[0])
    target[-1] = 1.0
    # Minimum-norm correction b^T (b b^T)^{-1} r via the small Gram matrix
    # (d + 1 square); lstsq's SVD of the d x k block is ~10x slower.
    gram = b @ b.T
    r = target - b @ mu0[support]
    try:
      corr = b.T @ np.linalg.solve(gram, r)
    except np.linalg.LinAlgError:
      corr = np.linalg.lstsq(b, r, rcond=None)[0]
    mu_k = mu0[support] + corr
    if np.all(mu_k >= 0) or support.size <= 1:
      break
    keep = mu_k > 0
    support, mu_k = support[keep], mu_k[keep]
  out = np.zeros(n)
  out[support] = np.clip(mu_k, 0.0, None)
  return out
