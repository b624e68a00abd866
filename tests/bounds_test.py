"""Closed forms of seed 001 §4.1 against scipy / mpmath float64 references."""

from absl.testing import absltest, parameterized
import jax
import mpmath
import numpy as np
from scipy import integrate, special, stats

from bottleneck import bounds, models


def _v(d, m):
  return d * (d - 1) / ((d - m) * (d - m - 1) * (d - m - 3))


def _mp_log_prob_exact(N, d, m):
  """(N - m) log Phi(1/sqrt(m v)) with 50-digit mpmath."""
  mpmath.mp.dps = 50
  z = 1 / mpmath.sqrt(m * mpmath.mpf(_v(d, m)))
  return float((N - m) * mpmath.log(mpmath.ncdf(z)))


def _scipy_gumbel(N, d, m):
  n = N - m
  mu = stats.norm.isf(1.0 / n)
  sigma = stats.norm.isf(1.0 / (n * np.e)) - mu
  return stats.gumbel_r.cdf(1 / np.sqrt(m * _v(d, m)), loc=mu, scale=sigma)


def _quad_rowspace(N, d, m):
  k = d - m + 1
  f = lambda q: np.exp((N - m) * special.log_ndtr(np.sqrt(q / m))) * (
      stats.chi2.pdf(q, k))
  lo, hi = stats.chi2.ppf(1e-15, k), stats.chi2.isf(1e-15, k)
  return integrate.quad(f, lo, hi, limit=400, epsabs=1e-13)[0]


SIZES = [(50257, 768, 20), (50257, 768, 28), (32000, 4096, 143),
         (1000, 64, 5), (300, 30, 3), (256000, 2304, 70)]


class ClosedFormTest(parameterized.TestCase):

  @parameterized.parameters(*SIZES)
  def test_exact_form_matches_mpmath(self, N, d, m):
    got = float(bounds.log_prob_exact(N, d, m))
    want = _mp_log_prob_exact(N, d, m)
    self.assertAlmostEqual(got / want, 1.0, delta=1e-5)

  @parameterized.parameters(*SIZES)
  def test_exact_form_float64(self, N, d, m):
    with jax.enable_x64(True):
      got = float(bounds.log_prob_exact(N, d, m))
    self.assertAlmostEqual(got / _mp_log_prob_exact(N, d, m), 1.0, delta=1e-12)

  @parameterized.parameters(*SIZES)
  def test_gumbel_form_matches_scipy(self, N, d, m):
    got = float(bounds.prob(N, d, m, "gumbel"))
    self.assertAlmostEqual(got, _scipy_gumbel(N, d, m), delta=2e-6)

  @parameterized.parameters(*SIZES)
  def test_rowspace_exact_matches_quad(self, N, d, m):
    want = _quad_rowspace(N, d, m)
    self.assertAlmostEqual(float(bounds.prob(N, d, m, "rowspace_exact")),
                           want, delta=2e-5)
    with jax.enable_x64(True):
      self.assertAlmostEqual(
          float(bounds.prob(N, d, m, "rowspace_exact")), want, delta=1e-10)

  def test_log_ndtr_relative_accuracy(self):
    z = np.linspace(-20.0, 9.0, 5001)
    got = np.asarray(bounds.log_ndtr(z), np.float64)
    want = special.log_ndtr(z)
    np.testing.assert_allclose(got, want, rtol=3e-5)  # float32 erfc.

  def test_variance_matches_inverse_wishart_moments(self):
    # Each entry of a_j^T A_m^T W, W = (A_m A_m^T)^{-1}, is sum_k u_k W_ki with
    # u ~ N(0, d I): variance d sum_k (V_ki + mu_ki^2), with mu, V of eq. (7).
    d, m = 768.0, 30.0
    denom = (d - m) * (d - m - 1)**2 * (d - m - 3)
    v_diag, v_off = ((d - m + 1) + (d - m - 1)) / denom, (d - m - 1) / denom
    mu = 1 / (d - m - 1)
    want = d * (v_diag + mu**2 + (m - 1) * v_off)
    self.assertAlmostEqual(float(bounds.variance(768, 30)) / want, 1.0,
                           delta=1e-6)


