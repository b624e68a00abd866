"""Each report conclusion is computed from its numbers: fed numbers on both
sides of the paper's claim, the sentence flips (issue 59): SpamLang (seed
002 Fig. 14), the low-rank sweep (seed 002 Fig. 1), the thesis's ordering
(seed 004 Fig. 5.1) and the frequency probe (seed 003 Fig. 7). A verdict
is data (claim.Verdict: a word and a sentence); the section prints its
markdown (claim.markdown)."""

import math

from absl.testing import absltest
import numpy as np

from train.report import claim, lowrank, seed003, seed004, spamlang


def said(verdict_fn):
  """The section's sentence of a verdict function's Verdict."""
  return lambda *args, **kwargs: claim.markdown(verdict_fn(*args, **kwargs))


spamlang_said, lowrank_said = said(spamlang.verdict), said(lowrank.verdict)
thesis_said = said(seed004.thesis_verdict)
frequency_said = said(seed003.frequency_verdict)


def spam_rows(low_losses, full_acc=1.0, full_loss=0.01, vocabs=(256, 4096),
              low_acc=0.5):
  rows = []
  for v, low in zip(vocabs, low_losses):
    rows.append({"V": v, "D": 128, "full_rank": True, "seed": 0,
                 "steps": 250, "lr": 3e-3, "final_val_loss": full_loss,
                 "accuracy": full_acc, "b2": 0.999, "sequences": 256})
    rows.append({"V": v, "D": 8, "full_rank": False, "seed": 0,
                 "steps": 250, "lr": 3e-3, "final_val_loss": low,
                 "accuracy": low_acc, "b2": 0.999, "sequences": 256})
  return rows


class SpamLangVerdictTest(absltest.TestCase):

  def test_the_sentence_follows_the_numbers(self):
    self.assertEqual(spamlang.verdict(spam_rows([0.01, 3.7])).word,
                     claim.SMALLER)
    agree = spamlang_said(spam_rows([0.01, 3.7]))
    self.assertStartsWith(agree, "**Agrees with seed 002 Fig. 14")
    self.assertIn("learns the task in direction**", agree)
    self.assertIn("D = 8: 0.01 -> 3.7 nats", agree)
    self.assertIn("Adam's beta2: 0.999 (Table 3: 0.95)", agree)
    flat = spamlang.verdict(spam_rows([0.02, 0.03], low_acc=1.0))
    self.assertEqual(flat.word, claim.DISAGREES)
    self.assertStartsWith(flat.sentence, "at D = 8: its loss does not rise")
    flat = claim.markdown(flat)
    self.assertStartsWith(flat, "**Disagrees with seed 002 Fig. 14")
    self.assertIn("task** at D = 8", flat)
    falling = spamlang_said(spam_rows([3.0, 1.0], low_acc=1.0))
    self.assertStartsWith(falling, "**Disagrees")
    mixed = spamlang_said(spam_rows([3.0, 1.0]))  # Accuracy 0.5 vs 1.0.
    self.assertStartsWith(mixed, "**Cannot tell**")
    unlearned = spamlang_said(spam_rows([0.01, 3.7], full_acc=0.4))
    self.assertStartsWith(unlearned, "**Cannot tell**")
    self.assertIn("V = 256, 4096", unlearned)

  def test_each_head_at_its_best_learning_rate(self):
    rows = spam_rows([0.01, 3.7]) + [
        dict(r, lr=1e-4, final_val_loss=9.0, accuracy=0.1)
        for r in spam_rows([0.01, 3.7])]
    self.assertStartsWith(spamlang_said(rows), "**Agrees")

  def test_the_table3_beta2_arm_is_reported(self):
    arm = [dict(spam_rows([0.01])[0], b2=0.95, accuracy=0.871)]
    said_ = claim.markdown(spamlang.verdict(spam_rows([0.01, 3.7]),
                                            b2_rows=arm))
    # The control fails at Table 3's beta2: the setting decides it.
    self.assertStartsWith(said_, "**Cannot tell**")
    self.assertIn("with Table 3's beta2 = 0.95 it did not clearly learn "
                  "(V = 256, 250 steps: 223/256", said_)
    arm = [dict(spam_rows([0.01])[0], b2=0.95, accuracy=0.99)]
    said_ = claim.markdown(spamlang.verdict(spam_rows([0.01, 3.7]),
                                            b2_rows=arm))
    self.assertStartsWith(said_, "**Agrees")
    self.assertIn("with 0.95 the full-rank control reaches at V = 256, "
                  "250 steps, lr 0.003: accuracy 0.990", said_)


