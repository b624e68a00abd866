"""Proposition 2 (prescribed top-m probabilities), checked in float64."""

from absl.testing import absltest, parameterized
import numpy as np
from scipy import optimize, special

from bottleneck import prescribed, topm


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


def highs_t_star(a, subset, ybar) -> float:
  """min t s.t. A_S x = ybar, a_j x <= t for j outside S (scipy HiGHS)."""
  n, d = a.shape
  rest = np.setdiff1d(np.arange(n), subset)
  cost = np.r_[np.zeros(d), 1.0]
  a_ub = np.hstack([a[rest], -np.ones((len(rest), 1))])
  a_eq = np.hstack([a[subset], np.zeros((len(subset), 1))])
  res = optimize.linprog(cost, a_ub, np.zeros(len(rest)), a_eq, ybar,
                         bounds=[(None, None)] * d + [(-10, None)],
                         method="highs")
  assert res.status == 0, res.message
  return float(res.x[-1])


class TargetsMoveVerdictsTest(absltest.TestCase):
  """Seed 001 App. D: eq. (17) squeezes any targets into ybar in [1, 1 + R]
  (R = ln(max p / min p) / s), so natural and uniform targets pose nearly
  the same LP; a verdict moves only for subsets near the threshold."""

  def test_a_spread_target_set_moves_a_verdict_near_the_threshold(self):
    rng = np.random.default_rng(0)
    n, d, m, eps, delta = 200, 12, 4, 0.05, 0.1
    a = rng.standard_normal((n, d))
    p = np.array([0.97, 0.01, 0.01, 0.01])  # One dominant token.
    s = prescribed.scale(n, m, eps, delta)
    spread = float(np.log(p.max() / p.min()) / s)
    moved, shifts = [], []
    for _ in range(400):
      subset = rng.choice(n, m, replace=False)
      ybar = prescribed.unscaled_targets(p[rng.permutation(m)], s)
      t_equal = highs_t_star(a, subset, np.ones(m))
      t_spread = highs_t_star(a, subset, ybar)
      shifts.append(abs(t_spread - t_equal))
      if (t_equal < 1 - eps) != (t_spread < 1 - eps):
        moved.append((subset, ybar, t_equal, t_spread))
    self.assertNotEmpty(moved)  # Targets do enter the LP ...
    # ... and move t* by about their spread R (here at most 1.5 R), so
    # only subsets within that of the threshold change verdict.
    self.assertLess(max(shifts), 2 * spread)
    for _, _, t_equal, _ in moved:
      self.assertLess(abs(t_equal - (1 - eps)), 2 * spread)
    # Our solver decides the moved instances as HiGHS does, both ways.
    subset, ybar, t_equal, t_spread = moved[0]
    insts = [topm.Instance(subset, np.ones(m), 1 - eps),
             topm.Instance(subset, ybar, 1 - eps)]
    got = [r["verdict"] for r in topm.solve(a.astype(np.float32), insts,
                                            batch=2)]
    want = ["feasible" if t < 1 - eps else "infeasible"
            for t in (t_equal, t_spread)]
    self.assertEqual(got, want)


if __name__ == "__main__":
  absltest.main()
