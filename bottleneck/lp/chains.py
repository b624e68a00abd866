"""Nested subsets along m: verdicts one member of a chain proves for another.

A chain is a list of instances whose subsets are nested, S_1 ⊂ S_2 ⊂ ...
(`topm.sweeps(..., nested=True)`: the first m tokens of one random
permutation per trial, so each S_m is still a uniform random m-subset).
Two facts let one certificate decide other members without an LP:

INFEASIBLE goes up. The global certificate of S (certificates.
  check_infeasible_global) encloses an exact (lam*, mu*) with mu* >= 0 on a
  support K, sum mu* = 1, A_S^T lam* = A_K^T mu* and y^T lam* >= thr. For
  S' ⊃ S, the rows H = K ∩ S' move to the left side: with c = sum_H mu*,
  lam' = (lam*, -mu*_H) / (1 - c) on S ∪ H (0 on the rest of S') and
  mu' = mu*_{K-H} / (1 - c) satisfy A_{S'}^T lam' = A_{K-H}^T mu', mu' >= 0,
  sum mu' = 1, so every x with A_{S'} x = y' has max_{j not in S'} a_j.x
  >= y'^T lam' = (y'_S^T lam* - y'_H^T mu*_H) / (1 - c), which is >= thr iff
  g = y'_S^T lam* - sum_H (y'_h - thr) mu*_h - thr >= 0. Bounding g from
  the enclosure (lam~, mu~ and their radii) is O(m + |K|):
  `inherit_infeasible`. With equal targets (the logits problem, y' = thr =
  1) the H terms vanish: an INFEASIBLE S makes every S' ⊃ S INFEASIBLE.

FEASIBLE goes down. If x' certifies S' (A_{S'} x' = y', other logits <
  thr), then for S ⊂ S' the point x = x' + A_{S'}^+ (target - A_{S'} x')
  with target = y on S and a value below thr on S' minus S usually
  certifies S (the correction is small: its largest effect on another
  logit is about |correction|.max|a_j|). `feasible_candidate` builds x;
  the caller checks it in float64 like any other embedding. Where the
  correction lifts other rows over the threshold (prescribed
  probabilities: the children's targets on S move with their own
  normalisation and scale, by more than a band parent's slack), one
  repair holds those rows where x' has them (`hold`: the correction is
  also orthogonal to them) and the result is checked again.
  Without a pass over A (`inherit_feasible`, for targets alone: no
  probabilities to check): with t' >= every a_j . x' off S' (the parent's
  certified bound) and the correction x - x' scaled so that
  max_j |a_j| |x - x'| <= (thr - t') / 2, every row off S' stays below
  (thr + t') / 2 by Cauchy-Schwarz, and the rows of S' minus S are
  computed. So with equal targets (the logits problem) every subset of a
  selectable set is selectable. Not for prescribed probabilities: there
  the dropped rows start at targets above the threshold (min ybar = 1 >
  1 - eps), and a correction that moves them below it is too large for
  this bound (`feasible_candidate` and a pass over A instead).

`Feed` runs each chain's members in the order a bisection for its
transition would (weighted by where the other chains of its family have
theirs: lp.transitions) and settles the others from the verdicts found; a
monotone chain of 30 m values then runs about 3 to 5 LPs instead of 30.
"""

from __future__ import annotations

import collections
from typing import NamedTuple

import numpy as np

from bottleneck.lp import transitions
from bottleneck.lp.enclosure import gamma as _gamma, upper as _upper


class DualProof(NamedTuple):
  """An enclosed global INFEASIBLE certificate of one subset S."""
  subset: np.ndarray  # [m] S, in the order of lam.
  support: np.ndarray  # [k] K, the rows of R carrying mu*.
  lam: np.ndarray  # [m] the enclosure's center lam~.
  lam_err: np.ndarray  # [m] |lam* - lam~| <= lam_err entrywise.
  mu: np.ndarray  # [k] its center mu~ on K.
  mu_err: np.ndarray  # [k] |mu* - mu~| <= mu_err entrywise.


def positions(small, large) -> np.ndarray | None:
  """Where each entry of `small` sits in `large` (None unless small ⊂
  large)."""
  small, large = np.asarray(small), np.asarray(large)
  order = np.argsort(large, kind="stable")
  at = np.minimum(np.searchsorted(large, small, sorter=order), large.size - 1)
  pos = order[at]
  return pos if np.array_equal(large[pos], small) else None


