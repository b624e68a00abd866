"""Float64 checks of top-m LP verdicts: nothing from the solver is trusted.

For an OPM A, a token set S with targets y_S and a threshold thr (1 for the
top-m question, 1 - eps for prescribed probabilities):

FEASIBLE certificate: an embedding x. The check projects x onto
  {A_S x = y_S} in float64, computes every logit with a rigorous rounding
  bound (|fl(a.x) - a.x| <= gamma_d sum_k |a_k x_k|, Higham Thm 3.1) and
  accepts iff every other logit is provably < thr. For prescribed
  probabilities it also checks softmax(s A x): the ratios on S and the mass
  off S (< delta).

INFEASIBLE certificate: multipliers mu >= 0 on the other tokens. For every
  x with A_S x = y_S, writing x = x_par + x_perp (x_par the row-space
  solution, x_perp in the null space of A_S) and v = A_R^T mu / sum(mu),

    max_{j not in S} a_j . x  >=  v . x  =  v . x_par + (P_perp v) . x_perp
                              >=  v . x_par - |P_perp v| |x - x_par|.

  So no embedding within radius R of x_par reaches the threshold when
  v . x_par - R |P_perp v| >= thr. An exact Farkas certificate needs
  P_perp v = 0, which floating point cannot represent; the certificate
  instead states the largest radius R_cert it rules out (with rounding
  bounds) and is accepted iff R_cert >= radius_factor * |x_par|.
  `polish.dual` first moves mu (least squares on its support) to make
  P_perp v tiny, which typically makes R_cert astronomically large.

Which checks a solver's nomination gets, and in what order, before a
verdict is reported: `bottleneck.lp.verdicts`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bottleneck import prescribed
from bottleneck.lp.enclosure import U as _U, enclose as _enclose
from bottleneck.lp.enclosure import flush_bound as _flush_bound
from bottleneck.lp.enclosure import gamma as _gamma, upper as _upper
from bottleneck.lp.facts import MatrixFacts, as_facts


class DualProof(NamedTuple):
  """An enclosed global INFEASIBLE certificate of one subset S."""
  subset: np.ndarray  # [m] S, in the order of lam.
  support: np.ndarray  # [k] K, the rows of R carrying mu*.
  lam: np.ndarray  # [m] the enclosure's center lam~.
  lam_err: np.ndarray  # [m] |lam* - lam~| <= lam_err entrywise.
  mu: np.ndarray  # [k] its center mu~ on K.
  mu_err: np.ndarray  # [k] |mu* - mu~| <= mu_err entrywise.


def check_feasible(a, subset, y, x, threshold: float) -> dict:
  """Verifies a FEASIBLE certificate; returns the evidence.

  `a` is the matrix or its MatrixFacts. Rounding bound per logit:
  gamma_d sum_k |a_k x_k| <= gamma_d |a| |x| (Cauchy-Schwarz).
  """
  facts = as_facts(a)
  subset = np.asarray(subset)
  y = np.asarray(y, np.float64)
  a_s = facts.rows(subset)
  x = projected(facts, subset, y, x)
  rows = _rest_candidates(facts, subset, x)
  norm_x = np.linalg.norm(x)
  logits = facts.logits64(x, rows)
  t_upper = float(np.max(logits + _gamma(facts.a.shape[1]) *
                         facts.row_norms[rows] * norm_x))
  logits_s = a_s @ x
  eq_residual = float(np.max(np.abs(logits_s - y)))
  s_lower = float(np.min(logits_s - _gamma(facts.a.shape[1]) *
                         facts.row_norms[subset] * norm_x))
  ok = t_upper < threshold and s_lower > t_upper
  return {"ok": bool(ok), "t_upper": t_upper,
          "margin": float(threshold - np.max(logits)),
          "top_m_margin": float(np.min(logits_s) - np.max(logits)),
          "equality_residual": eq_residual, "x": x}


def projected(a, subset, y, x) -> np.ndarray:
  """x moved onto A_S x = y (float64, minimum-norm correction): the point
  `check_feasible` checks (deterministic: its scores may be primed)."""
  facts = as_facts(a)
  x = np.asarray(x, np.float64)
  return x + facts.rowspace(subset, np.asarray(y, np.float64) -
                            facts.rows(subset) @ x)[0]


def _score_bounds(facts: MatrixFacts, x):
  """(float32 A x as float64, its rigorous rounding bound per row): for a
  float32 A, |fl32(a_j . fl32(x)) - a_j . x| <= (gamma32_d (1 + u32) +
  u32) |a_j| |x| (Higham Thm 3.1, any summation order; doubled), plus
  underflow: 1e-30, or what flushing subnormals could cost (an accelerator
  that scores, enclosure.flush_bound) if larger."""
  u32 = float(np.finfo(np.float32).eps) / 2
  d = facts.a.shape[1]
  gamma32 = _gamma(d, u32)
  return facts.scores(x).astype(np.float64), 2.0 * (
      gamma32 * (1 + u32) + u32) * facts.row_norms * float(
          np.linalg.norm(x)) + max(1e-30, _flush_bound(x, d))


def _rest_candidates(facts: MatrixFacts, subset, x) -> np.ndarray:
  """The rows outside S that may hold the largest logit a_j . x: all of
  them, or for a float32 A the rows whose float32 logit (MatrixFacts.scores,
  half the bytes of a float64 pass) is within its rounding bound of the
  largest. |fl32(a_j . fl32(x)) - a_j . x| <= (gamma32_d (1 + u32) + u32)
  |a_j| |x| (Higham Thm 3.1, any summation order; doubled, plus 1e-30 for
  underflow): a row outside the returned set has an exact logit below some
  returned row's, so the float64 maximum over the set is the maximum."""
  rest = np.ones(facts.a.shape[0], bool)
  rest[subset] = False
  if facts.source.dtype != np.float32:
    return np.flatnonzero(rest)
  approx, err = _score_bounds(facts, x)
  approx[subset] = -np.inf
  floor = np.max(approx - err)  # <= the exact largest logit outside S.
  if not np.isfinite(floor):  # Overflow or NaN in x: every row.
    return np.flatnonzero(rest)
  return np.flatnonzero(rest & (approx + err >= floor))


