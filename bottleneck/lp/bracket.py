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
rounding (1e-12).
"""

from __future__ import annotations

import numpy as np

from bottleneck.lp import certificates, polish


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
      (cand, {"drop": 0.0, "retries": 1}) for cand in duals]
  for cand, how in checked:
    if cand is None or not cand.any():
      continue
    cert = certificates.check_infeasible_global(facts, subset, y, cand,
                                                -np.inf, **how)
    if cert["ok"] and cert["t_lower"] > lower:
      lower, evidence = cert["t_lower"], cert
      if threshold is not None and lower >= threshold:
        break
  return lower, upper, dict(evidence, kind="bracket", x=best_x)


def closed(lower: float, upper: float, tolerance: float) -> bool:
  """Whether a bracket is tight enough to stop (or proves t* = -inf)."""
  if upper == -np.inf:
    return True
  return bool(np.isfinite(lower) and np.isfinite(upper) and
              upper - lower <= tolerance * max(1.0, abs(upper)))
