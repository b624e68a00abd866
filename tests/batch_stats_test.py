"""Seed 002 App. C's batch statistics (bottleneck/batch_stats.py) against
brute-force references: contexts as tuples in a Counter, C^uu from a dict
of continuations, entropy from scipy."""

import collections

from absl.testing import absltest
import numpy as np
from scipy import stats as sps

from bottleneck import batch_stats, gradient_theory


def _reference(tokens, window, starts, vocab):
  """Per batch: contexts seen once, |C^u|, |C^uu|, distinct tokens, by
  tuples (the context of position t of a window is its prefix to t)."""
  nexts = collections.defaultdict(set)
  count = collections.Counter()
  seen = set()
  for s in starts:
    for t in range(window):
      ctx = tuple(tokens[s:s + t + 1])
      count[ctx] += 1
      nexts[ctx].add(int(tokens[s + t + 1]))
    seen.update(int(v) for v in tokens[s:s + window + 1])
  once = sum(c for c in count.values() if c == 1)
  c_u = [c for c in count if len(nexts[c]) == 1]
  c_uu = {next(iter(nexts[c])) for c in c_u}
  return once, len(c_u), len(c_uu), len(seen), len(count)


class BatchStatsTest(absltest.TestCase):

  def test_curve_against_tuples(self):
    rng = np.random.default_rng(0)
    # A small alphabet repeats contexts; a repeated phrase repeats long ones.
    tokens = np.concatenate([rng.integers(0, 5, 300), np.tile([7, 8, 9], 40),
                             rng.integers(0, 12, 200)])
    window, vocab = 6, 12
    sizes = batch_stats.batch_sizes(len(tokens) - 1, window, 10 ** 6, 6)
    self.assertEqual(sizes[0], window)
    self.assertEqual(sizes[-1], (len(tokens) - 1) // window * window)
    got = batch_stats.batch_curve(tokens, window, sizes, vocab, seed=3)
    order = np.random.default_rng(3).permutation(
        (len(tokens) - 1) // window) * window
    for size, r in zip(sizes, got):
      once, c_u, c_uu, seen, distinct = _reference(
          tokens, window, order[:size // window], vocab)
      self.assertEqual(
          (r["tokens"], r["seen_once"], r["C_u"], r["C_uu"],
           r["distinct_tokens"], r["contexts"]),
          (size, once, c_u, c_uu, seen, distinct), size)
      self.assertEqual(r["seen_once_share"], once / size)
    # Repeated phrases make some contexts recur: the test can tell.
    self.assertLess(got[-1]["seen_once"], got[-1]["tokens"])

  def test_prefix_ids_partition_like_the_exact_trie(self):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 3, (40, 12))
    x[5:9] = x[0]  # Whole windows repeated.
    # Thue-Morse windows: a purely polynomial hash mod 2^64 collides here.
    tm = np.array([bin(i).count("1") % 2 for i in range(4096)])
    for w in (x, np.stack([tm, 1 - tm])):
      got = batch_stats.prefix_ids(w)
      ref = gradient_theory.context_ids(w)
      # The same partition: a bijection between the two numberings.
      pairs = set(zip(got.tolist(), ref.tolist()))
      self.assertEqual(len(pairs), len(set(ref.tolist())))
      self.assertEqual(len(pairs), len(set(got.tolist())))
    with self.assertRaisesRegex(ValueError, "x"):
      batch_stats.prefix_ids(np.zeros((2, 3), np.float32))

  def test_batches_are_nested(self):
    tokens = np.arange(1000) % 97
    got = batch_stats.batch_curve(tokens, 10, [10, 50, 990], 97)
    self.assertEqual([r["distinct_tokens"] for r in got][-1], 97)
    self.assertTrue(all(a["distinct_tokens"] <= b["distinct_tokens"]
                        for a, b in zip(got, got[1:])))

  def test_entropy_against_scipy(self):
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.full(50, 0.3), size=7)
    p[0, :10] = 0.0  # Zeros contribute nothing.
    p[0] /= p[0].sum()
    np.testing.assert_allclose(batch_stats.entropy(p),
                               sps.entropy(p, axis=1), rtol=1e-12)
    uniform = np.full((1, 64), 1 / 64)
    self.assertAlmostEqual(float(batch_stats.entropy(uniform)[0]), np.log(64))
    one_hot = batch_stats.entropy(np.eye(3))
    self.assertEqual(list(np.signbit(one_hot)), [False] * 3)  # Not -0.0.
    # Blocks of rows give the same as one block.
    np.testing.assert_array_equal(batch_stats.entropy(p, block=2),
                                  batch_stats.entropy(p, block=100))

  def test_bad_input_is_named(self):
    tokens = np.arange(100)
    with self.assertRaisesRegex(ValueError, "sizes"):
      batch_stats.batch_curve(tokens, 10, [15], 100)
    with self.assertRaisesRegex(ValueError, "sizes"):
      batch_stats.batch_curve(tokens, 10, [100], 100)  # 9 whole windows.
    with self.assertRaisesRegex(ValueError, "window"):
      batch_stats.batch_curve(tokens, 0, [10], 100)
    with self.assertRaisesRegex(ValueError, "vocab"):
      batch_stats.batch_curve(tokens, 10, [10], 50)  # Tokens up to 99.
    with self.assertRaisesRegex(ValueError, "window"):
      batch_stats.batch_sizes(5, 10, 100)
    with self.assertRaisesRegex(ValueError, "block"):
      batch_stats.entropy(np.eye(2), block=0)
    with self.assertRaisesRegex(ValueError, "negative"):
      batch_stats.entropy(np.array([[0.5, -0.1, 0.6]]))
    with self.assertRaisesRegex(ValueError, "row 1 sums to 0.5"):
      batch_stats.entropy(np.array([[0.5, 0.5], [0.25, 0.25]]))
    with self.assertRaisesRegex(ValueError, "tokens"):
      batch_stats.batch_curve(np.array([3, -1, 2] * 10), 2, [2], 5)
    with self.assertRaisesRegex(ValueError, "tokens"):
      batch_stats.batch_curve(np.arange(20.0), 2, [2], 50)
    with self.assertRaisesRegex(ValueError, "tokens"):
      batch_stats.batch_curve(np.arange(3), 10, [10], 50)
    with self.assertRaisesRegex(ValueError, "sizes"):
      batch_stats.batch_curve(tokens, 10, 10, 100)
    with self.assertRaisesRegex(ValueError, "sizes"):
      batch_stats.batch_curve(tokens, 10, [], 100)
    with self.assertRaisesRegex(ValueError, "seed"):
      batch_stats.batch_curve(tokens, 10, [10], 100, seed=-1)
    with self.assertRaisesRegex(ValueError, "points"):
      batch_stats.batch_sizes(1000, 10, 100, points=1)
    with self.assertRaisesRegex(ValueError, "available"):
      batch_stats.batch_sizes(1.5e3, 10, 100)
    with self.assertRaisesRegex(ValueError, "x"):
      batch_stats.prefix_ids(np.array([[-1, 2]]))
    with self.assertRaisesRegex(ValueError, "probs"):
      batch_stats.entropy(np.array([[np.nan, 1.0]]))


if __name__ == "__main__":
  absltest.main()