def check_probabilities(a, subset, x, p, *, scale: float, delta: float,
                        ratio_rtol: float = 1e-6) -> dict:
  """softmax(scale * A x): ratios on S equal p's, mass off S < delta.

  Evaluated at the embedding itself (no use of A_S x = y, so the equality
  residual is inside the check). Rounding: every logit is within
  E = scale gamma_d |a_j| |x| + (a few ulps of the largest logit, for exp
  and logsumexp) of its exact value, so exact ratios are within a factor
  exp(2E) of the computed ones and the exact mass off S within exp(2E) of
  the computed mass; `ok` uses those bounds.
  """
  facts = as_facts(a)
  x = np.asarray(x, np.float64)
  logits = scale * _logits_or_upper_bounds(facts, subset, x, scale)
  ratio_err, rest_mass = prescribed.softmax_on_subset(logits, subset, p)
  big = float(np.max(np.abs(logits)))
  err = (scale * _gamma(facts.a.shape[1]) * float(np.max(facts.row_norms)) *
         float(np.linalg.norm(x)) + 16 * _U * (big + 1.0) * np.log(
             facts.a.shape[0] + 1.0))
  grow = float(np.exp(2.0 * err))
  ratio_bound = (1.0 + ratio_err) * grow - 1.0
  mass_bound = rest_mass * grow * (1.0 + 1e-12)
  return {"ok": bool(ratio_bound <= ratio_rtol and mass_bound < delta),
          "ratio_rel_error": ratio_err, "rest_mass": rest_mass,
          "ratio_rel_error_bound": ratio_bound, "rest_mass_bound": mass_bound,
          "logit_rounding_bound": err}


