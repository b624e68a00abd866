"""Proposition 2 (prescribed top-m probabilities), checked in float64."""

from absl.testing import absltest, parameterized
import numpy as np
from scipy import special

from bottleneck import prescribed


def _case(N, d, m, seed):
  rng = np.random.default_rng(seed)
  a = rng.standard_normal((N, d))
  subset = rng.choice(N, size=m, replace=False)
  p = rng.uniform(0.1, 1.1, size=m)  # Section 6's targets.
  return a, subset, p / p.sum()


class PrescribedTest(parameterized.TestCase):

  def test_scale_is_eq_17(self):
    self.assertAlmostEqual(prescribed.scale(50257, 20, 0.05, 0.1),
                           -np.log(20 * 0.1 / 50257) / 0.05)

  def test_unscaled_targets_eq_14(self):
    p = np.array([0.5, 0.3, 0.2])
    ybar = prescribed.unscaled_targets(p, s=10.0)
    np.testing.assert_allclose(ybar, np.log(p / 0.2) / 10 + 1)
    self.assertAlmostEqual(ybar.min(), 1.0)

  @parameterized.parameters((2000, 256, 5, 0), (5000, 400, 20, 1))
  def test_event_holds_gives_prescribed_probabilities(self, N, d, m, seed):
    a, subset, p = _case(N, d, m, seed)
    emb = prescribed.embedding(a, subset, p, eps=0.05, delta=0.1)
    report = prescribed.verify(a, subset, emb.x, p, eps=0.05, delta=0.1)
    self.assertTrue(report["event_holds"], report["message"])
    self.assertTrue(report["ok"], report["message"])
    # Independent check with scipy's softmax.
    probs = special.softmax(a @ emb.x)
    q = probs[subset]
    np.testing.assert_allclose(q / q.sum(), p, rtol=1e-9)
    self.assertLess(1 - q.sum(), 0.1)
    # The embedding lies in the row space of A_S.
    coef, *_ = np.linalg.lstsq(a[subset].T, emb.x, rcond=None)
    np.testing.assert_allclose(a[subset].T @ coef, emb.x, rtol=1e-8,
                               atol=1e-8)

  def test_logsumexp_is_scipys(self):
    rng = np.random.default_rng(0)
    for size, spread in ((1, 1.0), (50257, 1.0), (50257, 300.0),
                         (1000, 1e-3)):
      v = spread * rng.standard_normal(size)
      self.assertAlmostEqual(prescribed.logsumexp(v), special.logsumexp(v),
                             delta=4e-16 * max(1.0, abs(special.logsumexp(v))))
    for v in ([-np.inf, -np.inf], [np.inf, 1.0], [-np.inf, 0.0],
              [-800.0, -801.0]):
      self.assertEqual(prescribed.logsumexp(v), special.logsumexp(v))
    self.assertTrue(np.isnan(prescribed.logsumexp([np.nan, 1.0])))

  def test_event_failure_is_reported(self):
    a, subset, p = _case(3000, 40, 25, 3)  # m far beyond what d=40 allows.
    emb = prescribed.embedding(a, subset, p)
    report = prescribed.verify(a, subset, emb.x, p)
    self.assertFalse(report["event_holds"])
    self.assertIn("FAILS", report["message"])
    # Ratios on S still hold exactly; only the mass guarantee is lost.
    self.assertLess(report["ratio_rel_error"], 1e-9)

  @parameterized.parameters(
      ("p", dict(p=[0.5, 0.0, 0.5])),
      ("p", dict(p=[0.5, -0.1, 0.6])),
      ("p", dict(p=[0.5, 0.5])),  # wrong length
      ("eps", dict(eps=0.0)),
      ("eps", dict(eps=1.5)),
      ("delta", dict(delta=1.0)),
      ("subset", dict(subset=[1, 1, 2])),
      ("subset", dict(subset=[1, 2, 500])),
      ("A", dict(a=np.full((100, 10), np.nan))),
  )
  def test_bad_input_raises(self, name, override):
    kw = dict(a=np.random.default_rng(0).standard_normal((100, 10)),
              subset=[1, 2, 3], p=[0.2, 0.3, 0.5], eps=0.05, delta=0.1)
    kw.update(override)
    with self.assertRaisesRegex(ValueError, f"`{name}`"):
      prescribed.embedding(kw["a"], kw["subset"], kw["p"], kw["eps"],
                           kw["delta"])

  def test_rank_deficient_subset_raises(self):
    a = np.random.default_rng(0).standard_normal((50, 10))
    a[3] = a[2]
    with self.assertRaisesRegex(ValueError, "linearly dependent"):
      prescribed.embedding(a, [2, 3], [0.5, 0.5])


if __name__ == "__main__":
  absltest.main()
