"""Top-m selectability of an OPM by LP (seed 001, Section 6, Figs 1/3, App. D).

For random m-subsets S of the tokens of a matrix A, decide whether an
embedding makes S the m most likely tokens (the problems of
`bottleneck.lp.instances`: equal logits, prescribed or natural
probabilities). This module composes the pieces of `bottleneck.lp`:

  instances -> stream (batched ADMM, jitted once, batch axis sharded over
  devices) -> certificates (every candidate checked in float64) -> exact
  (HiGHS settles UNDECIDED ones on request, checked the same way)

  python -m bottleneck.topm --matrix=random --N=4096 --d=256 --m=20..60:10 \
      --trials=20 --problem=logits --format=json
"""

from __future__ import annotations

import time

import numpy as np

from bottleneck import checks, prescribed, sharding
from bottleneck.io import cli
from bottleneck.lp import admm, certificates, exact, stream
from bottleneck.lp.instances import PROBLEMS, Instance, make_instances

__all__ = ["PROBLEMS", "Instance", "make_instances", "solve", "summarize",
           "sweep", "m_star_search"]


def solve(a, instances, settings: admm.Settings = admm.Settings(),
          batch: int = 32, exact_fallback: bool = False, delta: float = 0.1,
          devices=None, progress: bool = False, m_pad: int | None = None,
          policy: certificates.Policy = certificates.Policy()) -> list[dict]:
  """Decides every instance; returns one detail dict per instance, in order.

  `batch` slots iterate together with continuous batching (lp.stream). One
  compile per (matrix shape, batch, m_pad); m_pad defaults to the largest m
  (pass a fixed one to reuse a compile).
  """
  if not instances:
    return []
  a64 = checks.finite_array("matrix", a, ndim=2).astype(np.float64)
  facts = certificates.MatrixFacts(a64)
  d = a64.shape[1]
  m_pad = max([it.subset.size for it in instances] + [m_pad or 0])
  if m_pad >= d:
    raise ValueError(f"`m` must be < d = {d} (A_S needs full row rank); got "
                     f"{m_pad}.")
  for it in instances:  # Full row rank of A_S (else no x prescribes y_S).
    if np.linalg.matrix_rank(a64[it.subset]) < it.subset.size:
      raise ValueError(f"`subsets`: rows {it.subset.tolist()[:8]}... of the "
                       "matrix are linearly dependent (A_S rank-deficient).")
  mesh = sharding.batch_mesh(devices)
  batch = sharding.round_up(min(batch, len(instances)), mesh.devices.size)
  shared, basis = admm.prepare(a64)
  meter = cli.Progress(len(instances), "LP instances") if progress else None
  details = [None] * len(instances)
  for done, out in enumerate(stream.run(shared, instances, settings, batch,
                                        m_pad, mesh), start=1):
    details[out.index] = _decide(
        facts, instances[out.index], out.claim,
        admm.to_original(basis, out.x_rot), out.mu, out.iterations, policy,
        delta, exact_fallback)
    if meter:
      meter.update(done)
  return details


def _decide(facts, inst: Instance, claim, x, mu, iterations, policy, delta,
            exact_fallback) -> dict:
  """Checks one instance's candidate certificate (HiGHS if undecided)."""
  start = time.perf_counter()
  verdict, objective, cert = _verify(facts, inst, claim, x, mu, policy, delta)
  source = "admm"
  if verdict == "undecided" and exact_fallback:
    sol = exact.solve(facts.a, inst.subset, inst.y)
    source = "highs"
    if sol["status"] != "Optimal":
      verdict, objective, cert = "undecided", float("nan"), {"ok": False}
    else:
      claim = "feasible" if sol["t"] < inst.threshold else "infeasible"
      verdict, objective, cert = _verify(facts, inst, claim, sol["x"],
                                         sol["mu"], policy, delta)
      cert["highs_t"] = sol["t"]
  return {"subset": inst.subset.tolist(), "verdict": verdict,
          "objective": objective, "margin": cert.get("margin"),
          "certificate_ok": bool(cert.get("ok", False)), "source": source,
          "iterations": iterations,
          "radius_over_x_par": cert.get("radius_over_x_par"),
          "rest_mass": cert.get("rest_mass"),
          "verify_seconds": time.perf_counter() - start}


def _verify(facts, inst: Instance, claim, x, mu, policy, delta):
  return certificates.verify(facts, inst.subset, inst.y, inst.threshold,
                             claim, x, mu, policy, inst.p, inst.scale, delta)


def summarize(m_values, details_per_m) -> list[dict]:
  """One record per m: counts of each verdict and the feasible fraction."""
  out = []
  for m, details in zip(m_values, details_per_m):
    counts = {v: sum(x["verdict"] == v for x in details)
              for v in ("feasible", "infeasible", "undecided")}
    decided = counts["feasible"] + counts["infeasible"]
    out.append({"m": m, "trials": len(details), **counts,
                "fraction": counts["feasible"] / len(details),
                "fraction_of_decided": (counts["feasible"] / decided
                                        if decided else None),
                "trials_detail": details})
  return out


def sweep(a, m_values, trials: int, problem: str = "logits", seed: int = 0,
          eps: float = 0.05, delta: float = 0.1, targets=None, subsets=None,
          **solve_kwargs) -> list[dict]:
  """Figure-1-style curve: `trials` random subsets for each m."""
  eps, delta = prescribed.check_eps_delta(eps, delta)
  a = np.asarray(a)
  rng = np.random.default_rng(seed)
  per_m = [make_instances(a.shape[0], m, trials, problem, rng, eps, delta,
                          targets, subsets) for m in m_values]
  flat = solve(a, [it for group in per_m for it in group], delta=delta,
               **solve_kwargs)
  return summarize(m_values, [flat[i * trials:(i + 1) * trials]
                              for i in range(len(m_values))])


def m_star_search(a, trials: int, problem: str = "logits", seed: int = 0,
                  threshold: float = 0.99, **solve_kwargs):
  """Largest m whose `trials` random subsets are selectable at >= threshold.

  Integer bisection on m (fresh subsets at every probe), all probes padded to
  one m so the solver compiles once. Returns (m*, probes), probes being
  (m, fraction, undecided) in the order evaluated; m* = 0 if m = 1 fails.
  """
  a = np.asarray(a)
  n, d = a.shape
  rng = np.random.default_rng(seed)
  hi = min(d - 1, n - 1, max(2, d // 2))
  probes = []

  def ok(m):
    details = solve(a, make_instances(n, m, trials, problem, rng),
                    m_pad=hi, **solve_kwargs)
    frac = np.mean([x["verdict"] == "feasible" for x in details])
    probes.append((m, float(frac),
                   sum(x["verdict"] == "undecided" for x in details)))
    return frac >= threshold

  if not ok(1):
    return 0, probes
  if ok(hi):  # Rare: widen once to the largest m with full row rank.
    lo, hi = hi, min(d - 1, n - 1)
    if ok(hi):
      return hi, probes
  else:
    lo = 1
  while hi - lo > 1:
    mid = (lo + hi) // 2
    lo, hi = (mid, hi) if ok(mid) else (lo, mid)
  return lo, probes


if __name__ == "__main__":
  from bottleneck.apps import topm_main  # pylint: disable=g-import-not-at-top
  topm_main.run()