def _logits_or_upper_bounds(facts: MatrixFacts, subset, x, scale: float,
                            far: float = 20.0) -> np.ndarray:
  """A x in float64, except (for a float32 A) on rows whose float32 upper
  bound is more than `far` / scale below the largest outside S: those get
  the bound itself (their exact value is below it). Raising logits off S
  only raises the mass off S and leaves the ratios on S alone, so the
  probability check stays a proof whatever `far` is; it only loosens the
  mass, by at most N e^-far (about e^(scale * rounding)) times the largest
  term off S: 1e-4 of the mass off S at N = 50257. One float32 pass
  instead of a float64 one (the float32 scores are usually those
  check_feasible just ranked), and float64 rows only near the top
  (paper-size Figure 1's probs problem at m = 70-90: a median 545 rows,
  1590 with far = 40)."""
  if facts.source.dtype != np.float32:
    return facts.logits64(x)
  approx, err = _score_bounds(facts, x)
  upper = approx + err
  rest = upper.copy()
  rest[subset] = -np.inf
  near = upper >= np.max(rest) - far / scale
  near[subset] = True
  rows = np.flatnonzero(near)
  upper[rows] = facts.logits64(x, rows)
  return upper


def check_infeasible(a, subset, y, mu, threshold: float, *,
                     radius_factor: float = 1e3) -> dict:
  """Verifies an INFEASIBLE certificate (multipliers mu on the other rows).

  `a` is the matrix or its MatrixFacts.
  """
  facts = as_facts(a)
  subset = np.asarray(subset)
  y = np.asarray(y, np.float64)
  mu = np.asarray(mu, np.float64)
  n, d = facts.a.shape
  if np.any(mu < 0) or mu[subset].any() or mu.sum() <= 0:
    return {"ok": False, "reason": "mu must be >= 0, zero on S, not all 0",
            "t_lower": -np.inf, "radius": 0.0}
  mu = mu / mu.sum()
  a_s = facts.rows(subset)
  x_par, q = facts.rowspace(subset, y)
  v = facts.rmatvec(mu)
  v_perp = v - q @ (q.T @ v)
  # Rounding: v has error <= gamma_n |A|^T mu <= gamma_n col_absmax
  # (sum mu = 1); the projection adds at most ~d u cond(A_S) |v|
  # (backward-stable QR); a factor 10 of safety.
  sv = np.linalg.svd(a_s, compute_uv=False)
  cond = sv[0] / sv[-1]
  err_v = _gamma(n) * np.linalg.norm(facts.col_absmax)
  err_perp = 10.0 * (err_v + d * _U * cond * np.linalg.norm(v))
  perp = np.linalg.norm(v_perp) + err_perp
  gap = float(v @ x_par) - threshold - 10.0 * (
      err_v * np.linalg.norm(x_par) + d * _U * abs(v) @ abs(x_par))
  norm_par = float(np.linalg.norm(x_par))
  radius = gap / perp if gap > 0 else 0.0
  need = radius_factor * norm_par
  return {"ok": bool(gap > 0 and radius >= need), "t_lower":
          float(v @ x_par - need * np.linalg.norm(v_perp)),
          "radius": float(radius), "radius_over_x_par": float(
              radius / norm_par) if norm_par > 0 else np.inf,
          "residual": float(np.linalg.norm(v_perp)),
          "margin": float(threshold - (v @ x_par))}


