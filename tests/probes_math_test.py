"""Seed 002 statistics (bottleneck/gradient.py, logit_gradients.py, the
gradient probe) against direct float64 numpy; seed 003: encoding_math_test,
App. A / E: head_stats_test."""

import subprocess
import sys

from absl.testing import absltest, parameterized
import jax
import numpy as np
from scipy import linalg, special

from bottleneck import gradient, logit_gradients
from train.probes import gradient as gradient_probe
import tests


def _head(t=300, v=60, d=8, seed=0):
  rng = np.random.default_rng(seed)
  return (rng.standard_normal((t, d)), rng.standard_normal((v, d)),
          rng.standard_normal(v) * 0.1, rng.integers(0, v, t))


def _np_grad(h, w, b, y):
  p = special.softmax(h @ w.T + b, axis=1)
  p[np.arange(len(y)), y] -= 1.0
  return p


class GradientTest(parameterized.TestCase):

  @parameterized.parameters((300, 60, 8), (97, 31, 30), (500, 400, 16))
  def test_destroyed_fraction_vs_explicit_null_space(self, t, v, d):
    h, w, b, y = _head(t, v, d, seed=t)
    g = _np_grad(h, w, b, y)
    null = linalg.null_space(w.T)  # V x (V - D) basis of ker(W^T).
    lost = np.linalg.norm(g @ null) / np.linalg.norm(g)
    per_token_cos = np.linalg.norm(g @ linalg.orth(w), axis=1) / \
        np.linalg.norm(g, axis=1)
    got = gradient.destroyed_fraction(h, w, b, y, chunk=64)
    self.assertAlmostEqual(got["norm_ratio"], lost, delta=2e-4)
    self.assertAlmostEqual(got["squared_ratio"], lost**2, delta=4e-4)
    self.assertAlmostEqual(got["mean_cosine"], per_token_cos.mean(),
                           delta=2e-4)

  def test_trained_head_beside_gaussian_twins(self):
    h, w, b, y = _head(200, 400, 16, seed=3)
    g = _np_grad(h, w, b, y)
    got = logit_gradients.subspace_ratios(h, w, b, y, draws=8)
    lost = np.linalg.norm(g @ linalg.null_space(w.T)) / np.linalg.norm(g)
    self.assertAlmostEqual(got["trained"], lost, delta=2e-4)
    self.assertAlmostEqual(got["counted"], np.sqrt(1 - 16 / 400))
    # Gaussian subspaces keep D / V of the squared norm in expectation.
    self.assertLess(abs(got["random"] - got["counted"]),
                    4 * got["random_std"] + 1e-3)
    reading = lambda o: gradient_probe.destroyed_reading(
        {"norm_ratio": o["trained"], "random_direction_ratio": o["counted"],
         "D_over_V": 16 / 400, "random_head": o})
    self.assertIn("destroys no more than",
                  reading(dict(got, trained=got["random"])))
    self.assertIn("destroys more than",
                  reading(dict(got, trained=got["random"] + 0.01)))
    self.assertIn("destroys less than",
                  reading(dict(got, trained=got["random"] - 0.01)))
    # A head whose rows lie in a 3-dimensional space keeps only those 3.
    low = w[:, :3] @ np.random.default_rng(0).standard_normal((3, 16))
    g = _np_grad(h, low, b, y)
    lost = np.linalg.norm(g @ linalg.null_space(low.T)) / np.linalg.norm(g)
    self.assertAlmostEqual(logit_gradients.subspace_ratios(h, low, b, y)["trained"],
                           lost, delta=2e-4)

  def test_rank_deficient_head_projects_on_its_column_space(self):
    # A low-rank head W = A B (rank 3 < D = 8, seed 002 Fig. 1): only col(W)
    # reaches the backbone; a D-column basis from a QR of W would count 5
    # spurious directions as visible.
    h, _, b, y = _head(200, 50, 8, seed=4)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((50, 3)) @ rng.standard_normal((3, 8))
    g = _np_grad(h, w, b, y)
    proj = g @ linalg.orth(w)
    lost = np.sqrt(1 - np.sum(proj**2) / np.sum(g**2))
    got = gradient.destroyed_fraction(h, w, b, y, chunk=64)
    self.assertAlmostEqual(got["norm_ratio"], lost, delta=2e-4)
    # The jitted training-probe path: whitener from a float32 Gram.
    gram = jax.numpy.asarray(w.T @ w, jax.numpy.float32)
    m = jax.jit(gradient.whitener_from_gram, static_argnums=1)(gram, 1e-6)
    np.testing.assert_allclose(np.linalg.norm(g @ w @ np.asarray(m)),
                               np.linalg.norm(proj), rtol=1e-4)

  def test_softcapped_head_statistics_vs_float64(self):
    # Gemma 2's final-logit soft-cap: p from c tanh(z / c), g with respect
    # to z (the part that reaches W^T), against a float64 numpy reference.
    h, w, b, y = _head(150, 70, 8, seed=7)
    cap = 2.0
    z = h @ w.T + b
    p = special.softmax(cap * np.tanh(z / cap), axis=1)
    g = p.copy()
    g[np.arange(len(y)), y] -= 1.0
    g *= 1.0 - np.tanh(z / cap) ** 2
    proj = g @ linalg.orth(w)
    f32 = lambda a: np.asarray(a, np.float32)
    got = gradient.head_statistics(
        f32(h)[None], np.asarray(y, np.int32)[None], f32(w), f32(b),
        gradient.head_whitener(w), 32, softcap=cap)
    np.testing.assert_allclose(got["grad_sq"], np.sum(g**2), rtol=1e-4)
    np.testing.assert_allclose(got["visible_sq"], np.sum(proj**2), rtol=1e-4)
    np.testing.assert_allclose(
        got["nll"][0], -np.log(p[np.arange(len(y)), y]), rtol=1e-4)
    np.testing.assert_allclose(got["alpha"], p.sum(0), rtol=1e-4, atol=1e-6)

  @parameterized.parameters((0.0, 16), (2.0, 16), (0.0, 7), (3.0, 4096))
  def test_blocked_pass_per_position_vs_float64(self, cap, block):
    # The one read of W in blocks (online softmax; 70 rows = 4 blocks of 16
    # + a tail of 6, or 10 of 7, or one block), every per-position output
    # against float64. Uncapped, half the positions are confident (median
    # p_y 0.97: |g|^2 must not come from 1 - 2 p_y + sum p^2); cos is
    # compared where float32 resolves 1 - p_y (> 1e-3). (Capped, such
    # logits would saturate the cap and tie in float32.)
    h, w, b, y = _head(96, 70, 8, seed=11)
    if not cap:
      h[::2] *= 5.0
      y[::2] = (h[::2] @ w.T + b).argmax(1)
    z = h @ w.T + b
    zc = cap * np.tanh(z / cap) if cap else z
    p = special.softmax(zc, axis=1)
    g = p.copy()
    g[np.arange(len(y)), y] -= 1.0
    if cap:
      g *= 1.0 - np.tanh(z / cap) ** 2
    total = np.sum(g**2, axis=1)
    cos = np.linalg.norm(g @ linalg.orth(w), axis=1) / np.sqrt(total)
    if not cap:
      self.assertGreater(np.median(p[np.arange(0, 96, 2), y[::2]]), 0.95)
    f32 = lambda a: np.asarray(a, np.float32)
    got = gradient.head_statistics(
        f32(h).reshape(2, 48, 8), np.asarray(y, np.int32).reshape(2, 48),
        f32(w), f32(b), gradient.head_whitener(w), 16, softcap=cap,
        vocab_block=block)
    p_y = p[np.arange(len(y)), y]
    np.testing.assert_allclose(got["nll"].ravel(), -np.log(p_y), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_array_equal(got["top1"].ravel(), zc.argmax(1) == y)
    resolved = 1.0 - p_y > 1e-3
    self.assertGreater(resolved.sum(), 60)
    np.testing.assert_allclose(got["cos"].ravel()[resolved], cos[resolved],
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(got["grad_sq"], total.sum(), rtol=1e-4)
    np.testing.assert_allclose(got["cos_sum"], np.sum(got["cos"]), rtol=1e-5)
    np.testing.assert_allclose(got["alpha"], p.sum(0), rtol=1e-4, atol=1e-6)

  def test_chunking_and_jit_do_not_change_the_sums(self):
    h, w, b, y = _head(257, 50, 6)
    a = gradient.destroyed_fraction(h, w, b, y, chunk=7)
    c = gradient.destroyed_fraction(h, w, b, y, chunk=4096)
    self.assertAlmostEqual(a["norm_ratio"], c["norm_ratio"], places=5)
    m = gradient.head_whitener(w)
    args = [np.asarray(x, np.float32) for x in (h, w, b)]
    eager = gradient.bottleneck_stats(*args, y, m, 32)
    jitted = jax.jit(gradient.bottleneck_stats, static_argnames="chunk")(
        *args, y, m, chunk=32)
    for key in eager:
      np.testing.assert_allclose(eager[key], jitted[key], rtol=1e-5)

  def test_many_tokens_stay_memory_bounded(self):
    # 100k tokens x V = 4000: the T x V gradient would be 1.6 GB in float32.
    # Measured in a fresh process: its peak RSS grows by far less.
    code = """
import resource, numpy as np
from bottleneck import gradient
rng = np.random.default_rng(0)
h = rng.standard_normal((100_000, 8)).astype(np.float32)
w = rng.standard_normal((4000, 8)).astype(np.float32)
y = rng.integers(0, 4000, 100_000)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
got = gradient.destroyed_fraction(h, w, None, y, chunk=4096)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(got["tokens"], got["norm_ratio"], (after - before) / 1024)
"""
    env = tests.one_device_env()
    out = subprocess.run([sys.executable, "-c", code], env=env, text=True,
                         capture_output=True, timeout=600, check=True)
    tokens, ratio, grown_mb = out.stdout.split()
    self.assertEqual(int(tokens), 100_000)
    self.assertTrue(0 < float(ratio) < 1)
    self.assertLess(float(grown_mb), 400)  # vs 1600 MB for T x V.

  def test_profiles_rank_and_efficiency(self):
    h, w, b, y = _head(40, 30, 5)
    prof = gradient.coefficient_profiles(h, w, b, y, top=10, tail_points=5)
    g = _np_grad(h, w, b, y)
    q = linalg.orth(w)
    order = np.argsort(-np.abs(g), axis=1)
    proj = np.take_along_axis(g @ q @ q.T, order, axis=1)
    np.testing.assert_allclose(prof["proj_mean"],
                               proj[:, prof["rank"]].mean(0), atol=1e-5)
    self.assertLess(prof["full_mean"][0], 0)  # The observed token's slot.
    ranks = logit_gradients.rank_vs_tokens(h, w, b, y, [5, 20, 40])
    for r in ranks:
      self.assertEqual(r["rank"], np.linalg.matrix_rank(g[:r["tokens"]]))
    # Streamed past T = V (chunks of 7 rows; 40 > V = 30): the same ranks
    # as numpy's SVD, and as one QR of all of G.
    streamed = logit_gradients.rank_vs_tokens_streamed(h, w, b, y, [5, 20, 29, 40],
                                                chunk=7)
    for r in streamed:
      self.assertEqual(r["rank"], np.linalg.matrix_rank(g[:r["tokens"]]),
                       r)
    self.assertEqual([r["rank"] for r in streamed[:2]],
                     [r["rank"] for r in ranks[:2]])
    wide = _head(64, 300, 12, seed=5)  # T < V: every row independent.
    self.assertEqual([r["rank"] for r in logit_gradients.rank_vs_tokens_streamed(
        *wide, [16, 64], chunk=10)], [16, 64])
    eff = gradient.update_efficiency(h, w, b, y, [0.001, 0.01])
    self.assertLess(eff["logit_gradient"][0], eff["hidden_gradient"][0])
    self.assertLess(eff["logit_gradient"][0], eff["loss0"])
    logits = h @ w.T + b  # Fig. 8's losses against float64.
    np_loss = lambda l: np.mean(special.logsumexp(l, axis=1) -
                                l[np.arange(len(y)), y])
    self.assertAlmostEqual(eff["loss0"], np_loss(logits), places=5)
    for i, f in enumerate([0.001, 0.01]):
      for key, d in (("logit_gradient", g), ("hidden_gradient", g @ w @ w.T)):
        self.assertAlmostEqual(eff[key][i], np_loss(
            logits - f * np.linalg.norm(logits) * d / np.linalg.norm(d)),
                               places=5, msg=key)
    # Ties (equal |g|) in a stable argsort's order: by index.
    x = np.abs(g).astype(np.float32)
    x[:, 3], x[:, 11] = x[:, 4], x[:, 4]
    np.testing.assert_array_equal(
        gradient._descending_at(x, np.arange(30)),
        np.argsort(-x, axis=1, kind="stable"))

  def test_bad_inputs(self):
    h, w, b, y = _head()
    with self.assertRaisesRegex(ValueError, "`h`"):
      gradient.destroyed_fraction(h[:, :3], w, b, y)
    with self.assertRaisesRegex(ValueError, "`targets`"):
      gradient.destroyed_fraction(h, w, b, y[:10])
    with self.assertRaisesRegex(ValueError, "`targets`"):
      gradient.destroyed_fraction(h, w, b, y + 100)
    with self.assertRaisesRegex(ValueError, "`bias`"):
      gradient.destroyed_fraction(h, w, b[:3], y)
    with self.assertRaisesRegex(ValueError, "`h`"):
      gradient.destroyed_fraction(h[:0], w, b, y[:0])


if __name__ == "__main__":
  absltest.main()
