"""The dual polish's collapse (polish.Projection) and the wider support the
mid-run checks try after it (verdicts.Policy.widen), against HiGHS."""

import dataclasses
from unittest import mock

from absl.testing import absltest
import numpy as np

from bottleneck import topm
from bottleneck.lp import certificates, exact, polish, records, verdicts
from bottleneck.lp import facts as lp_facts
from tests import lp_test


def _rough_multipliers(seed=0, noise=1.0, n=3000, d=40, m=24):
  """An infeasible instance (t* ~ 3.8 > 1) and multipliers / a point as
  rough as an early solver iterate's: HiGHS's optimum plus noise on 2 % of
  the rows (for seed 0, the support of 2 (d - m + 1) rows collapses)."""
  rng = np.random.default_rng(seed)
  a = rng.standard_normal((n, d))
  subset = np.sort(rng.choice(n, m, replace=False))
  y = np.ones(m)
  sol = exact.solve(a, subset, y)
  mu = sol["mu"] + noise * np.abs(rng.standard_normal(n)) * (
      rng.random(n) < 0.02) / n * 50
  x = sol["x"] + 0.3 * noise * rng.standard_normal(d)
  return lp_facts.MatrixFacts(a), subset, y, mu, x, sol


class WidenTest(absltest.TestCase):

  def test_value_at_the_optimal_multipliers_is_highs_t_star(self):
    facts, subset, y, _, _, sol = _rough_multipliers()
    projection = polish.project(facts, subset, sol["mu"], sol["x"], y=y)
    self.assertFalse(projection.collapsed)
    np.testing.assert_allclose(projection.value, sol["t"], rtol=1e-9)
    self.assertTrue(certificates.check_infeasible_global(
        facts, subset, y, projection.mu, 1.0)["ok"])

  def test_a_collapse_is_reported_and_the_widest_support_certifies(self):
    facts, subset, y, mu, x, sol = _rough_multipliers()
    narrow = polish.project(facts, subset, mu, x, 2.0, y=y)
    self.assertTrue(narrow.collapsed)
    self.assertGreater(narrow.value, 1.01)  # Its estimate clears the bar,
    self.assertFalse(certificates.check_infeasible_global(  # its mu fails.
        facts, subset, y, narrow.mu, 1.0)["ok"])
    first = verdicts.Policy(support_factors=(2.0,))
    verdict, _, evidence = verdicts.verify(facts, subset, y, 1.0,
                                           "infeasible", x, mu, policy=first)
    self.assertEqual(verdict, "undecided")
    self.assertTrue(evidence["collapsed"])
    wide = verdicts.Policy(support_factors=(2.0, 16.0), widen="collapsed")
    verdict, t_lower, evidence = verdicts.verify(
        facts, subset, y, 1.0, "infeasible", x, mu, policy=wide)
    self.assertEqual(verdict, "infeasible")
    self.assertEqual(evidence["kind"], "global")
    self.assertGreaterEqual(t_lower, 1.0)
    self.assertLessEqual(t_lower, sol["t"] * (1 + 1e-9))  # A sound bound.

  def test_a_mid_run_check_skips_the_evidence_it_would_drop(self):
    # A check of an instance that iterates on (topm's mid-run checks):
    # no radius statement, and no ray unless the matrix is one-sided; the
    # collapse, which decides the next check's support, is still reported.
    facts, subset, y, mu, x, _ = _rough_multipliers()
    first = verdicts.Policy(support_factors=(2.0,))
    cases = ((False, False, 1, 1), (True, False, 0, 0), (True, True, 0, 1))
    for mid_run, one_sided, balls, rays in cases:
      with mock.patch.object(certificates, "check_infeasible",
                             wraps=certificates.check_infeasible) as ball, \
           mock.patch.object(certificates, "check_unbounded",
                             wraps=certificates.check_unbounded) as ray, \
           mock.patch.object(lp_facts.MatrixFacts, "one_sided",
                             new_callable=mock.PropertyMock,
                             return_value=one_sided):
        verdict, _, evidence = verdicts.verify(
            facts, subset, y, 1.0, "infeasible", x, mu,
            policy=dataclasses.replace(first, mid_run=mid_run))
      self.assertEqual(verdict, "undecided")
      self.assertTrue(evidence["collapsed"])
      self.assertEqual((ball.call_count, ray.call_count), (balls, rays))

  def test_float32_projection_keeps_the_float64_dual_value(self):
    # The float32 products are refined in float64: the certified bound at
    # HiGHS's optimal multipliers is t* to float64 accuracy, as with
    # float64 products throughout.
    facts, subset, y, _, _, sol = _rough_multipliers()
    bounds = []
    for dtype in (np.float32, np.float64):
      mu = polish.project(facts, subset, sol["mu"], sol["x"], y=y,
                          dtype=dtype).mu
      cert = certificates.check_infeasible_global(facts, subset, y, mu,
                                                  sol["t"] * (1 - 1e-9))
      self.assertTrue(cert["ok"], cert)
      bounds.append(cert["t_lower"])
    np.testing.assert_allclose(bounds[0], bounds[1], rtol=1e-12)
    np.testing.assert_allclose(bounds, sol["t"], rtol=1e-9)

  def test_kept_or_gathered_again_rows_refine_alike(self):
    # project keeps A_K's float64 row blocks for its refinement (at most
    # KEPT_BLOCKS of them), else gathers them again: the same floats either
    # way, with one block of rows or several.
    facts, subset, y, mu, x, _ = _rough_multipliers()
    for rows in (None, 17, 12):  # 1 block (the default here), 2, 3.
      outs = []
      for kept in (polish.KEPT_BLOCKS, 0):
        with mock.patch.object(polish, "KEPT_BLOCKS", kept), \
            mock.patch.object(polish.linalg, "host_rows",
                              return_value=rows or 1 << 20):
          outs.append(polish.project(facts, subset, mu, x, y=y))
      np.testing.assert_array_equal(outs[0].mu, outs[1].mu)
      self.assertEqual(outs[0].value, outs[1].value)

  def test_no_wider_support_where_the_estimate_is_below_the_threshold(self):
    facts, subset, y, mu, x, sol = _rough_multipliers()
    threshold = 2.0 * sol["t"]  # Feasible at this threshold: no proof.
    wide = verdicts.Policy(support_factors=(2.0, 16.0), widen="collapsed")
    with mock.patch.object(polish, "project", wraps=polish.project) as spy:
      verdict, _, evidence = verdicts.verify(
          facts, subset, y, threshold, "infeasible", x, mu, policy=wide)
    self.assertEqual(verdict, "undecided")
    self.assertFalse(evidence["collapsed"])
    self.assertEqual(spy.call_count, 1)  # 'always' would try both.
    with mock.patch.object(polish, "project", wraps=polish.project) as spy:
      verdicts.verify(facts, subset, y, threshold, "infeasible", x, mu,
                      policy=verdicts.Policy(support_factors=(2.0, 16.0)))
    self.assertEqual(spy.call_count, 2)

  def test_solve_widens_an_instance_only_after_its_collapse(self):
    # topm.solve's mid-run checks: the first support while an instance has
    # not collapsed, then the first and the widest ('collapsed'). Every
    # instance's first infeasible check is made to report a collapse.
    a = lp_test._matrix(1500, 48, 21)  # pylint: disable=protected-access
    insts = lp_test._instances(a, (12, 16), 4, "logits", 7)  # pylint: disable=protected-access
    calls, real = [], records.verify

    def verify(facts, inst, claim, x, mu, *, policy, delta):
      if claim != "infeasible":
        return real(facts, inst, claim, x, mu, policy=policy, delta=delta)
      key = inst.subset.tobytes()
      first = all(k != key for k, _ in calls)
      calls.append((key, policy))
      if first:
        return "undecided", float("nan"), {"ok": False, "collapsed": True}
      return real(facts, inst, claim, x, mu, policy=policy, delta=delta)

    with mock.patch.object(records, "verify", verify):
      details = topm.solve(a, insts, batch=8, first_check=10)
    self.assertTrue(all(d["verdict"] != "undecided" for d in details))
    seen = set()
    for key, policy in calls:
      if key in seen:
        self.assertEqual(policy.widen, "collapsed")
        self.assertEqual(policy.support_factors, (2.0, 16.0))
      else:
        self.assertEqual(policy.support_factors, (2.0,))
      seen.add(key)
    self.assertLess(len(seen), len(calls))  # Some instance was re-checked.

  def test_starting_dual_is_lstsqs_through_the_cached_qr(self):
    # The global certificate's lam~: least squares on A_S^T through the
    # QR the facts keep, numpy's lstsq where A_S is rank deficient.
    rng = np.random.default_rng(5)
    a = rng.standard_normal((400, 30))
    a[7] = a[3]  # A repeated row: a subset holding both is rank deficient.
    facts = lp_facts.MatrixFacts(a)
    v = rng.standard_normal(30)
    for subset in (rng.choice(400, 12, replace=False), np.array([3, 7, 9])):
      want = np.linalg.lstsq(a[subset].T, v, rcond=None)[0]
      got = facts.least_squares_t(subset, v)
      np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)

  def test_bad_widen(self):
    with self.assertRaisesRegex(ValueError, "`widen` must be"):
      verdicts.Policy(widen="sometimes")


if __name__ == "__main__":
  absltest.main()
