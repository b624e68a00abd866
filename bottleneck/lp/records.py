"""One LP instance's record, from the solver's claim to a certified verdict
(seed 001, Section 6): the host-side checks `bottleneck.topm.solve` runs on
each candidate, HiGHS as the optional fallback, the record's fields, the
input checks on subsets, and the ETA model of a stream of instances."""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import NamedTuple

import numpy as np

from bottleneck.lp import bracket, certificates, chains, exact, verdicts
from bottleneck.lp.facts import head_norms
from bottleneck.lp.instances import Instance


def repeated_rows(facts, subset) -> list[tuple[int, int]]:
  """(i, j) positions in `subset` whose matrix rows are identical (j > i,
  i the group's first): such tokens always have equal logits. All-zero
  rows are `zero_rows`' (not paired here)."""
  first, pairs = {}, []
  zero = facts.row_norms[subset] == 0
  for pos, group in enumerate(facts.twins[subset].tolist()):
    if group >= 0 and not zero[pos]:
      if group in first:
        pairs.append((first[group], pos))
      else:
        first[group] = pos
  return pairs


def zero_rows(facts, subset) -> list[int]:
  """Positions in `subset` whose matrix rows are all zero (a padded
  vocabulary's rows): such a token's logit is 0 for every embedding. A
  float64 row norm is 0 only for a row of exact zeros (a float32 entry's
  square never underflows in float64)."""
  return np.flatnonzero(facts.row_norms[subset] == 0).tolist()


def special_subsets(facts, instances) -> dict[int, tuple[list, list]]:
  """{instance: (its repeated_rows, its zero_rows)} where it has either (a
  cheap scan)."""
  out = {}
  for k, it in enumerate(instances):
    pairs, zeros = repeated_rows(facts, it.subset), zero_rows(facts, it.subset)
    if pairs or zeros:
      out[k] = (pairs, zeros)
  return out


def check_subsets(facts, instances, special=None) -> dict:
  """Every A_S, repeated and all-zero rows left out, has full row rank (else
  no x prescribes y_S); returns `special` (default: special_subsets)."""
  if special is None:
    special = special_subsets(facts, instances)
  full = {}  # chain -> rows of a member of full rank.
  for k in sorted(range(len(instances)),  # Largest first: rows inside a
                  key=lambda k: -instances[k].subset.size):  # full-rank
    it = instances[k]  # member's rows are independent (lp.chains): no SVD.
    pairs, zeros = special.get(k, ((), ()))
    rows = np.delete(it.subset, [j for _, j in pairs] + list(zeros))
    if it.chain in full and chains.positions(rows, full[it.chain]) is not None:
      continue
    rank = np.linalg.matrix_rank(facts.rows(rows))
    if rank < rows.size:
      raise ValueError(
          f"`matrix`: the rows of tokens {it.subset.tolist()[:8]}"
          f"{'...' if it.subset.size > 8 else ''} (a subset of m = "
          f"{it.subset.size}) are linearly dependent (rank {rank} < "
          f"{rows.size}, repeated and all-zero rows aside): the LP needs "
          "A_S of full row rank; a matrix of rank r answers only m < r.")
    if it.chain is not None:
      full.setdefault(it.chain, rows)
  return special


class Record(NamedTuple):
  """One instance's outcome: `fields`, the JSON-able record topm.solve
  returns, and `cert`, the float64-checked evidence behind its verdict
  (lp.chains carries it along a chain; the caller never sees it)."""
  fields: dict
  cert: dict | None = None


