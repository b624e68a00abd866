"""Corollary 3's construction: exact sign pattern and float64 certificates."""

from absl.testing import absltest, parameterized
import mpmath
import numpy as np

from bottleneck import signrank


def _mp_logits(subset, N, m):
  """p(t_i) = (-1)^{r-1} prod (cos(t_i - c) - cos w) at 60 digits."""
  mpmath.mp.dps = 60
  arcs = signrank.arcs(subset, N)
  out = []
  for i in range(N):
    t = 2 * mpmath.pi * i / N
    v = mpmath.mpf((-1) ** (len(arcs) - 1))
    for c, w in arcs:
      v *= mpmath.cos(t - mpmath.mpf(c)) - mpmath.cos(mpmath.mpf(w))
    out.append(v)
  return out


class ConstructionTest(parameterized.TestCase):

  def test_dimension_bounds(self):
    self.assertEqual(signrank.dimension_bounds(383, 50257), (766, 768))
    with self.assertRaisesRegex(ValueError, "`N`"):
      signrank.dimension_bounds(10, 30)

  def test_matrix_rows_are_the_moment_curve(self):
    a = signrank.moment_curve_matrix(8, 2)
    t = 2 * np.pi * 3 / 8
    np.testing.assert_allclose(
        a[3], [1, np.cos(t), np.sin(t), np.cos(2 * t), np.sin(2 * t)])

  @parameterized.parameters((7, 2), (10, 3), (13, 4), (16, 5))
  def test_every_subset_exhaustively(self, N, m):
    a = signrank.moment_curve_matrix(N, m)
    for subset in signrank.all_subsets(N, m):
      c = signrank.subset_embedding(subset, N, m)
      cert = signrank.certify(a, c, subset)
      self.assertTrue(cert["certified"], msg=f"{subset} {cert}")
      top = np.argsort(-(a @ c))[:m]
      self.assertEqual(set(top.tolist()), set(subset.tolist()))

  def test_coefficients_match_high_precision_product(self):
    # A @ c equals the product form up to one positive scale, 1e-12 relative.
    N, m = 40, 6
    subset = np.array([0, 1, 7, 20, 21, 33])
    a = signrank.moment_curve_matrix(N, m)
    y = a @ signrank.subset_embedding(subset, N, m)
    ref = np.array([float(v) for v in _mp_logits(subset, N, m)])
    scale = y[0] / ref[0]
    self.assertGreater(scale, 0)
    np.testing.assert_allclose(y, scale * ref, rtol=1e-9,
                               atol=1e-12 * np.abs(y).max())
    np.testing.assert_allclose(
        signrank.exact_logits(subset, N), ref / np.abs(ref).max(), rtol=1e-12)

  def test_exact_log10_margin_against_mpmath(self):
    N, m = 60, 5
    subset = np.array([3, 4, 17, 40, 59])
    vals = _mp_logits(subset, N, m)
    chosen = [vals[i] for i in subset]
    rest = [vals[i] for i in range(N) if i not in set(subset.tolist())]
    ref = mpmath.log10((min(chosen) - max(rest)) /
                       max(abs(v) for v in vals))
    self.assertAlmostEqual(signrank.exact_log10_margin(subset, N), float(ref),
                           places=9)

  def test_random_subsets_certified_at_moderate_size(self):
    res = signrank.sweep(97, 32, signrank.random_subsets(97, 32, 10, seed=1))
    self.assertEqual(res["certified"], 10)

  def test_float64_breaks_where_exact_margin_is_below_precision(self):
    N, m = 1000, 48
    res = signrank.sweep(N, m, signrank.random_subsets(N, m, 5, seed=2))
    self.assertLess(res["worst_exact_log10_margin"], -20)
    self.assertEqual(res["certified"], 0)
    # The paper's GPT-2 figure: the construction exists, margins ~1e-77.
    big = signrank.sweep(50257, 383, signrank.random_subsets(50257, 383, 1),
                         check_float64=False)
    self.assertLess(big["worst_exact_log10_margin"], -30)
    self.assertTrue(np.isfinite(big["worst_exact_log10_margin"]))

  def test_tampered_embedding_is_not_certified(self):
    N, m = 13, 4
    subset = np.array([0, 3, 6, 9])
    a = signrank.moment_curve_matrix(N, m)
    c = signrank.subset_embedding(subset, N, m)
    self.assertTrue(signrank.certify(a, c, subset)["certified"])
    self.assertFalse(signrank.certify(a, -c, subset)["certified"])
    self.assertFalse(signrank.certify(a, c, [0, 3, 6, 10])["certified"])

  @parameterized.parameters(
      ("subset", lambda: signrank.subset_embedding([0, 1], 10, 3)),
      ("subset", lambda: signrank.subset_embedding([0, 0, 1], 10, 3)),
      ("subset", lambda: signrank.subset_embedding([0, 1, 10], 10, 3)),
      ("m", lambda: signrank.moment_curve_matrix(10, 0)),
      ("N", lambda: signrank.moment_curve_matrix(-1, 2)),
  )
  def test_bad_input_raises(self, name, fn):
    with self.assertRaisesRegex(ValueError, f"`{name}`"):
      fn()


if __name__ == "__main__":
  absltest.main()
