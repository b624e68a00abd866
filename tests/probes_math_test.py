"""Seed 002/003 and App. A/E statistics against direct float64 numpy."""

import subprocess
import sys

from absl.testing import absltest, parameterized
import jax
import numpy as np
from scipy import linalg, special, stats

from bottleneck import encoding, gradient, head_stats, logit_gradients
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


class EncodingTest(absltest.TestCase):

  def test_mlr_against_lstsq_and_textbook_formulas(self):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 4))
    y = x @ [1.0, -2.0, 0.0, 0.5] + 3.0 + rng.standard_normal(200)
    got = encoding.mlr(y, x)
    design = np.hstack([np.ones((200, 1)), x])
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    np.testing.assert_allclose(got["slopes"], beta[1:], rtol=1e-10)
    res = y - design @ beta
    sse, sst = res @ res, np.sum((y - y.mean()) ** 2)
    adj = 1 - (sse / (200 - 5)) / (sst / 199)
    self.assertAlmostEqual(got["adj_r2"], adj, places=10)
    se = np.sqrt(np.diag(np.linalg.inv(design.T @ design)) * sse / 195)
    p = 2 * stats.t.sf(np.abs(beta / se), 195)
    np.testing.assert_allclose(got["p_values"], p[1:], rtol=1e-6)
    self.assertGreater(got["p_values"][2], 0.01)  # The zero slope.
    self.assertLess(got["p_values"][0], 1e-10)
    # Several responses, one factorisation: each column as its own lstsq.
    y2 = x @ [0.0, 1.0, 4.0, 0.0] + rng.standard_normal(200)
    first, second = encoding.mlr_columns(np.stack([y, y2], 1), x)
    np.testing.assert_allclose(first["p_values"], p[1:], rtol=1e-6)
    beta2 = np.linalg.lstsq(design, y2, rcond=None)[0]
    np.testing.assert_allclose(second["slopes"], beta2[1:], rtol=1e-10)
    res2 = y2 - design @ beta2
    self.assertAlmostEqual(second["r2"], 1 - res2 @ res2 / np.sum(
        (y2 - y2.mean()) ** 2), places=10)

  def test_shared_moments_give_the_same_fits(self):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40000, 6)).astype(np.float32) + 2.0  # 3 blocks.
    y = x @ rng.standard_normal(6) + rng.standard_normal(40000)
    m = encoding.moments(x)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(m.mean_k, x64.mean(0), rtol=1e-12)
    c = x64 - x64.mean(0)
    np.testing.assert_allclose(m.gram_kxk, c.T @ c, rtol=1e-10)
    own, shared = encoding.mlr(y, x), encoding.mlr(y, x, m)
    for key in ("slopes", "p_values", "adj_r2", "intercept"):
      np.testing.assert_array_equal(shared[key], own[key])
    alpha = special.softmax(x[:, 0])
    np.testing.assert_array_equal(
        encoding.spearman_profiles(alpha, x, e_moments=m)["pc_abs_spearman"],
        encoding.spearman_profiles(alpha, x)["pc_abs_spearman"])
    with self.assertRaisesRegex(ValueError, "`moments`.*40000 x 6.*`x`"):
      encoding.mlr(y[:-1], x[:-1], m)
    # The first `columns` PCs and dimensions only: the full profiles' heads.
    full = encoding.spearman_profiles(alpha, x, block=2)
    part = encoding.spearman_profiles(alpha, x, block=2, columns=3)
    for key in ("pc_abs_spearman", "dim_abs_spearman"):
      self.assertLen(part[key], 3)
      np.testing.assert_array_equal(part[key], full[key][:3])
    with self.assertRaisesRegex(ValueError, "`columns` must be >= 1"):
      encoding.spearman_profiles(alpha, x, columns=0)

  def test_probability_mlr_and_baselines(self):
    rng = np.random.default_rng(1)
    e = rng.standard_normal((3000, 16))
    logits = e @ rng.standard_normal(16) * 0.3
    alpha = special.softmax(logits + 0.01 * rng.standard_normal(3000))
    out = encoding.probability_mlr(alpha, e)
    self.assertGreater(out["adj_r2"], 0.99)
    self.assertLess(abs(out["random_adj_r2"]), 0.02)
    self.assertLess(abs(out["shuffled_adj_r2"]), 0.02)
    prof = encoding.spearman_profiles(alpha, e)
    np.testing.assert_allclose(prof["dim_abs_spearman"], [abs(
        stats.spearmanr(e[:, j], alpha).statistic) for j in range(16)],
                               rtol=0, atol=1e-12)
    self.assertAlmostEqual(prof["pc_variance_ratio"].sum(), 1.0)
    # PCs against numpy's SVD (sign-free), ties against scipy's ranks.
    centred = e - e.mean(0)
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    np.testing.assert_allclose(prof["pc_variance_ratio"],
                               sv**2 / np.sum(sv**2), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(prof["pc_abs_spearman"], [abs(
        stats.spearmanr(centred @ vt[j], alpha).statistic) for j in range(16)],
                               rtol=0, atol=1e-10)
    tied = np.round(e * 2) / 2  # Few distinct values: many ties.
    np.testing.assert_array_equal(encoding.average_ranks(tied.T),
                                  stats.rankdata(tied, axis=0).T)
    tied_alpha = np.round(alpha * 3e3) / 3e3
    tied[:7, 2] = -0.0  # Equal to +0.0: one tie group.
    # float64 columns are argsorted, float32 ones ranked by uint64 keys;
    # blocks of 5 columns leave one partial block.
    for workers, dtype in ((1, np.float64), (3, np.float32)):
      prof = encoding.spearman_profiles(tied_alpha, tied.astype(dtype),
                                        block=5, workers=workers)
      np.testing.assert_allclose(prof["dim_abs_spearman"], [abs(
          stats.spearmanr(tied[:, j], tied_alpha).statistic)
                                                           for j in range(16)],
                                 rtol=0, atol=1e-12)

  def test_editing_meets_the_requested_scale(self):
    # A model where eq. (2)'s approximations hold: large V, small and
    # concentrated logits (hidden states close to their mean).
    rng = np.random.default_rng(2)
    v, d, n = 4000, 16, 256
    e = 0.3 * rng.standard_normal((v, d))
    hs = rng.standard_normal(d) + 0.02 * rng.standard_normal((n, d))
    alpha_of = lambda emb: special.softmax(hs @ emb.T, axis=1).mean(0)
    alpha = alpha_of(e)
    fit = encoding.mlr(-np.log(alpha), e)
    for r in (0.2, 0.5, 2.0, 5.0, 20.0):
      for b in (1.0, 2.0, 5.0):
        edited = encoding.edit_embedding(e, 17, r, fit["slopes"],
                                         fit["p_values"], b)
        self.assertLess(encoding.scale_error(r, alpha, alpha_of(edited), 17),
                        0.05, msg=f"r={r} b={b}")
        self.assertLess(encoding.kl_unedited(alpha, alpha_of(edited), 17),
                        1e-3)
        np.testing.assert_array_equal(np.delete(edited, 17, 0),
                                      np.delete(e, 17, 0))
    # Several scales at once (the probe's form): each row is one edit.
    scales = np.array([0.2, 2.0, 20.0])
    rows = np.stack([alpha_of(e * (1.0 + 0.1 * r)) for r in scales])
    np.testing.assert_allclose(  # scipy renormalises both: the reference.
        encoding.kl_unedited(alpha, rows, 17),
        [stats.entropy(np.delete(alpha, 17), np.delete(row, 17))
         for row in rows], rtol=1e-9)
    deltas = encoding.edit_delta(scales, fit["slopes"], fit["p_values"], 2.0)
    for r, delta in zip(scales, deltas):
      np.testing.assert_allclose(delta, encoding.edit_embedding(
          e, 17, r, fit["slopes"], fit["p_values"], 2.0)[17] - e[17],
                                 rtol=1e-12, atol=1e-15)
    w = encoding.edit_weights(fit["slopes"], fit["p_values"], np.inf)
    self.assertEqual(w.sum(), 1.0)
    self.assertEqual((w > 0).sum(), 1)
    np.testing.assert_allclose(encoding.edit_weights(
        fit["slopes"], fit["p_values"], -np.inf), np.full(d, 1 / d))

  def test_removal_frequency_convergence(self):
    slopes = np.array([0.1, -3.0, 0.5, 2.0])
    np.testing.assert_array_equal(encoding.removal_order(slopes),
                                  [0, 2, 3, 1])
    np.testing.assert_array_equal(encoding.removal_order(slopes, True),
                                  [1, 3, 2, 0])
    rng = np.random.default_rng(3)
    e = rng.standard_normal((500, 6))
    counts = np.round(np.exp(e @ [1.0, 0, 0, 0, 0, 0] + 4))
    counts[:5] = 0  # Unseen tokens are skipped.
    self.assertGreater(encoding.frequency_r2(e, counts), 0.95)
    t0, t1 = np.zeros(5), np.ones(5)
    self.assertEqual(encoding.convergence_rate(t0, t0, t1), 0.0)
    # A quarter of the way back from the end, and off the straight line:
    # 1 - |t1 - t| / |t1 - t0| by hand.
    self.assertAlmostEqual(encoding.convergence_rate(0.75 * t1, t0, t1), 0.75)
    off = np.array([1.0, 1.0, 1.0, 1.0, 3.0])
    self.assertAlmostEqual(encoding.convergence_rate(off, t0, t1),
                           1.0 - 2.0 / np.sqrt(5.0))

  def test_bad_inputs(self):
    with self.assertRaisesRegex(ValueError, "`r`"):
      encoding.edit_embedding(np.ones((5, 2)), 0, 0.0, [1, 1], [0, 0])
    with self.assertRaisesRegex(ValueError, "`y`"):
      encoding.mlr(np.ones(3), np.ones((4, 1)))
    with self.assertRaisesRegex(ValueError, "`alpha`"):
      encoding.probability_mlr(np.zeros(10), np.ones((10, 2)))
    with self.assertRaisesRegex(ValueError, "`token`"):
      encoding.edit_embedding(np.ones((5, 2)), 9, 2.0, [1, 1], [0, 0])


class PruneKernelTest(parameterized.TestCase):
  """Seed 003 §4's mean distributions with dimensions removed: both sweeps
  of `pruning._mean_softmax_kept` against masked float64 softmaxes."""

  @parameterized.parameters((None, 0.0), ("bias", 0.0), ("bias", 2.0))
  def test_every_kept_prefix_and_suffix(self, bias, softcap):
    from train.probes import pruning as probe_encoding  # pylint: disable=g-import-not-at-top
    rng = np.random.default_rng(4)
    n, v, d = 11, 40, 7  # 11 rows in chunks of 4: the last one padded.
    h, w = rng.standard_normal((n, d)), rng.standard_normal((v, d))
    b = rng.standard_normal(v) if bias else None
    bounds = (0, 2, 3, 7)  # Uneven blocks: zero-padded to width 4.
    cols, inside = probe_encoding._column_blocks(bounds)
    wt = probe_encoding._blocks_of_wt(jax.numpy.asarray(w, np.float32),
                                      cols, inside)
    got = np.asarray(probe_encoding._mean_softmax_kept(
        jax.numpy.asarray(h, np.float32), wt, None if b is None else
        jax.numpy.asarray(b, np.float32), bounds, softcap, 4))

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
