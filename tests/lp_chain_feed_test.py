"""Nested subsets, the order chains run in: lp.chain_feed.Feed (probes where
the other chains put the transition), lp.transitions (a family's
transitions from all chains' brackets) and the pieces they share."""

import collections
from unittest import mock

from absl.testing import absltest
import numpy as np

from bottleneck.io import matrices
from bottleneck.lp import certificates, chain_feed, records, transitions
from bottleneck.lp import facts as lp_facts
from bottleneck.lp.instances import Instance


def _chain_instances(chains_count, size, threshold=1.0):
  return [Instance(np.arange(m), np.ones(m), threshold, chain=c)
          for c in range(chains_count) for m in range(1, size + 1)]


class _Oracle:
  """Drives a Feed as the stream would, on chains whose verdict is FEASIBLE
  up to a given position: settles a member iff its chain's bounds decide
  it (as carried certificates would)."""

  def __init__(self, instances, last_feasible):
    self.instances, self.last = instances, last_feasible
    self.feed = chain_feed.Feed(instances, self.settle)

  def side(self, index):
    inst = self.instances[index]
    return ("feasible" if inst.subset.size - 1 <= self.last[inst.chain]
            else "infeasible")

  def settle(self, index):
    chain, p = self.feed.where[index]
    if p < self.feed.lo[chain] or p > self.feed.hi[chain]:
      return {"verdict": self.side(index)}
    return None

  def run_one_at_a_time(self):
    runs = []
    while self.feed.left():
      done, j = self.feed.next(force=False)
      for i, verdict in done:
        self.feed.learn(i, verdict["verdict"], None)
      if j >= 0:
        runs.append(j)
        self.feed.learn(j, self.side(j), None)
    return runs


class FeedTest(absltest.TestCase):

  def test_a_monotone_chain_runs_a_bisection_and_settles_the_rest(self):
    insts = _chain_instances(1, 30)
    oracle = _Oracle(insts, {0: 12})
    runs = oracle.run_one_at_a_time()
    self.assertLessEqual(len(runs), 5)  # ceil(log2(31))
    self.assertFalse(oracle.feed.left())
    self.assertEqual(oracle.feed.lo[0], 12)
    self.assertEqual(oracle.feed.hi[0], 13)

  def test_finished_chains_teach_the_next_where_to_probe(self):
    insts = _chain_instances(12, 30)
    oracle = _Oracle(insts, {c: 20 for c in range(12)})
    runs = oracle.run_one_at_a_time()
    per_chain = collections.Counter(insts[j].chain for j in runs)
    self.assertEqual(per_chain[0], 5)  # No history: a bisection.
    self.assertLessEqual(per_chain[11], 2)  # Straight to 20 and 21.

  def test_a_started_chain_goes_before_a_fresh_one_and_force_fills(self):
    insts = _chain_instances(2, 7)
    feed = chain_feed.Feed(insts, lambda i: None)
    _, first = feed.next(False)
    self.assertEqual(insts[first].chain, 0)
    _, second = feed.next(False)  # Chain 0 is busy: chain 1 starts.
    self.assertEqual(insts[second].chain, 1)
    self.assertEqual(feed.next(False), ([], -1))  # Both busy: wait.
    feed.learn(first, "feasible", None)
    _, third = feed.next(False)
    self.assertEqual(insts[third].chain, 0)
    self.assertEqual(feed.next(False), ([], -1))
    _, forced = feed.next(True)  # Unless a slot would idle.
    self.assertGreaterEqual(forced, 0)
    self.assertNotIn(forced, (first, second, third))

  def test_instances_alone_run_first_and_all_run(self):
    insts = [Instance(np.arange(3), np.ones(3), 1.0)] * 3 + _chain_instances(
        1, 3)
    feed = chain_feed.Feed(insts, lambda i: None)
    handed = [feed.next(False)[1] for _ in range(4)]
    self.assertEqual(handed[:3], [0, 1, 2])
    # The 3 alone and the chain's middle ran; one more of its two others
    # will (its verdict decides the other), half a run on each m.
    self.assertEqual(feed.expected_runs(), {1: 0.5, 2: 1, 3: 3.5})


  def test_open_chains_teach_before_any_chain_finishes(self):
    insts = _chain_instances(12, 30)
    feed = chain_feed.Feed(insts, lambda i: None)
    at = {(inst.chain, inst.subset.size - 1): i
          for i, inst in enumerate(insts)}
    _, first = feed.next(False)
    self.assertEqual(first, at[0, 14])
    feed.learn(first, "feasible", None)  # Chain 0: 14 <= q < 30.
    for c in range(1, 12):  # None finished; 11 know 24 <= q < 27.
      feed.learn(at[c, 24], "feasible", None)
      feed.learn(at[c, 27], "infeasible", None)
    _, probe = feed.next(False)
    self.assertIn(probe, (at[0, 25], at[0, 26]))  # A bisection: 22.

  def test_a_familys_first_chains_spread_their_first_probes(self):
    insts = _chain_instances(3, 31)
    feed = chain_feed.Feed(insts, lambda i: None)
    first = [insts[feed.next(False)[1]].subset.size - 1 for _ in range(3)]
    self.assertEqual(first[0], 15)  # The median of 31 positions, then
    self.assertGreaterEqual(max(first) - min(first), 12)  # the quartiles.

  def test_a_busy_chain_is_forced_only_where_its_transition_is_likely(self):
    insts = _chain_instances(31, 30)
    oracle = _Oracle(insts, {c: 20 for c in range(31)})
    feed = oracle.feed
    while True:  # Chains 0..29 run to their end, one at a time.
      done, j = feed.next(False)
      for i, verdict in done:
        feed.learn(i, verdict["verdict"], None)
      if insts[j].chain == 30:
        break
      feed.learn(j, oracle.side(j), None)
    self.assertEqual(insts[j].subset.size - 1, 20)  # Where the 30 had it.
    _, forced = feed.next(True)  # Above 20: q = 20 is likeliest there.
    self.assertEqual(insts[forced].subset.size - 1, 21)
    # Left: q in -1..19 (16 %) and 21..29 (7 %), both below FORCE_MIN.
    self.assertEqual(feed.next(True), ([], -1))