def solve_special(solve_one, a, facts, inst: Instance, *, pairs,
                  zeros) -> dict:
  """An instance whose subset holds all-zero rows (`zeros`) or identical
  rows i, j (`pairs`).

  A zero row's equality 0 = y_i contradicts any y_i != 0: INFEASIBLE, t* =
  +inf, certificate 'zero_row' (exact: the row's float64 entries are 0);
  with y_i = 0 it holds for every x and the token is left out. Identical
  rows' equalities repeat (y_i = y_j: token j left out) or contradict (y_i
  != y_j: INFEASIBLE, certificate 'twin_rows', checked on the float64
  rows). What is left is solved on A without the left-out rows by
  `solve_one(a, instance)`."""
  start = time.perf_counter()
  for i in zeros:
    if inst.y[i] != 0:
      zero = not np.any(facts.rows(inst.subset[[i]]))
      return detail(inst, "infeasible" if zero else "undecided", np.inf,
                    {"ok": zero, "kind": "zero_row"}, source="zero_row",
                    iterations=0, start=start).fields
  for i, j in pairs:
    if inst.y[i] != inst.y[j]:
      rows = inst.subset[[i, j]]
      same = bool(np.array_equal(facts.rows(rows[:1]), facts.rows(rows[1:])))
      return detail(inst, "infeasible" if same else "undecided", np.inf,
                    {"ok": same, "kind": "twin_rows"}, source="twin_rows",
                    iterations=0, start=start).fields
  drop = [j for _, j in pairs] + list(zeros)
  keep_rows = np.setdiff1d(np.arange(a.shape[0]), inst.subset[drop])
  position = np.full(a.shape[0], -1)
  position[keep_rows] = np.arange(keep_rows.size)
  keep = np.delete(np.arange(inst.subset.size), drop)
  reduced = dataclasses.replace(
      inst, subset=position[inst.subset[keep]], y=inst.y[keep],
      p=None if inst.p is None else inst.p[keep], chain=None)
  out = solve_one(a[keep_rows], reduced)
  out.update(subset=inst.subset.tolist(),
             repeated_rows=inst.subset[drop].tolist())
  return out


RECENT = 64  # Runs whose mean prices a chained stream's runs to come.


