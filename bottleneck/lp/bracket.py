"""Certified brackets on t* (`objective="solve"` of bottleneck.topm).

In solve mode an instance is not released at the first side it proves:
its candidates are checked until a float64-certified bracket

  lower <= t* <= upper,    upper - lower <= tolerance * max(1, |upper|)

holds. `upper` is the largest other logit at an embedding with A_S x = y
(certificates.check_feasible: any such x bounds t* from above, with
rigorous rounding bounds); `lower` is the value of an LP dual point whose
exact existence is enclosed (certificates.check_infeasible_global with no
threshold); a ray (certificates.check_unbounded) makes both -inf. When the
working set and the iterate name the optimal basis, polish.basis gives the
primal vertex and its dual point from one LU and the bracket closes to
rounding (1e-12). At a degenerate optimum lp.finish's tightest dual can
fail the enclosure; it is then mixed with its central one (`_blend`).
Each instance keeps the tightest bracket of its checks (`tighter`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bottleneck.lp import certificates, polish

EXACT = {"drop": 0.0, "retries": 1}  # lp.finish's duals: as they are.


def bracket(facts, subset, y, x, mu=None, support_factor: float = 2.0,
            duals=(), threshold: float | None = None):
  """(lower, upper, evidence) for t* from an iterate x and multipliers mu
  (either may be None; `duals`: dual points to check as they are, e.g.
  lp.finish's); -inf / +inf where a side is not proved. `threshold`: stop
  at the first side proved clear of it (upper < threshold, or lower >=
  it), as deciding needs."""
  lower, upper, best_x, evidence = -np.inf, np.inf, None, {}
  ray = certificates.check_unbounded(facts, subset, x) if x is not None \
      else {"ok": False}
  if ray["ok"]:
    return -np.inf, -np.inf, {"kind": "ray", "x": x,
                              "ray_max_other": ray["ray_max_other"]}
  candidates_x, candidates_mu = [], []
  if x is not None:
    x_v, mu_v = polish.basis(facts, subset, y, x)
    candidates_x += [x, x_v]
    candidates_mu.append(mu_v)
  if mu is not None:
    candidates_mu.append(polish.dual(facts, subset, mu, x, support_factor))
  for cand in candidates_x:
    if cand is None or not np.all(np.isfinite(cand)):
      continue
    cert = certificates.check_feasible(facts, subset, y, cand, np.inf)
    if cert["t_upper"] < upper:
      upper, best_x = cert["t_upper"], cert["x"]
  if threshold is not None and upper < threshold:
    return lower, upper, dict(evidence, kind="bracket", x=best_x)
  checked = [(cand, {}) for cand in candidates_mu] + [
      (cand, EXACT) for cand in duals]
  central, tight = None, []  # lp.finish's duals: certified / not.
  for cand, how in checked:
    if cand is None or not cand.any():
      continue
    cert = certificates.check_infeasible_global(facts, subset, y, cand,
                                                -np.inf, **how)
    if how is EXACT:
      if cert["ok"]:
        central = central or (cand, cert["mu_lower"])
      elif central is None and cert.get("mu_lower", np.nan) < 0.0:
        tight.append((cand, cert["mu_lower"]))  # Tighter than any that
        # passed (tightest first; nan: no enclosure).
    if cert["ok"] and cert["t_lower"] > lower:
      lower, evidence = cert["t_lower"], cert
      if threshold is not None and lower >= threshold:
        break
  if central is not None and tight and (threshold is None or
                                        lower < threshold):
    lower, evidence = _blend(facts, subset, y, *tight[0], *central,
                             lower, evidence)
  return lower, upper, dict(evidence, kind="bracket", x=best_x)


def _blend(facts, subset, y, tight, tight_low, central, central_low, lower,
           evidence, tries: int = 3):
  """A better certified lower bound from two interior-point duals.

  At a degenerate optimum (Gemma 3's head at m = 120: 517 multipliers
  clearly positive where a basis has d + 1 - m = 521) the tightest dual's
  smallest multipliers lie inside the certificate's enclosure radius
  (~1e-9), so it fails, while a central one (relative gap 1e-4) passes
  2e-6 below t*: no bracket closes to 1e-6. The dual constraints are
  linear, so (1 - w) tight + w central is a dual point too, with the mixed
  value; its enclosed smallest multiplier is nearly the mix of the two
  (`*_low`, from their checks), which fixes w (1.5 times the root; doubled
  while the check fails). There, w ~ 0.05 certifies t* - 1e-7."""
  w = 1.5 * tight_low / (tight_low - central_low)
  for _ in range(tries):
    w = min(w, 1.0)
    cert = certificates.check_infeasible_global(
        facts, subset, y, (1.0 - w) * tight + w * central, -np.inf, **EXACT)
    if cert["ok"]:
      return (cert["t_lower"], cert) if cert["t_lower"] > lower else (
          lower, evidence)
    w *= 2.0
  return lower, evidence


class Held(NamedTuple):
  """A certified bracket with its evidence (`bracket`'s triple) and what
  proved it ('admm': the solver's iterates; 'ipm': lp.finish)."""
  lower: float
  upper: float
  evidence: dict
  source: str = "admm"


def tighter(old: Held | None, new: Held) -> Held:
  """The intersection of two certified brackets of one instance: the
  larger lower bound with its dual certificate, the smaller upper bound
  with its embedding (`x`); a ray (upper = -inf) is evidence on its own."""
  if old is None or new.upper == -np.inf:
    return new
  if old.upper == -np.inf:
    return old
  low = old if old.lower >= new.lower else new
  up = old if old.upper <= new.upper else new
  improved = new.lower > old.lower or new.upper < old.upper
  return Held(low.lower, up.upper, dict(low.evidence, x=up.evidence.get("x")),
              new.source if improved else old.source)


def closed(lower: float, upper: float, tolerance: float) -> bool:
  """Whether a bracket is tight enough to stop (or proves t* = -inf)."""
  if upper == -np.inf:
    return True
  return bool(np.isfinite(lower) and np.isfinite(upper) and
              upper - lower <= tolerance * max(1.0, abs(upper)))
