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
  `basis`: the same vertex and, from the same LU factorization (the dual
    system is its transpose), the dual point of that basis: when the
    active rows are guessed right both are optimal (t* = y^T lam);
  `dual` / `project`: multipliers moved onto {mu >= 0, sum mu = 1, A_R^T
    mu in the row space of A_S} (an active-set projection), which the
    global dual certificate then encloses exactly; `project` also says
    whether its support collapsed (too narrow for a dual vertex).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bottleneck import linalg


# `project` keeps up to this many float64 row blocks of A_K (linalg.host_rows:
# ~8 MiB each) for its refinement's residuals, which would otherwise gather
# and widen them again for each residual (a wider support is gathered
# again).
KEPT_BLOCKS = 2


def vertex(a, subset, y, x):
  """The LP vertex whose active rows are the d + 1 - m largest other logits
  at x: solves A_S x_v = y, a_j . x_v = t_v (j in J) exactly in float64.

  Returns x_v, or None if that system is singular (degenerate guesses, or
  rows of the matrix that coincide).
  """
  system, rhs, _ = _basis_system(a, subset, y, x)
  d = system.shape[0] - 1
  try:
    solution = np.linalg.solve(system, rhs)
  except np.linalg.LinAlgError:
    return None
  return solution[:d] if np.all(np.isfinite(solution)) else None


def _basis_system(a, subset, y, x):
  """The (d + 1) x (d + 1) system of the basis {S, J}, J = the d + 1 - m
  rows of largest logit at x: [A_S 0; A_J -1] [x_v; t_v] = [y; 0]. Returns
  (system, rhs, J)."""
  rank_by = a
  a = getattr(a, "a", a)  # A matrix or facts.MatrixFacts.
  subset = np.asarray(subset)
  d, m = a.shape[1], subset.size
  rows = _basis_rows(rank_by, subset, x, d + 1 - m)
  system = np.zeros((d + 1, d + 1))
  system[:m, :d], system[m:, :d], system[m:, d] = a[subset], a[rows], -1.0
  rhs = np.zeros(d + 1)
  rhs[:m] = y
  return system, rhs, rows


def _basis_rows(a, subset, x, k: int):
  """The k rows outside S of largest logit at x (a ranking: `scores`)."""
  logits = scores(a, x)
  logits[subset] = -np.inf
  return np.argpartition(-logits, k - 1)[:k]


def scores(a, x) -> np.ndarray:
  """A x to rank rows by: MatrixFacts.scores (A's own precision), or
  `matvec` for a plain matrix."""
  return a.scores(x) if hasattr(a, "scores") else matvec(a, x)


def matvec(a, x) -> np.ndarray:
  """A x in float64 without a float64 copy of a float32 A
  (linalg.by_float64_blocks; a float64 A is used as it is)."""
  x = np.asarray(x, np.float64)
  if a.dtype == np.float64:
    return a @ x
  return np.concatenate(linalg.by_float64_blocks(lambda rows: rows @ x, a))


def basis(a, subset, y, x):
  """(x_v, mu) of the basis {S, J}, J = the d + 1 - m rows of largest
  logit at x: the primal vertex A_S x_v = y, a_j x_v = t_v (j in J) and the
  dual point A_S^T lam = A_J^T mu_J, sum mu_J = 1 (mu as an [N] vector,
  None unless mu_J >= 0), one LU for both. None, None if singular."""
  import scipy.linalg  # pylint: disable=g-import-not-at-top
  system, rhs, rows = _basis_system(a, subset, y, x)
  d, m = system.shape[0] - 1, np.asarray(subset).size
  try:
    lu = scipy.linalg.lu_factor(system, check_finite=False)
  except (ValueError, np.linalg.LinAlgError):
    return None, None
  if not np.all(np.isfinite(lu[0])) or np.min(np.abs(np.diag(lu[0]))) == 0:
    return None, None
  primal = scipy.linalg.lu_solve(lu, rhs, check_finite=False)
  # Dual: system^T [lam; -mu_J] = (0_d, -1): rows d of the transposed
  # system are A_S^T lam + A_J^T (-mu_J) = 0 and -sum(-mu_J) ... = 1.
  e = np.zeros(d + 1)
  e[d] = 1.0
  dual_sol = scipy.linalg.lu_solve(lu, e, trans=1, check_finite=False)
  mu_j = -dual_sol[m:]
  mu = None
  if np.all(np.isfinite(mu_j)) and np.all(mu_j >= 0) and mu_j.sum() > 0:
    mu = np.zeros(getattr(a, "a", a).shape[0])
    mu[rows] = mu_j / mu_j.sum()
  x_v = primal[:d] if np.all(np.isfinite(primal)) else None
  return x_v, mu


