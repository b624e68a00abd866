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

import dataclasses
import os
import time
from typing import NamedTuple

import numpy as np

from bottleneck import checks, prescribed, sharding
from bottleneck.io import cli
from bottleneck.lp import admm, certificates, exact, polish, stream
from bottleneck.lp.instances import PROBLEMS, Instance, make_instances

__all__ = ["PROBLEMS", "Instance", "make_instances", "solve", "summarize",
           "sweep", "sweeps", "MStar", "m_star_search"]


def solve(a, instances, settings: admm.Settings = admm.Settings(),
          batch: int = 32, exact_fallback: bool = False, delta: float = 0.1,
          devices=None, progress: bool = False, m_pad: int | None = None,
          policy: certificates.Policy = certificates.Policy(),
          first_check: int | None = 100) -> list[dict]:
  """Decides every instance; returns one detail dict per instance, in order.

  `batch` slots iterate together with continuous batching (lp.stream). One
  compile per (matrix shape, batch, m_pad); m_pad defaults to the largest m
  (pass a fixed one to reuse a compile). Every instance still running at
  age first_check * 2^k is checked in float64 (the vertex its largest
  logits name, `polish.vertex`, as a FEASIBLE certificate; its dual iterate
  as a global INFEASIBLE one, `polish.dual`; a ray) and stops as soon as
  one holds
  (`first_check=None`: only the solver's own in-loop nominations).
  Instances enter the slots in a fixed pseudo-random order: a sweep listed
  by m would otherwise run its easy small-m instances first (an ETA that
  is far too short) and bunch the transition band's slow ones together.
  """
  if not instances:
    return []
  checks.positive_int("batch", batch)
  if first_check is not None:
    checks.positive_int("first_check", first_check)
  a = checks.finite_array("matrix", a, ndim=2)  # float32 stays float32:
  facts = certificates.MatrixFacts(a)  # float64 products by row blocks.
  d = a.shape[1]
  m_pad = max([it.subset.size for it in instances] + [m_pad or 0])
  if m_pad >= d:
    raise ValueError(f"`m` must be < d = {d} (A_S needs full row rank); got "
                     f"{m_pad}.")
  for it in instances:  # Full row rank of A_S (else no x prescribes y_S).
    if np.linalg.matrix_rank(facts.rows(it.subset)) < it.subset.size:
      raise ValueError(f"`subsets`: rows {it.subset.tolist()[:8]}... of the "
                       "matrix are linearly dependent (A_S rank-deficient).")
  mesh = sharding.batch_mesh(devices)
  batch = sharding.round_up(min(batch, len(instances)), mesh.devices.size)
  shared, basis = admm.prepare(a)
  meter = cli.Progress(len(instances), "LP instances") if progress else None
  details = [None] * len(instances)
  order = np.random.default_rng(0).permutation(len(instances))
  queue = [instances[i] for i in order]  # Stream index k is instance order[k].
  early = dataclasses.replace(policy, support_factors=policy.support_factors[
      :1])  # Mid-run: the first support only (a failed try costs little).

  def decide(index, x_rot, u, t, age):  # Host checks of a running instance.
    start = time.perf_counter()
    inst = queue[index]
    band = 1e-3 * abs(inst.threshold)
    if t < inst.threshold - band:
      return None  # Heading below: the in-loop full pass will certify it.
    x = admm.to_original(basis, x_rot)
    if t <= inst.threshold + band:  # The band: the basis of the largest
      # logits at x, a primal vertex and its dual point from one LU.
      x_v, mu_v = polish.basis(facts, inst.subset, inst.y, x)
      if x_v is not None and certificates.check_feasible(
          facts, inst.subset, inst.y, x_v, inst.threshold)["ok"]:
        out = _verify(facts, inst, "feasible", x_v, None, early, delta)
        if out[0] != "undecided":
          return _detail(inst, *out, "admm", age, start)
      if mu_v is not None:
        cert = certificates.check_infeasible_global(
            facts, inst.subset, inst.y, mu_v, inst.threshold)
        if cert["ok"]:
          return _detail(inst, "infeasible", cert["t_lower"], cert, "admm",
                         age, start)
    out = _verify(facts, inst, "infeasible", x, u, early, delta)
    return None if out[0] == "undecided" else _detail(inst, *out, "admm",
                                                      age, start)

  runs = stream.run(shared, queue, settings, batch, m_pad, mesh,
                    decide if first_check else None, first_check or 100)
  for done, out in enumerate(runs, start=1):
    details[order[out.index]] = out.decided or _decide(
        facts, queue[out.index], out.claim,
        admm.to_original(basis, out.x_rot), out.mu, out.iterations, policy,
        delta, exact_fallback)
    if meter:
      meter.update(done)
  return details


