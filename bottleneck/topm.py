"""Top-m selectability of an OPM by LP (seed 001, Section 6, Figs 1/3, App. D).

For random m-subsets S of the tokens of a matrix A, decide whether an
embedding makes S the m most likely tokens (the problems of
`bottleneck.lp.instances`: equal logits, prescribed or natural
probabilities). This module composes the pieces of `bottleneck.lp`:

  instances -> stream (batched ADMM, jitted once, batch axis sharded over
  devices; nested subsets fed by chains) -> host_checks (the stream's
  callbacks: certificates checks every candidate in float64, finish the
  slow instances) -> exact (HiGHS settles UNDECIDED ones on request,
  checked the same way)

  python -m bottleneck.topm --matrix=random --N=4096 --d=256 --m=20..60:10 \
      --trials=20 --problem=logits --format=json
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import NamedTuple

import numpy as np
import threadpoolctl

from bottleneck import checks, prescribed, sharding
from bottleneck.io import cli
from bottleneck.lp import (admm, bracket, device_checks, host_checks,
                           placement, records, rotation, stream, verdicts)
from bottleneck.lp import facts as lp_facts
from bottleneck.lp.instances import PROBLEMS, Instance, make_instances

__all__ = ["PROBLEMS", "Instance", "make_instances", "solve", "summarize",
           "sweep", "sweeps", "sweep_instances", "MStar", "m_star_search"]


def solve(a, instances, settings: admm.Settings = admm.Settings(),
          batch: int = 32, exact_fallback: bool = False, delta: float = 0.1,
          devices=None, progress: bool | str = False,
          m_pad: int | None = None,
          policy: verdicts.Policy = verdicts.Policy(),
          first_check: int | str | None = "auto", objective: str = "decide",
          tolerance: float = 1e-6, working_set: int | None = None,
          finish_after: int | None = 1600,
          embeddings: bool = False) -> list[dict]:
  """Decides every instance; returns one detail dict per instance, in order.

  `batch` slots iterate together with continuous batching (lp.stream). One
  compile per (matrix shape, batch, m_pad); m_pad defaults to the largest m
  (pass a fixed one to reuse a compile). Every instance still running at
  age first_check * 2^k is checked in float64 (the vertex its largest
  logits name, `polish.vertex`, as a FEASIBLE certificate; its dual iterate
  as a global INFEASIBLE one, `polish.dual`; a ray) and stops as soon as
  one holds
  (`first_check=None`: only the solver's own in-loop nominations; 'auto':
  `lp.placement.first_check_age`).
  Instances enter the slots in a fixed pseudo-random order: a sweep listed
  by m would otherwise run its easy small-m instances first (an ETA that
  is far too short) and bunch the transition band's slow ones together.
  In decide mode, instances with a `chain` (nested subsets: `sweeps`)
  enter through lp.chain_feed.Feed instead: a few per chain run, probing for
  its transition, and the others are settled from their certificates
  (`source` 'chain', 0 iterations; each checked in float64).

  objective 'solve': each instance runs until a certified bracket on t*
  is within `tolerance` (relative; bottleneck.lp.bracket), or -inf with a
  ray; `lower_bound` / `upper_bound` are then t* to that tolerance and the
  margin is the optimum's. `working_set`: rows per instance iterated
  explicitly (None: admm.working_set_size's choice). `progress`: a
  progress line on stderr (a string: its label).

  `finish_after`: an instance a host check finds still open at this age
  gets one exact finish (lp.finish: interior point on the rows its iterate
  names, with row generation), whose point
  and duals are certified like any other (source 'ipm'). None: never.

  `embeddings` (solve mode): a record with a finite certified upper bound
  also gets `embedding`, the float64 x [d] it was proved at, for the `a`
  passed in: A_S x = y to rounding and every other logit <= upper_bound
  (an optimal embedding to `tolerance` where `bracket_closed`). Not given
  for subsets with repeated or all-zero rows (a subset holding an all-zero
  row is INFEASIBLE, certificate 'zero_row': that token's logit is 0 for
  every embedding).
  """
  if not instances:
    return []
  checks.positive_int("batch", batch)
  if first_check is not None and first_check != "auto":
    checks.positive_int("first_check", first_check)
  if finish_after is not None:
    checks.positive_int("finish_after", finish_after)
  checks.one_of("objective", objective, admm.OBJECTIVES)
  checks.open_interval("tolerance", tolerance, 0.0, np.inf)
  a = checks.finite_array("matrix", a, ndim=2)  # float32 stays float32:
  scale = records.power_of_two_factor(a)  # x in A's units: scale * x.
  a = records.power_of_two_scaled(a, factor=scale)
  d = a.shape[1]
  m_pad = max([it.subset.size for it in instances] + [m_pad or 0])
  if m_pad >= d:
    raise ValueError(f"`m` must be < d = {d} (A_S needs full row rank); got "
                     f"{m_pad}.")
  if working_set is not None and not (
      m_pad <= working_set <= a.shape[0] - m_pad):
    raise ValueError(f"`working_set` must be in [m = {m_pad}, N - m = "
                     f"{a.shape[0] - m_pad}]; got {working_set}.")
  stream_settings = dataclasses.replace(settings, objective=objective,
                                        working_set=working_set or 0)
  mesh = sharding.batch_mesh(devices)
  slots = sharding.round_up(min(batch, len(instances)), mesh.devices.size)
  facts = lp_facts.MatrixFacts(a)  # float64 products by row blocks.
  special = records.special_subsets(facts, instances)
  if not special:
    # ADMM's programs compile while the host checks ranks and prepares A
    # (with repeated rows, the calls below on A without them compile other
    # shapes, so it runs after them).
    stream.precompile(stream_settings, mesh, slots, m_pad, *a.shape)
  records.check_subsets(facts, instances, special)
  if special:  # Repeated or all-zero rows in a subset: records.solve_special.
    again = functools.partial(
        solve, settings=settings, batch=batch, exact_fallback=exact_fallback,
        delta=delta, devices=devices, policy=policy, first_check=first_check,
        objective=objective, tolerance=tolerance, working_set=working_set,
        finish_after=finish_after, embeddings=embeddings)
    plain = [k for k in range(len(instances)) if k not in special]
    details = dict(zip(plain, again(a, [instances[k] for k in plain],
                                    progress=progress, m_pad=m_pad)))
    for k in plain:  # Solved on the scaled A: back to the caller's units.
      if "embedding" in details[k]:
        details[k]["embedding"] = scale * details[k]["embedding"]
    for k, (pairs, zeros) in special.items():
      details[k] = records.solve_special(
          lambda a_k, inst: again(a_k, [inst])[0], a, facts, instances[k],
          pairs, zeros)
      details[k].pop("_cert", None)
      details[k].pop("embedding", None)
    return [details[k] for k in range(len(instances))]
  settings, batch = stream_settings, slots
  if first_check == "auto" or (objective == "solve" and first_check is None):
    # Solve mode is decided by the host checks.
    first_check = placement.first_check_age(settings, *a.shape, m_pad)
  facts.device = device = (
      device_checks.DeviceA.for_mesh(facts.source, mesh, m_pad)
      if len(instances) >= placement.DEVICE_CHECKS_MIN else None)
  shared, basis = rotation.prepare(a)
  cli.trim_heap()  # prepare's float64 blocks (0.1 GB at 262144 x 640).
  meter = cli.Progress(len(instances), progress if isinstance(
      progress, str) else "LP instances") if progress else None
  details = [None] * len(instances)
  order = np.random.default_rng(0).permutation(len(instances))
  chained = objective == "decide" and any(
      it.chain is not None for it in instances)
  queue = [instances[i] for i in order]  # Stream index k is instance order[k].
  host = host_checks.HostChecks(
      facts, queue, basis, policy, delta, objective, tolerance, finish_after,
      first_check, placement.device_finish_after(mesh))
  carry = host_checks.Carry(host)  # Nested subsets: bisection per chain.
  known = carry.feed

  runs = stream.run(shared, queue, settings, batch, m_pad, mesh,
                    (host.solved if objective == "solve" else host.decide)
                    if first_check else None, first_check or 100,
                    verify=host.verify if objective == "decide" else None,
                    feed=known if chained else None,
                    started=None if device is None else device.warm_up)
  cost = records.CostModel(  # An open instance ends at the finish or cap.
      [it.subset.size for it in queue], batch,
      min(settings.max_iters, finish_after or settings.max_iters),
      known.expected_runs if chained else None)
  trimmed = time.perf_counter()
  # The host checks run as the stream pulls.
  with threadpoolctl.threadpool_limits(placement.host_blas_threads(mesh),
                                      user_api="blas"):
    for done, out in enumerate(runs, start=1):
      inst = queue[out.index]
      x = None if out.x_rot is None else rotation.to_original(basis, out.x_rot)
      if out.decided:
        details[order[out.index]] = dict(out.decided,
                                         iterations=out.iterations)
      elif objective == "solve":  # Capped: the best bracket it had.
        start = time.perf_counter()
        now = bracket.tighter(host.held.get(out.index), bracket.Held(
            *bracket.bracket(facts, inst.subset, inst.y, x, out.mu)))
        details[order[out.index]] = records.bracketed(
            facts, inst, *now[:3], out.iterations, start, delta, policy,
            tolerance, now.source)
      else:
        details[order[out.index]] = records.decide(
            facts, inst, out.claim, x, out.mu, out.iterations, policy, delta,
            exact_fallback)
      detail = details[order[out.index]]
      cert = detail.pop("_cert", None)
      if (embeddings and objective == "solve" and cert and
          cert.get("x") is not None and np.isfinite(detail["upper_bound"])):
        detail["embedding"] = scale * np.asarray(cert["x"], np.float64)
      known.learn(out.index, detail["verdict"], cert)
      if (chained and detail["verdict"] == "feasible" and out.x_rot is not
          None and cert and cert.get("x") is not None and
          np.isfinite(cert.get("t_upper", np.nan))):
        carry.down(out.index, cert)
      cost.finished(out.index, out.iterations, detail.get(
          "verify_seconds", 0.0), out.running if out.x_rot is not None else
                    cost.running, out.clock or cost.clock)
      if time.perf_counter() - trimmed > TRIM_EVERY_S:
        cli.trim_heap()
        trimmed = time.perf_counter()
      if meter:
        meter.update(done, cost.eta())
  return details


# The host checks' freed float64 temporaries go back to the OS (malloc_trim)
# at most this often: without it glibc's heap creeps up over a run on a
# large head; a trim after every instance would cost a few % of the band's
# time.
TRIM_EVERY_S = 2.0


def _quantile(values, p: float) -> float:
  """np.quantile where -inf (a ray) may be among the values: interpolating
  next to -inf gives -inf, not inf - inf = nan."""
  with np.errstate(invalid="ignore"):
    q = float(np.quantile(values, p))
  return -np.inf if np.isnan(q) else q


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
    decided = counts["feasible"] + counts["infeasible"]  # Before t* stats.
    solve = [x for x in details if "bracket_closed" in x]
    if solve:  # Solve mode: the distribution of t* (closed brackets).
      t_star = np.array([x["upper_bound"] for x in solve
                         if x["bracket_closed"]])
      q = (lambda p: _quantile(t_star, p)) if t_star.size else (
          lambda p: float("nan"))
      counts.update(t_star_q10=q(0.1), t_star_median=q(0.5),
                    t_star_q90=q(0.9),
                    unclosed=sum(not x["bracket_closed"] for x in solve))
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
          nested: bool | None = None, **solve_kwargs) -> list[dict]:
  """Figure-1-style curve: `trials` random subsets for each m."""
  return sweeps(a, m_values, trials, (problem,), seed, eps, delta, targets,
                subsets, nested, **solve_kwargs)[problem]


def sweeps(a, m_values, trials: int, problems=("logits", "probs"),
           seed: int = 0, eps: float = 0.05, delta: float = 0.1,
           targets=None, subsets=None, nested: bool | None = None,
           **solve_kwargs) -> dict:
  """Figure 1: `sweep` for several problems, solved as one stream (one
  `rotation.prepare` of A, one compile, one progress line whose ETA covers all
  of them).

  m_values: one list for every problem, or {problem: list} (then
  `problems` is its keys). Every problem draws from its own
  `default_rng(seed)`, so each curve is the one `sweep(..., problem, seed)`
  gives. Returns {problem: records}.

  `nested` (None: True unless `subsets` are given): trial k's subsets
  are the first m tokens of one random permutation (S_m ⊂ S_m' for
  m < m'; each still a uniform random m-subset, so each m's fraction
  estimates the same probability, while the curve's points become
  correlated along m; for 'probs' the first m of one trial's U[0.1, 1.1]
  draws are its p, likewise). A trial's instances then form a chain
  (lp.chains): most are decided from the certificates of the few solved
  around the trial's transition.
  """
  eps, delta = prescribed.check_eps_delta(eps, delta)
  if isinstance(m_values, dict):
    problems = tuple(m_values)
  if isinstance(problems, str) or not problems:
    raise ValueError(f"`problems` must be a non-empty list of {PROBLEMS}; "
                     f"got {problems!r}.")
  for problem in problems:
    checks.one_of("problem", problem, PROBLEMS)
  m_of = {p: list(m_values[p] if isinstance(m_values, dict) else m_values)
          for p in dict.fromkeys(problems)}
  a = np.asarray(a)
  _check_memory(checks.positive_int("trials", trials),
                [m for ms in m_of.values() for m in ms])
  if nested is None:
    nested = subsets is None
  if nested and subsets is not None:
    raise ValueError("`nested` draws its own subsets (the first m tokens of "
                     "one random permutation per trial); leave out "
                     "`subsets`.")
  per_problem = sweep_instances(a.shape[0], m_of, trials, seed, eps, delta,
                                targets, subsets, nested)
  flat = solve(a, [it for groups in per_problem.values() for group in groups
                   for it in group], delta=delta, **solve_kwargs)
  out, start = {}, 0
  for problem, ms in m_of.items():
    chunks = [flat[start + i * trials:start + (i + 1) * trials]
              for i in range(len(ms))]
    start += trials * len(ms)
    out[problem] = summarize(ms, chunks, problem)
  return out


def sweep_instances(n: int, m_of: dict, trials: int, seed: int = 0,
                    eps: float = 0.05, delta: float = 0.1, targets=None,
                    subsets=None, nested: bool = True) -> dict:
  """`sweeps`' instances: {problem: [[trials instances] per m]} for
  m_of = {problem: m list}, each problem from its own default_rng(seed);
  `nested`: trial k's subsets (and p) are prefixes of one draw, the
  trial's chain."""
  per_problem = {}
  for number, (problem, ms) in enumerate(m_of.items()):
    rng = np.random.default_rng(seed)
    if nested and ms:
      checks.int_in_range("m", max(ms), 1, n - 1, "a proper subset "
                          f"of the N = {n} tokens")
      firsts = [rng.choice(n, size=max(ms), replace=False)
                for _ in range(trials)]  # Subsets and p: prefixes of these.
      draws = rng.uniform(0.1, 1.1, size=(trials, max(ms)))
      per_problem[problem] = [[
          dataclasses.replace(it, chain=number * trials + k)
          for k, it in enumerate(make_instances(
              n, m, trials, problem, rng, eps, delta, targets,
              [first[:m] for first in firsts], draws))] for m in ms]
    else:
      per_problem[problem] = [make_instances(
          n, m, trials, problem, rng, eps, delta, targets, subsets)
                              for m in ms]
  return per_problem


class MStar(NamedTuple):
  """LP m* of a matrix, bracketed by how undecided instances are counted."""
  lower: int  # Undecided counted as not selectable (a certified m*).
  upper: int  # Undecided counted as selectable.
  probes: list  # (m, fraction, undecided) per probe, in the order run.


def _check_memory(trials: int, m_values) -> None:
  """Fails fast when the instances and their per-trial details (kept for
  the output) cannot fit in half the memory, instead of allocating until
  killed."""
  checks.fits_in_memory(
      2 * trials * sum(2048 + 48 * m for m in m_values),  # Generous.
      f"`trials` = {trials} over {len(m_values)} m values (the instances "
      "and their details, twice over)", "Lower `trials` or split the sweep.")


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
