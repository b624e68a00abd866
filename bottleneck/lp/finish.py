"""An exact finish for slow LP instances: interior point on a working set.

In the transition band of a trained head (Gemma 3 at m = 60: t* within 1 %
of the threshold and hundreds of near-active rows) ADMM needs thousands of
iterations to prove either side. Its iterate x still names the rows that
matter, so the LP (seed 001, Section 6)

  minimise t   s.t.   A_S x = y_S,   a_j . x <= t  for j in W,       (LP_W)

restricted to the rows W of largest logit at x (and those carrying ADMM's
multipliers) is solved to a relative gap of 1e-9 by a dense primal-dual
interior point method (Mehrotra predictor-corrector; Nocedal & Wright,
Alg. 14.3) in the null-space coordinates of A_S, x = x_par + Z z. Row
generation then adds the rows of A that the solution violates (and drops
those farthest from active) and solves again, until none is left:
t*(LP_W) <= t* always, with equality once no row is violated.

A box |z|_inf <= B keeps (LP_W) bounded while W is too small to be. When
the solution sits on the box, a well-scaled homogeneous LP looks for a ray
of W (min tau s.t. G z <= tau, |z|_inf <= 1); rows the ray does not push
down join W, and a ray of the whole LP (t* = -inf) comes back as a point
far along it.

To decide rather than solve (`threshold`), the rounds stop as soon as one
settles the verdict: a round's duals bound t* from below (t*(LP_W) <= t*,
so t_W above the threshold proves INFEASIBLE already), and x_W bounds it
from above by its largest other logit over every row (below the threshold:
FEASIBLE). When W has a ray that is not one of the LP, the point x moves
along it to the minimum of its largest other logit (a line search, from
the best point yet): on Gemma 3's head at m = 60, the instances whose t*
is -inf were settled FEASIBLE so, 3-6 rounds in, where finding the LP's
own ray took more rounds than were allowed. Bounded instances skip the
last 2-4 rounds, which only move t_W in its sixth digit.

Beside an accelerator the interior point moves there once the host's
finishes have cost lp.placement.DEVICE_FINISH_AFTER seconds
(`Settings.on_device`, lp.ipm: the same iterates as one jitted float64
loop). Nothing here is
trusted: the caller proves t* <= upper at the returned x
(certificates.check_feasible / check_unbounded, every row) and t* >= lower
with the returned multipliers (certificates.check_infeasible_global).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg

from bottleneck.lp import mehrotra


@dataclasses.dataclass(frozen=True)
class Settings:
  rows_factor: float = 2.0  # |W| = rows_factor * (d + 1 - m) at the start.
  add_rows: int = 0  # Rows added per round at most (0: d; on Gemma 3's head
  # at m = 60, d rather than 4 d cut the finish by a third, same rounds).
  rounds: int = 12  # Row-generation rounds (d rows join per round).
  keep_rows: float = 2.0  # Rows kept between rounds, in units of |W| at
  # the start (0: all kept; fewer rows make each round cheaper).
  max_iters: int = 80  # Interior-point iterations per round.
  gap_tol: float = 1e-9  # Relative duality gap that stops a round.
  # Dual iterates kept at these relative gaps: a fully converged dual of a
  # degenerate vertex has inactive multipliers below the float64
  # certificate's enclosure radius; a slightly central one does not.
  dual_gaps: tuple[float, ...] = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4)
  box_factor: float = 1e4  # B = box_factor * max(1, |x - x_par|).
  on_device: bool = False  # The interior point on JAX's default device in
  # float64 (lp.ipm: the same iterates, one jitted loop) instead of numpy:
  # set beside an accelerator once the host's finishes have cost
  # lp.placement.DEVICE_FINISH_AFTER seconds (the host's normal equations
  # held Gemma 3's figure on the H200 of benchmarks/RESULTS.md).


def _interior(f, h, box, s: Settings, *, enough: float = -np.inf,
              box_exit: bool = False):
  """`_ipm` on the host, or lp.ipm's copy of it on the device."""
  if s.on_device:
    from bottleneck.lp import ipm  # pylint: disable=g-import-not-at-top
    return ipm.run(f, h, box, s, enough=enough, box_exit=box_exit)
  return _ipm(f, h, box, s, enough=enough, box_exit=box_exit)


