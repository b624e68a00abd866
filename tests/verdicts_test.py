"""Each report conclusion is computed from its numbers: fed numbers on both
sides of the paper's claim, the sentence flips (issue 59)."""

from absl.testing import absltest

from train.report import seed002


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
    agree = seed002.spamlang_verdict(spam_rows([0.01, 3.7]))
    self.assertStartsWith(agree, "**Agrees with seed 002 Fig. 14")
    self.assertIn("D = 8: 0.01 -> 3.7 nats", agree)
    flat = seed002.spamlang_verdict(spam_rows([0.02, 0.03]))
    self.assertStartsWith(flat, "**Disagrees with seed 002 Fig. 14")
    self.assertIn("task** at D = 8", flat)
    falling = seed002.spamlang_verdict(spam_rows([3.0, 1.0]))
    self.assertStartsWith(falling, "**Disagrees")
    unlearned = seed002.spamlang_verdict(spam_rows([0.01, 3.7],
                                                   full_acc=0.4))
    self.assertStartsWith(unlearned, "**Cannot tell**")
    self.assertIn("V = 256, 4096", unlearned)

  def test_each_head_at_its_best_learning_rate(self):
    rows = spam_rows([0.01, 3.7]) + [
        dict(r, lr=1e-4, final_val_loss=9.0, accuracy=0.1)
        for r in spam_rows([0.01, 3.7])]
    self.assertStartsWith(seed002.spamlang_verdict(rows), "**Agrees")


if __name__ == "__main__":
  absltest.main()