def null_coords(reflectors, c_dxk, dtype=np.float64) -> np.ndarray:
  """Z^T C [d - m, k] for Z = the last d - m columns of the Q whose
  Householder form (reflectors, tau) scipy.linalg.qr(A_S^T, mode='raw')
  gives (MatrixFacts.householder): an orthonormal basis of null(A_S),
  applied by LAPACK's ormqr without forming Q (several times faster than
  forming Z and multiplying), in
  `dtype` (float32: sormqr on a rounded copy of the reflectors)."""
  from scipy.linalg import lapack  # pylint: disable=g-import-not-at-top
  qr, tau = (np.asarray(r, dtype, order="F") for r in reflectors)
  c = np.array(c_dxk, dtype, order="F")  # ormqr overwrites its copy.
  ormqr = lapack.sormqr if dtype == np.float32 else lapack.dormqr
  out, _, info = ormqr("L", "T", qr, tau, c, lwork=64 * max(1, c.shape[1]),
                       overwrite_c=True)
  if info != 0:
    raise np.linalg.LinAlgError(f"ormqr failed (info {info})")
  return out[tau.size:]


class Projection(NamedTuple):
  """What `project` returns: the multipliers and how the projection went."""
  mu: np.ndarray  # [N], >= 0, zero off the kept support.
  collapsed: bool  # The support fell to d + 1 - m rows or fewer (or the
  # Gram lost definiteness): too narrow to hold a dual vertex.
  value: float  # y^T lam of the first, signed correction (nan without y):
  # where the dual objective sits near mu, before any row was dropped.


def dual(a, subset, mu, x=None, support_factor: float = 2.0, *,
         rounds: int = 30, dtype=np.float32) -> np.ndarray:
  """`project`'s multipliers alone."""
  return project(a, subset, mu, x, support_factor, rounds=rounds,
                 dtype=dtype).mu