def _ipm(f, h, box, s: Settings, *, enough: float = -np.inf,
         box_exit: bool = False):
  """min t over w = (z, t) s.t. f w <= h, |z|_inf <= box (inequality form,
  f = [G, -1]). Returns (w, duals, on_box, converged); duals: the first
  dual iterate (mu on the rows of f) at or below each of s.dual_gaps,
  tightest first. Stops early at a primal-feasible w with t < `enough`,
  and with `box_exit` once z has sat on the box with t still for 3
  iterations (W is too small to bound the LP: on Gemma 3's head at m = 60
  t settles on the box by the 20th iteration, and the IPM then spent the
  rest of its 80 there; a bounded LP_W leaves the box with t falling)."""
  k, n = f.shape
  q = np.zeros(n)
  q[-1] = 1.0
  # Start: z = 0, t above every row (s > 0), mu uniform (sum mu = 1).
  w = np.zeros(n)
  w[-1] = float(np.max(-h)) + 1.0
  sl = h - f @ w
  mu = np.full(k, 1.0 / k)
  nz = n - 1
  su, sl_box = box - w[:nz], box + w[:nz]  # Box slacks: z <= B, -z <= B.
  pu, pl = np.full(nz, 1e-3), np.full(nz, 1e-3)  # Their multipliers.
  converged, duals, pinned, t_before = False, {}, 0, np.inf
  for _ in range(s.max_iters):
    r_d = q + f.T @ mu
    r_d[:nz] += pu - pl
    r_p = f @ w + sl - h
    gap = sl @ mu + su @ pu + sl_box @ pl
    dual_value = -h @ mu - box * (pu.sum() + pl.sum())
    scale = max(1.0, abs(w[-1]))
    primal_ok = np.max(np.abs(r_p), initial=0) <= 1e-9 * scale
    feasible = primal_ok and np.max(np.abs(r_d)) <= 1e-9
    for level in s.dual_gaps:
      if feasible and level not in duals and abs(
          w[-1] - dual_value) <= level * scale:
        duals[level] = mu.copy()
    if feasible and abs(w[-1] - dual_value) <= s.gap_tol * scale:
      converged = True
      break
    if w[-1] < enough and primal_ok:
      break
    pinned = pinned + 1 if box_exit and abs(w[-1] - t_before) <= (
        1e-6 * scale) and np.max(np.abs(w[:nz]), initial=0) > 0.9 * box else 0
    if pinned >= 3:
      break
    t_before = w[-1]
    d_rows, d_u, d_l = mu / sl, pu / su, pl / sl_box
    root = np.sqrt(d_rows)[:, None] * f
    normal = scipy.linalg.blas.dsyrk(1.0, root, trans=1, lower=1)
    normal = np.tril(normal) + np.tril(normal, -1).T
    normal[np.arange(nz), np.arange(nz)] += d_u + d_l
    try:
      chol = scipy.linalg.cho_factor(normal + 1e-14 * np.trace(normal) / n *
                                     np.eye(n), check_finite=False)
    except np.linalg.LinAlgError:
      break
    m_gap = gap / (k + 2 * nz)

    def direction(rc_rows, rc_u, rc_l):
      # Rows: f dw + dsl = -r_p, sl dmu + mu dsl = -rc. Box rows likewise
      # with (z - B + su = 0) and (-z - B + sl_box = 0), exactly satisfied.
      rhs = -r_d - f.T @ ((-rc_rows + mu * r_p) / sl)
      rhs[:nz] -= (-rc_u) / su - (-rc_l) / sl_box
      dw = scipy.linalg.cho_solve(chol, rhs, check_finite=False)
      dsl = -r_p - f @ dw
      dmu = (-rc_rows - mu * dsl) / sl
      dsu, dsl_box = -dw[:nz], dw[:nz]
      dpu = (-rc_u - pu * dsu) / su
      dpl = (-rc_l - pl * dsl_box) / sl_box
      return dw, dsl, dmu, dsu, dpu, dsl_box, dpl

    def step(pairs):
      alpha = 1.0
      for v, dv in pairs:
        neg = dv < 0
        if neg.any():
          alpha = min(alpha, float(np.min(-v[neg] / dv[neg])))
      return alpha

    w, sl, su, sl_box, mu, pu, pl = mehrotra.predictor_corrector(
        direction, step, (w, sl, su, sl_box, mu, pu, pl), gap, m_gap)
  on_box = bool(np.max(np.abs(w[:nz])) > 0.5 * box)
  duals[0.0] = mu
  return w, [duals[g] for g in sorted(duals)], on_box, converged


