"""The host's float64 checks of the stream's running slots (topm.solve).

`HostChecks` holds what the checks of one `topm.solve` call share: the
matrix facts, the queue of instances in stream order, the certificate
policies, which instances had their exact finish, solve mode's tightest
brackets. Its methods are the stream's callbacks:

  decide  (stream.Decide, decide mode): a running slot's iterate, checked
          for a FEASIBLE vertex, a global INFEASIBLE certificate, and at
          `finish_after` (or early in the stream's idle tail) the exact
          finish (lp.finish);
  solved  (stream.Decide, solve mode): a certified bracket on t*, released
          once closed to `tolerance` (or after the due finish);
  verify  (stream.Verify): an in-loop nomination, checked at once.

`Carry` settles the members of nested chains from the verdicts of others
(lp.chains): FEASIBLE embeddings carried down, checked in float64 in
batches; INFEASIBLE proofs carried up.
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np

from bottleneck.lp import (admm, bracket, certificates, chain_feed, chains,
                           finish, polish, records, rotation, verdicts)

# In the stream's idle tail an instance open at this many first checks'
# age gets its exact finish at once rather than at `finish_after`: one slow
# instance there holds the whole run (paper-size Figure 1: an INFEASIBLE
# one left open by ADMM until age 1600 is decided sooner from an earlier
# iterate).
IDLE_FINISH = 4


def first_check_age(settings: admm.Settings, n: int, d: int,
                    m_pad: int) -> int:
  """The age of an instance's first host check: 100, or 200 where a check
  (float64 work ~d^3) outweighs 64 iterations of one instance (~K d, K its
  working set). A failed check costs its time and an early success saves
  iterations: on a 2-core CPU, 200 made the band's instances at 50257 x
  768 faster, and 100 the report's 8192 x 256 sweep (every row in the
  working set)."""
  k = admm.working_set_size(settings, n, d, m_pad)
  return 200 if d * d > 64 * k else 100


# BLAS threads of the host checks beside an accelerator. On a 16-core H100
# machine OpenBLAS's default of 16 threads made paper-size Figure 1 several
# times slower than 1 thread; 4 was the fastest.
ACCELERATOR_BLAS_THREADS = 4


def host_blas_threads(mesh) -> int:
  """BLAS threads for the float64 host checks (polish, certificates,
  lp.finish), which run one at a time beside the devices' iterations.
  CPU devices: one, XLA's iterations use the cores (on a 2-core CPU two
  threads made the checks and the finish slower). Accelerators:
  ACCELERATOR_BLAS_THREADS (at most the host's cores)."""
  if mesh.devices.flat[0].platform == "cpu":
    return 1
  cores = len(os.sched_getaffinity(0)) if hasattr(
      os, "sched_getaffinity") else (os.cpu_count() or 1)
  return min(ACCELERATOR_BLAS_THREADS, cores)


class HostChecks:
  """Callbacks of lp.stream for one solve (see the module docstring)."""

  def __init__(self, facts, queue, basis, *, policy: verdicts.Policy,
               delta: float, objective: str, tolerance: float,
               finish_after: int | None, first_check: int,
               device_finish_after: float | None = None):
    self.facts, self.queue, self.basis = facts, queue, basis
    # The exact finish moves to the device (finish.Settings.on_device) once
    # the host's have taken this many seconds (None: never).
    self.device_finish_after, self.finish_seconds = device_finish_after, 0.0
    self.policy, self.delta, self.objective = policy, delta, objective
    self.tolerance, self.finish_after = tolerance, finish_after
    self.first_check = first_check
    # Mid-run checks: the first support (a failed try costs little); after
    # a collapse (verdicts.Policy.widen) the widest too, which
    # certifies Gemma 3's such instances at once where they collapsed
    # until 800-1600.
    self.early = dataclasses.replace(
        policy, mid_run=True, support_factors=policy.support_factors[:1])
    self.wide = dataclasses.replace(
        policy, widen="collapsed", mid_run=True,
        support_factors=(policy.support_factors[:1] +
                         policy.support_factors[-1:]))
    self.nominated = dataclasses.replace(policy, mid_run=True)
    self.collapsed = set()  # Instances whose projection collapsed.
    self.tried, self.tried_early = set(), set()  # Given their finish.
    self.held = {}  # Solve mode: the tightest bracket each has had.

  def finish_due(self, index: int, age: int) -> bool:
    """The exact finish is due (once each)."""
    return (self.finish_after is not None and age >= self.finish_after and
            index not in self.tried)

  def exact_finish(self, index, x, u, age, now=False):
    """lp.finish's bracket, certified; once each when due, and once before
    that when asked to (`now`); None if not run or without a point."""
    if self.finish_after is None:
      return None
    before_due = age < self.finish_after
    done = self.tried_early if before_due else self.tried
    if index in done or (before_due and not now):
      return None
    done.add(index)
    inst = self.queue[index]
    threshold = inst.threshold if self.objective == "decide" else None
    after = self.device_finish_after
    on_device = after is not None and self.finish_seconds >= after
    start = time.perf_counter()
    x_w, duals, _, info = finish.solve(  # Decide: stops once a side is
        self.facts, inst.subset, inst.y, x, u,  # clear.
        s=finish.Settings(on_device=on_device), threshold=threshold)
    if not on_device:
      self.finish_seconds += time.perf_counter() - start
    if x_w is None:
      return None
    side = info.get("settled")  # Decide: only the side it settled.
    return bracket.bracket(
        self.facts, inst.subset, inst.y,
        None if side == "infeasible" else x_w, None,
        duals=() if side == "feasible" else duals, threshold=threshold)

  def solved(self, index, x_rot, u, t, age, idle=False):
    """Solve mode: a record once the bracket on t* is closed, else None."""
    del t, idle
    start = time.perf_counter()
    facts, inst = self.facts, self.queue[index]
    x = rotation.to_original(self.basis, x_rot)
    now = bracket.Held(*bracket.bracket(facts, inst.subset, inst.y, x, u))
    due = self.finish_due(index, age)
    exact = None
    if not bracket.closed(now.lower, now.upper, self.tolerance):
      # Below the threshold with no lower bound, on a head with rays: ADMM
      # proves t* = -inf only once its iterate has run far along the ray
      # (Gemma 3 at m = 40: age 1600), the finish finds it at once.
      ray_likely = (now.upper < inst.threshold and now.lower == -np.inf
                    and facts.one_sided)
      exact = self.exact_finish(index, x, u, age, now=ray_likely)
      if exact is not None:
        now = bracket.tighter(now, bracket.Held(*exact, "ipm"))
    self.held[index] = now = bracket.tighter(self.held.get(index), now)
    # After the due finish, ADMM cannot close what the interior point's
    # certificates leave open (a degenerate optimum: Gemma 3's band):
    # released with that bracket, unclosed, not iterated to the cap.
    if not (bracket.closed(now.lower, now.upper, self.tolerance) or (
        due and exact is not None)):
      return None
    return records.bracketed(facts, inst, *now[:3], iterations=age,
                             start=start, delta=self.delta,
                             policy=self.policy, tolerance=self.tolerance,
                             source=now.source)

  def decide(self, index, x_rot, u, t, age, idle=False):
    """Decide mode: a record once a certificate holds, else None. In the
    stream's idle tail an instance gets its exact finish early."""
    start = time.perf_counter()
    facts, inst, delta = self.facts, self.queue[index], self.delta
    band = 1e-3 * abs(inst.threshold)
    due = self.finish_due(index, age)
    finish_now = idle and age >= IDLE_FINISH * self.first_check
    if t < inst.threshold - band and not (due or finish_now):
      return None  # Heading below: the in-loop full pass will certify it.
    x = rotation.to_original(self.basis, x_rot)
    if t <= inst.threshold + band:  # The band: the basis of the largest
      # logits at x, a primal vertex and its dual point from one LU.
      x_v, mu_v = polish.basis(facts, inst.subset, inst.y, x)
      if x_v is not None and certificates.check_feasible(
          facts, inst.subset, inst.y, x_v, inst.threshold)["ok"]:
        out = records.verify(facts, inst, "feasible", x_v, None,
                             policy=self.early, delta=delta)
        if out[0] != "undecided":
          return records.detail(inst, *out, source="admm", iterations=age,
                                start=start)
      if mu_v is not None:
        cert = certificates.check_infeasible_global(
            facts, inst.subset, inst.y, mu_v, inst.threshold)
        if cert["ok"]:
          return records.detail(inst, "infeasible", cert["t_lower"], cert,
                                source="admm", iterations=age, start=start)
    out = records.verify(
        facts, inst, "infeasible", x, u,
        policy=self.wide if index in self.collapsed else self.early,
        delta=delta)
    if out[0] != "undecided":
      return records.detail(inst, *out, source="admm", iterations=age,
                            start=start)
    if out[2].get("collapsed"):
      self.collapsed.add(index)
    exact = self.exact_finish(index, x, u, age, now=finish_now)
    if exact is not None and exact[1] < inst.threshold:
      out = records.verify(facts, inst, "feasible", exact[2]["x"], None,
                           policy=self.early, delta=delta)
      if out[0] != "undecided":
        return records.detail(inst, *out, source="ipm", iterations=age,
                              start=start)
    if exact is not None and exact[0] >= inst.threshold:
      cert = dict(exact[2], kind="global", ok=True,
                  margin=float(inst.threshold - exact[0]))
      return records.detail(inst, "infeasible", exact[0], cert,
                            source="ipm", iterations=age, start=start)
    return None

  def verify(self, index, claim, x_rot, mu):
    """An in-loop nomination, checked at once: a record, or None."""
    start = time.perf_counter()
    inst = self.queue[index]
    out = records.verify(self.facts, inst, claim,
                         rotation.to_original(self.basis, x_rot), mu,
                         policy=self.nominated, delta=self.delta)
    return None if out[0] == "undecided" else records.detail(
        inst, *out, source="admm", iterations=0, start=start)


class Carry:
  """Verdicts carried along nested chains (lp.chains), each checked in
  float64: `settle` is chain_feed.Feed's callback, `down` runs after a member
  is solved FEASIBLE."""

  def __init__(self, checks: HostChecks):
    self.checks = checks
    self.ready = {}  # Chain members certified FEASIBLE from a solved one.
    # Members with a carried embedding still to check (`flush`): child ->
    # (embedding, the solved member's index, its certificate).
    self.pending = {}
    self.feed = chain_feed.Feed(checks.queue, self.settle)

  def down(self, index: int, cert: dict) -> None:
    """A solved FEASIBLE member's embedding, carried to every member below
    it: by chains.inherit_feasible where no probabilities are prescribed
    (and no ray is looked for), else left `pending` for `flush`."""
    facts, queue = self.checks.facts, self.checks.queue
    parent = queue[index]
    for child in self.feed.below(index):
      if child in self.ready or child in self.pending:
        continue
      inst = queue[child]
      if inst.p is None and not facts.one_sided:  # No probabilities, no
        start = time.perf_counter()  # ray to look for: no pass over A.
        inherited = chains.inherit_feasible(
            facts, parent.subset, cert["x"], parent_upper=cert["t_upper"],
            subset=inst.subset, y=inst.y, threshold=inst.threshold)
        if inherited is not None:
          self.ready[child] = records.detail(
              inst, "feasible", inherited["t_upper"], inherited,
              source="chain", iterations=0, start=start)
          continue
      x = chains.feasible_candidate(
          facts, parent.subset, cert["x"], parent_upper=cert["t_upper"],
          subset=inst.subset, y=inst.y, threshold=inst.threshold)
      if x is not None:
        self.pending[child] = (x, index, cert)

  def flush(self) -> None:
    """Checks the pending members: all those below every member solved
    FEASIBLE since the last flush, i.e. in one visit of the stream, scored
    together (`_check`). A candidate that fails gets one repair: the rows
    outside S' that it lifted over the midpoint of the parent's bound and
    the threshold are held where the parent has them (chains.
    feasible_candidate's `hold`), and the repaired ones are checked
    together. Paper-size Figure 1's probs problem at 20 subsets per m: 34
    of 302 carried candidates failed, 30 of them were repaired; each
    failure had cost an LP."""
    queue = self.checks.queue
    jobs, self.pending = self.pending, {}
    repaired, prep = [], {}
    for child, point in self._check([(c, job[0])
                                     for c, job in jobs.items()]):
      start = time.perf_counter()
      _, parent, cert = jobs[child]
      inst, above = queue[child], queue[parent].subset
      hold = self._lifted(point, above, 0.5 * (cert["t_upper"] +
                                               inst.threshold))
      x = None if hold is None else chains.feasible_candidate(
          self.checks.facts, above, cert["x"], parent_upper=cert["t_upper"],
          subset=inst.subset, y=inst.y, threshold=inst.threshold, hold=hold)
      if x is not None:
        repaired.append((child, x))
        prep[child] = time.perf_counter() - start
    self._check(repaired, prep)

  def _lifted(self, point, above, level):
    """The rows outside S' whose float32 logit at the checked point (its
    scores are still cached unless a later chunk of `_check` evicted
    them) exceeds `level`; None if there are none or too many to hold (S'
    and them need full row rank: fewer than d rows)."""
    facts = self.checks.facts
    scores = facts.scores(point)
    scores[above] = -np.inf
    hold = np.flatnonzero(scores > level)
    if not 0 < hold.size < facts.a.shape[1] - above.size:
      return None
    return hold

  def _check(self, jobs, prep=None) -> list:
    """Checks (child, embedding) pairs in float64, scored together by
    GEMMs of up to `score_slots` points (MatrixFacts.prime: a GEMM's cost
    is mostly its pass over A, so more points cost little more);
    certified ones go to `ready`. Returns (child,
    the point checked: the embedding moved onto A_S x = y) of those that
    failed. `prep`: seconds already spent on a child's embedding."""
    facts, queue = self.checks.facts, self.checks.queue
    failed = []
    for first in range(0, len(jobs), facts.score_slots):  # Cached scores.
      chunk = jobs[first:first + facts.score_slots]
      primed = time.perf_counter()
      points = [certificates.projected(facts, queue[c].subset, queue[c].y, x)
                for c, x in chunk]  # (check_feasible projects x the same
      facts.prime(points)  # way: its scores are these.)
      share = (time.perf_counter() - primed) / len(chunk)
      for (child, x), point in zip(chunk, points):
        start = time.perf_counter() - share - (prep or {}).get(child, 0.0)
        out = records.verify(facts, queue[child], "feasible", x, None,
                             policy=self.checks.early,
                             delta=self.checks.delta)
        if out[0] == "feasible":
          self.ready[child] = records.detail(
              queue[child], *out, source="chain", iterations=0, start=start)
        else:
          failed.append((child, point))
    return failed

  def settle(self, index: int):
    """A verdict its chain implies, or None."""
    if self.pending:
      self.flush()
    start = time.perf_counter()
    if index in self.ready:
      return self.ready.pop(index)
    cert = self.feed.infeasible(index)
    if cert is not None:
      return records.detail(self.checks.queue[index], "infeasible",
                            cert["t_lower"], cert, source="chain",
                            iterations=0, start=start)
    return None
