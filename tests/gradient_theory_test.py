"""bottleneck.gradient_theory (seed 002 eq. 6, Props. 2.5, 2.6) against
numpy float64 written out the long way: instances where each statement
must hold, and mutated inputs where it must fail."""

from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

from bottleneck import gradient_theory as gt


def _instance(seed=0, c_windows=6, t=8, v=40, d=3, bias=True, vocab_used=40):
  rng = np.random.default_rng(seed)
  x = rng.integers(0, vocab_used, (c_windows, t))
  x[:2, :3] = 7  # Two windows share a prefix: contexts repeat.
  y = rng.integers(0, vocab_used, (c_windows, t))
  ctx = gt.group(gt.context_ids(x), y, v)
  h = rng.normal(size=(ctx.n, d))
  w = rng.normal(size=(v, d))
  b = rng.normal(size=v) if bias else None
  return x, y, ctx, h, w, b


def _loss(h, w, b, ctx):
  """sum_c omega_c CE(N~_c, P_c), written out."""
  logits = h @ w.T + (0 if b is None else b)
  logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
  omega = ctx.counts / ctx.counts.sum()
  return -sum(omega[r] * val * logp[r, col]
              for r, col, val in zip(ctx.rows, ctx.cols, ctx.values))


class ContextsTest(absltest.TestCase):

  def test_context_ids_are_exact_prefixes(self):
    x = np.array([[1, 2, 3], [1, 2, 4], [2, 2, 3]])
    want, seen = [], {}
    for row in x:
      for t in range(len(row)):
        want.append(seen.setdefault(tuple(row[:t + 1]), len(seen)))
    np.testing.assert_array_equal(gt.context_ids(x), want)
    self.assertEqual(list(gt.context_ids(x)), [0, 1, 2, 0, 1, 3, 4, 5, 6])

  def test_empirical_distribution_and_unique_continuations(self):
    ids = np.array([0, 0, 1, 2, 2, 2])
    y = np.array([5, 5, 3, 1, 2, 1])
    ctx = gt.group(ids, y, 8)
    n = np.zeros((3, 8))
    n[ctx.rows, ctx.cols] = ctx.values
    np.testing.assert_allclose(n.sum(axis=1), 1.0)
    self.assertAlmostEqual(n[2, 1], 2 / 3)
    np.testing.assert_array_equal(ctx.unique_next, [True, True, False])
    # C^uu = {5, 3}; context 2 (two tokens) is not in C^u.
    self.assertEqual(gt.rank_bound(ctx, 8),
                     {"contexts": 3, "C_u": 2, "C_uu": 2, "D_u": 2})
    self.assertEqual(gt.rank_bound(gt.group([0, 1, 2], [0, 1, 2], 3), 3)
                     ["D_u"], 2)  # min(|C^uu|, V - 1).

  def test_long_shared_prefixes(self):
    """Windows sharing 3000-token prefixes: one id per prefix, no
    recursion (a trie, not nested keys)."""
    x = np.ones((2, 3000), np.int64)
    ids = gt.context_ids(x)
    np.testing.assert_array_equal(ids[:3000], ids[3000:])
    self.assertEqual(gt.group(ids, x.ravel(), 2).n, 3000)

  def test_ids_with_gaps_are_renumbered(self):
    ctx = gt.group([7, 7, 3], [1, 1, 0], 2)
    self.assertEqual(ctx.n, 2)
    np.testing.assert_array_equal(ctx.ids, [0, 0, 1])
    np.testing.assert_array_equal(ctx.counts, [2, 1])

  def test_bad_input_names_the_argument(self):
    ctx = gt.group([0, 1], [0, 1], 3)
    h, w = np.ones((2, 2)), np.ones((3, 2))
    for call, pattern in (
        (lambda: gt.context_ids(np.zeros(3, int)), "`x` has shape"),
        (lambda: gt.context_ids(np.full((1, 2), 0.5)), "`x` must hold"),
        (lambda: gt.group([0, -1], [0, 1], 3), "`ids` must hold"),
        (lambda: gt.group([[0, 1]], [0, 1], 3), "expected equal"),
        (lambda: gt.group([0, 1], [0, 1], 0), "vocab"),
        (lambda: gt.check(h, np.ones((3, 5)), None, ctx), "same width"),
        (lambda: gt.check(h, w, np.ones(4), ctx), "`b` has shape"),
        (lambda: gt.check(np.full((2, 2), np.nan), w, None, ctx),
         "`h` must be finite"),
        (lambda: gt.check(np.ones((3, 2)), w, None, ctx), "one per context"),
        (lambda: gt.error_matrix(np.ones((2, 1)), ctx), "`p` has shape"),
        (lambda: gt.error_matrix(np.full((2, 3), 2.0), ctx), "in \\[0, 1\\]"),
        (lambda: gt.logit_step(h, w, None, np.ones((2, 3)), np.ones(2),
                               float("inf")), "`eta`"),
        (lambda: gt.logit_step(h, w, None, np.ones((2, 4)), np.ones(2),
                               1.0), "`e`"),
        (lambda: gt.numerical_rank([1e-20, 1.0], (2, 2)), "non-increasing"),
        (lambda: gt.numerical_rank([1.0], (2, 2), rtol=-1), "`rtol`"),
        (lambda: gt.tail_bound([1.0], -1, 1), "`cap`")):
      with self.assertRaisesRegex(ValueError, pattern):
        call()
    with self.assertRaisesRegex(ValueError, r"`y` holds tokens in \[0, 9\]"):
      gt.group([0, 1], [0, 9], 4)
    with self.assertRaisesRegex(ValueError, "`ids`"):
      gt.group([0, 1, 2], [0, 1], 4)
    with self.assertRaisesRegex(ValueError, "`eta`"):
      gt.logit_step(np.ones((2, 1)), np.ones((3, 1)), None,
                    np.ones((2, 3)), np.ones(2), 0.0)


