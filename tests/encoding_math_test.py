"""Seed 003's regression, editing and frequency statistics
(bottleneck/encoding.py) against lstsq, textbook formulas and float64."""

from absl.testing import absltest
import numpy as np
from scipy import special, stats

from bottleneck import encoding


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


if __name__ == "__main__":
  absltest.main()