def lowrank_rows(top_curve, low_final=5.6, seeds=(0, 1), steps=400):
  """Rows of a sweep at `steps`: D = 8 ends at `low_final`, D = 256 follows
  `top_curve`, its flatness read from the curve (stable phase: 9/10)."""
  rows = []
  for seed in seeds:
    for d, curve in ((8, [(steps // 2, 6.0), (steps, low_final)]),
                     (256, top_curve)):
      f = lowrank.flatness(curve, 0.01, until=steps * 9 // 10)
      rows.append({"D": d, "V": 4096, "seed": seed, "steps": steps,
                   "tokens_per_step": 1024, "final_val_loss": curve[-1][1],
                   "curve": curve, "flat": f["state"] == "flat",
                   "fall": f["fall"], "flatness": f, "val_tokens": 8192,
                   "stable_until": steps * 9 // 10})
  return rows


def top(early, flat_at=5.35, fall=0.0, steps=400):
  """A largest-D curve: `early` points, then the window's evaluations
  (lowrank.window_evals) from `flat_at` falling by `fall` (relative)."""
  window = sorted(lowrank.window_evals(steps, steps * 9 // 10))
  last = [(s, flat_at * (1 - fall * i / (len(window) - 1)))
          for i, s in enumerate(window)]
  return sorted(early + last + [(steps, last[-1][1] * 0.99)])


class LowRankVerdictTest(absltest.TestCase):

  def test_the_sentence_follows_the_numbers(self):
    fast = top([(100, 6.0), (200, 5.6)])
    self.assertEqual(lowrank.speedups(lowrank_rows(fast)),
                     [(2.0, False)] * 2)  # 5.6 reached at 200 of 400 steps.
    self.assertEqual(lowrank.verdict(lowrank_rows(fast)).word, claim.SMALLER)
    agree = lowrank_said(lowrank_rows(fast))
    self.assertStartsWith(agree, "**Agrees with seed 002 Fig. 1")
    self.assertIn("in x2.00 fewer tokens (seeds: x2.00, x2.00)", agree)
    slow = top([(100, 6.5), (200, 6.2)], flat_at=5.9)
    self.assertStartsWith(lowrank_said(lowrank_rows(slow)), "**Disagrees")
    early = lowrank_said(lowrank_rows(top([(100, 6.0), (200, 5.6)],
                                          fall=0.03)))
    self.assertStartsWith(early, "**Cannot tell**")
    self.assertIn("the D = 256 run is not flat (seed 0: +3.00% (95 % "
                  "+3.00% .. +3.00%; 6 evaluations", early)
    self.assertIn("Still falling", early)

  def test_a_crossing_before_the_first_evaluation_is_a_bound(self):
    # D = 256 is already under D = 8's final 5.6 at its first evaluation
    # (step 100 of 400): the statistic is at least x4, not x4.
    early = top([(100, 5.5), (200, 5.3)], flat_at=5.2)
    self.assertEqual(lowrank.speedups(lowrank_rows(early)),
                     [(4.0, True)] * 2)
    bound = lowrank_said(lowrank_rows(early))
    self.assertStartsWith(bound, "**Agrees")
    self.assertIn("in at least x4.00 fewer tokens (seeds: >= x4.00, >= x4.00)",
                  bound)
    fast = top([(100, 6.0), (200, 5.6)])
    self.assertNotIn("at least", lowrank_said(lowrank_rows(fast)))

  def test_the_statistic_against_the_budget(self):
    rows = (lowrank_rows(top([(50, 6.0), (100, 5.6)], steps=200), steps=200)
            + lowrank_rows(top([(100, 6.0), (200, 5.6)])))
    self.assertEqual(lowrank.against_budget(rows),
                     "x2.00, x2.00 (200 steps); x2.00, x2.00 (400 steps)")
    self.assertEqual(lowrank.speedups(rows, 200), [(2.0, False)] * 2)

  def test_flatness_criterion(self):
    # A WSD run's final decay (after step 360 here) is not read as progress.
    wsd = top([(120, 6.0)], flat_at=5.0) + [(400, 4.0)]
    self.assertNotEqual(lowrank.flatness(wsd)["state"], "flat")
    self.assertEqual(lowrank.flatness(wsd, until=360)["state"], "flat")
    # Two evaluations in the window are too few to read noise from.
    self.assertEqual(lowrank.flatness([(100, 6.0), (300, 5.0), (400, 4.99)]
                                      )["state"], "few")
    # Scatter as large as the criterion: undecided.
    noisy = [(300, 5.0), (320, 5.05), (340, 4.95), (360, 5.05), (380, 4.95),
             (400, 5.0)]
    f = lowrank.flatness(noisy, 0.01)
    self.assertEqual(f["state"], "undecided")
    self.assertGreater(f["noise"], 0.005)

  def test_window_evaluations(self):
    self.assertEqual(sorted(lowrank.window_evals(1200, 1080)),
                     [810, 864, 918, 972, 1026, 1080])
    self.assertLen(lowrank.window_evals(20, 18), 5)  # Two round together.

  def test_fitted_fall_reads_every_evaluation_of_the_quarter(self):
    # The window is 300..400 (the evaluation nearest 0.75 * 400 onward):
    # the line through all five (slope -0.00084 per step, 5.044 at 300)
    # falls 1.7 %.
    curve = [(100, 6.0), (200, 5.2), (300, 5.0), (325, 5.05), (350, 5.02),
             (375, 5.04), (400, 4.9)]
    x = np.array([300., 325., 350., 375., 400.])
    y = np.array([5.0, 5.05, 5.02, 5.04, 4.9])
    slope = np.sum((x - x.mean()) * (y - y.mean())) / np.sum(
        (x - x.mean())**2)
    start = y.mean() + slope * (300 - x.mean())
    self.assertAlmostEqual(lowrank.fitted_fall(curve),
                           -slope * 100 / start)
    self.assertAlmostEqual(lowrank.fitted_fall(curve), 0.0167, places=4)
    self.assertAlmostEqual(lowrank.fitted_fall(curve + [(440, 3.0)],
                                               until=400),
                           lowrank.fitted_fall(curve))
    self.assertEqual(lowrank.fitted_fall([(100, 6.0)]), 0.0)


class ThesisVerdictTest(absltest.TestCase):

  @staticmethod
  def section(means, unigram=7.0):
    """A `training` section whose window losses are each model's mean plus
    a window effect shared with the unigram's."""
    rng = np.random.default_rng(0)
    shared = rng.normal(0, 0.5, 100)
    return {"runs": [{"run": n, "final_val_loss": m, "window_losses": list(
        m + shared + rng.normal(0, 0.01, 100))} for n, m in means.items()],
            "unigram": {"window_losses": list(unigram + shared)},
            "steps": 64, "thesis_steps": 20000, "seeds": [0],
            "corpus": "shakespeare"}

  def test_the_sentence_follows_the_numbers(self):
    agree = thesis_said(self.section({"model1": 6.5, "model7": 6.1}))
    self.assertStartsWith(agree, "**Agrees with seed 004 Fig. 5.1")
    self.assertIn("lowest first: model7 6.1", agree)
    self.assertIn("smallest margin model1 - model7 = +0.40", agree)
    disagree = thesis_said(self.section({"model1": 6.0, "model7": 6.1,
                                         "model8": 5.0}))
    self.assertStartsWith(disagree, "**Disagrees")
    self.assertIn("model1 - model7 below 0", disagree)
    unlearned = thesis_said(self.section({"model1": 8.11, "model7": 6.1}))
    self.assertStartsWith(unlearned, "**Cannot tell**")
    self.assertIn("model1 not below the unigram cross-entropy (7.0",
                  unlearned)
    self.assertStartsWith(thesis_said(self.section(
        {"model1,cpu": 2.0, "model3,cpu": 1.9})), "**Cannot tell**")


class FrequencyVerdictTest(absltest.TestCase):

  @staticmethod
  def rows(r2s, losses):
    return [{"step": 10 * i, "adj_r2": r2, "conv_head": i / len(r2s),
             "val_loss": loss} for i, (r2, loss) in enumerate(zip(r2s,
                                                                    losses))]

  def test_the_sentence_follows_the_numbers(self):
    v = 1024  # ln V = 6.93; final 4.0: converged once <= 4.29.
    start = math.log(v)
    agree = frequency_said(
        self.rows([0.0, 0.6, 0.7, 0.8], [start, 5.0, 4.2, 4.0]), v)
    self.assertStartsWith(agree, "**Agrees with seed 003 Fig. 7**")
    self.assertIn("reaches 0.5 at step 10", agree)
    self.assertIn("fall from ln V = 6.93 to 4.00 at step 20", agree)
    late = frequency_said(
        self.rows([0.0, 0.1, 0.2, 0.6], [start, 4.2, 4.1, 4.0]), v)
    self.assertStartsWith(late, "**Disagrees")
    same = frequency_said(
        self.rows([0.0, 0.6, 0.7, 0.8], [start, 4.2, 4.1, 4.0]), v)
    self.assertStartsWith(same, "**Cannot tell**")
    self.assertIn("the same checkpoint", same)
    never = frequency_said(
        self.rows([0.0, 0.1, 0.2, 0.3], [start, 5.0, 4.2, 4.0]), v)
    self.assertIn("never reached 0.5 (best 0.30)", never)


if __name__ == "__main__":
  absltest.main()
