"""Top-m selectability of an OPM by LP (seed 001, Section 6, Figs 1/3, App. D).

For random m-subsets S of the tokens of a matrix A, decide whether an
embedding makes S the m most likely tokens (the problems of
`bottleneck.lp.instances`: equal logits, prescribed or natural
probabilities). The front of `bottleneck.lp` (its driver composes the
layers):

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
from typing import NamedTuple

import numpy as np

from bottleneck import checks, prescribed
from bottleneck.lp import admm, driver, verdicts
from bottleneck.lp.instances import PROBLEMS, Instance, make_instances

__all__ = ["PROBLEMS", "Instance", "make_instances", "solve", "summarize",
           "sweep", "sweeps", "sweep_instances", "MStar", "m_star_search"]


def solve(a, instances, *, settings: admm.Settings = admm.Settings(),
          batch: int = 32, exact_fallback: bool = False, delta: float = 0.1,
          devices=None, progress: bool | str = False,
          m_pad: int | None = None,
          policy: verdicts.Policy = verdicts.Policy(),
          first_check: int | str | None = "auto", objective: str = "decide",
          tolerance: float = 1e-6, working_set: int | None = None,
          finish_after: int | None = 1600,
          embeddings: bool = False) -> list[dict]:
  """Decides every instance; returns one detail dict per instance, in order.

  Every setting is a keyword argument (lp.driver.Options holds them).

  `batch` slots iterate together with continuous batching (lp.stream). One
  compile per (matrix shape, batch, m_pad); m_pad defaults to the largest m
  (pass a fixed one to reuse a compile). Every instance still running at
  age first_check * 2^k is checked in float64 (the vertex its largest
  logits name, `polish.vertex`, as a FEASIBLE certificate; its dual iterate
  as a global INFEASIBLE one, `polish.dual`; a ray) and stops as soon as
  one holds
  (`first_check=None`: only the solver's own in-loop nominations; 'auto':
  `lp.host_checks.first_check_age`).
  Instances enter the slots in a fixed pseudo-random order (an ETA true
  from the start).
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
  opts = driver.Options(
      settings=settings, batch=batch, exact_fallback=exact_fallback,
      delta=delta, devices=devices, policy=policy, first_check=first_check,
      objective=objective, tolerance=tolerance, working_set=working_set,
      finish_after=finish_after, embeddings=embeddings)
  return driver.solve(a, instances, opts, progress=progress, m_pad=m_pad)


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
          *, eps: float = 0.05, delta: float = 0.1, targets=None,
          subsets=None, nested: bool | None = None,
          **solve_kwargs) -> list[dict]:
  """Figure-1-style curve: `trials` random subsets for each m."""
  return sweeps(a, m_values, trials, (problem,), seed, eps=eps, delta=delta,
                targets=targets, subsets=subsets, nested=nested,
                **solve_kwargs)[problem]


def sweeps(a, m_values, trials: int, problems=("logits", "probs"),
           seed: int = 0, *, eps: float = 0.05, delta: float = 0.1,
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
  per_problem = sweep_instances(a.shape[0], m_of, trials, seed, eps=eps,
                                delta=delta, targets=targets,
                                subsets=subsets, nested=nested)
  flat = solve(a, [it for groups in per_problem.values() for group in groups
                   for it in group], delta=delta, **solve_kwargs)
  out, start = {}, 0
  for problem, ms in m_of.items():
    chunks = [flat[start + i * trials:start + (i + 1) * trials]
              for i in range(len(ms))]
    start += trials * len(ms)
    out[problem] = summarize(ms, chunks, problem)
  return out


def sweep_instances(n: int, m_of: dict, trials: int, seed: int = 0, *,
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
              n, m, trials, problem, rng, eps=eps, delta=delta,
              targets=targets, subsets=[first[:m] for first in firsts],
              draws=draws))] for m in ms]
    else:
      per_problem[problem] = [make_instances(
          n, m, trials, problem, rng, eps=eps, delta=delta, targets=targets,
          subsets=subsets) for m in ms]
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