def inherit_infeasible(proof: DualProof, subset, y, threshold: float
                       ) -> dict | None:
  """The certificate `proof` of S carried to S' ⊃ S (module docstring):
  a 'global' certificate dict with its proven t_lower (thr + g's lower
  bound: y'^T lam' - thr = g / (1 - c) >= g), or None when S is not
  inside S' or g is not proven >= 0."""
  subset, y = np.asarray(subset), np.asarray(y, np.float64)
  pos = positions(proof.subset, subset)
  if pos is None:
    return None
  hit = np.flatnonzero(np.isin(proof.support, subset))  # H, in K's order.
  y_s = y[pos]
  y_h = y[positions(proof.support[hit], subset)] - threshold
  mu_hi = proof.mu[hit] + proof.mu_err[hit]
  mu_lo = np.maximum(proof.mu[hit] - proof.mu_err[hit], 0.0)
  terms = np.concatenate([y_s * proof.lam, -np.abs(y_s) * proof.lam_err,
                          -np.maximum(y_h, 0.0) * mu_hi,
                          np.maximum(-y_h, 0.0) * mu_lo, [-threshold]])
  slack = _upper(_gamma(terms.size + 2) * np.abs(terms).sum(), terms.size)
  g = float(terms.sum()) - slack
  if not (g >= 0.0 and _upper(mu_hi.sum(), hit.size + 1) < 1.0):
    return None
  return {"ok": True, "kind": "global", "t_lower": threshold + g,
          "dual_value": float(y_s @ proof.lam), "margin": -g,
          "support": int(proof.support.size - hit.size),
          "inherited_from_m": int(proof.subset.size), "moved_rows": int(
              hit.size), "proof": None}


def inherit_feasible(facts, parent_subset, parent_x, parent_upper: float,
                     subset, y, threshold: float) -> dict | None:
  """A FEASIBLE certificate of S ⊂ S' from S''s (module docstring): a
  dict of kind 'inherited' with the embedding x (A_S x = y to rounding)
  and its proven `t_upper` (>= every exact a_j . x off S; `off_parent_upper`
  alone for the rows off S'), or None when S is not
  inside S' or the bound does not clear the threshold. `parent_x` is the
  parent's certified embedding (certificates.check_feasible's `x`) and
  `parent_upper` its bound on every a_j . x' off S'. No pass over A: the
  rows off S' are bounded through the parent's bound, the m' - m rows of
  S' minus S are computed with rounding bounds (gamma_d |a_j| |x|)."""
  parent_subset = np.asarray(parent_subset)
  pos = positions(subset, parent_subset)
  if pos is None or not parent_upper < threshold:
    return None
  out = np.ones(parent_subset.size, bool)
  out[pos] = False  # S' minus S.
  if not out.any():
    return None
  x_p = np.asarray(parent_x, np.float64)
  norms = facts.row_norms
  reach = _upper(float(norms.max()), facts.a.shape[1])  # >= max |a_j|.
  down = facts.rowspace(parent_subset, -out.astype(np.float64))[0]
  size = float(np.linalg.norm(down))
  if not (np.isfinite(size) and size > 0):
    return None
  x = x_p + (threshold - parent_upper) / (2.0 * reach * size) * down
  subset = np.asarray(subset)
  y = np.asarray(y, np.float64)
  a_s = facts.rows(subset)
  logits_s = a_s @ x
  residual = y - logits_s
  if np.max(np.abs(residual)) > 1e-12 * max(1.0, float(np.max(np.abs(y)))):
    x = x + facts.rowspace(subset, residual)[0]  # Onto A_S x = y (the
    # parent's equalities hold it already where its targets on S are y).
    logits_s = a_s @ x
  gamma_d = _gamma(facts.a.shape[1])
  norm_x = float(np.linalg.norm(x))
  off = parent_upper + _upper(reach * _upper(float(np.linalg.norm(x - x_p)),
                                             x.size), 1)
  off = float(np.nextafter(off, np.inf))  # >= every a_j . x off S'.
  dropped = parent_subset[out]
  logits = facts.rows(dropped) @ x
  t_upper = max(off, float(np.max(logits + _upper(
      gamma_d * norms[dropped] * norm_x, 1))))
  s_lower = float(np.min(logits_s - _upper(gamma_d * norms[subset] *
                                            norm_x, 1)))
  if not (t_upper < threshold and s_lower > t_upper):
    return None
  return {"ok": True, "kind": "inherited", "t_upper": t_upper,
          "margin": float(threshold - t_upper),
          "top_m_margin": float(s_lower - t_upper),
          "equality_residual": float(np.max(np.abs(logits_s - y))),
          "inherited_from_m": int(parent_subset.size),
          "off_parent_upper": off, "x": x}