def project(a, subset, mu, x=None, support_factor: float = 2.0, *,
            rounds: int = 30, y=None, dtype=np.float32) -> Projection:  # pylint: disable=too-many-locals
  """Moves mu so that A_R^T mu lies in the row space of A_S (to ~1e-15).

  Projects mu onto {mu_K >= 0, sum mu_K = 1, P_perp A_K^T mu_K = 0} by an
  active-set loop: minimum-norm correction of mu_K, drop the entries that
  turn negative, repeat from the original mu (staying close to mu keeps its
  dual bound). A dual vertex has d - m + 1 active rows, so the support K
  holds support_factor * (d - m + 1) rows: those where mu > 0, filled up with
  the rows of largest logit at `x` (the solver's best primal point, whose
  active rows carry the optimal multipliers). The constraints are written
  in null-space coordinates, B = [Z^T A_K^T; 1^T] with Z an orthonormal
  basis of null(A_S): (d - m + 1) rows of full rank, so their Gram matrix
  is positive definite; it is formed once and downdated as rows leave K.

  With y, `value` is the dual objective of the first (signed) correction:
  its A_K^T mu lies in the row space of A_S, so y^T lam = mu^T A_K x_par
  for the row-space point x_par (A_S x_par = y). Not a bound (mu may be
  negative), but where a wider support could reach (verdicts.Policy).

  `dtype`: the precision of B, its Gram and the corrections. float32 (the
  default) leaves B mu = e to ~1e-7 instead of ~1e-15; nothing here is
  trusted, the global certificate's float64 enclosure absorbs that, and on
  a CPU it nearly halves the time of the products and factorizations. The
  result is refined in float64 (the residual of
  B mu = e from A_K^T mu, B never formed in float64) to the float64 path's
  dual value. Beside a GPU (MatrixFacts.device) the loop runs there in
  float64 (lp.device_checks.DeviceA.project) for supports its compiled
  shape holds.
  """
  import scipy.linalg  # pylint: disable=g-import-not-at-top
  facts = a if hasattr(a, "qr") else None
  a = getattr(a, "a", a)  # A matrix or facts.MatrixFacts.
  subset = np.asarray(subset)
  n, d = a.shape
  mu0 = np.clip(np.asarray(mu, np.float64), 0.0, None)
  mu0[subset] = 0.0
  k = min(n - subset.size, int(support_factor * (d - subset.size + 1)))
  rank = mu0.copy()
  if x is not None:  # Fill with active rows: below every positive mu.
    logits = scores(facts if facts is not None else a, x)
    logits[subset] = -np.inf
    order = np.argsort(-logits)
    rank[order] = np.where(mu0[order] > 0, mu0[order], 0) - 1.0 - np.arange(
        n) / n
    rank[subset] = -np.inf
  support = np.argsort(-rank)[:k]
  device = getattr(facts, "device", None)
  if device is not None and device.fits(subset.size, k):
    on_device = device.project(subset, support, mu0[support], None if y is
                               None else facts.rowspace(subset, y)[0], rounds)
    if on_device is not None:
      out = np.zeros(n)
      out[support] = on_device[0]
      return Projection(out, *on_device[1:])
  reflectors = facts.householder(subset) if facts is not None else (
      scipy.linalg.qr(a[subset].astype(np.float64).T, mode="raw")[0])
  x_par = None if y is None else (
      facts.rowspace(subset, y)[0] if facts is not None else
      np.linalg.lstsq(a[subset].astype(np.float64), np.asarray(y, np.float64),
                      rcond=None)[0])
  b = np.ones((d - subset.size + 1, support.size), dtype)
  par = np.zeros(support.size)  # A_K x_par, for `value`.
  step = linalg.host_rows(d)  # Z^T A_K^T by row blocks of A_K (a wide K at
  starts = range(0, support.size, step)  # d = 640: no 48 MB float64 copy).
  kept = {} if len(starts) <= KEPT_BLOCKS else None  # For `refine`.

  def rows64(i):
    if kept is not None and i in kept:
      return kept[i]
    rows = a[support[i:i + step]].astype(np.float64)
    if kept is not None:
      kept[i] = rows
    return rows

  for i in starts:
    rows = rows64(i)
    b[:-1, i:i + step] = null_coords(reflectors, rows.T, dtype)
    if x_par is not None:
      par[i:i + step] = rows @ x_par
  gram = b @ b.T
  target = np.zeros(b.shape[0])
  target[-1] = 1.0
  keep = np.ones(support.size, bool)
  value, collapsed = float("nan"), False
  mu0_k = mu0[support]

  def refine(mu_k, solve, steps):  # Mixed-precision iterative refinement:
    for _ in range(steps if dtype != np.float64 else 0):  # the residual of
      full = np.zeros(keep.size)  # B mu = e in float64 (B never formed
      full[keep] = mu_k  # in float64), corrected through the dtype factor.
      v = sum(full[i:i + step] @ rows64(i) for i in starts)
      r = target - np.append(null_coords(reflectors, v[:, None])[:, 0],
                             full.sum())
      mu_k = mu_k + (b.T @ solve(r.astype(dtype)))[keep]
    return mu_k

  for round_ in range(rounds):
    # Minimum-norm correction b^T (b b^T)^{-1} r via the (d + 1)^2 Gram
    # (products with all of b, masked: no copy of its kept columns).
    r = target.astype(dtype) - b @ np.where(keep, mu0_k, 0.0).astype(dtype)
    try:
      factor = scipy.linalg.cho_factor(gram, check_finite=False)
      solve = lambda rhs, f=factor: scipy.linalg.cho_solve(f, rhs,
                                                           check_finite=False)
      corr = (b.T @ solve(r))[keep]
    except (np.linalg.LinAlgError, ValueError):
      collapsed, solve = True, None  # The kept rows no longer span null(A_S).
      corr = np.linalg.lstsq(b[:, keep], r, rcond=None)[0]
    mu_k = mu0_k[keep] + corr
    if round_ == 0 and x_par is not None:  # Every row still kept.
      value = float((refine(mu_k, solve, 1) if solve else mu_k) @ par)
    if np.all(mu_k >= 0) or keep.sum() <= b.shape[0]:
      collapsed |= not np.all(mu_k >= 0)
      if solve is not None:
        mu_k = refine(mu_k, solve, 2)
      break
    drop = np.flatnonzero(keep)[mu_k <= 0]
    gram = gram - b[:, drop] @ b[:, drop].T  # Rows leave K: downdate.
    keep[drop] = False
  out = np.zeros(n)
  out[support[keep]] = np.clip(mu_k, 0.0, None)
  return Projection(out, bool(collapsed), value)
