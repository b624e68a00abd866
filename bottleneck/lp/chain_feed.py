"""The order in which nested chains run: a bisection per chain for its
transition (seed 001, Figure 1 along m).

`Feed` runs each chain's members in the order a bisection for its
transition would (weighted by where the other chains of its family have
theirs: lp.transitions) and settles the others from the verdicts found
(what one member's certificate proves for another: lp.chains); a
monotone chain of 30 m values then runs about 3 to 5 LPs instead of 30.
"""

from __future__ import annotations

import collections

import numpy as np

from bottleneck.lp import transitions
from bottleneck.lp.chains import inherit_infeasible


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
    (`_refresh`): recomputed over all chains at every progress update it
    cost a noticeable share of a 6000-LP run."""
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