class TableOneTest(parameterized.TestCase):

  def test_gumbel_form_reproduces_all_22_rows(self):
    rows = models.TABLE1
    self.assertLen(rows, 22)
    got = bounds.m_star([r.N for r in rows], [r.d for r in rows], 0.99,
                        "gumbel")
    self.assertEqual(got.tolist(), [r.m_paper for r in rows])

  @parameterized.parameters(*bounds.FORMS)
  def test_m_star_equals_float64_scan(self, form):
    scan = {"exact": lambda N, d, m: np.exp(_vlog_exact(N, d, m)),
            "gumbel": _scipy_gumbel,
            "rowspace_exact": np.vectorize(_quad_rowspace)}[form]
    for row in models.TABLE1[:12]:
      got = int(bounds.m_star(row.N, row.d, 0.99, form))
      m = np.arange(1, got + 7)
      p = scan(row.N, row.d, m)
      want = int(np.argmax(p < 0.99))  # First crossing at m = want + 1.
      self.assertEqual(got, want, msg=f"{form} {row}")

  @parameterized.parameters(*bounds.FORMS)
  def test_probability_decreases_while_above_one_half(self, form):
    # In float64 (x64) to 1e-12; in the default float32 to a few of its
    # ulps at p = 1 (jax 0.12's rowspace_exact at 32000 x 4096 steps from
    # 0.9999995 back up to 1.0, 8 ulps of 6e-8: rounding, not the bound).
    ulp = np.finfo(np.float32).epsneg  # Below 1.
    for x64, slack in ((True, 1e-12), (False, 16 * ulp)):
      with jax.enable_x64(x64):
        for N, d in [(50257, 768), (32000, 4096), (300, 30), (60, 50)]:
          p = np.asarray(bounds.prob(N, d, np.arange(1, min(d - 3, N)),
                                     form))
          first_below = int(np.argmax(p < 0.5))
          self.assertTrue(np.all(np.diff(p[:first_below + 1]) <= slack),
                          msg=f"{form} {N} {d} x64={x64}")
          self.assertTrue(np.all(p[first_below:] < 0.5),
                          msg=f"{form} {N} {d} x64={x64}")

  def test_m_star_vectorised_shape(self):
    got = bounds.m_star(np.array([[50257], [32000]]), np.array([768, 4096]))
    self.assertEqual(got.shape, (2, 2))
    self.assertEqual(got[0, 0], 26)


def _vlog_exact(N, d, m):
  return (N - m) * special.log_ndtr(1 / np.sqrt(m * _v(d, m)))


class TransformsTest(parameterized.TestCase):

  @parameterized.parameters(*bounds.FORMS)
  def test_jit_equals_eager(self, form):
    m = np.arange(1, 60)
    jitted = jax.jit(bounds.log_prob, static_argnames="form")
    # float32: XLA fusion may reorder roundings (log P of rowspace_exact is a
    # difference of two O(1) log-sum-exps: absolute error ~1e-6); float64:
    # equal to 1e-12.
    np.testing.assert_allclose(jitted(50257, 768, m, form),
                               bounds.log_prob(50257, 768, m, form), rtol=1e-4,
                               atol=2e-6)
    with jax.enable_x64(True):
      np.testing.assert_allclose(jitted(50257, 768, m, form),
                                 bounds.log_prob(50257, 768, m, form),
                                 rtol=1e-12, atol=1e-14)

  @parameterized.parameters(*bounds.FORMS)
  def test_vmap_equals_loop(self, form):
    N = np.array([50257, 32000, 1000])
    d = np.array([768, 4096, 64])
    m = np.array([28, 140, 6])
    with jax.enable_x64(True):
      batched = jax.vmap(lambda n, dd, mm: bounds.log_prob(n, dd, mm, form))(
          N, d, m)
      loop = [bounds.log_prob(int(a), int(b), int(c), form)
              for a, b, c in zip(N, d, m)]
    np.testing.assert_allclose(batched, loop, rtol=1e-12)


class BadInputTest(parameterized.TestCase):

  @parameterized.parameters(
      ("m", lambda: bounds.prob(50257, 768, 765)),  # m = d - 3
      ("m", lambda: bounds.prob(50257, 768, 800)),
      ("m", lambda: bounds.prob(20, 768, 20)),  # m >= N
      ("N", lambda: bounds.prob(0, 768, 5)),
      ("d", lambda: bounds.prob(50257, -1, 5)),
      ("m", lambda: bounds.prob(50257, 768, 0)),
      ("m", lambda: bounds.variance(768, 766)),
      ("threshold", lambda: bounds.m_star(50257, 768, 0.0)),
      ("threshold", lambda: bounds.m_star(50257, 768, 1.0)),
      ("threshold", lambda: bounds.m_star(50257, 768, float("nan"))),
      ("form", lambda: bounds.prob(50257, 768, 5, "normal")),
      ("models", lambda: models.lookup("gpt5")),
  )
  def test_raises_naming_argument(self, name, fn):
    with self.assertRaisesRegex(ValueError, f"`{name}`"):
      fn()


if __name__ == "__main__":
  absltest.main()
