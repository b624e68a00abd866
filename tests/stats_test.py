"""bottleneck.stats against numpy and scipy."""

from absl.testing import absltest
import numpy as np
from scipy import stats as sp_stats

from bottleneck import stats


class StatsTest(absltest.TestCase):

  def test_slope_through_zero_against_lstsq(self):
    rng = np.random.default_rng(0)
    x = rng.uniform(100, 2000, 6)
    y = 0.2 * x + rng.normal(0, 5, 6)
    want = np.linalg.lstsq(x[:, None], y, rcond=None)[0][0]
    self.assertAlmostEqual(stats.slope_through_zero(x, y), want, places=12)
    # With an intercept numpy's polyfit differs; through 0 it cannot.
    self.assertNotAlmostEqual(np.polyfit(x, y, 1)[0], want, places=6)
    with self.assertRaisesRegex(ValueError, "`x` and `y`"):
      stats.slope_through_zero([0.0, 0.0], [1.0, 2.0])

  def test_bootstrap_interval_covers_and_shrinks(self):
    rng = np.random.default_rng(1)
    x = np.linspace(100, 1000, 8)
    noisy = 0.15 * x * (1 + rng.normal(0, 0.2, 8))
    lo, hi = stats.bootstrap_slope(x, noisy, seed=0)
    self.assertLess(lo, stats.slope_through_zero(x, noisy))
    self.assertGreater(hi, stats.slope_through_zero(x, noisy))
    exact = stats.bootstrap_slope(x, 0.15 * x, seed=0)
    np.testing.assert_allclose(exact, (0.15, 0.15), rtol=1e-12)
    self.assertEqual(stats.bootstrap_slope(x, noisy, seed=3),
                     stats.bootstrap_slope(x, noisy, seed=3))

  def test_two_proportion_z_against_chi_square(self):
    for k1, n1, k2, n2 in ((39, 100, 54, 100), (20, 20, 14, 20),
                           (3, 10, 7, 10)):
      table = [[k1, n1 - k1], [k2, n2 - k2]]
      chi2 = sp_stats.chi2_contingency(table, correction=False)[0]
      z = stats.two_proportion_z(k1, n1, k2, n2)
      self.assertAlmostEqual(z * z, chi2, places=9)
      self.assertEqual(np.sign(z), np.sign(k1 / n1 - k2 / n2))
    self.assertEqual(stats.two_proportion_z(10, 10, 20, 20), 0.0)

  def test_binomial_interval_against_scipy(self):
    for k, n in ((0, 10), (10, 10), (792, 800), (7, 20), (95, 100),
                 (1000, 2000), (3, 3000)):
      for level in (0.9, 0.95):
        want = sp_stats.binomtest(k, n).proportion_ci(level, "exact")
        np.testing.assert_allclose(stats.binomial_interval(k, n, level),
                                   (want.low, want.high), atol=1e-9,
                                   err_msg=f"{k}/{n} at {level}")
    # 10 of 10 cannot tell 0.99 from 0.7 (the ledger's Fig. 1 rows).
    self.assertLess(stats.binomial_interval(10, 10)[0], 0.7)
    for k, n, said in ((11, 10, "`k`"), (-1, 10, "`k`"), (1.5, 10, "`k`"),
                       (1, 0, "`n`")):
      with self.assertRaisesRegex(ValueError, said):
        stats.binomial_interval(k, n)

  def test_fisher_exact_against_scipy(self):
    for k1, n1, k2, n2 in ((95, 100, 100, 100), (39, 100, 54, 100),
                           (10, 10, 4, 10), (800, 2000, 850, 2000),
                           (0, 5, 0, 7), (3, 10, 7, 10)):
      want = sp_stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue
      self.assertAlmostEqual(stats.fisher_exact(k1, n1, k2, n2), want,
                             places=9, msg=(k1, n1, k2, n2))
    with self.assertRaisesRegex(ValueError, "`k2`"):
      stats.fisher_exact(1, 10, 11, 10)


if __name__ == "__main__":
  absltest.main()