def check_infeasible_global(a, subset, y, mu, threshold: float,
                            drop: float = 1e-9, retries: int = 3) -> dict:
  """A global proof that no embedding makes S the top m below `threshold`.

  LP duality for (LP) min t s.t. A_S x = y, A_R x <= t: for any lam and any
  mu >= 0 with sum(mu) = 1 and A_S^T lam = A_R^T mu, every x with A_S x = y
  has max_{j in R} a_j . x >= mu^T A_R x = lam^T A_S x = y^T lam. So
  y^T lam >= threshold proves t* >= threshold, for all x (no ball).

  The equality cannot hold in floats, so existence is verified instead:
  with K the support of mu (entries below drop * max dropped), z~ = (lam~,
  mu~_K) and M z = (A_S^T lam - A_K^T mu_K, sum mu_K) =: b = (0, 1), the
  exact solution z* = z~ + M^T w*, (M M^T) w* = b - M z~, exists and obeys
  |z* - z~|_i <= (sum_j |M_ji|) |w*|_inf with |w*|_inf <= |R|_inf
  |b - M z~|_inf / (1 - alpha), for any float R ~ (M M^T)^{-1} and a
  rigorous alpha >= |I - R M M^T|_inf < 1 (Rump-style verification,
  `enclosure.enclose`, which first tries a shifted-Cholesky bound; every
  float product bounded by gamma_n |.| |.|). Accepted iff the enclosure has
  mu* >= 0 and y^T lam* >= threshold.
  """
  facts = as_facts(a)
  subset = np.asarray(subset)
  y = np.asarray(y, np.float64)
  mu = np.asarray(mu, np.float64)
  fail = lambda reason: {"ok": False, "reason": reason, "t_lower": -np.inf}
  if np.any(mu < 0) or mu[subset].any() or mu.sum() <= 0:
    return fail("mu must be >= 0, zero on S, not all 0")
  support = np.flatnonzero(mu > drop * mu.max())
  for _ in range(retries):
    cert = _verify_dual(facts, subset, y, mu, support=support,
                        threshold=threshold)
    # Entries of mu inside their own enclosure radius are noise the solver
    # left (a vertex has d - m + 1 of them): drop them and verify again.
    tiny = cert.pop("tiny", None)
    if cert["ok"] or tiny is None or not tiny.any():
      return cert
    support = support[~tiny]
  return cert


def _verify_dual(facts: MatrixFacts, subset, y, mu, *, support, threshold):
  """check_infeasible_global on a fixed support K of mu."""
  a = facts.a
  d, m = a.shape[1], subset.size
  fail = lambda reason: {"ok": False, "reason": reason, "t_lower": -np.inf}
  if support.size + m < d + 1:
    return fail(f"support of mu ({support.size}) + m < d + 1: M M^T would be "
                "singular")
  # M = [[A_S^T, -A_K^T], [0, 1^T]] is (d + 1) x (m + |K|), exact entries,
  # written as its transpose's rows: A's rows are gathered and widened to
  # float64 once, in place (no float64 copies of A_S and A_K first).
  mu_k = mu[support] / mu[support].sum()
  b = np.zeros(d + 1)
  b[d] = 1.0
  enclosed = None
  if facts.device is not None and facts.device.fits(m, m + support.size):
    # The Gram and its factors on the accelerator.
    lam = facts.least_squares_t(subset, facts.device.rmatvec(support, mu_k))
    enclosed = facts.device.enclose_dual(subset, support, np.concatenate(
        [lam, mu_k]), b)
  if enclosed is None or isinstance(enclosed, str):
    m_t = np.empty((m + support.size, d + 1))
    m_t[:m, :d] = a[subset]
    np.negative(a[support], out=m_t[m:, :d])
    m_t[:m, d], m_t[m:, d] = 0.0, 1.0
    lam = facts.least_squares_t(subset, m_t[m:, :d].T @ -mu_k)  # Only z~:
    # the enclosure refines and proves what it is given.
    enclosed = _enclose(m_t.T, np.concatenate([lam, mu_k]), b)
  if isinstance(enclosed, str):
    return fail(enclosed)
  z, z_err, alpha, r = enclosed
  lam, mu_k = z[:m], z[m:]
  mu_lower = float(np.min(mu_k - z_err[m:]))
  value = float(y @ lam)
  value_lower = value - _upper(_gamma(m) * (np.abs(y) @ np.abs(lam)) +
                               np.abs(y) @ z_err[:m], m)
  ok = mu_lower >= 0.0 and value_lower >= threshold
  proof = DualProof(subset=np.array(subset), support=np.array(support),
                    lam=lam, lam_err=z_err[:m], mu=mu_k,
                    mu_err=z_err[m:]) if ok else None
  return {"ok": bool(ok), "kind": "global", "t_lower": value_lower,
          "proof": proof,
          "tiny": mu_k <= z_err[m:],
          "dual_value": value, "margin": float(threshold - value),
          "mu_lower": mu_lower, "alpha": alpha,
          "enclosure_radius": float(z_err.max()), "support": int(support.size),
          "residual": float(np.max(np.abs(r)))}


