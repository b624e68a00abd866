"""Seed 004's completions scored against the held-out originals
(train/report/thesis_completions.py, training/completions.py): the loss on
an original equals the trainer's own loss function on the same tokens,
the overlap metrics on hand-made lists, the "too little trained" sentence
on both sides of the unigram, bad input, and one tiny run end to end."""

import re

from absl.testing import absltest
import jax
import numpy as np

from train.models import generate, gpt
from train.report import seed004, thesis_completions as tc, thesis_eval
from train.training import completions, trainer
import tests  # pylint: disable=unused-import

V, BLOCK = 50, 16


def rough_model():
  """A tiny GPT whose weights are far from init's (std 0.5 on every leaf):
  its losses differ by token and context, unlike a fresh model's ~log V."""
  cfg = gpt.GPTConfig(vocab_size=V, block_size=BLOCK, n_layer=1, n_head=2,
                      n_embd=16)
  params = cfg.init_params(1)
  rng = np.random.default_rng(0)
  params = jax.tree.map(lambda p: np.float32(rng.normal(0, 0.5, p.shape)),
                        params)
  return cfg, cfg.module(), params


class ContinuationLossTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.cfg, cls.model, cls.params = rough_model()
    cls.rng = np.random.default_rng(1)

  def trainer_loss(self, seq) -> float:
    """The trainer's loss_fn (mean next-token loss) over seq[1:]."""
    x = np.asarray([seq[:-1]], np.int32)
    y = np.asarray([seq[1:]], np.int32)
    return float(trainer.loss_fn(self.params, self.model, x, y,
                                 jax.random.key(0), True))

  def ids(self, n):
    return self.rng.integers(0, V, n).tolist()

  def test_one_token_prompt_is_the_trainers_loss(self):
    pairs = [(self.ids(1), self.ids(6))]
    got = completions.continuation_losses(self.params, self.model, self.cfg,
                                          pairs)
    self.assertAlmostEqual(got[0], self.trainer_loss(pairs[0][0] +
                                                     pairs[0][1]), places=5)

  def test_batched_prompts_are_the_trainers_loss_on_the_originals(self):
    # Causal: the loss over the original's n tokens is the sum over prompt
    # + original less the sum over the prompt alone (P - 1 targets).
    n = 4
    pairs = [(self.ids(p), self.ids(n)) for p in (3, 7, 1, 11)]
    for chunk in (0, 3):
      got = completions.continuation_losses(self.params, self.model,
                                            self.cfg, pairs, chunk)
      for (prompt, original), loss in zip(pairs, got):
        p = len(prompt)
        want = (p + n - 1) * self.trainer_loss(prompt + original)
        if p > 1:
          want -= (p - 1) * self.trainer_loss(prompt)
        self.assertAlmostEqual(loss, want / n, places=4)
    self.assertGreater(np.ptp(got), 0.1)  # Not one constant for every pair.

  def test_a_long_prompt_is_cropped_as_the_greedy_completion_crops_it(self):
    n = 5
    prompt, original = self.ids(40), self.ids(n)
    kept = prompt[-(BLOCK - n):]
    got = completions.continuation_losses(self.params, self.model, self.cfg,
                                          [(prompt, original)])
    self.assertAlmostEqual(got[0], completions.continuation_losses(
        self.params, self.model, self.cfg, [(kept, original)])[0], places=6)
    self.assertEqual(
        generate.complete(self.params, self.model, self.cfg, [prompt], n),
        generate.complete(self.params, self.model, self.cfg, [kept], n))

  def test_bad_pairs_name_the_argument(self):
    f = lambda pairs: completions.continuation_losses(
        self.params, self.model, self.cfg, pairs)
    for pairs in ([], [([1, 2], [3, 4]), ([1], [3])], [([], [3, 4])],
                  [([1], list(range(BLOCK)))], [([1], [V])], [([-1], [2])]):
      with self.subTest(pairs=pairs):
        with self.assertRaisesRegex(ValueError, "`pairs`"):
          f(pairs)


