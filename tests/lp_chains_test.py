"""Nested subsets along m (lp.chains): carried verdicts against HiGHS."""

import collections
import dataclasses
from unittest import mock

from absl.testing import absltest
import numpy as np

from bottleneck import topm
from bottleneck.io import matrices
from bottleneck.lp import (certificates, chains, exact, host_checks, records,
                           verdicts)
from bottleneck.lp import instances as lp_instances
from bottleneck.lp import facts as lp_facts


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
        parent_upper=self.cert["t_upper"] if upper is None else upper,
        subset=subset, y=y, threshold=1.0)

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
        self.facts, top.subset, self.cert["x"],
        parent_upper=self.cert["t_upper"], subset=inst.subset, y=inst.y,
        threshold=inst.threshold, hold=hold)

  def _verdict(self, child, x):
    return records.verify(self.facts, self.queue[child], "feasible", x, None,
                          policy=verdicts.Policy(), delta=0.1)[0]

  def test_a_failed_candidate_is_repaired_and_certified(self):
    failing = [c for c in range(self.top)
               if self._verdict(c, self._candidate(c)) != "feasible"]
    self.assertEqual(failing, [2, 3])  # m = 6 and 8.
    carry = host_checks.Carry(host_checks.HostChecks(
        self.facts, self.queue, None, policy=verdicts.Policy(), delta=0.1,
        objective="decide", tolerance=1e-6, finish_after=None,
        first_check=100))
    carry.feed.learn(self.top, "feasible", self.cert)
    carry.down(self.top, self.cert)
    for child in range(self.top):
      detail = carry.settle(child).fields  # A typed records.Record.
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
        facts, queue, None, policy=verdicts.Policy(), delta=0.1,
        objective="decide", tolerance=1e-6, finish_after=None,
        first_check=100))
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
      got = {i: carry.settle(i).fields for i in range(4)}
    self.assertEqual(prime.call_count, 1)
    self.assertLen(prime.call_args.args[1], 4)
    for i, detail in got.items():
      inst = queue[i]
      self.assertLess(_t_star(a, inst.subset, inst.y), inst.threshold)
      self.assertEqual((detail["verdict"], detail["source"]),
                       ("feasible", "chain"))
      self.assertLess(detail["rest_mass"], 0.1)
    self.assertEqual(carry.pending, {})


if __name__ == "__main__":
  absltest.main()
