"""Nested subsets along m (lp.chains): carried verdicts against HiGHS."""

import collections
import dataclasses
from unittest import mock

from absl.testing import absltest
import numpy as np

from bottleneck import topm
from bottleneck.io import matrices
from bottleneck.lp import (certificates, chain_feed, chains, exact,
                           host_checks, records, transitions, verdicts)
from bottleneck.lp import instances as lp_instances
from bottleneck.lp import facts as lp_facts
from bottleneck.lp.instances import Instance


def _t_star(a, subset, y):
  """t* of min t s.t. A_S x = y, A_R x <= t by HiGHS (the reference)."""
  return exact.solve(np.asarray(a, np.float64), np.asarray(subset),
                     np.asarray(y, np.float64))["t"]


def _proof(a, subset, y, threshold):
  """The enclosed global certificate of an INFEASIBLE S from HiGHS's duals."""
  mu = exact.solve(a, subset, y)["mu"]
  cert = certificates.check_infeasible_global(a, subset, y, mu, threshold)
  assert cert["ok"], cert
  return cert["proof"]


class InheritInfeasibleTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.a = matrices.random(160, 12, seed=3).astype(np.float64)
    self.first = np.random.default_rng(15).permutation(160)
    self.subset = self.first[:4]  # t* = 1.12: INFEASIBLE, near the threshold.
    self.proof = _proof(self.a, self.subset, np.ones(4), 1.0)

  def test_a_carried_bound_is_below_highs_t_star(self):
    rng = np.random.default_rng(0)
    carried = 0
    for m in range(5, 9):  # S' ⊃ S with other targets on all of S'.
      bigger = self.first[:m]
      for _ in range(6):
        y = rng.uniform(0.8, 1.2, m)
        cert = chains.inherit_infeasible(self.proof, bigger, y, 1.0)
        if cert is not None:
          carried += 1
          self.assertTrue(cert["ok"])
          self.assertGreaterEqual(cert["t_lower"], 1.0)
          self.assertLessEqual(cert["t_lower"],
                               _t_star(self.a, bigger, y) * (1 + 1e-9))
      # Equal targets: an INFEASIBLE S makes every S' ⊃ S INFEASIBLE.
      self.assertIsNotNone(chains.inherit_infeasible(self.proof, bigger,
                                                     np.ones(m), 1.0))
    self.assertGreater(carried, 12)

  def test_rows_of_the_support_that_join_s_move_to_the_left(self):
    # S' = S + 2 rows of K with targets c: for c around 1.6-1.8 S' is
    # FEASIBLE (HiGHS) though y_S^T lam* >= 1 still: only the moved rows'
    # term (c - 1) mu*_h tells the two apart.
    bigger = np.concatenate([self.subset, self.proof.support[:2]])
    outcomes = collections.Counter()
    for c in np.linspace(0.2, 3.0, 15):
      y = np.concatenate([np.ones(4), [c, c]])
      t_star = _t_star(self.a, bigger, y)
      cert = chains.inherit_infeasible(self.proof, bigger, y, 1.0)
      outcomes[cert is not None, t_star >= 1.0] += 1
      if cert is not None:
        self.assertEqual(cert["moved_rows"], 2)
        self.assertLessEqual(cert["t_lower"], t_star * (1 + 1e-9))
    self.assertGreater(outcomes[True, True], 3)
    self.assertGreater(outcomes[False, False], 0)  # FEASIBLE S': declined.
    self.assertEqual(outcomes[True, False], 0)

  def test_not_a_superset_is_declined(self):
    other = np.concatenate([self.first[1:4], self.first[20:23]])
    self.assertIsNone(chains.inherit_infeasible(self.proof, other,
                                                np.ones(6), 1.0))

  def test_positions(self):
    np.testing.assert_array_equal(chains.positions([7, 3], [3, 9, 7]), [2, 0])
    self.assertIsNone(chains.positions([7, 4], [3, 9, 7]))