class OverlapTest(absltest.TestCase):

  def test_hand_made_lists(self):
    cases = [  # greedy, original, exact-match share, common prefix.
        ([1, 2, 3, 4], [1, 2, 9, 4], 0.75, 2),
        ([5, 6, 7], [5, 6, 7], 1.0, 3),  # Full match.
        ([9, 2, 3], [1, 2, 3], 2 / 3, 0),  # First token differs.
        ([], [1, 2], 0.0, 0),  # Empty completion.
        ([1], [1, 2], 0.5, 1),  # Shorter: the rest is missed.
        ([1, 2, 8], [1, 2], 1.0, 2),  # Longer: past the original unscored.
        (np.array([4, 4]), [4, 3], 0.5, 1),
    ]
    for greedy, original, share, prefix in cases:
      with self.subTest(greedy=greedy, original=original):
        got = tc.overlap(greedy, original)
        self.assertAlmostEqual(got["exact_match"], share)
        self.assertEqual(got["common_prefix"], prefix)

  def test_bad_lists_name_the_argument(self):
    with self.assertRaisesRegex(ValueError, "`original`"):
      tc.overlap([1], [])
    with self.assertRaisesRegex(ValueError, "`greedy`"):
      tc.overlap(["a"], [1])
    with self.assertRaisesRegex(ValueError, "`greedy`"):
      tc.overlap([1.5], [1])
    with self.assertRaisesRegex(ValueError, "`original`"):
      tc.overlap([1], None)

  def test_pair_scores_and_their_means(self):
    got = tc.pair_scores([2.0, 4.0], [5.0, 6.0], [[1, 2], [7, 8]],
                         [[1, 3], [7, 8]], 2)
    self.assertEqual(got["exact_match"], [0.5, 1.0])
    self.assertEqual(got["common_prefix"], [1, 2])
    self.assertEqual((got["mean_loss"], got["mean_unigram"],
                      got["mean_exact_match"], got["mean_common_prefix"]),
                     (3.0, 5.5, 0.75, 1.5))
    with self.assertRaisesRegex(ValueError, "`losses_p`"):
      tc.pair_scores([2.0], [5.0, 6.0], [[1, 2], [7, 8]], [[1, 3], [7, 8]], 2)
    with self.assertRaisesRegex(ValueError, "`original_pxn`"):
      tc.pair_scores([2.0], [5.0], [[1, 2]], [[1, 3, 4]], 2)


def runs_with(loss: dict, unigram: float = 6.0, at_20: float = -1.0
              ) -> list[dict]:
  """Section rows whose models' per-token loss on the originals is
  `loss[name]` at 10 tokens and `at_20` more at 20."""
  return [{"run": name, "completion_scores": [
      tc.pair_scores([v, v], [unigram] * 2, [[1] * t] * 2, [[1] * t] * 2, t)
      for v, t in ((value, 10), (value + at_20, 20))]}
          for name, value in loss.items()]


class UntrainedTest(absltest.TestCase):

  def test_said_when_not_below_the_unigram(self):
    text = tc.untrained(runs_with({"model1": 6.5, "model7": 5.0}))
    self.assertIn("model1 is too little trained to produce text: its "
                  "completions are not a test", text)
    self.assertIn("6.500 against 6.000 nats at 10 tokens", text)
    self.assertNotIn("model7", text)
    both = tc.untrained(runs_with({"model1": 8.0, "model7": 6.0}))
    self.assertIn("model1 and model7 are too little trained to produce "
                  "text: their completions", both)
    self.assertIn("model7 6.000 against 6.000", both)  # Equal: not below.
    # Above the unigram at 20 tokens alone still counts.
    self.assertIn("m 6.500 against 6.000 nats at 20 tokens", tc.untrained(
        runs_with({"m": 5.5}, at_20=1.0)))

  def test_silent_when_below(self):
    self.assertEqual(tc.untrained(runs_with({"model1": 5.9,
                                             "model7": 3.0})), "")

  def test_table_from_the_numbers(self):
    text = tc.table(runs_with({"model1": 6.5}))
    rows = [r for r in text.splitlines() if r.startswith("| model1")]
    self.assertEqual(rows, ["| model1 | 10 | 6.500 | 6.000 | 1.000 | 10.00 |",
                            "| model1 | 20 | 5.500 | 6.000 | 1.000 | 20.00 |"])


class TinyRunTest(absltest.TestCase):
  """A 3-step Model 1 (byte-level, generated stories), scored end to end."""

  def test_measure_scores_the_tables_pairs(self):
    wd = seed004.thesis_run("model1,cpu", 3, self.create_tempdir().full_path)
    counts = (6, 9)
    scores, tables = tc.measure({"m1": wd}, 2, counts, seed=3)
    # The completion tables are story_table's, as before scoring.
    self.assertEqual(tables, completions.story_table([wd], 2, counts, 3,
                                                     labels=["m1"]))
    params, model, cfg, tok, config = completions.load_run(wd)
    stories = completions.held_out_stories([(params, model, cfg, tok,
                                             config)])
    self.assertEqual([s["tokens"] for s in scores["m1"]], list(counts))
    for s, count in zip(scores["m1"], counts):
      pairs = generate.split_stories(stories, tok, 2, count, 3)
      originals = np.array([o for _, o in pairs])
      np.testing.assert_allclose(s["loss"], completions.continuation_losses(
          params, model, cfg, pairs, config.train.loss_chunk), rtol=1e-6)
      np.testing.assert_allclose(s["unigram"], thesis_eval.
                                 unigram_window_losses(wd, originals),
                                 rtol=1e-6)
      greedy = generate.complete(params, model, cfg, [p for p, _ in pairs],
                                 count, 3)
      self.assertEqual(s["exact_match"], [tc.overlap(g, o)["exact_match"]
                                          for g, o in zip(greedy, originals)])
    self.assertLen(re.findall(r"^\| ", tables, re.M), 2 * (1 + 2))
    for bad in ([[[1, 2]], []], [[[1, 2], [3]]], [[[-1]]], []):
      with self.assertRaisesRegex(ValueError, "`originals_by_length`"):
        tc.unigram_pair_losses(wd, bad)
    with self.assertRaisesRegex(ValueError, "`n`"):
      tc.measure({"m1": wd}, 10**6, counts)


if __name__ == "__main__":
  absltest.main()
