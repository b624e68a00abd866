"""Pure-XLA factorisations against numpy float64."""

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from bottleneck import linalg, simulate


def _spd(n, seed):
  rng = np.random.default_rng(seed)
  a = rng.standard_normal((n, 3 * n))
  return a @ a.T


class LinalgTest(parameterized.TestCase):

  @parameterized.parameters(1, 2, 7, 40)
  def test_cholesky_matches_numpy(self, n):
    a = _spd(n, n)
    with jax.enable_x64(True):
      l = np.asarray(linalg.cholesky(jnp.asarray(a)))
    np.testing.assert_allclose(l, np.linalg.cholesky(a), rtol=1e-10,
                               atol=1e-10)

  @parameterized.parameters(1, 5, 30)
  def test_solves_match_numpy(self, n):
    a = _spd(n, 100 + n)
    b = np.random.default_rng(n).standard_normal((n, 3))
    with jax.enable_x64(True):
      l = linalg.cholesky(jnp.asarray(a))
      x = np.asarray(linalg.cho_solve(l, jnp.asarray(b)))
      y = np.asarray(linalg.solve_lower(l, jnp.asarray(b)))
      z = np.asarray(linalg.solve_lower_t(l, jnp.asarray(b)))
    l = np.linalg.cholesky(a)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(y, np.linalg.solve(l, b), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(z, np.linalg.solve(l.T, b), rtol=1e-8,
                               atol=1e-10)

  def test_gram64_by_blocks_is_the_float64_product(self):
    a = np.random.default_rng(2).standard_normal((1001, 7)).astype(np.float32)
    want = a.astype(np.float64).T @ a.astype(np.float64)
    for block in (1, 64, 5000):
      np.testing.assert_allclose(linalg.gram64(a, block), want, rtol=1e-14)

  def test_vmap_equals_loop_and_jit_equals_eager(self):
    a = jnp.asarray(np.stack([_spd(6, s) for s in range(4)]), jnp.float32)
    batched = jax.vmap(linalg.cholesky)(a)
    jitted = jax.jit(linalg.cholesky)
    for i in range(4):
      np.testing.assert_allclose(batched[i], linalg.cholesky(a[i]), rtol=1e-5,
                                 atol=1e-5)
      np.testing.assert_allclose(jitted(a[i]), linalg.cholesky(a[i]),
                                 rtol=1e-5, atol=1e-5)

  @parameterized.parameters("matrix", "projected")
  def test_simulation_trial_has_no_lapack_custom_calls(self, method):
    # Batched LAPACK custom calls deadlock on multi-device CPU (linalg.py).
    fn = jax.vmap(lambda k: simulate.trial(k, N=300, d=20, m_values=(2, 5),
                                           method=method))
    hlo = jax.jit(fn).lower(jax.random.split(jax.random.key(0), 4)).as_text()
    self.assertNotIn("custom_call", hlo)


  @parameterized.parameters(np.float32, np.float64)
  def test_radix_argsort_is_the_stable_argsort(self, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3000)).astype(dtype)
    x[:, ::7] = x[:, 3::7]  # Ties.
    x[:, 1::7] = np.nextafter(x[:, 3::7], dtype(9))  # Equal float32 roundings.
    x[:, 2::11] = 0.0
    x[:, 5::13] = -0.0  # Counts as +0.
    x[0, :3] = [np.inf, -np.inf, 1e300 if dtype == np.float64 else 3e38]
    x[1] *= 1e-40  # Subnormal in float32.
    order, codes = linalg.stable_argsort_rows(x)
    np.testing.assert_array_equal(order, np.argsort(x, 1, kind="stable"))
    np.testing.assert_array_equal(
        codes, linalg.order_codes(np.take_along_axis(x, order, 1)))
    ordered = np.take_along_axis(x, order, 1)
    np.testing.assert_array_equal(codes[:, 1:] == codes[:, :-1],
                                  ordered[:, 1:] == ordered[:, :-1])


if __name__ == "__main__":
  absltest.main()