class TransitionsTest(absltest.TestCase):

  def test_exact_transitions_concentrate_the_predictive(self):
    q = np.array([10, 11, 12, 12, 12, 13, 14] * 6)
    pmf = transitions.predictive(q, q + 1, 30)
    self.assertAlmostEqual(pmf.sum(), 1.0, places=12)
    self.assertEqual(np.argmax(pmf) - 1, 12)  # pmf[j]: q = j - 1.
    mean = (np.arange(-1, 30) * pmf).sum()
    self.assertAlmostEqual(mean, q.mean(), delta=0.3)
    self.assertGreater(pmf[10:16].sum(), 0.9)

  def test_brackets_alone_locate_the_transitions(self):
    # Half the chains know 8 <= q < 16, half 11 <= q < 30: q in 11..15.
    lo = [8] * 30 + [11] * 30
    hi = [16] * 30 + [30] * 30
    pmf = transitions.predictive(lo, hi, 30)
    self.assertGreater(pmf[12:17].sum(), 0.9)
    flat = transitions.predictive([], [], 30)
    self.assertLess(flat[12:17].sum(), 0.4)

  def test_bad_brackets(self):
    with self.assertRaisesRegex(ValueError, "brackets"):
      transitions.predictive([5], [5], 30)
    with self.assertRaisesRegex(ValueError, "brackets"):
      transitions.predictive([-2], [3], 30)

  def test_van_der_corput(self):
    self.assertEqual([transitions.van_der_corput(k) for k in range(7)],
                     [0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875])


