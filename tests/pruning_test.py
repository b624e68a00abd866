"""Seed 003 Fig. 6's removal kernel (train/probes/pruning.py) against masked
float64 softmaxes."""

from absl.testing import absltest, parameterized
import jax
import numpy as np
from scipy import special

from train.probes import pruning


class PruneKernelTest(parameterized.TestCase):
  """Seed 003 §4's mean distributions with dimensions removed: both sweeps
  of `pruning._mean_softmax_kept` against masked float64 softmaxes."""

  @parameterized.parameters((None, 0.0), ("bias", 0.0), ("bias", 2.0))
  def test_every_kept_prefix_and_suffix(self, bias, softcap):
    rng = np.random.default_rng(4)
    n, v, d = 11, 40, 7  # 11 + 3 rows in chunks of 4: the last one padded.
    h, w = rng.standard_normal((n, d)), rng.standard_normal((v, d))
    b = rng.standard_normal(v) if bias else None
    bounds = (0, 2, 3, 7)  # Uneven blocks: zero-padded to width 4.
    cols, inside = pruning._column_blocks(bounds)
    wt = pruning._blocks_of_wt(jax.numpy.asarray(w, np.float32),
                                      cols, inside)
    # Three rows of padding after the n valid ones: left out of the mean.
    padded = np.concatenate([h, 50 * rng.standard_normal((3, d))])
    got = np.asarray(pruning._mean_softmax_kept(
        jax.numpy.asarray(padded, np.float32), wt, None if b is None else
        jax.numpy.asarray(b, np.float32), jax.numpy.asarray(n, np.int32),
        bounds, softcap, 4))

    def mean_p(keep):
      z = (h * keep) @ w.T + (0.0 if b is None else b)
      z = softcap * np.tanh(z / softcap) if softcap else z
      return special.softmax(z, axis=1).mean(0)

    for j, c in enumerate(bounds):
      first, rest = np.arange(d) < c, np.arange(d) >= c
      np.testing.assert_allclose(got[0, j], mean_p(first), rtol=2e-5,
                                 atol=1e-7, err_msg=f"first {c}")
      np.testing.assert_allclose(got[1, j], mean_p(rest), rtol=2e-5,
                                 atol=1e-7, err_msg=f"from {c}")


if __name__ == "__main__":
  absltest.main()