def _decide(facts, inst: Instance, claim, x, mu, iterations, policy, delta,
            exact_fallback) -> dict:
  """Checks one instance's candidate certificate (HiGHS if undecided).

  `certificate` says which kind of evidence was checked ('embedding',
  'global', 'ray', 'twin_rows', or 'ball': the weaker, ball-restricted dual
  bound reported for an undecided instance); `_detail` turns the bound it
  proves into `lower_bound` / `upper_bound` on t*.
  """
  start = time.perf_counter()
  verdict, bound, cert = _verify(facts, inst, claim, x, mu, policy, delta)
  source = "admm"
  if verdict == "undecided" and exact_fallback:
    sol = exact.solve(np.asarray(facts.a, np.float64), inst.subset, inst.y)
    source = "highs"
    if sol["status"] == "Unbounded" and sol["ray"] is not None:
      cert = certificates.check_unbounded(facts, inst.subset, sol["ray"])
      cert.pop("ray")
      verdict, bound = (("feasible", -np.inf) if cert["ok"] else
                        ("undecided", float("nan")))
    elif sol["status"] != "Optimal":
      verdict, bound, cert = "undecided", float("nan"), {"ok": False}
    else:
      claim = "feasible" if sol["t"] < inst.threshold else "infeasible"
      verdict, bound, cert = _verify(facts, inst, claim, sol["x"],
                                     sol["mu"], policy, delta)
      cert["highs_t"] = sol["t"]
  return _detail(inst, verdict, bound, cert, source, iterations, start)


def _detail(inst: Instance, verdict, bound, cert, source, iterations,
            start) -> dict:
  """One instance's record. The solver stops as soon as a side is proved,
  so t* is reported as certified bounds, not an optimum: `upper_bound`
  (FEASIBLE: the largest other logit at the certified embedding; -inf with
  a ray, where t* = -inf exactly), `lower_bound` (INFEASIBLE: the verified
  dual value); NaN where nothing was proved."""
  nan = float("nan")
  upper = bound if verdict == "feasible" else nan
  lower = (bound if verdict == "infeasible" else
           -np.inf if upper == -np.inf else nan)
  return {"subset": inst.subset.tolist(), "verdict": verdict,
          "lower_bound": lower, "upper_bound": upper,
          "margin": cert.get("margin"),
          "certificate_ok": bool(cert.get("ok", False)),
          "certificate": cert.get("kind"), "source": source,
          "iterations": iterations,
          "radius_over_x_par": cert.get("radius_over_x_par"),
          "rest_mass": cert.get("rest_mass"),
          "verify_seconds": time.perf_counter() - start}


def _verify(facts, inst: Instance, claim, x, mu, policy, delta):
  """certificates.verify on one instance (mu may be a raw dual iterate:
  verify clips it to >= 0 and zeroes it on S)."""
  return certificates.verify(facts, inst.subset, inst.y, inst.threshold,
                             claim, x, mu, policy, inst.p, inst.scale, delta)


def summarize(m_values, details_per_m, problem: str | None = None
              ) -> list[dict]:
  """One record per m: counts of each verdict and the feasible fraction.

  `fraction` (= `fraction_lower`) counts undecided instances as not
  selectable, `fraction_upper` as selectable: the true fraction of these
  subsets lies between the two.
  """
  out = []
  for m, details in zip(m_values, details_per_m):
    counts = {v: sum(x["verdict"] == v for x in details)
              for v in ("feasible", "infeasible", "undecided")}
    decided = counts["feasible"] + counts["infeasible"]
    out.append({**({"problem": problem} if problem else {}), "m": m,
                "trials": len(details), **counts,
                "fraction": counts["feasible"] / len(details),
                "fraction_upper": (counts["feasible"] + counts["undecided"])
                                  / len(details),
                "fraction_of_decided": (counts["feasible"] / decided
                                        if decided else None),
                "trials_detail": details})
  return out


def sweep(a, m_values, trials: int, problem: str = "logits", seed: int = 0,
          eps: float = 0.05, delta: float = 0.1, targets=None, subsets=None,
          **solve_kwargs) -> list[dict]:
  """Figure-1-style curve: `trials` random subsets for each m."""
  return sweeps(a, m_values, trials, (problem,), seed, eps, delta, targets,
                subsets, **solve_kwargs)[problem]