def solve(facts, subset, y, x, mu=None, s: Settings = Settings(),
          threshold: float | None = None):
  """(x_W, duals, t_W, info) for (LP) from an iterate x (and multipliers
  mu, whose support joins W), by interior point and row generation; x_W is
  None if no round converged. t_W is a lower estimate of t* (exact once
  info['violated'] is 0); x_W and the duals ([N] multipliers, the
  tightest first) are for the caller to certify. `threshold`: stop at the
  first round whose t_W (converged) or whose point's largest other logit
  clears it (`_settled`; info['settled'] says which side); settled
  FEASIBLE, the third value is that largest other logit (an upper bound)
  and the duals are empty."""
  subset = np.asarray(subset)
  n_rows, d = facts.a.shape
  m = subset.size
  x_par, _ = facts.rowspace(subset, y)
  z_basis = facts.null_basis(subset)
  x = np.asarray(x, np.float64)
  logits = facts.logits64(x)
  logits[subset] = -np.inf
  line = (x, logits)  # Decide: a point and its other logits, improved
  # along each ray of W (a descent on the largest other logit).
  k = min(n_rows - m, int(s.rows_factor * (d + 1 - m)))
  rows = np.argpartition(-logits, k - 1)[:k]
  if mu is not None:
    carried = np.flatnonzero(np.asarray(mu) > 0)
    rows = np.union1d(rows, np.setdiff1d(carried, subset))
  box = s.box_factor * max(1.0, float(np.linalg.norm(x - x_par)))
  add = s.add_rows or d
  info = {"rounds": 0, "violated": -1, "rows": int(rows.size),
          "on_box": False}
  best, ray_mode = None, False
  for rounds in range(1, s.rounds + 1):
    a_w = facts.rows(rows)
    f = np.hstack([a_w @ z_basis, -np.ones((rows.size, 1))])
    if ray_mode:  # W had a ray: look for one of the whole LP first.
      ray, slope = _ray(facts, subset, z_basis, f, s)
      info.update(rounds=rounds, rows=int(rows.size), on_box=True)
      if ray is not None:
        pushed_up = np.flatnonzero(slope >= 0.0)
        if pushed_up.size == 0:  # t* = -inf.
          return _far_along(facts, subset, x_par, ray, y), [], -np.inf, info
        if threshold is not None:  # Descend along the ray from the best
          c, top = _line_min(line[1], slope)  # point yet; the other
          line = (line[0] + c * ray, line[1] + c * np.where(  # logits (-inf
              np.isfinite(slope), slope, 0.0))  # on S) may all clear the
          if _settled(-np.inf, top, threshold, s):  # threshold.
            info["settled"] = "feasible"
            return line[0], [], top, info
        # Rows the ray does not push down join W, steepest first.
        pushed_up = pushed_up[np.argsort(-slope[pushed_up])]
        fresh = pushed_up[~np.isin(pushed_up, rows)][:add]
        rows = np.concatenate([rows, fresh])
        continue
      ray_mode = False  # W is bounded now: solve it.
    h = -(a_w @ x_par)
    w, duals, on_box, converged = _interior(f, h, box, s, box_exit=True)
    if on_box and rounds < s.rounds:  # (LP_W) unbounded, or nearly.
      ray_mode = True
      continue
    x_w = x_par + z_basis @ w[:-1]
    logits = facts.logits64(x_w)
    logits[subset] = -np.inf
    t_w = float(w[-1])
    violated = np.setdiff1d(
        np.flatnonzero(logits > t_w + 1e-9 * max(1.0, abs(t_w))), rows)
    info.update(rounds=rounds, violated=int(violated.size),
                rows=int(rows.size), on_box=on_box, converged=converged)
    if converged:
      best = (x_w, [_scatter(n_rows, rows, mu_w) for mu_w in duals], t_w)
    # INFEASIBLE needs converged duals; FEASIBLE any point (A_S x_W = y).
    top = float(np.max(logits))
    side = _settled(t_w if converged else -np.inf, top, threshold, s)
    if side:
      info["settled"] = side
      if side == "feasible":
        best = (x_w, [], top)
      break
    if violated.size == 0 and converged:
      break
    if violated.size == 0:  # The interior point stalled on W without a
      # violated row (a degenerate W: 80 iterations short of 1e-9 at 2000 x
      # 32, m = 10, where one more row converged in 14): the rows nearest
      # to active outside W join it (the `add` largest, as violated rows).
      violated = np.setdiff1d(np.flatnonzero(np.isfinite(logits)), rows)
    if s.keep_rows and rows.size > s.keep_rows * k:  # The rows nearest to
      # active at x_W stay (a dropped row returns if violated again).
      rows = rows[np.argsort(-logits[rows])[:int(s.keep_rows * k)]]
    rows = np.concatenate([rows, violated[np.argsort(-logits[violated])
                                          [:add]]])
  if best is None:
    return None, [], np.nan, info
  return best[0], best[1], best[2], info


