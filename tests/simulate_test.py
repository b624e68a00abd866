"""Monte-Carlo simulation (seed 001 App. B) against numpy and exact laws."""

from absl.testing import absltest, parameterized
import chex
import jax
import numpy as np
from scipy import stats

from bottleneck import bounds, simulate


def _numpy_trial(key, N, d, m_values):
  """Plain float64 numpy on the very matrix the trial with `key` draws."""
  a = np.asarray(simulate.random_matrix(key, N, d), np.float64)
  t, sq = [], []
  for m in m_values:
    a_s = a[:m]
    x = a_s.T @ np.linalg.solve(a_s @ a_s.T, np.ones(m))
    t.append((a[m:] @ x).max())
    sq.append(x @ x)
  return np.array(t), np.array(sq)


class SimulationTest(parameterized.TestCase):

  def test_matches_numpy_loop_on_same_keys(self):
    N, d, m_values, seed = 700, 48, (2, 5, 9, 14), 11
    sim = simulate.simulate(N, d, m_values, trials=10, seed=seed)
    for i in range(10):
      key = jax.random.fold_in(jax.random.key(seed), i)
      t, sq = _numpy_trial(key, N, d, m_values)
      np.testing.assert_allclose(sim.max_other_logit[i], t, rtol=2e-4,
                                 atol=2e-4)
      np.testing.assert_allclose(sim.x_sq_norm[i], sq, rtol=2e-4)
      clear = np.abs(t - 1) > 1e-3  # Same verdict wherever it is not a tie.
      np.testing.assert_array_equal((sim.max_other_logit[i] < 1)[clear],
                                    (t < 1)[clear])

  def test_sq_norm_follows_chi_square_law(self):
    # m / |x|^2 ~ chi2(d - m + 1): the law behind `rowspace_exact`.
    N, d, m = 100, 40, 7
    sim = simulate.simulate(N, d, [m], trials=800, seed=1, method="projected")
    q = m / sim.x_sq_norm[:, 0]
    self.assertGreater(stats.kstest(q, stats.chi2(d - m + 1).cdf).pvalue, 1e-3)

  @parameterized.parameters("matrix", "projected")
  def test_fraction_agrees_with_rowspace_exact(self, method):
    N, d, m_values, trials = 2000, 64, (3, 4, 5, 6), 1200
    sim = simulate.simulate(N, d, m_values, trials, seed=5, method=method)
    for rec in sim.records():
      p = rec["bound_rowspace_exact"]
      se = np.sqrt(p * (1 - p) / trials) + 1e-3
      self.assertLess(abs(rec["fraction"] - p) / se, 4.0, msg=str(rec))
      # And the simulation lies above the paper's (approximate) bound.
      self.assertGreater(rec["fraction"] + 3 * se, rec["bound"], msg=str(rec))

  def test_methods_share_embeddings_and_agree_in_law(self):
    kw = dict(N=1500, d=40, m_values=(3, 6), trials=600, seed=2)
    a = simulate.simulate(method="matrix", **kw)
    b = simulate.simulate(method="projected", **kw)
    np.testing.assert_allclose(a.x_sq_norm, b.x_sq_norm, rtol=1e-6)
    for j in range(2):
      ks = stats.ks_2samp(a.max_other_logit[:, j], b.max_other_logit[:, j])
      self.assertGreater(ks.pvalue, 1e-3)

  def test_sharded_equals_single_device(self):
    self.assertEqual(jax.device_count(), 8)
    kw = dict(N=900, d=32, m_values=(2, 4, 7), trials=20, seed=3)
    sharded = simulate.simulate(**kw)
    single = simulate.simulate(devices=jax.devices()[:1], **kw)
    np.testing.assert_allclose(sharded.max_other_logit, single.max_other_logit,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(sharded.fraction(), single.fraction())

  def test_chunk_size_does_not_change_results(self):
    kw = dict(N=500, d=24, m_values=(2, 5), trials=13, seed=4)
    a = simulate.simulate(chunk=8, **kw)
    b = simulate.simulate(chunk=16, **kw)
    np.testing.assert_allclose(a.max_other_logit, b.max_other_logit,
                               rtol=1e-6, atol=1e-6)

  @parameterized.parameters("matrix", "projected")
  def test_jit_equals_eager_and_vmap_equals_loop(self, method):
    kw = dict(N=5000, d=32, m_values=(2, 6), method=method)
    keys = jax.random.split(jax.random.key(0), 3)
    eager = [simulate.trial(k, **kw) for k in keys]
    jitted = jax.jit(lambda k: simulate.trial(k, **kw))
    batched = jax.vmap(lambda k: simulate.trial(k, **kw))(keys)
    for i, k in enumerate(keys):
      for j in range(2):
        chex.assert_trees_all_close(jitted(k)[j], eager[i][j], rtol=1e-5)
        chex.assert_trees_all_close(batched[j][i], eager[i][j], rtol=1e-5)

  def test_records_fields(self):
    sim = simulate.simulate(300, 30, [2, 3], trials=4)
    rec = sim.records()[0]
    for key in ("m", "trials", "fraction", "stderr", "bound"):
      self.assertIn(key, rec)
    self.assertAlmostEqual(rec["bound"], float(bounds.prob(300, 30, 2)))
    self.assertEqual(bounds.empirical_m_star([2, 3, 4], [1.0, 0.99, 0.5]), 3)


class BadInputTest(parameterized.TestCase):

  @parameterized.parameters(
      ("m", dict(N=100, d=10, m_values=[10], trials=2)),  # m >= d
      ("m", dict(N=5, d=10, m_values=[5], trials=2)),  # m >= N
      ("m", dict(N=100, d=10, m_values=[0], trials=2)),
      ("m", dict(N=100, d=10, m_values=[], trials=2)),
      ("trials", dict(N=100, d=10, m_values=[2], trials=0)),
      ("N", dict(N=-3, d=10, m_values=[2], trials=2)),
      ("d", dict(N=100, d=2.5, m_values=[2], trials=2)),
      ("method", dict(N=100, d=10, m_values=[2], trials=2, method="exact")),
  )
  def test_raises_naming_argument(self, name, kwargs):
    with self.assertRaisesRegex(ValueError, f"`{name}`"):
      simulate.simulate(**kwargs)


if __name__ == "__main__":
  absltest.main()