class PiecesTest(absltest.TestCase):

  def test_a_chain_member_inside_a_full_rank_one_skips_its_rank_check(self):
    a = matrices.random(50, 6, seed=0).astype(np.float64)
    a[5] = a[1] + a[2]  # Rows 1, 2, 5 are dependent.
    facts = lp_facts.MatrixFacts(a)
    inside = [Instance(np.array(s), np.ones(len(s)), 1.0, chain=0)
              for s in ([1, 2], [1, 2, 3, 4])]
    records.check_subsets(facts, inside)  # Full rank: no error.
    bad = inside + [Instance(np.array([1, 2, 5]), np.ones(3), 1.0, chain=1)]
    with self.assertRaisesRegex(ValueError, "dependent"):
      records.check_subsets(facts, bad)
    chained_bad = [Instance(np.array(s), np.ones(len(s)), 1.0, chain=0)
                   for s in ([1, 2], [1, 2, 5])]
    with self.assertRaisesRegex(ValueError, "dependent"):
      records.check_subsets(facts, chained_bad)

  def test_primed_scores_are_served_from_the_cache(self):
    a = matrices.random(200, 16, seed=0)
    for points in (lp_facts.GEMV_POINTS, lp_facts.GEMV_POINTS + 3):  # GEMVs,
      facts = lp_facts.MatrixFacts(a)  # then one GEMM.
      xs = np.random.default_rng(points).standard_normal((points, 16))
      facts.prime(xs)
      facts.source = np.zeros_like(a)  # Only a primed point still scores.
      for x in xs:
        np.testing.assert_allclose(facts.scores(x),
                                   a @ x.astype(np.float32), rtol=1e-5,
                                   atol=1e-5)

  def test_far_logits_enter_as_upper_bounds(self):
    a = matrices.random(400, 16, seed=0)
    facts = lp_facts.MatrixFacts(a, float64_bytes=0)  # Kept float32.
    x = np.random.default_rng(1).standard_normal(16)
    exact_logits = a.astype(np.float64) @ x
    subset = np.array([0, 1, 2])
    for far in (0.0, 40.0):
      got = certificates._logits_or_upper_bounds(facts, subset, x, 10.0, far)
      self.assertTrue(np.all(got >= exact_logits - 1e-12))
      near = got - exact_logits < 1e-12
      self.assertTrue(near[subset].all())
      if far == 0.0:
        self.assertGreater((~near).sum(), 300)  # Most rows: their bounds.

  def test_eta_prices_a_chains_runs_to_come_at_least_as_the_last_ones(self):
    # A chain runs its hard members (near its transition) last: the two
    # m = 5 runs to come cost the mean of the recent runs (55), not the
    # 10 of the m = 5 runs so far.
    clock = iter([0.0, 1.0, 2.0, 3.0])
    with mock.patch.object(records.time, "perf_counter",
                           lambda: next(clock)):
      cost = records.CostModel([5, 5, 5, 5, 7, 7], batch=1, cap=1000,
                               runs={5: 4, 7: 2})
      for index, iterations, at in ((0, 10, 10), (1, 10, 20), (4, 100, 120),
                                    (5, 100, 220)):
        cost.finished(index, iterations, 0.0, (), at)
    tau = 3.0 / (220 - 10)
    self.assertAlmostEqual(cost.eta(), 2 * 55 * tau, places=9)

  def test_eta_counts_settled_instances_at_their_host_cost(self):
    runs = {7: 2}
    cost = records.CostModel([7] * 5, batch=1, cap=100, runs=lambda: runs)
    cost.finished(0, 50, 0.1, (), 50)
    cost.finished(1, 50, 0.1, (), 100)
    cost.finished(2, 0, 0.01, (), 100)
    # Two left, none expected to run (both runs done): settled, 0.01 s each.
    self.assertAlmostEqual(cost.eta(), 2 * 0.01, delta=1e-9)
    runs[7] = 3  # One more run expected: its iterations and host time.
    self.assertGreater(cost.eta(), 0.1)
    plain = records.CostModel([7] * 5, batch=1, cap=100)
    plain.finished(0, 50, 0.1, (), 50)
    plain.finished(1, 50, 0.1, (), 100)
    self.assertGreater(plain.eta(), cost.eta())


if __name__ == "__main__":
  absltest.main()