def feasible_candidate(facts, parent_subset, parent_x, parent_upper: float,
                       subset, y, threshold: float,
                       hold=()) -> np.ndarray | None:
  """An embedding for S ⊂ S' from S''s certified one (module docstring):
  y on S, the midpoint of the parent's upper bound and the threshold on
  S' minus S, and the rows `hold` (outside S') kept where the parent's
  embedding has them (a repair: rows a first candidate lifted too high),
  or None if S is not inside S', the parent has no slack, or S' and
  `hold` are (nearly) dependent rows."""
  parent_subset = np.asarray(parent_subset)
  pos = positions(subset, parent_subset)
  if pos is None or not parent_upper < threshold:
    return None
  x = np.asarray(parent_x, np.float64)
  hold = np.asarray(hold, parent_subset.dtype)
  rows = np.concatenate([parent_subset, hold])
  a_rows = facts.rows(rows)
  now = a_rows @ x
  target = now.copy()  # `hold`: where they are.
  target[:parent_subset.size] = 0.5 * (parent_upper + threshold)
  target[pos] = np.asarray(y, np.float64)  # S' minus S: the midpoint.
  if not hold.size:
    return x + facts.rowspace(rows, target - now)[0]
  import scipy.linalg  # pylint: disable=g-import-not-at-top
  try:  # A one-off set of rows, not for MatrixFacts' cache: the
    # minimum-norm correction by its normal equations (a candidate,
    # checked in float64 after; 0.5 ms where QR took 5).
    factor = scipy.linalg.cho_factor(a_rows @ a_rows.T, check_finite=False)
  except (np.linalg.LinAlgError, ValueError):
    return None
  pivots = np.abs(np.diag(factor[0]))  # A row held twice (or a twin):
  if not pivots.min() > 1e-6 * pivots.max():  # a pivot ~1e-8 of the
    return None  # largest, the correction would be noise.
  return x + a_rows.T @ scipy.linalg.cho_solve(factor, target - now,
                                               check_finite=False)


# Pseudo-count of each position in a family's histogram of transitions:
# replaying paper-size Figure 1's 100 chains per problem, in order, each
# chain learning from those finished 32 chains before it, a bisection ran
# 5.0 members per chain, weights with 1.0 ran 3.7-3.8, with 0.3 3.4-3.5.
PRIOR = 0.3
# A busy chain (members running) gets another slot only for a piece of its
# open interval holding at least this chance of its transition. Without
# it, slots that a busy chain fills by force walked its improbable members
# one by one (1200 LPs of paper-size Figure 1: 10-18 runs on a chain).
FORCE_MIN = 0.25