class CostModel:
  """The LP's ETA for a stream of `batch` slots.

  Seconds = tau * (global iterations left) + host seconds left. tau: the
  seconds per global iteration of the batch, measured since the first
  instance finished (compilation and host time excluded). Iterations left:
  the larger of the critical path (the running instance with most left)
  and all the work left spread over the batch. An instance of m is
  expected to need the mean over the finished instances of m and the
  running ones, a running one of age a counted at min(2 a, cap): the
  iteration counts are heavy-tailed (100 to the cap) and the quick ones
  finish first, so an instance that has survived to age a is expected to
  need about a more (and the finished ones alone would bias the ETA
  low). Host seconds (float64 checks, lp.finish): the mean per finished
  instance of the same m (else of all). The queue is shuffled, so every m
  is sampled early. O(distinct m + batch) per update.

  Chains (lp.chains): an instance finished with 0 iterations was settled
  from its chain, not run. `runs` = {key: how many instances of that key
  are expected to run in all}, or a callable returning it at each update
  (lp.chain_feed.Feed.expected_runs); the others are expected to be settled,
  at the mean host seconds of the settled ones. A chain runs its members
  nearest its transition (the hard ones) last, so runs to come are priced
  at least at the mean of the last `RECENT` runs: with per-m means alone
  the ETA ran 30-40 % short on SmolLM2's head (3 of 33 progress lines
  within 25 % of the time left; 26 of 31 with this)."""

  def __init__(self, m_of_instance, batch: int = 1, cap: int = 5000,
               runs: dict | None = None):
    """`cap`: the age at which an open instance ends (the iteration cap,
    or the age of the exact finish). `m_of_instance`: each instance's key
    (its m)."""
    self.m = list(m_of_instance)
    self.batch, self.cap, self.runs = max(batch, 1), cap, runs
    self.left = collections.Counter(self.m)  # Unfinished instances per m.
    self.sum = collections.Counter()  # Finished iterations per m.
    self.count = collections.Counter()  # Finished instances per m (run).
    self.host = collections.Counter()  # Host seconds per m (run).
    self.settled = collections.Counter()  # Settled instances per key,
    self.settled_host = 0.0  # and their host seconds in all.
    self.recent = collections.deque(maxlen=RECENT)  # (iterations, host
    # seconds) of the last runs: chains run their hard members last.
    self.t0 = self.t_last = self.clock0 = None
    self.clock = 0
    self.host_after_t0 = 0.0
    self.running = ()
    self.done = set()

  def finished(self, index: int, iterations: int, host_seconds: float = 0.0,
               running=(), clock: int = 0) -> None:
    """Instance `index` is done; `running`: (index, age) of the instances
    still iterating, `clock` the global iteration (lp.stream.Finished)."""
    now = time.perf_counter()
    if self.t0 is None:
      self.t0, self.clock0 = now, clock
    else:
      self.host_after_t0 += host_seconds
    self.t_last, self.clock = now, max(self.clock, clock)
    m = self.m[index]
    self.done.add(index)
    self.left[m] -= 1
    if self.runs is not None and iterations == 0:
      self.settled[m] += 1
      self.settled_host += host_seconds
      return
    self.sum[m] += max(iterations, 1)
    self.count[m] += 1
    self.host[m] += host_seconds
    self.recent.append((max(iterations, 1), host_seconds))
    self.running = tuple(running)

  def eta(self) -> float | None:
    if self.t_last == self.t0 or self.clock <= self.clock0:
      return None
    busy = max(self.t_last - self.t0 - self.host_after_t0, 0.0)
    tau = busy / (self.clock - self.clock0)
    ages = collections.defaultdict(list)
    for index, age in self.running:  # (Some may have finished since.)
      if index not in self.done:
        ages[self.m[index]].append(age)
    expect = lambda age: min(2 * age, self.cap)
    total_n = sum(self.count.values())
    every_host = sum(self.host.values()) / total_n
    every = (sum(self.sum.values()) + sum(
        expect(a) for group in ages.values() for a in group)) / (
            total_n + sum(map(len, ages.values())))
    work = path = host = 0.0
    settle_host = self.settled_host / max(sum(self.settled.values()), 1)
    runs = self.runs() if callable(self.runs) else self.runs
    recent_mean = np.mean([r[0] for r in self.recent]) if self.recent else 0
    recent_host = np.mean([r[1] for r in self.recent]) if self.recent else 0
    for m, n in self.left.items():
      if not n:
        continue
      seen = self.count[m] + len(ages[m])
      mean = (self.sum[m] + sum(map(expect, ages[m]))) / seen if seen else (
          every)
      for age in ages[m]:
        rest = max(mean, expect(age)) - age
        work, path = work + rest, max(path, rest)
      queued = n - len(ages[m])
      host_m = self.host[m] / self.count[m] if self.count[m] else every_host
      to_run = queued
      if runs is not None:  # A chain's later runs are nearer its
        to_run = min(queued, max(0, runs.get(m, 0) - seen))  # transition:
        mean = max(mean, recent_mean)  # priced at least as the last ones.
        host_m = max(host_m, recent_host)
      work += to_run * mean
      host += (n - queued + to_run) * host_m + (queued - to_run) * settle_host
    return tau * max(path, work / self.batch) + host


