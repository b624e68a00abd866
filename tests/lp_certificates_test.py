"""The float64 certificates of the LP's verdicts (bottleneck/lp/certificates.py,
verdicts.py), checked against HiGHS (scipy.optimize.linprog)."""

import contextlib
import fractions
from unittest import mock

from absl.testing import absltest
import numpy as np

from bottleneck import topm
from bottleneck.io import matrices
from bottleneck.lp import certificates, enclosure, polish
from bottleneck.lp import exact as lp_exact
from tests.lp_test import _linprog_result, _linprog_t, _matrix


def _exact_min_norm_step(m_mat, z, b):
  """M^T (M M^T)^{-1} (b - M z) in exact rational arithmetic (the
  distance from a float z to the exact solution enclosure.enclose encloses)."""
  q = lambda v: fractions.Fraction(float(v))
  n, p = m_mat.shape
  mm = [[q(v) for v in row] for row in m_mat]
  r = [q(b[i]) - sum(mm[i][k] * q(z[k]) for k in range(p)) for i in range(n)]
  g = [[sum(mm[i][k] * mm[j][k] for k in range(p)) for j in range(n)] + [r[i]]
       for i in range(n)]
  for c in range(n):  # Gauss-Jordan on [G | r], exact.
    pivot = next(i for i in range(c, n) if g[i][c] != 0)
    g[c], g[pivot] = g[pivot], g[c]
    g[c] = [v / g[c][c] for v in g[c]]
    for i in range(n):
      if i != c and g[i][c] != 0:
        g[i] = [vi - g[i][c] * vc for vi, vc in zip(g[i], g[c])]
  w = [g[i][n] for i in range(n)]
  return [sum(mm[i][k] * w[i] for i in range(n)) for k in range(p)]


def _ill_conditioned(n, d, seed=0):
  """Columns scaled over 4 decades: cond(A) ~ 1e4."""
  a = _matrix(n, d, seed)
  return a * np.logspace(0, 4, d)[None, :]


def _trained(n, d):
  """Rows and columns of MiniLM's trained embedding matrix (a real OPM)."""
  return matrices.load("minilm").array[:n, :d].astype(np.float64)


class CertificateTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.a = _matrix(1000, 40, 21)
    rng = np.random.default_rng(0)
    self.easy = topm.make_instances(1000, 3, 1, "logits", rng)[0]
    self.hard = topm.make_instances(1000, 20, 1, "logits", rng)[0]

  def test_twin_rows_decide_infeasible(self):
    # A trained head's bit-identical rows (SmolLM2 has 15): with token i in
    # S and its twin j outside, logit_j = logit_i = 1 for every embedding,
    # so t* = 1 exactly (HiGHS agrees) and S is never the strict top m.
    a = self.a.copy()
    subset = self.easy.subset
    a[7 if 7 not in subset else 8] = a[subset[1]]
    t = lp_exact.solve(a, subset, self.easy.y)["t"]
    self.assertAlmostEqual(t, 1.0, places=6)
    (detail,) = topm.solve(a, [self.easy], batch=1)
    self.assertEqual((detail["verdict"], detail["certificate"]),
                     ("infeasible", "twin_rows"))
    self.assertEqual(detail["lower_bound"], 1.0)
    # Off by one ulp in one entry: no longer twins, the check says nothing.
    a[7 if 7 not in subset else 8, 0] = np.nextafter(a[subset[1], 0], 9.0)
    self.assertIsNone(certificates.check_twin_rows(a, subset, self.easy.y,
                                                   1.0))

  def test_unbounded_lp_reported_with_a_ray(self):
    # Every row outside S strictly below the hyperplane e_1 = 0 and S on it:
    # v = e_1 has A_S v = 0, A_R v < 0, so t* = -inf (HiGHS: unbounded).
    a = self.a.copy()
    subset = self.hard.subset
    a[:, 0] = -1.0 - np.abs(a[:, 0])
    a[subset, 0] = 0.0
    res = _linprog_result(a, subset, self.hard.y)
    self.assertEqual(res.status, 3, res.message)  # HiGHS: unbounded.
    (detail,) = topm.solve(a, [self.hard], batch=1)
    self.assertEqual(detail["verdict"], "feasible")
    self.assertEqual(detail["upper_bound"], -np.inf)
    self.assertEqual(detail["lower_bound"], -np.inf)
    self.assertIn("ray", detail["certificate"])
    # HiGHS (the exact fallback) reports it with a ray that checks too.
    sol = lp_exact.solve(a, subset, self.hard.y)
    self.assertEqual((sol["status"], sol["t"]), ("Unbounded", -np.inf))
    self.assertTrue(certificates.check_unbounded(a, subset, sol["ray"])["ok"])
    # One row of R above the hyperplane: no ray exists, none is accepted.
    rest = np.setdiff1d(np.arange(a.shape[0]), subset)
    a[rest[0], 0] = 0.5
    x = np.zeros(a.shape[1])
    x[0] = 1.0  # The ray e_1.
    self.assertFalse(certificates.check_unbounded(a, subset, x)["ok"])
    a[rest[0], 0] = -1.0
    self.assertTrue(certificates.check_unbounded(a, subset, x)["ok"])

  def test_vertex_polish_recovers_the_optimum(self):
    # Near the optimum the largest other logits name the active rows: the
    # vertex they span is the LP's optimum itself (linprog's t*), exactly.
    res = _linprog_result(self.a, self.hard.subset, self.hard.y)
    near = res.x[:-1] + 1e-6 * np.random.default_rng(2).standard_normal(40)
    x_v = polish.vertex(self.a, self.hard.subset, self.hard.y, near)
    logits = self.a @ x_v
    rest = np.setdiff1d(np.arange(1000), self.hard.subset)
    self.assertAlmostEqual(logits[rest].max(), res.fun, places=10)
    np.testing.assert_allclose(logits[self.hard.subset], self.hard.y,
                               atol=1e-12)

  def test_feasible_certificate_and_tampering(self):
    sol = lp_exact.solve(self.a, self.easy.subset, self.easy.y)
    cert = certificates.check_feasible(self.a, self.easy.subset, self.easy.y,
                                       sol["x"], 1.0)
    self.assertTrue(cert["ok"])
    self.assertGreater(cert["margin"], 0)
    self.assertLess(cert["equality_residual"], 1e-12)
    tampered = sol["x"] + 5.0 * np.random.default_rng(1).standard_normal(40)
    self.assertFalse(certificates.check_feasible(
        self.a, self.easy.subset, self.easy.y, tampered, 1.0)["ok"])

  def test_feasible_check_of_a_float32_head_finds_the_float64_maximum(self):
    # A float32 head is ranked by a float32 pass and only the rows within
    # its rounding bound of the top are redone in float64. Near a vertex
    # the d + 1 - m active rows tie to ~1e-9, far below float32's ~1e-6:
    # the float64 maximum over every row must still be the one found.
    a32 = self.a.astype(np.float32)
    a64 = a32.astype(np.float64)
    it = self.hard
    sol = lp_exact.solve(a64, it.subset, it.y)
    x = sol["x"] + 1e-9 * np.random.default_rng(3).standard_normal(40)
    cert = certificates.check_feasible(a32, it.subset, it.y, x, 2.0)
    rest = np.setdiff1d(np.arange(1000), it.subset)
    reference = a64[rest] @ cert["x"]
    self.assertAlmostEqual(cert["margin"], 2.0 - reference.max(), places=14)
    self.assertGreaterEqual(cert["t_upper"], reference.max())
    facts = certificates.MatrixFacts(a32)
    rows = certificates._rest_candidates(facts, it.subset, cert["x"])
    self.assertGreaterEqual(rows.size, 40 + 1 - it.subset.size)  # Ties.
    self.assertLess(rows.size, 100)  # Not every row.
    # Any other dtype ranks by its float64 copy (x is not cast to it).
    ints = np.arange(12).reshape(4, 3)
    np.testing.assert_array_equal(
        certificates.MatrixFacts(ints).scores(np.array([0.5, 0.25, 0.1])),
        ints @ np.array([0.5, 0.25, 0.1]))

  def test_enclosure_holds_the_exact_solution(self):
    # enclose's radius must contain z* = z~ + M^T (M M^T)^{-1} (b - M z~),
    # computed here in exact rational arithmetic, on both of its paths
    # (the shifted-Cholesky bound, and Rump's where that one declines), for
    # a well-conditioned M and one with two rows 1e-5 apart.
    import scipy.linalg  # pylint: disable=g-import-not-at-top
    rng = np.random.default_rng(4)
    well = rng.standard_normal((5, 8))
    near = well.copy()
    near[4] = near[3] + 1e-5 * rng.standard_normal(8)
    b = np.array([0.0, 0.0, 0.0, 0.0, 1.0])
    for m_mat in (well, near):
      z0 = np.linalg.lstsq(m_mat, b, rcond=None)[0] + 1e-9
      for path in ("shifted", "rump"):
        with (mock.patch.object(enclosure, "shifted_radius",
                                return_value=None) if path == "rump" else
              contextlib.nullcontext()):
          z, z_err, _, _ = enclosure.enclose(m_mat, z0, b)
        exact = _exact_min_norm_step(m_mat, z, b)
        self.assertTrue(any(e != 0 for e in exact))  # Something to enclose.
        for i in range(z.size):
          self.assertLessEqual(abs(exact[i]), fractions.Fraction(z_err[i]))
    # Rows 1e-7 apart: lambda_min(M M^T) ~ 1e-14 lies below the rounding of
    # any shift, and the shifted bound declines instead of claiming one.
    near[4] = near[3] + 1e-7 * rng.standard_normal(8)
    gram = near @ near.T
    self.assertIsNone(enclosure.shifted_radius(
        near, gram, scipy.linalg.cho_factor(gram), np.ones(5)))

  def test_infeasible_certificate_and_tampering(self):
    sol = lp_exact.solve(self.a, self.hard.subset, self.hard.y)
    self.assertGreater(sol["t"], 1.0)
    mu = polish.dual(self.a, self.hard.subset, sol["mu"], sol["x"])
    cert = certificates.check_infeasible(self.a, self.hard.subset,
                                         self.hard.y, mu, 1.0)
    self.assertTrue(cert["ok"])
    self.assertGreater(cert["radius_over_x_par"], 1e6)
    rng = np.random.default_rng(2)
    noisy = mu + 1e-3 * rng.random(mu.size)
    noisy[self.hard.subset] = 0
    self.assertFalse(certificates.check_infeasible(
        self.a, self.hard.subset, self.hard.y, noisy, 1.0)["ok"])
    on_s = mu.copy()
    on_s[self.hard.subset[0]] = 0.1
    self.assertFalse(certificates.check_infeasible(
        self.a, self.hard.subset, self.hard.y, on_s, 1.0)["ok"])
    # Multipliers of a feasible instance cannot prove infeasibility.
    easy = lp_exact.solve(self.a, self.easy.subset, self.easy.y)
    self.assertFalse(certificates.check_infeasible(
        self.a, self.easy.subset, self.easy.y, easy["mu"], 1.0)["ok"])

  def test_global_certificate_against_linprog(self):
    """The verified dual value is a lower bound of t* (weak duality, any x)
    and equals linprog's t* at a vertex (strong duality)."""
    for seed, (n, d, a) in enumerate(((1000, 40, self.a),
                                      (600, 24, _ill_conditioned(600, 24)),
                                      (3000, 48, _trained(3000, 48)))):
      rng = np.random.default_rng(seed)
      checked = 0
      for it in topm.make_instances(n, 16, 6, "logits", rng):
        sol = lp_exact.solve(a, it.subset, it.y)
        t_star = _linprog_t(a, it.subset, it.y)
        mu = polish.dual(a, it.subset, sol["mu"], sol["x"])
        cert = certificates.check_infeasible_global(a, it.subset, it.y, mu,
                                                    min(t_star, 1.0))
        if t_star < 1.0:  # Feasible: no certificate may claim t* >= 1.
          self.assertFalse(certificates.check_infeasible_global(
              a, it.subset, it.y, mu, 1.0)["ok"])
          continue
        self.assertTrue(cert["ok"], cert)
        self.assertLessEqual(cert["t_lower"], t_star + 1e-9)
        self.assertAlmostEqual(cert["dual_value"], t_star, places=6)
        checked += 1
      self.assertGreater(checked, 0)

  def test_global_certificate_rejects_tampering(self):
    sol = lp_exact.solve(self.a, self.hard.subset, self.hard.y)
    mu = polish.dual(self.a, self.hard.subset, sol["mu"], sol["x"])
    check = lambda m, thr=1.0: certificates.check_infeasible_global(
        self.a, self.hard.subset, self.hard.y, m, thr)["ok"]
    self.assertTrue(check(mu))
    self.assertFalse(check(mu, thr=sol["t"] + 1e-3))  # Above t*: impossible.
    on_s = mu.copy()
    on_s[self.hard.subset[0]] = 0.1
    self.assertFalse(check(on_s))
    self.assertFalse(check(-mu))
    rand = np.random.default_rng(4).random(mu.size) * (mu > 0)[
        np.random.default_rng(5).permutation(mu.size)]
    rand[self.hard.subset] = 0
    self.assertFalse(check(rand))

  def test_probabilities_checked(self):
    rng = np.random.default_rng(3)
    it = topm.make_instances(1000, 3, 1, "probs", rng)[0]
    det = topm.solve(self.a, [it], batch=1)[0]
    self.assertEqual(det["verdict"], "feasible")
    self.assertLess(det["rest_mass"], 0.1)
    # The probability check itself rejects: other targets, or a delta the
    # measured mass does not meet (its rounding bound must also hold).
    sol = lp_exact.solve(self.a, it.subset, it.y)
    x = sol["x"]
    good = certificates.check_probabilities(self.a, it.subset, x, it.p,
                                            scale=it.scale, delta=0.1)
    self.assertTrue(good["ok"], good)
    self.assertGreaterEqual(good["ratio_rel_error_bound"],
                            good["ratio_rel_error"])
    self.assertGreaterEqual(good["rest_mass_bound"], good["rest_mass"])
    other_p = it.p[::-1] if not np.allclose(it.p, it.p[::-1]) else it.p * [
        1, 2, 3]
    self.assertFalse(certificates.check_probabilities(
        self.a, it.subset, x, other_p, scale=it.scale, delta=0.1)["ok"])
    self.assertFalse(certificates.check_probabilities(
        self.a, it.subset, x, it.p, scale=it.scale,
        delta=good["rest_mass"] / 2)["ok"])


if __name__ == "__main__":
  absltest.main()