class Feed:
  """Hands the instances of nested chains to the stream (stream.Feed).

  Per chain: lo / hi, the positions (by m) of its largest member known
  FEASIBLE and smallest known INFEASIBLE. A free slot gets, from a chain
  with no member running (one already started first: depth first, so the
  first chains finish early; fresh ones in the order they first appear),
  the member of (lo, hi) that halves the chance of where the chain's
  transition lies. That chance weighs each position by `PRIOR`, the
  finished chains of its family (same m values and threshold) that had
  their transition there, and the pooled model of the family's open
  chains (transitions.predictive, times their number): the brackets of
  chains still running teach before any has finished. While none has, a
  family's first chains aim at spread quantiles (van der Corput), so
  their verdicts span the curve. Members outside (lo, hi) are offered to
  `settle` (index -> a verdict, or None) whenever their chain learns
  something; those it settles never take a slot. A slot gets a member of
  a busy chain only when nothing else is left (force), and only in a
  piece of (lo, hi) between its running members that holds at least
  FORCE_MIN of the chance. Instances without a chain run first, in
  order.
  `learn` records a decided instance's evidence; `infeasible` carries a
  dual proof up to another member, `below` names the members a FEASIBLE
  one can carry its embedding down to (topm.solve's checks)."""

  def __init__(self, instances, settle):
    self.instances, self.settle = instances, settle
    self.proofs = collections.defaultdict(list)  # chain -> [DualProof].
    members = collections.defaultdict(list)
    for i, inst in enumerate(instances):
      if inst.chain is not None:
        members[inst.chain].append(i)
    self.members = {c: sorted(ix, key=lambda i: instances[i].subset.size)
                    for c, ix in members.items()}
    self.where = {i: (c, p) for c, ix in self.members.items()
                  for p, i in enumerate(ix)}
    self.alone_all = [i for i, inst in enumerate(instances)
                      if inst.chain is None]
    self.alone = self.alone_all[::-1]  # pop() takes the next one.
    self.queued = set(range(len(instances)))
    self.solving = set()
    self.lo = {c: -1 for c in self.members}
    self.hi = {c: len(ix) for c, ix in self.members.items()}
    self.runs = collections.Counter()  # chain -> members run,
    self.in_flight = collections.Counter()  # and those running now.
    self.ran = collections.Counter()  # m -> members of that size run.
    self.started = {}  # Chains with a member run (ordered dicts as sets).
    self.fresh = dict.fromkeys(self.members)
    self.dirty = set()
    self.family = {c: (instances[ix[0]].threshold, tuple(
        instances[i].subset.size for i in ix))
                   for c, ix in self.members.items()}
    self.by_family = collections.defaultdict(list)
    for chain, family in self.family.items():
      self.by_family[family].append(chain)
    self.finished = set()
    self.pilots = collections.Counter()  # family -> chains aimed at spread
    self.weights = {}  # quantiles; family -> `_weights`, until it learns.
    self.seen = collections.defaultdict(collections.Counter)  # family ->
    # {last FEASIBLE position: finished chains}.
    self.remaining = collections.Counter()  # m -> runs expected to come,
    self.share = {}  # and each chain's part of it (`expected_runs`).
    for chain in self.members:
      self._refresh(chain)

  def left(self) -> bool:
    return bool(self.queued)

  def next(self, force: bool):
    done = []
    for chain in self.dirty:
      done += self._settle(chain)
    self.dirty.clear()
    if self.alone:
      return done, self._hand(self.alone.pop())
    # Depth first: a started chain before a fresh one, so chains finish
    # (and teach the next ones where transitions lie) while ~batch run.
    for chain in list(self.started) + list(self.fresh):
      if self._running(chain) and not force:
        continue
      j = self._probe(chain)
      if j is None:
        if not self._running(chain):
          self.started.pop(chain, None)
        continue
      self.fresh.pop(chain, None)
      self.started[chain] = True
      self.runs[chain] += 1
      return done, self._hand(j)
    return done, -1

  def _running(self, chain) -> bool:
    return self.in_flight[chain] > 0

  def _hand(self, index: int) -> int:
    self.ran[self.instances[index].subset.size] += 1
    self.queued.discard(index)
    self.solving.add(index)
    if index in self.where:
      self.in_flight[self.where[index][0]] += 1
      self._refresh(self.where[index][0])
    return index

  def _settle(self, chain) -> list:
    """Members outside (lo, hi) that `settle` decides, with verdicts."""
    out = []
    for p, i in enumerate(self.members[chain]):
      if i in self.queued and not self.lo[chain] < p < self.hi[chain]:
        verdict = self.settle(i)
        if verdict is not None:
          self.queued.discard(i)
          out.append((i, verdict))
    self._refresh(chain)
    return out

  def _probe(self, chain):
    """The queued member nearest the weighted median of the chain's
    transition inside the likeliest piece of (lo, hi) that its members
    running now leave (for a busy chain, only a piece at least FORCE_MIN
    likely); else, with nothing open or running, any queued member; None
    if there is none to run. A family's first chains, while none has
    finished, aim at spread quantiles instead
    (transitions.van_der_corput): the pooled model learns from them."""
    ix, lo, hi = self.members[chain], self.lo[chain], self.hi[chain]
    cuts = [lo] + [p for p in range(lo + 1, hi) if ix[p] in self.solving]
    pieces = [(a, b) for a, b in zip(cuts, cuts[1:] + [hi])
              if any(ix[p] in self.queued for p in range(a + 1, b))]
    if not pieces:
      if len(cuts) > 1:  # Members running inside (lo, hi): wait for them.
        return None
      inside = [p for p, i in enumerate(ix) if i in self.queued]  # Members
      return ix[inside[len(inside) // 2]] if inside else None  # a carried
      # certificate missed: their middle, whose FEASIBLE embedding (more
      # slack than lo's) may carry down to the lower half.
    family = self.family[chain]
    weights = self._weights(family)[lo + 1:hi + 1]  # q: the last FEASIBLE,
    weights = weights / weights.sum()  # lo <= q < hi.
    mass, a, b = max((weights[a - lo:b - lo].sum(), a, b) for a, b in pieces)
    if len(cuts) > 1 and mass < FORCE_MIN:
      return None
    weights = weights[a - lo:b - lo]
    above = np.cumsum(weights[::-1])[::-1] / weights.sum()  # above[k] =
    # P(q >= a + k | a <= q < b): the chance that position a + k is FEASIBLE.
    aim = 0.5
    if chain in self.fresh and not self.seen[family]:
      aim = transitions.van_der_corput(self.pilots[family])
      self.pilots[family] += 1
    inside = [p for p in range(a + 1, b) if ix[p] in self.queued]
    return ix[min(inside, key=lambda p: abs(above[p - a] - aim))]

  def _weights(self, family) -> np.ndarray:
    """[n + 1] weights of q = -1 .. n - 1 for the family's chains: PRIOR
    each, + the finished chains' histogram, + the open chains with a
    bracket times the pooled model's predictive (transitions)."""
    if family not in self.weights:
      n = len(family[1])
      open_ = [c for c in self.by_family[family] if c not in self.finished
               and (self.lo[c] > -1 or self.hi[c] < n)]
      known = [c for c in self.by_family[family]
               if self.lo[c] > -1 or self.hi[c] < n]
      seen = self.seen[family]
      weights = PRIOR + np.array([seen[q] for q in range(-1, n)], float)
      if open_:
        weights += len(open_) * transitions.predictive(
            [self.lo[c] for c in known], [self.hi[c] for c in known], n)
      self.weights[family] = weights
    return self.weights[family]

  def learn(self, index: int, verdict: str, cert: dict | None) -> None:
    """Instance `index` is decided (its certificate dict, if any)."""
    self.queued.discard(index)
    running = index in self.solving
    self.solving.discard(index)
    if index not in self.where:
      return
    chain, p = self.where[index]
    self.in_flight[chain] -= running
    self.weights.pop(self.family[chain], None)
    if verdict == "feasible":
      self.lo[chain] = max(self.lo[chain], p)
    elif verdict == "infeasible":
      self.hi[chain] = min(self.hi[chain], p)
      if cert and cert.get("proof") is not None:
        self.proofs[chain].append(cert["proof"])
    self.dirty.add(chain)
    self._refresh(chain)
    ix = self.members[chain]
    if chain not in self.finished and not any(
        i in self.queued or i in self.solving for i in ix):
      self.finished.add(chain)
      self.seen[self.family[chain]][self.lo[chain]] += 1

  def below(self, index: int) -> list[int]:
    """The queued members of its chain with smaller m."""
    if index not in self.where:
      return []
    chain, p = self.where[index]
    return [i for i in self.members[chain][:p] if i in self.queued]

  def infeasible(self, index: int) -> dict | None:
    """A global certificate carried up from a smaller INFEASIBLE member."""
    inst = self.instances[index]
    for proof in self.proofs.get(inst.chain, ()):
      if proof.subset.size < inst.subset.size:
        cert = inherit_infeasible(proof, inst.subset, inst.y, inst.threshold)
        if cert is not None:
          return cert
    return None

  def expected_runs(self) -> dict:
    """{m: members of that size expected to run in all}: those run so far
    plus, per open chain, a bisection's count over the queued members
    inside (lo, hi) (ceil log2(k + 1), k halved while a member runs),
    spread evenly over their m values (the ETA's per-m costs then price
    the band's slow LPs). The mean over finished chains was tried: the
    chains that finish first need few runs, and the ETA came out 35-45 %
    short mid-run on paper-size Figure 1. Kept up to date per chain
    (`_refresh`): recomputed over all 200 chains at every progress update
    it cost 1.7-3.3 ms, 10-20 s of a 6000-LP run."""
    total = collections.Counter(self.ran)
    for m, share in self.remaining.items():
      total[m] += max(share, 0.0)
    return dict(total)

  def _refresh(self, chain) -> None:
    """Chain's share of `remaining` after its state changed."""
    for m, share in self.share.pop(chain, {}).items():
      self.remaining[m] -= share
    ix, lo, hi = self.members[chain], self.lo[chain], self.hi[chain]
    inside = [ix[p] for p in range(lo + 1, hi) if ix[p] in self.queued]
    count = len(inside) // 2 if self._running(chain) else len(inside)
    each = np.ceil(np.log2(count + 1)) / max(len(inside), 1)
    mine = collections.Counter()
    for i in inside:
      mine[self.instances[i].subset.size] += each
    for m, share in mine.items():
      self.remaining[m] += share
    self.share[chain] = mine