def power_of_two_factor(a) -> float:
  """The 2^k by which `power_of_two_scaled` multiplies A (1.0: unscaled)."""
  rms = float(np.sqrt(np.mean(head_norms(a[::max(
      1, len(a) // 65536)]) ** 2)))
  k = -int(np.round(np.log2(rms))) if rms > 0 else 0
  return 1.0 if abs(k) < 3 else 2.0 ** k


def power_of_two_scaled(a, in_place: bool = False,
                        factor: float | None = None):
  """A times 2^k with |A|'s RMS row norm in [1/8, 8]: every t*, verdict and
  multiplier is unchanged (x scales by 2^-k) and the product is exact, but
  absolute tolerances of the solver and the rounding bounds then see a
  matrix of unit size (a matrix scaled by 1e6 or 1e-6 decides alike).
  `in_place`: a writable A is scaled where it is instead of copied (a
  caller that owns A: a Gaussian N x d has RMS row norm sqrt(d), and its
  copy would be a second N x d array held through the whole solve).
  `factor`: `power_of_two_factor(a)`, if the caller has it already."""
  factor = power_of_two_factor(a) if factor is None else factor
  if factor == 1.0:
    return a
  info = np.finfo(a.dtype) if a.dtype.kind == "f" else None
  if info is not None and not float(info.tiny) <= factor <= float(info.max):
    # 2^k beyond A's dtype (float32 entries near or below its subnormal
    # range): scaled in float64, where it is exact, and cast back, which is
    # exact too (the scaled entries have as many significant bits as A's).
    return (a.astype(np.float64) * factor).astype(a.dtype)
  factor = np.asarray(factor, a.dtype)
  if in_place and a.flags.writeable and a.dtype.kind == "f":
    a *= factor
    return a
  return a * factor


def decide(facts, inst: Instance, claim, x, mu, *, iterations, policy,
           delta, exact_fallback) -> Record:
  """Checks one instance's candidate certificate (HiGHS if undecided).

  `certificate` says which kind of evidence was checked ('embedding',
  'global', 'ray', 'twin_rows', or 'ball': the weaker, ball-restricted dual
  bound reported for an undecided instance); `_detail` turns the bound it
  proves into `lower_bound` / `upper_bound` on t*.
  """
  start = time.perf_counter()
  verdict, bound, cert = verify(facts, inst, claim, x, mu, policy=policy,
                                delta=delta)
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
      verdict, bound, cert = verify(facts, inst, claim, sol["x"],
                                    sol["mu"], policy=policy, delta=delta)
      cert["highs_t"] = sol["t"]
  return detail(inst, verdict, bound, cert, source=source,
                iterations=iterations, start=start)


def bracketed(facts, inst: Instance, lower, upper, evidence, *, iterations,
              start, delta, policy, tolerance, source: str = "admm"
              ) -> Record:
  """Solve mode's record: t* in [lower, upper] (certified); the verdict
  follows from the bracket (FEASIBLE re-checked at its embedding, with the
  probabilities for prescribed targets)."""
  verdict = "undecided"
  if lower >= inst.threshold:
    verdict = "infeasible"
  elif upper < inst.threshold and evidence.get("x") is not None:
    verdict = verify(facts, inst, "feasible", evidence["x"], None,
                     policy=policy, delta=delta)[0]
  elif upper == -np.inf:
    verdict = "feasible"
  out = detail(inst, verdict, float("nan"), evidence, source=source,
               iterations=iterations, start=start)
  out.fields.update(
      lower_bound=float(lower), upper_bound=float(upper),
      bracket_closed=bracket.closed(lower, upper, tolerance),
      certificate=evidence.get("kind"),
      certificate_ok=bool(verdict != "undecided"),
      margin=float(inst.threshold - upper) if np.isfinite(upper)
      else (np.inf if upper == -np.inf else None))
  return out


def detail(inst: Instance, verdict, bound, cert, *, source, iterations,
           start) -> Record:
  """One instance's record. The solver stops as soon as a side is proved,
  so t* is reported as certified bounds, not an optimum: `upper_bound`
  (FEASIBLE: the largest other logit at the certified embedding; -inf with
  a ray, where t* = -inf exactly), `lower_bound` (INFEASIBLE: the verified
  dual value); NaN where nothing was proved."""
  nan = float("nan")
  upper = bound if verdict == "feasible" else nan
  lower = (bound if verdict == "infeasible" else
           -np.inf if upper == -np.inf else nan)
  return Record({
      "subset": inst.subset.tolist(), "verdict": verdict,
      "lower_bound": lower, "upper_bound": upper,
      "margin": cert.get("margin"),
      "certificate_ok": bool(cert.get("ok", False)),
      "certificate": cert.get("kind"), "source": source,
      "iterations": iterations,
      "radius_over_x_par": cert.get("radius_over_x_par"),
      "rest_mass": cert.get("rest_mass"),
      "verify_seconds": time.perf_counter() - start}, cert)


def verify(facts, inst: Instance, claim, x, mu, *, policy, delta):
  """verdicts.verify on one instance (mu may be a raw dual iterate:
  verify clips it to >= 0 and zeroes it on S)."""
  return verdicts.verify(facts, inst.subset, inst.y, inst.threshold, claim,
                         x, mu, policy=policy, p=inst.p, scale=inst.scale,
                         delta=delta)
