"""Exact reference for the top-m LP: HiGHS through highspy.

Solves  min t  s.t.  A_S x = y_S,  a_j . x - t <= 0 (j not in S)  in float64
and returns t*, x* and the multipliers mu* (HiGHS row duals, sign-flipped),
which `bottleneck.lp.certificates` checks like any other certificate.

Settings that are fast on these dense problems (presolve dominates the
time there): interior point without presolve, crossover on for a vertex
(clean duals). `method="rowgen"` solves on S plus the rows with the largest
row-space logits, adds violated rows and repeats: exact (the final
reduced LP has no violated row, and its multipliers are valid for the full
problem) and several times faster than the full LP.
"""

from __future__ import annotations

import time

import highspy
import numpy as np

from bottleneck import checks


def _solve_rows(a, subset, y, rows, solver: str):
  """HiGHS on equality rows `subset` and inequality rows `rows`."""
  d = a.shape[1]
  inf = highspy.kHighsInf
  m, k = subset.size, rows.size
  mat = np.zeros((m + k, d + 1))
  mat[:m, :d] = a[subset]
  mat[m:, :d] = a[rows]
  mat[m:, d] = -1.0
  lp = highspy.HighsLp()
  lp.num_col_ = d + 1
  lp.num_row_ = m + k
  lp.col_cost_ = np.concatenate([np.zeros(d), [1.0]])
  lp.col_lower_ = np.full(d + 1, -inf)
  lp.col_upper_ = np.full(d + 1, inf)
  lp.row_lower_ = np.concatenate([y, np.full(k, -inf)])
  lp.row_upper_ = np.concatenate([y, np.zeros(k)])
  lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
  lp.a_matrix_.start_ = np.arange(0, (m + k) * (d + 1) + 1, d + 1,
                                  dtype=np.int32)
  lp.a_matrix_.index_ = np.tile(np.arange(d + 1, dtype=np.int32), m + k)
  lp.a_matrix_.value_ = mat.ravel()
  h = highspy.Highs()
  h.setOptionValue("output_flag", False)
  h.setOptionValue("presolve", "off")
  h.setOptionValue("solver", solver)
  h.setOptionValue("run_crossover", "on")
  h.passModel(lp)
  h.run()
  status = h.modelStatusToString(h.getModelStatus())
  if status == "Unbounded":  # A ray (v, tau): A_S v = 0, a_j . v <= tau < 0.
    _, has_ray, ray = h.getPrimalRay()
    if not has_ray and solver != "simplex":  # The simplex method has rays.
      return _solve_rows(a, subset, y, rows, "simplex")
    ray = np.asarray(ray) if has_ray else None
    return status, None if ray is None else ray[:d], (
        np.nan if ray is None else ray[d]), None
  sol = h.getSolution()
  col = np.asarray(sol.col_value)
  dual = np.asarray(sol.row_dual)
  return status, col[:d], col[d], -dual[m:]


def solve(a, subset, y, method: str = "rowgen", solver: str = "ipm",
          max_rounds: int = 50, start_x=None) -> dict:
  """t*, x*, mu* (length N, zero on S) of the top-m LP, and timing.

  An unbounded LP (t* = -inf; trained heads have them) comes back with
  status 'Unbounded' and `ray`: HiGHS's ray of the reduced LP once no row
  of the whole LP violates it (rows it violates are added, as for x*), for
  `certificates.check_unbounded` to prove.

  rowgen starts from the 4d rows of largest row-space logit (fewer rows than
  variables leave the reduced LP unbounded), doubles them while the reduced
  LP is unbounded, then adds violated rows until none is left. `start_x`: an
  embedding [d] (e.g. another solver's optimum) whose largest logits give
  the first rows instead (on Gemma 3's band one round instead of many);
  the answer is still the whole LP's, since it stops only
  once no row is violated.
  """
  checks.one_of("method", method, ("rowgen", "full"))
  a = np.asarray(a, np.float64)
  n, d = a.shape
  subset = checks.subset_indices("subset", subset, n)
  y = np.asarray(y, np.float64)
  rest = np.setdiff1d(np.arange(n), subset)
  start = time.perf_counter()
  if method == "full":
    order, k = rest, rest.size
  else:  # Rows most likely to bind: largest logits of the row-space point
    a_s = a[subset]  # (or of start_x).
    point = a_s.T @ np.linalg.solve(a_s @ a_s.T, y) if start_x is None else (
        checks.finite_array("start_x", start_x, ndim=1))
    if point.shape != (d,):
      raise ValueError(f"`start_x` must have d = {d} entries; got "
                       f"{point.shape[0]}.")
    order = rest[np.argsort(-(a[rest] @ point))]
    k = min(rest.size, 4 * d)
  rows = order[:k]
  status, t, x, mu_rows = "not run", np.nan, None, None
  ray = None
  for rounds in range(1, max_rounds + 1):
    status, x, t, mu_rows = _solve_rows(a, subset, y, rows, solver)
    if status == "Unbounded":
      if x is not None:  # Rows the reduced LP's ray (x, t) violates.
        violated = np.setdiff1d(rest[a[rest] @ x > t], rows)
        if violated.size == 0:  # A ray of the whole LP: t* = -inf.
          ray, x = x, None
          break
        rows = np.concatenate([rows, violated[np.argsort(
            -(a[violated] @ x))[:max(d, 64)]]])
        continue
      if rows.size < rest.size:
        k = min(rest.size, 2 * k)
        rows = np.union1d(rows, order[:k])
        continue
    if status != "Optimal":
      break
    violated = np.setdiff1d(rest[a[rest] @ x > t + 1e-9 * max(1.0, abs(t))],
                            rows)
    if violated.size == 0:
      break
    worst = violated[np.argsort(-(a[violated] @ x))[:max(d, 64)]]
    rows = np.concatenate([rows, worst])
  mu = np.zeros(n)
  if mu_rows is not None:
    mu[rows] = mu_rows
  return {"status": status, "t": -np.inf if ray is not None else float(t),
          "x": x, "mu": mu, "ray": ray,
          "rows": int(rows.size), "rounds": rounds,
          "seconds": time.perf_counter() - start}