def check_twin_rows(a, subset, y, threshold: float) -> dict | None:
  """INFEASIBLE by identical rows: if row j outside S equals row i in S bit
  for bit, then a_j . x = a_i . x = y_i for every x with A_S x = y, so
  t* >= y_i; with y_i >= threshold no embedding makes S the strict top m.
  (The LP dual point lam = e_i, mu = e_j, exact.) None if no such pair."""
  facts = as_facts(a)
  subset = np.asarray(subset)
  twins = facts.twins
  groups = twins[subset]
  if not (groups >= 0).any():
    return None
  y = np.asarray(y, np.float64)
  outside = np.ones(len(twins), bool)
  outside[subset] = False
  for k in np.flatnonzero(groups >= 0):
    rows = np.flatnonzero((twins == groups[k]) & outside)
    if rows.size and y[k] >= threshold:
      return {"ok": True, "kind": "twin_rows", "t_lower": float(y[k]),
              "row_in_subset": int(subset[k]), "row_outside": int(rows[0]),
              "margin": float(y[k] - threshold)}
  return None


def check_unbounded(a, subset, x) -> dict:
  """t* = -inf (the LP is unbounded), proven by a ray.

  A direction v with A_S v = 0 and A_R v < 0 moves any embedding with
  A_S x = y so that every other logit falls without bound while the logits
  on S stay y_S: S is the top m with any margin (and prescribed
  probabilities on S hold with any delta). The candidate v~ is the part of
  `x` (the solver's last iterate: ADMM's iterates diverge along such a ray)
  orthogonal to the rows of A_S; the exact v* = v~ + A_S^T w* with
  A_S v* = 0 is enclosed (`enclosure.enclose`), and a_j . v* < 0 is checked for
  every j outside S with rounding bounds (|a_j| |v| via Cauchy-Schwarz).
  Trained heads with every row in one open half-space have such rays.
  """
  facts = as_facts(a)
  subset = np.asarray(subset)
  d = facts.a.shape[1]
  fail = lambda reason: {"ok": False, "kind": "ray", "reason": reason}
  a_s = facts.rows(subset)
  q, _ = facts.qr(subset)
  v = np.asarray(x, np.float64)
  v = v - q @ (q.T @ v)
  size = float(np.linalg.norm(v))
  if not (np.isfinite(size) and size > 0):
    return fail("no component outside the row space of A_S")
  enclosed = _enclose(a_s, v / size, np.zeros(subset.size))
  if isinstance(enclosed, str):
    return fail(enclosed)
  v, v_err, alpha, _ = enclosed
  v_norm = float(np.linalg.norm(v))
  slack = _upper(_gamma(d) * facts.row_norms * v_norm +
                 facts.row_norms * float(np.linalg.norm(v_err)), d)
  bound = facts.logits64(v) + slack  # (Any summation order: gamma_d.)
  bound[subset] = -np.inf
  worst = float(bound.max())
  return {"ok": bool(worst < 0.0), "kind": "ray", "ray_max_other": worst,
          "alpha": alpha, "ray": v, "reason": None if worst < 0.0 else
          f"some row outside S has a_j . v >= {worst:.3g}"}