class InheritFeasibleTest(absltest.TestCase):
  """A FEASIBLE certificate carried down without a pass over A."""

  def setUp(self):
    super().setUp()
    self.a = matrices.random(3000, 48, seed=5)
    self.facts = lp_facts.MatrixFacts(self.a)
    self.order = np.random.default_rng(6).permutation(3000)
    self.parent = self.order[:8]
    x = exact.solve(self.a, self.parent, np.ones(8))["x"]
    self.cert = certificates.check_feasible(self.facts, self.parent,
                                            np.ones(8), x, 1.0)
    assert self.cert["ok"] and self.cert["t_upper"] < 0.99, self.cert

  def _inherit(self, subset, y=None, upper=None):
    y = np.ones(len(subset)) if y is None else y
    return chains.inherit_feasible(
        self.facts, self.parent, self.cert["x"],
        self.cert["t_upper"] if upper is None else upper, subset, y, 1.0)

  def test_its_bounds_hold_against_every_row_and_highs(self):
    a64 = self.a.astype(np.float64)
    for m in (1, 3, 5, 7):
      subset = self.order[:m]
      got = self._inherit(subset)
      self.assertIsNotNone(got, m)
      x = got["x"]
      np.testing.assert_allclose(a64[subset] @ x, 1.0, atol=1e-12)
      rest = np.ones(3000, bool)
      rest[subset] = False
      self.assertGreaterEqual(got["t_upper"], (a64[rest] @ x).max())
      rest[self.parent] = False  # The rows off S' alone: the parent's
      self.assertGreaterEqual(got["off_parent_upper"],  # bound, moved.
                              (a64[rest] @ x).max())
      self.assertLess(got["t_upper"], 1.0)
      self.assertLessEqual(_t_star(self.a, subset, np.ones(m)),
                           got["t_upper"])
      self.assertTrue(certificates.check_feasible(
          self.facts, subset, np.ones(m), x, 1.0)["ok"])

  def test_declines_what_it_cannot_prove(self):
    self.assertIsNone(self._inherit(self.order[20:25]))  # Not inside S'.
    self.assertIsNone(self._inherit(self.parent))  # Nothing to drop.
    self.assertIsNone(self._inherit(self.order[:5], upper=1.0))  # No slack.
    self.assertIsNone(self._inherit(self.order[:5], y=np.full(5, 30.0)))

  def test_a_nested_logits_sweep_carries_down_without_scoring(self):
    a = matrices.random(3000, 48, seed=1)
    with mock.patch.object(lp_facts.MatrixFacts, "prime") as prime:
      out = topm.sweep(a, list(range(2, 26, 2)), 6, "logits", seed=3,
                       nested=True, batch=8)
    prime.assert_not_called()
    kinds = collections.Counter(
        d["certificate"] for r in out for d in r["trials_detail"]
        if d["source"] == "chain" and d["verdict"] == "feasible")
    self.assertEqual(set(kinds), {"inherited"})
    self.assertGreaterEqual(kinds["inherited"], 3)


class RepairTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.a = matrices.random(600, 48, seed=1)
    self.facts = lp_facts.MatrixFacts(self.a)
    rng = np.random.default_rng(6)  # A chain whose top FEASIBLE member's
    first = rng.permutation(600)[:12]  # first candidates for m = 6 and 8
    draws = rng.uniform(0.1, 1.1, size=(1, 12))  # lift rows over thr.
    self.queue = [dataclasses.replace(lp_instances.make_instances(
        600, m, 1, "probs", rng, subsets=[first[:m]], draws=draws)[0],
                                      chain=0) for m in range(2, 13, 2)]
    self.top = len(self.queue) - 2  # m = 10 is FEASIBLE (HiGHS), 12 not.
    top = self.queue[self.top]
    self.cert = certificates.check_feasible(
        self.facts, top.subset, top.y,
        exact.solve(self.a.astype(np.float64), top.subset, top.y)["x"],
        top.threshold)
    assert self.cert["ok"]

  def _candidate(self, child, hold=()):
    top, inst = self.queue[self.top], self.queue[child]
    return chains.feasible_candidate(
        self.facts, top.subset, self.cert["x"], self.cert["t_upper"],
        inst.subset, inst.y, inst.threshold, hold=hold)

  def _verdict(self, child, x):
    return records.verify(self.facts, self.queue[child], "feasible", x, None,
                          verdicts.Policy(), 0.1)[0]

  def test_a_failed_candidate_is_repaired_and_certified(self):
    failing = [c for c in range(self.top)
               if self._verdict(c, self._candidate(c)) != "feasible"]
    self.assertEqual(failing, [2, 3])  # m = 6 and 8.
    carry = host_checks.Carry(host_checks.HostChecks(
        self.facts, self.queue, None, verdicts.Policy(), 0.1, "decide",
        1e-6, None, 100))
    carry.feed.learn(self.top, "feasible", self.cert)
    carry.down(self.top, self.cert)
    for child in range(self.top):
      detail = carry.settle(child)
      inst = self.queue[child]
      self.assertLess(_t_star(self.a, inst.subset, inst.y), inst.threshold)
      self.assertEqual((detail["verdict"], detail["source"]),
                       ("feasible", "chain"))

  def test_held_rows_stay_where_the_parent_has_them(self):
    top, child = self.queue[self.top], self.queue[2]
    rest = np.setdiff1d(np.arange(600), top.subset)
    x0 = np.asarray(self.cert["x"], np.float64)
    hold = rest[np.argsort(-(self.a[rest] @ x0))[:5]]
    x = self._candidate(2, hold)
    a64 = self.a.astype(np.float64)
    np.testing.assert_allclose(a64[hold] @ x, a64[hold] @ x0, atol=1e-12)
    np.testing.assert_allclose(a64[child.subset] @ x, child.y, atol=1e-12)
    dropped = np.setdiff1d(top.subset, child.subset)
    np.testing.assert_allclose(
        a64[dropped] @ x, 0.5 * (self.cert["t_upper"] + top.threshold),
        atol=1e-12)
    twin = np.append(hold, top.subset[0])  # A row of S' again: singular.
    self.assertIsNone(self._candidate(2, twin))


