"""Nested subsets along m: verdicts one member of a chain proves for another.

A chain is a list of instances whose subsets are nested, S_1 ⊂ S_2 ⊂ ...
(`topm.sweeps(..., nested=True)`: the first m tokens of one random
permutation per trial, so each S_m is still a uniform random m-subset).
Two facts let one certificate decide other members without an LP:

INFEASIBLE goes up. The global certificate of S (certificates.
  check_infeasible_global) encloses an exact (lam*, mu*) with mu* >= 0 on a
  support K, sum mu* = 1, A_S^T lam* = A_K^T mu* and y^T lam* >= thr. For
  S' ⊃ S, the rows H = K ∩ S' move to the left side: with c = sum_H mu*,
  lam' = (lam*, -mu*_H) / (1 - c) on S ∪ H (0 on the rest of S') and
  mu' = mu*_{K-H} / (1 - c) satisfy A_{S'}^T lam' = A_{K-H}^T mu', mu' >= 0,
  sum mu' = 1, so every x with A_{S'} x = y' has max_{j not in S'} a_j.x
  >= y'^T lam' = (y'_S^T lam* - y'_H^T mu*_H) / (1 - c), which is >= thr iff
  g = y'_S^T lam* - sum_H (y'_h - thr) mu*_h - thr >= 0. Bounding g from
  the enclosure (lam~, mu~ and their radii) is O(m + |K|):
  `inherit_infeasible`. With equal targets (the logits problem, y' = thr =
  1) the H terms vanish: an INFEASIBLE S makes every S' ⊃ S INFEASIBLE.

FEASIBLE goes down. If x' certifies S' (A_{S'} x' = y', other logits <
  thr), then for S ⊂ S' the point x = x' + A_{S'}^+ (target - A_{S'} x')
  with target = y on S and a value below thr on S' minus S usually
  certifies S (the correction is small: its largest effect on another
  logit is about |correction|.max|a_j|). `feasible_candidate` builds x;
  the caller checks it in float64 like any other embedding. Where the
  correction lifts other rows over the threshold (prescribed
  probabilities: the children's targets on S move with their own
  normalisation and scale, by more than a band parent's slack), one
  repair holds those rows where x' has them (`hold`: the correction is
  also orthogonal to them) and the result is checked again.
  Without a pass over A (`inherit_feasible`, for targets alone: no
  probabilities to check): with t' >= every a_j . x' off S' (the parent's
  certified bound) and the correction x - x' scaled so that
  max_j |a_j| |x - x'| <= (thr - t') / 2, every row off S' stays below
  (thr + t') / 2 by Cauchy-Schwarz, and the rows of S' minus S are
  computed. So with equal targets (the logits problem) every subset of a
  selectable set is selectable. Not for prescribed probabilities: there
  the dropped rows start at targets above the threshold (min ybar = 1 >
  1 - eps), and a correction that moves them below it is too large for
  this bound (`feasible_candidate` and a pass over A instead).

Which member of a chain runs next, and which are settled from the others'
verdicts, is `bottleneck.lp.chain_feed`.
"""

from __future__ import annotations

import numpy as np

from bottleneck.lp import certificates
from bottleneck.lp.enclosure import gamma as _gamma, upper as _upper


def positions(small, large) -> np.ndarray | None:
  """Where each entry of `small` sits in `large` (None unless small ⊂
  large)."""
  small, large = np.asarray(small), np.asarray(large)
  order = np.argsort(large, kind="stable")
  at = np.minimum(np.searchsorted(large, small, sorter=order), large.size - 1)
  pos = order[at]
  return pos if np.array_equal(large[pos], small) else None


def inherit_infeasible(proof: certificates.DualProof, subset, y, threshold: float
                       ) -> dict | None:
  """The certificate `proof` of S carried to S' ⊃ S (module docstring):
  a 'global' certificate dict with its proven t_lower (thr + g's lower
  bound: y'^T lam' - thr = g / (1 - c) >= g), or None when S is not
  inside S' or g is not proven >= 0."""
  subset, y = np.asarray(subset), np.asarray(y, np.float64)
  pos = positions(proof.subset, subset)
  if pos is None:
    return None
  hit = np.flatnonzero(np.isin(proof.support, subset))  # H, in K's order.
  y_s = y[pos]
  y_h = y[positions(proof.support[hit], subset)] - threshold
  mu_hi = proof.mu[hit] + proof.mu_err[hit]
  mu_lo = np.maximum(proof.mu[hit] - proof.mu_err[hit], 0.0)
  terms = np.concatenate([y_s * proof.lam, -np.abs(y_s) * proof.lam_err,
                          -np.maximum(y_h, 0.0) * mu_hi,
                          np.maximum(-y_h, 0.0) * mu_lo, [-threshold]])
  slack = _upper(_gamma(terms.size + 2) * np.abs(terms).sum(), terms.size)
  g = float(terms.sum()) - slack
  if not (g >= 0.0 and _upper(mu_hi.sum(), hit.size + 1) < 1.0):
    return None
  return {"ok": True, "kind": "global", "t_lower": threshold + g,
          "dual_value": float(y_s @ proof.lam), "margin": -g,
          "support": int(proof.support.size - hit.size),
          "inherited_from_m": int(proof.subset.size), "moved_rows": int(
              hit.size), "proof": None}


