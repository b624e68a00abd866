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


def spam_rows(low_losses, full_acc=1.0, full_loss=0.01, vocabs=(256, 4096)):
  rows = []
  for v, low in zip(vocabs, low_losses):
    rows.append({"V": v, "D": 128, "full_rank": True, "seed": 0,
                 "steps": 250, "lr": 3e-3, "final_val_loss": full_loss,
                 "accuracy": full_acc})
    rows.append({"V": v, "D": 8, "full_rank": False, "seed": 0,
                 "steps": 250, "lr": 3e-3, "final_val_loss": low,
                 "accuracy": 0.5})
  return rows


class SpamLangVerdictTest(absltest.TestCase):

  def test_the_sentence_follows_the_numbers(self):
    self.assertEqual(spamlang.verdict(spam_rows([0.01, 3.7])).word,
                     claim.SMALLER)
    agree = spamlang_said(spam_rows([0.01, 3.7]))
    self.assertStartsWith(agree, "**Agrees with seed 002 Fig. 14")
    self.assertIn("D = 8: 0.01 -> 3.7 nats", agree)
    flat = spamlang.verdict(spam_rows([0.02, 0.03]))
    self.assertEqual(flat.word, claim.DISAGREES)
    self.assertStartsWith(flat.sentence, "at D = 8: its loss does not rise")
    flat = claim.markdown(flat)
    self.assertStartsWith(flat, "**Disagrees with seed 002 Fig. 14")
    self.assertIn("task** at D = 8", flat)
    falling = spamlang_said(spam_rows([3.0, 1.0]))
    self.assertStartsWith(falling, "**Disagrees")
    unlearned = spamlang_said(spam_rows([0.01, 3.7], full_acc=0.4))
    self.assertStartsWith(unlearned, "**Cannot tell**")
    self.assertIn("V = 256, 4096", unlearned)

  def test_each_head_at_its_best_learning_rate(self):
    rows = spam_rows([0.01, 3.7]) + [
        dict(r, lr=1e-4, final_val_loss=9.0, accuracy=0.1)
        for r in spam_rows([0.01, 3.7])]
    self.assertStartsWith(spamlang_said(rows), "**Agrees")


def lowrank_rows(top_curve, low_final=5.6, flat=True, seeds=(0, 1)):
  rows = []
  for seed in seeds:
    rows.append({"D": 8, "V": 4096, "seed": seed, "steps": 400,
                 "tokens_per_step": 1024, "final_val_loss": low_final,
                 "curve": [(200, 6.0), (400, low_final)], "flat": flat,
                 "fall": 0.004})
    rows.append({"D": 256, "V": 4096, "seed": seed, "steps": 400,
                 "tokens_per_step": 1024, "final_val_loss": top_curve[-1][1],
                 "curve": top_curve, "flat": flat,
                 "fall": 0.004 if flat else 0.03})
  return rows


class LowRankVerdictTest(absltest.TestCase):

  def test_the_sentence_follows_the_numbers(self):
    fast = [(100, 6.0), (200, 5.6), (300, 5.4), (400, 5.35)]
    self.assertEqual(lowrank.speedups(lowrank_rows(fast)),
                     [(2.0, False)] * 2)  # 5.6 reached at 200 of 400 steps.
    self.assertEqual(lowrank.verdict(lowrank_rows(fast)).word, claim.SMALLER)
    agree = lowrank_said(lowrank_rows(fast))
    self.assertStartsWith(agree, "**Agrees with seed 002 Fig. 1")
    self.assertIn("in x2.00 fewer tokens (seeds: x2.00, x2.00)", agree)
    slow = [(100, 6.5), (200, 6.2), (300, 5.9), (400, 5.7)]
    self.assertStartsWith(lowrank_said(lowrank_rows(slow)),
                          "**Disagrees")
    early = lowrank_said(lowrank_rows(fast, flat=False))
    self.assertStartsWith(early, "**Cannot tell**")
    self.assertIn("fell 3.00% over the last quarter of its stable phase",
                  early)
    self.assertNotIn("least-squares", early)
    fitted = lowrank_said([dict(r, fit_fall=0.0082) for r in
                           lowrank_rows(fast, flat=False)])
    self.assertIn("criterion < 1%; a least-squares line through every "
                  "evaluation of that quarter falls 0.82%", fitted)

  def test_a_crossing_before_the_first_evaluation_is_a_bound(self):
    # D = 256 is already under D = 8's final 5.6 at its first evaluation
    # (step 100 of 400): the statistic is at least x4, not x4.
    early = [(100, 5.5), (200, 5.3), (300, 5.2), (400, 5.15)]
    self.assertEqual(lowrank.speedups(lowrank_rows(early)),
                     [(4.0, True)] * 2)
    bound = lowrank_said(lowrank_rows(early))
    self.assertStartsWith(bound, "**Agrees")
    self.assertIn("in at least x4.00 fewer tokens (seeds: >= x4.00, >= x4.00)"
                  "; '>=': D = 256 was below that loss at its first "
                  "evaluation", bound)
    fast = [(100, 6.0), (200, 5.6), (300, 5.4), (400, 5.35)]
    self.assertNotIn("at least", lowrank_said(lowrank_rows(fast)))

  def test_flattening_criterion(self):
    self.assertEqual(lowrank.flattened(
        [(100, 6.0), (300, 5.00), (400, 4.99)])[0], True)
    flat, fall = lowrank.flattened([(100, 6.0), (300, 5.2), (400, 5.0)])
    self.assertFalse(flat)
    self.assertAlmostEqual(fall, 0.2 / 5.2)
    # A WSD run's final decay (after step 360 here) is not read as progress:
    # up to 360 the loss is flat, the decay's drop comes after.
    wsd = [(120, 6.0), (240, 5.01), (360, 5.0), (400, 4.6)]
    self.assertFalse(lowrank.flattened(wsd)[0])
    flat, fall = lowrank.flattened(wsd, until=360)
    self.assertTrue(flat)
    self.assertAlmostEqual(fall, 0.01 / 5.01)

  def test_fitted_fall_reads_every_evaluation_of_the_quarter(self):
    # The window is 300..400 (the evaluation nearest 0.75 * 400 onward):
    # its low last point makes the two-point fall 2.0 %, the line through
    # all five (slope -0.00084 per step, 5.044 at 300) falls 1.7 %.
    curve = [(100, 6.0), (200, 5.2), (300, 5.0), (325, 5.05), (350, 5.02),
             (375, 5.04), (400, 4.9)]
    self.assertAlmostEqual(lowrank.flattened(curve)[1], 0.1 / 5.0)
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

  def test_the_sentence_follows_the_numbers(self):
    run = lambda name, loss: {"run": name, "final_val_loss": loss}
    agree = thesis_said([run("model1", 7.07), run("model7", 6.10)])
    self.assertStartsWith(agree, "**Agrees with seed 004 Fig. 5.1")
    self.assertIn("model7 6.100, model1 7.070", agree)
    disagree = thesis_said([run("model1", 6.0), run("model7", 6.1),
                            run("model8", 5.0)])
    self.assertStartsWith(disagree, "**Disagrees")
    self.assertIn("model7 ends at 6.100 nats, not below model1's 6.000",
                  disagree)
    self.assertStartsWith(thesis_said(
        [run("model1,cpu", 2.0), run("model3,cpu", 1.9)]), "**Cannot tell**")


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