class NestedSweepTest(absltest.TestCase):

  def test_every_verdict_agrees_with_highs_and_most_are_carried(self):
    a = matrices.random(300, 20, seed=1)
    m_values = list(range(2, 20, 2))
    out = topm.sweeps(a, m_values, 4, ("logits", "probs"), seed=3,
                      nested=True, batch=4)
    sources = collections.Counter()
    for problem, recs in out.items():
      for trial in range(4):
        subsets = [recs[i]["trials_detail"][trial]["subset"]
                   for i in range(len(m_values))]
        for small, big in zip(subsets, subsets[1:]):  # Nested prefixes.
          self.assertEqual(big[:len(small)], small)
      for rec in recs:
        for detail in rec["trials_detail"]:
          self.assertNotIn("_cert", detail)
          sources[detail["source"]] += 1
          if problem != "logits":
            continue
          t_star = _t_star(a, detail["subset"], np.ones(rec["m"]))
          self.assertEqual(detail["verdict"],
                           "feasible" if t_star < 1.0 else "infeasible")
      if problem == "logits":  # Monotone along each chain.
        for trial in range(4):
          sides = [r["trials_detail"][trial]["verdict"] for r in recs]
          self.assertEqual(sides, sorted(sides))  # feasible < infeasible
    self.assertGreater(sources["chain"], sources["admm"])
    alone = topm.sweep(a, m_values, 4, "probs", seed=3, batch=4)  # Nested
    for got, want in zip(out["probs"], alone):  # by default; its own rng.
      self.assertEqual([t["subset"] for t in got["trials_detail"]],
                       [t["subset"] for t in want["trials_detail"]])
      self.assertEqual(got["feasible"], want["feasible"])

  def test_a_probs_verdict_carried_down_is_checked_at_its_own_targets(self):
    a = matrices.random(300, 20, seed=1)
    out = topm.sweep(a, [3, 6, 9], 3, "probs", seed=2, nested=True, batch=2)
    for rec in out:
      for detail in rec["trials_detail"]:
        if detail["source"] == "chain" and detail["verdict"] == "feasible":
          self.assertLess(detail["rest_mass"], 0.1)

  def test_one_chain_with_a_batch_larger_than_it_finishes(self):
    # Every member waits for the one being solved; a free slot must not
    # wait forever (stream.take forces one).
    a = matrices.random(300, 20, seed=1)
    out = topm.sweep(a, list(range(2, 19)), 1, seed=4, nested=True, batch=8)
    self.assertEqual(sum(r["undecided"] for r in out), 0)

  def test_nested_with_given_subsets_is_an_error(self):
    a = matrices.random(300, 20, seed=1)
    with self.assertRaisesRegex(ValueError, "nested"):
      topm.sweep(a, [3], 2, subsets=[[1, 2, 3], [4, 5, 6]], nested=True)


class CarryTest(absltest.TestCase):

  def test_members_carried_from_two_chains_are_scored_in_one_gemm(self):
    a = matrices.random(600, 48, seed=1)
    rng = np.random.default_rng(3)
    firsts = [rng.permutation(600)[:9] for _ in range(2)]
    draws = rng.uniform(0.1, 1.1, size=(2, 9))
    queue = [dataclasses.replace(it, chain=k) for m in (3, 6, 9)
             for k, it in enumerate(lp_instances.make_instances(
                 600, m, 2, "probs", rng, subsets=[f[:m] for f in firsts],
                 draws=draws))]
    facts = lp_facts.MatrixFacts(a)
    carry = host_checks.Carry(host_checks.HostChecks(
        facts, queue, None, verdicts.Policy(), 0.1, "decide", 1e-6,
        None, 100))
    with mock.patch.object(lp_facts.MatrixFacts, "prime", autospec=True,
                           side_effect=lp_facts.MatrixFacts.prime) as prime:
      for top in (4, 5):  # m = 9 of chains 0 and 1, solved by HiGHS.
        inst = queue[top]
        cert = certificates.check_feasible(
            facts, inst.subset, inst.y,
            exact.solve(a.astype(np.float64), inst.subset, inst.y)["x"],
            inst.threshold)
        self.assertTrue(cert["ok"])
        carry.feed.learn(top, "feasible", cert)
        carry.down(top, cert)
      prime.assert_not_called()  # Pending until the feed asks.
      got = {i: carry.settle(i) for i in range(4)}
    self.assertEqual(prime.call_count, 1)
    self.assertLen(prime.call_args.args[1], 4)
    for i, detail in got.items():
      inst = queue[i]
      self.assertLess(_t_star(a, inst.subset, inst.y), inst.threshold)
      self.assertEqual((detail["verdict"], detail["source"]),
                       ("feasible", "chain"))
      self.assertLess(detail["rest_mass"], 0.1)
    self.assertEqual(carry.pending, {})


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
