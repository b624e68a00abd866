"""A verdict from a solver's nomination: which float64 checks it gets, in
which order (seed 001, Section 6: the LP's two sides, plus t* = -inf).

`verify` turns what the solver nominates (an embedding, multipliers, or
nothing) into 'feasible' / 'infeasible' / 'undecided' with the bound on t*
that the passing check proves; the checks themselves, and what each
certificate states, are `bottleneck.lp.certificates`. `Policy` says what a
certificate must show (radius, supports tried, when a wider one is).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bottleneck.lp import certificates, polish
from bottleneck.lp.facts import as_facts


@dataclasses.dataclass(frozen=True)
class Policy:
  """What a certificate must show before a verdict is reported."""
  # INFEASIBLE: no embedding within radius_factor * |x_par| of the row-space
  # point reaches the threshold.
  radius_factor: float = 1e3
  # Supports tried by `polish`, in units of d - m + 1 rows (widest last).
  support_factors: tuple[float, ...] = (2.0, 4.0, 8.0, 16.0)
  # When a wider support is tried: 'always' (after any failed global
  # check) or 'collapsed' (only when the polish's projection collapsed,
  # polish.Projection: its support too narrow to hold a dual vertex, while
  # the dual objective of its first signed correction is at least
  # widen_margin (relative) above the threshold; a collapse below that is
  # an instance whose multipliers are not there yet, or a feasible one).
  # An undecided verdict's evidence says whether the last try collapsed
  # so (`collapsed`): topm.solve's mid-run checks try the widest support
  # for an instance at the check after its first such collapse
  # (benchmarks/RESULTS.md).
  widen: str = "always"
  widen_margin: float = 0.01
  # Prescribed probabilities: worst relative error of the ratios on S.
  ratio_rtol: float = 1e-6
  # A check of an instance that iterates on when it fails (topm.solve's
  # mid-run checks and in-loop nominations): an undecided verdict's
  # evidence is dropped there, so the radius statement (`check_infeasible`,
  # a full pass over A) is skipped and a ray is looked for only on a
  # one-sided matrix (MatrixFacts.one_sided), which makes a failed mid-run
  # check cheaper. The final check of an instance keeps both.
  mid_run: bool = False

  def __post_init__(self):
    if self.widen not in ("always", "collapsed"):
      raise ValueError("`widen` must be 'always' or 'collapsed'; got "
                       f"{self.widen!r}.")


def verify(a, subset, y, threshold: float, claim: str, x, mu, *,
           policy: Policy = Policy(), p=None, scale: float | None = None,
           delta: float = 0.1) -> tuple[str, float, dict]:
  """(verdict, the bound on t* it proves, evidence) for a solver's candidate.

  `a` is the matrix or (better, once per matrix) its MatrixFacts.
  `claim` is what the solver nominated ('feasible' with the embedding x,
  'infeasible' with the multipliers mu, anything else: nothing). The
  verdict is 'feasible' / 'infeasible' only if the float64 check passes,
  else 'undecided'. With `p` (prescribed probabilities, scale s of eq. 17)
  a feasible x must also pass `check_probabilities`. Whatever the claim,
  a row outside S identical to a row of S with y_i >= threshold decides
  INFEASIBLE first (`check_twin_rows`).
  """
  twin = certificates.check_twin_rows(a, subset, y, threshold)
  if twin is not None:
    return "infeasible", twin["t_lower"], twin
  if claim == "feasible":
    cert = certificates.check_feasible(a, subset, y, x, threshold)
    if cert["ok"] and p is not None:
      probs = certificates.check_probabilities(
          a, subset, cert["x"], p, scale=scale, delta=delta,
          ratio_rtol=policy.ratio_rtol)
      cert["ok"] = probs["ok"]
      cert.update(rest_mass=probs["rest_mass"],
                  ratio_rel_error=probs["ratio_rel_error"])
    cert["kind"] = "embedding"
    if cert["ok"]:
      if not as_facts(a).one_sided:  # No ray to look for (`one_sided`).
        return "feasible", cert["t_upper"], cert
      ray = certificates.check_unbounded(a, subset, x)
      if ray["ok"]:  # Stronger: t* = -inf, not just below the threshold.
        cert.update(kind="embedding+ray", ray_max_other=ray["ray_max_other"])
        return "feasible", -np.inf, cert
      return "feasible", cert["t_upper"], cert
    return _ray_or_undecided(a, subset, x, cert, policy.mid_run)
  if claim == "infeasible":
    ball = None
    for support_factor in policy.support_factors:  # Wider supports if needed.
      projection = polish.project(a, subset, mu, x, support_factor, y=y)
      polished = projection.mu
      cert = certificates.check_infeasible_global(a, subset, y, polished,
                                                  threshold)
      if cert["ok"]:
        return "infeasible", cert["t_lower"], cert
      if not policy.mid_run and (ball is None or not ball["ok"]):
        ball = certificates.check_infeasible(
            a, subset, y, polished, threshold,
            radius_factor=policy.radius_factor)
      collapsed = bool(projection.collapsed and projection.value >=
                       threshold + policy.widen_margin * abs(threshold))
      if policy.widen == "collapsed" and not collapsed:
        break  # A wider support would not lift this dual bound.
    # Only the ball statement holds: reported, but not a global verdict.
    ball = dict(ball or {}, kind="ball", ok=False,
                ball_ok=bool(ball and ball["ok"]),
                global_reason=cert.get("reason"), collapsed=collapsed)
    return _ray_or_undecided(a, subset, x, ball, policy.mid_run)
  return _ray_or_undecided(a, subset, x, {"ok": False}, policy.mid_run)


def _ray_or_undecided(a, subset, x, evidence, mid_run=False):
  """An instance no check decided: FEASIBLE with t* = -inf if the iterate
  x holds a ray (`check_unbounded`; mid-run only on a one-sided matrix),
  else UNDECIDED with `evidence`."""
  if mid_run and not as_facts(a).one_sided:
    return "undecided", float("nan"), evidence
  if x is not None and np.all(np.isfinite(x)):
    ray = certificates.check_unbounded(a, subset, x)
    if ray["ok"]:
      ray.pop("ray")
      return "feasible", -np.inf, ray
  return "undecided", float("nan"), evidence