def inherit_feasible(facts, parent_subset, parent_x, *, parent_upper: float,
                     subset, y, threshold: float) -> dict | None:
  """A FEASIBLE certificate of S ⊂ S' from S''s (module docstring): a
  dict of kind 'inherited' with the embedding x (A_S x = y to rounding)
  and its proven `t_upper` (>= every exact a_j . x off S; `off_parent_upper`
  alone for the rows off S'), or None when S is not
  inside S' or the bound does not clear the threshold. `parent_x` is the
  parent's certified embedding (certificates.check_feasible's `x`) and
  `parent_upper` its bound on every a_j . x' off S'. No pass over A: the
  rows off S' are bounded through the parent's bound, the m' - m rows of
  S' minus S are computed with rounding bounds (gamma_d |a_j| |x|)."""
  parent_subset = np.asarray(parent_subset)
  pos = positions(subset, parent_subset)
  if pos is None or not parent_upper < threshold:
    return None
  out = np.ones(parent_subset.size, bool)
  out[pos] = False  # S' minus S.
  if not out.any():
    return None
  x_p = np.asarray(parent_x, np.float64)
  norms = facts.row_norms
  reach = _upper(float(norms.max()), facts.a.shape[1])  # >= max |a_j|.
  down = facts.rowspace(parent_subset, -out.astype(np.float64))[0]
  size = float(np.linalg.norm(down))
  if not (np.isfinite(size) and size > 0):
    return None
  x = x_p + (threshold - parent_upper) / (2.0 * reach * size) * down
  subset = np.asarray(subset)
  y = np.asarray(y, np.float64)
  a_s = facts.rows(subset)
  logits_s = a_s @ x
  residual = y - logits_s
  if np.max(np.abs(residual)) > 1e-12 * max(1.0, float(np.max(np.abs(y)))):
    x = x + facts.rowspace(subset, residual)[0]  # Onto A_S x = y (the
    # parent's equalities hold it already where its targets on S are y).
    logits_s = a_s @ x
  gamma_d = _gamma(facts.a.shape[1])
  norm_x = float(np.linalg.norm(x))
  off = parent_upper + _upper(reach * _upper(float(np.linalg.norm(x - x_p)),
                                             x.size), 1)
  off = float(np.nextafter(off, np.inf))  # >= every a_j . x off S'.
  dropped = parent_subset[out]
  logits = facts.rows(dropped) @ x
  t_upper = max(off, float(np.max(logits + _upper(
      gamma_d * norms[dropped] * norm_x, 1))))
  s_lower = float(np.min(logits_s - _upper(gamma_d * norms[subset] *
                                            norm_x, 1)))
  if not (t_upper < threshold and s_lower > t_upper):
    return None
  return {"ok": True, "kind": "inherited", "t_upper": t_upper,
          "margin": float(threshold - t_upper),
          "top_m_margin": float(s_lower - t_upper),
          "equality_residual": float(np.max(np.abs(logits_s - y))),
          "inherited_from_m": int(parent_subset.size),
          "off_parent_upper": off, "x": x}


def feasible_candidate(facts, parent_subset, parent_x, *,
                       parent_upper: float, subset, y, threshold: float,
                       hold=()) -> np.ndarray | None:
  """An embedding for S ⊂ S' from S''s certified one (module docstring):
  y on S, the midpoint of the parent's upper bound and the threshold on
  S' minus S, and the rows `hold` (outside S') kept where the parent's
  embedding has them (a repair: rows a first candidate lifted too high),
  or None if S is not inside S', the parent has no slack, or S' and
  `hold` are (nearly) dependent rows."""
  parent_subset = np.asarray(parent_subset)
  pos = positions(subset, parent_subset)
  if pos is None or not parent_upper < threshold:
    return None
  x = np.asarray(parent_x, np.float64)
  hold = np.asarray(hold, parent_subset.dtype)
  rows = np.concatenate([parent_subset, hold])
  a_rows = facts.rows(rows)
  now = a_rows @ x
  target = now.copy()  # `hold`: where they are.
  target[:parent_subset.size] = 0.5 * (parent_upper + threshold)
  target[pos] = np.asarray(y, np.float64)  # S' minus S: the midpoint.
  if not hold.size:
    return x + facts.rowspace(rows, target - now)[0]
  import scipy.linalg  # pylint: disable=g-import-not-at-top
  try:  # A one-off set of rows, not for MatrixFacts' cache: the
    # minimum-norm correction by its normal equations (a candidate,
    # checked in float64 after; an order of magnitude cheaper than a QR).
    factor = scipy.linalg.cho_factor(a_rows @ a_rows.T, check_finite=False)
  except (np.linalg.LinAlgError, ValueError):
    return None
  pivots = np.abs(np.diag(factor[0]))  # A row held twice (or a twin):
  if not pivots.min() > 1e-6 * pivots.max():  # a pivot ~1e-8 of the
    return None  # largest, the correction would be noise.
  return x + a_rows.T @ scipy.linalg.cho_solve(factor, target - now,
                                               check_finite=False)
