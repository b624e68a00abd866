"""Seed 001 App. A / E statistics of a head (bottleneck/head_stats.py) against
numpy float64."""

from absl.testing import absltest
import numpy as np
from scipy import special

from bottleneck import head_stats


class HeadStatsTest(absltest.TestCase):

  def test_cumulative_and_nucleus(self):
    p = special.softmax(np.random.default_rng(0).standard_normal((20, 50)), 1)
    got, need, _ = head_stats.top_mass(p, [1, 5, 50], 0.9)
    for i in range(20):
      s = np.sort(p[i])[::-1]
      np.testing.assert_allclose(got[i], [s[0], s[:5].sum(), 1.0], rtol=1e-12)
      self.assertEqual(need[i], np.searchsorted(np.cumsum(s), 0.9) + 1)
    # App. A's statistic reads the mean curve, not the per-position counts.
    mean_curve = np.mean([np.cumsum(np.sort(r)[::-1]) for r in p], axis=0)
    self.assertEqual(head_stats.top_mass(p, [1], 0.9)[2],
                     np.searchsorted(mean_curve, 0.9) + 1)

  def test_rows_random_like_and_cosines(self):
    w = np.abs(np.random.default_rng(1).standard_normal((300, 10))) + 0.1
    rnd = head_stats.random_like(w)
    # Gaussian rows whatever W looks like: norms spread like a chi(10)
    # (coefficient of variation 0.225), entries symmetric about 0.
    norms = head_stats.row_norms(rnd)
    self.assertAlmostEqual(norms.std() / norms.mean(), 0.225, delta=0.03)
    self.assertLess(abs(np.mean(rnd > 0) - 0.5), 0.03)
    np.testing.assert_array_equal(rnd, head_stats.random_like(w))  # Seeded.
    s = head_stats.summary(w)
    self.assertEqual(s["trained"]["cos_positive"], 1.0)  # Positive rows.
    self.assertLess(abs(s["random"]["cos_mean"]), 0.05)


if __name__ == "__main__":
  absltest.main()