class StatementsTest(parameterized.TestCase):

  @parameterized.parameters(True, False)
  def test_the_step_is_the_gradient_step_written_out(self, bias):
    _, _, ctx, h, w, b = _instance(bias=bias)
    eta = 1e-2
    e = gt.error_matrix(gt.probabilities(h, w, b), ctx)
    omega = ctx.counts / ctx.counts.sum()
    # The gradient of the loss, by central differences (eq. 7's
    # diag(omega)(P - N~) through the chain rule), on a few entries.
    g = omega[:, None] * e
    for (i, j) in ((0, 0), (3, 2), (ctx.n - 1, 1)):
      bump = np.zeros_like(h)
      bump[i, j] = 1e-6
      fd = (_loss(h + bump, w, b, ctx) - _loss(h - bump, w, b, ctx)) / 2e-6
      self.assertAlmostEqual(fd, (g @ w)[i, j], places=7)
    # Delta against (L' - L) / eta computed naively.
    h2, w2 = h - eta * g @ w, w - eta * g.T @ h
    l2 = h2 @ w2.T - h @ w.T
    if b is not None:
      l2 = l2 - eta * g.sum(axis=0)
    np.testing.assert_allclose(gt.logit_step(h, w, b, e, omega, eta),
                               l2 / eta, rtol=1e-7, atol=1e-9)

  @parameterized.parameters(True, False)
  def test_every_statement_holds_where_it_must(self, bias):
    _, _, ctx, h, w, b = _instance(bias=bias)
    got = gt.check(h, w, b, ctx)
    self.assertTrue(got["p_in_open_unit"])
    self.assertGreater(got["D_u"], got["rank_delta_cap"])  # Not vacuous.
    self.assertTrue(got["eq6_holds"])
    self.assertEqual(got["rank_delta"], got["rank_delta_cap"])
    self.assertIs(got["prop2_5_holds"], True)
    self.assertIs(got["prop2_6_holds"], True)
    self.assertLess(got["delta_gap"], 1e-12)  # The rank is unambiguous.
    self.assertGreater(got["delta_last"], 1e-8)
    self.assertGreater(got["tail_bound"], 0.0)
    s = np.linalg.svd(gt.error_matrix(gt.probabilities(h, w, b), ctx),
                      compute_uv=False)
    np.testing.assert_allclose(got["singular_values"], s, rtol=1e-12)
    cap = got["rank_delta_cap"]
    self.assertAlmostEqual(got["tail_bound"],
                           np.sqrt(np.sum(s[cap:got["D_u"]] ** 2)))
    self.assertAlmostEqual(got["tail_share"],
                           np.sum(s[cap:] ** 2) / np.sum(s ** 2))

  def test_a_full_rank_update_breaks_eq6(self):
    """The logit gradient itself (a step on free logits) is not of rank
    <= 2D: `check` sees it when the step is replaced by it."""
    _, _, ctx, h, w, b = _instance(bias=False)
    e = gt.error_matrix(gt.probabilities(h, w, b), ctx)
    s = gt.singular_values(e)
    self.assertGreater(gt.numerical_rank(s, e.shape), 2 * w.shape[1])
    with mock.patch.object(gt, "logit_step", lambda *a: a[3]):
      got = gt.check(h, w, b, ctx)
    self.assertFalse(got["eq6_holds"])
    self.assertTrue(gt.check(h, w, b, ctx)["eq6_holds"])

  def test_a_low_rank_head_caps_at_rank_h_plus_rank_w(self):
    """W = A B of rank 1 at width 3: the cap is rank(H) + rank(W) = 4,
    not 2 rank(W), and Delta reaches it."""
    _, _, ctx, h, _, _ = _instance(bias=False)
    rng = np.random.default_rng(5)
    w = rng.normal(size=(40, 1)) @ rng.normal(size=(1, 3))
    got = gt.check(h, w, None, ctx)
    self.assertEqual((got["D"], got["rank_w"], got["rank_delta_cap"]),
                     (3, 1, 4))
    self.assertEqual(got["rank_delta"], 4)
    self.assertTrue(got["eq6_holds"])

  def test_premises_that_fail_are_reported_not_judged(self):
    """P underflowing to 0 leaves Prop. 2.5 unjudged; D^u at or under the
    cap leaves Prop. 2.6 unjudged (its tail sum is empty)."""
    _, _, ctx, h, w, b = _instance(bias=False)
    got = gt.check(h * 300, w, b, ctx)
    self.assertFalse(got["p_in_open_unit"])
    self.assertIsNone(got["prop2_5_holds"])
    small = gt.group([0, 1, 2], [0, 0, 1], 40)
    got = gt.check(np.eye(3), w, b, small)
    self.assertFalse(got["prop2_6_applies"])
    self.assertIsNone(got["prop2_6_holds"])
    self.assertEqual(got["tail_bound"], 0.0)

  def test_prop2_5_fails_where_p_leaves_the_open_interval(self):
    """P = N~ (a model with exact zeros and ones): P - N~ = 0, of rank 0
    below D^u: the hypothesis P in (0, 1) is what the bound needs."""
    _, _, ctx, _, _, _ = _instance()
    n = np.zeros((ctx.n, 40))
    n[ctx.rows, ctx.cols] = ctx.values
    e = gt.error_matrix(n, ctx)
    rank = gt.numerical_rank(gt.singular_values(e), e.shape)
    self.assertLess(rank, gt.rank_bound(ctx, 40)["D_u"])

  def test_prop2_6_is_tight_and_fails_past_rank_2d(self):
    """The best rank-2D approximation meets the bound with equality (where
    rank(P - N~) = D^u); a rank-(2D + 5) one goes under it."""
    _, _, ctx, h, w, b = _instance(bias=False)
    e = gt.error_matrix(gt.probabilities(h, w, b), ctx)
    u, s, vt = np.linalg.svd(e, full_matrices=False)
    d_u = gt.rank_bound(ctx, 40)["D_u"]
    cap = 2 * w.shape[1]
    best = (u[:, :cap] * s[:cap]) @ vt[:cap]
    full_tail = np.sqrt(np.sum(s[cap:] ** 2))
    self.assertAlmostEqual(np.linalg.norm(best - e), full_tail, places=10)
    self.assertGreaterEqual(np.linalg.norm(best - e) + 1e-12,
                            gt.tail_bound(s, cap, d_u))
    more = (u[:, :cap + 5] * s[:cap + 5]) @ vt[:cap + 5]
    self.assertLess(np.linalg.norm(more - e), gt.tail_bound(s, cap, d_u))


if __name__ == "__main__":
  absltest.main()