def _settled(t_w: float, max_other: float, threshold: float | None,
             s: Settings):
  """'infeasible' when LP_W's optimum t_w clears the threshold by 3 times
  the relative gap of the loosest dual kept (so that any of them still
  certifies it); 'feasible' when the largest other logit at a point is
  below it; else None."""
  if threshold is None:
    return None
  scale = max(1.0, abs(threshold))
  if t_w >= threshold + 3 * max(s.dual_gaps) * scale:
    return "infeasible"
  if max_other <= threshold - 1e-7 * scale:  # (Far above the rounding of
    return "feasible"  # check_feasible's float64 bound.)
  return None


def _ray(facts, subset, z_basis, f, s: Settings):
  """A ray of (LP_W) from the homogeneous LP min tau s.t. G z <= tau,
  |z|_inf <= 1 (well scaled, unlike the box solve; tau* < 0 iff W has a
  ray; any feasible tau < -1e-3 will do): (v = Z z, a_j . v per row, -inf
  on S), or (None, None)."""
  w, _, _, _ = _interior(f, np.zeros(f.shape[0]), 1.0, s, enough=-1e-3)
  if not w[-1] < -1e-9:
    return None, None
  v = z_basis @ w[:-1]
  slope = facts.logits64(v)
  slope[subset] = -np.inf
  return v, slope


def _line_min(base, slope, grid: int = 64, refine: int = 40):
  """(c >= 0, g(c)) approximately minimising the convex, piecewise linear
  g(c) = max_j base_j + c slope_j (-inf entries: rows of S): a geometric
  grid of c around 1 / max |slope|, then golden section between the
  neighbours of the best grid point."""
  rows = np.isfinite(base) & np.isfinite(slope)
  base, slope = base[rows], slope[rows]
  g = lambda c: float(np.max(base + c * slope))
  unit = 1.0 / max(float(np.max(np.abs(slope))), 1e-300)
  cs = np.concatenate([[0.0], unit * 2.0 ** np.arange(-grid // 2, grid // 2)])
  values = [g(c) for c in cs]
  k = int(np.argmin(values))
  lo, hi = cs[max(k - 1, 0)], cs[min(k + 1, cs.size - 1)]
  ratio = (np.sqrt(5.0) - 1.0) / 2.0
  for _ in range(refine):
    c1, c2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    if g(c1) <= g(c2):
      hi = c2
    else:
      lo = c1
  best = min([(values[k], cs[k]), (g(0.5 * (lo + hi)), 0.5 * (lo + hi))])
  return best[1], best[0]


def _far_along(facts, subset, x_par, v, y) -> np.ndarray:
  """x_par + c v with every other logit below min(y) - 1 (v a ray: a_j . v
  < 0 off S), so that the point itself shows S on top with a margin."""
  base, slope = facts.logits64(x_par), facts.logits64(v)
  base[subset], slope[subset] = -np.inf, -1.0
  need = (base - (np.min(y) - 1.0)) / -slope
  return x_par + 2.0 * max(1.0, float(np.max(need))) * v


def _scatter(n: int, rows, values) -> np.ndarray:
  out = np.zeros(n)
  out[rows] = np.clip(values, 0.0, None)
  return out
