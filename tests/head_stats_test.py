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

  def test_nucleus_against_a_loop(self):
    rng = np.random.default_rng(3)
    p = special.softmax(3 * rng.standard_normal((15, 400)), 1)
    got = head_stats.nucleus(p, (0.9, 0.95), 50)
    for i in range(15):
      s = np.sort(p[i].astype(np.float64))[::-1]
      for mass in (0.9, 0.95):
        size = next(k for k in range(1, 401) if s[:k].sum() >= mass * s.sum())
        self.assertEqual(got["sizes"][mass][i], size)
      self.assertAlmostEqual(got["past_rank"][i], s[50:].sum(), 12)
    with self.assertRaisesRegex(ValueError, "rank"):
      head_stats.nucleus(p, rank=401)
    with self.assertRaisesRegex(ValueError, "mass"):
      head_stats.nucleus(p, (1.0,), 50)

  def test_identical_row_groups(self):
    w = np.random.default_rng(2).standard_normal((40, 6)).astype(np.float32)
    w[[7, 19, 33]] = w[3]  # One group of four, one of two.
    w[25] = w[11]
    w[12] = w[13] + np.float32(1e-7) * (w[13] == 0) + np.nextafter(
        w[13], np.inf) - w[13]  # A near twin: not identical.
    want = [sorted(i for i in range(40) if np.array_equal(w[i], w[j]))
            for j in range(40)]
    want = sorted({tuple(g) for g in want if len(g) > 1})
    got = sorted(tuple(g.tolist()) for g in head_stats.identical_row_groups(w))
    self.assertEqual(got, want)
    self.assertEqual(got, [(3, 7, 19, 33), (11, 25)])
    groups = head_stats.identical_row_groups(w)
    self.assertTrue(head_stats.splits_a_group([3, 7, 0], groups))
    self.assertFalse(head_stats.splits_a_group([3, 7, 19, 33, 0], groups))
    self.assertFalse(head_stats.splits_a_group([0, 1, 2], groups))
    self.assertEqual(head_stats.identical_row_groups(w[:3]), [])
    z = np.zeros((3, 2), np.float32)
    z[1, 0] = -0.0  # Equal in value: one group.
    self.assertLen(head_stats.identical_row_groups(z), 1)

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