def sweeps(a, m_values, trials: int, problems=("logits", "probs"),
           seed: int = 0, eps: float = 0.05, delta: float = 0.1,
           targets=None, subsets=None, **solve_kwargs) -> dict:
  """Figure 1: `sweep` for several problems, solved as one stream (one
  compile, one progress line whose ETA covers all of them).

  Every problem draws from its own `default_rng(seed)`, so each curve is
  the one `sweep(..., problem, seed)` gives. Returns {problem: records}.
  """
  eps, delta = prescribed.check_eps_delta(eps, delta)
  if isinstance(problems, str) or not problems:
    raise ValueError(f"`problems` must be a non-empty list of {PROBLEMS}; "
                     f"got {problems!r}.")
  for problem in problems:
    checks.one_of("problem", problem, PROBLEMS)
  a = np.asarray(a)
  _check_memory(checks.positive_int("trials", trials),
                list(m_values) * len(problems))
  per_problem = {}
  for problem in dict.fromkeys(problems):
    rng = np.random.default_rng(seed)
    per_problem[problem] = [make_instances(a.shape[0], m, trials, problem,
                                           rng, eps, delta, targets, subsets)
                            for m in m_values]
  flat = solve(a, [it for groups in per_problem.values() for group in groups
                   for it in group], delta=delta, **solve_kwargs)
  out, start = {}, 0
  for problem in per_problem:
    chunks = [flat[start + i * trials:start + (i + 1) * trials]
              for i in range(len(m_values))]
    start += trials * len(m_values)
    out[problem] = summarize(m_values, chunks, problem)
  return out


class MStar(NamedTuple):
  """LP m* of a matrix, bracketed by how undecided instances are counted."""
  lower: int  # Undecided counted as not selectable (a certified m*).
  upper: int  # Undecided counted as selectable.
  probes: list  # (m, fraction, undecided) per probe, in the order run.


def _check_memory(trials: int, m_values) -> None:
  """Fails fast when the instances and their per-trial details (kept for
  the output) cannot fit in memory, instead of allocating until killed."""
  need = trials * sum(2048 + 48 * m for m in m_values)  # Bytes, generous.
  try:
    have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
  except (ValueError, OSError, AttributeError):
    return
  if need > have // 2:
    raise ValueError(
        f"`trials` = {trials} over {len(m_values)} m values needs about "
        f"{need / 2**30:.1f} GiB for the instances and their details; this "
        f"machine has {have / 2**30:.1f} GiB. Lower `trials` or split the "
        "sweep.")


def m_star_search(a, trials: int, problem: str = "logits", seed: int = 0,
                  threshold: float = 0.99, **solve_kwargs) -> MStar:
  """Largest m whose `trials` random subsets are selectable at >= threshold.

  Integer bisection on m (fresh subsets at every new probe), all probes
  padded to one m so the solver compiles once; run once counting undecided
  instances as failures (`lower`) and once as successes (`upper`, reusing
  the probes already made). m* = 0 if m = 1 fails.
  """
  a = np.asarray(a)
  n, d = a.shape
  rng = np.random.default_rng(seed)
  first_hi = min(d - 1, n - 1, max(2, d // 2))
  probes, seen = [], {}

  def fractions(m):  # (lower, upper) fraction at m; each m is probed once.
    if m not in seen:
      details = solve(a, make_instances(n, m, trials, problem, rng),
                      m_pad=first_hi, **solve_kwargs)
      feasible = sum(x["verdict"] == "feasible" for x in details)
      undecided = sum(x["verdict"] == "undecided" for x in details)
      seen[m] = (feasible / trials, (feasible + undecided) / trials)
      probes.append((m, seen[m][0], undecided))
    return seen[m]

  def bisect(side):
    ok = lambda m: fractions(m)[side] >= threshold
    if not ok(1):
      return 0
    hi = first_hi
    if ok(hi):  # Rare: widen once to the largest m with full row rank.
      lo, hi = hi, min(d - 1, n - 1)
      if ok(hi):
        return hi
    else:
      lo = 1
    while hi - lo > 1:
      mid = (lo + hi) // 2
      lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo

  lower = bisect(0)
  return MStar(lower, bisect(1), probes)


if __name__ == "__main__":
  from bottleneck.apps import topm_main  # pylint: disable=g-import-not-at-top
  topm_main.run()
