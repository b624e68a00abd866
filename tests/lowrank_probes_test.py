"""The probes read D from a low-rank head's rank (W = A B, stored as its
V x width product): seed 002 eq. (10)'s sqrt(1 - D/V), its Gaussian twins
of rank D, and the encoding probe's D. Fresh weights, no training."""

from absl.testing import absltest
import numpy as np

from train.models import gpt
from train.probes import encoding, forward, gradient, subjects
import tests  # pylint: disable=unused-import

V, WIDTH, RANK = 257, 32, 4


def low_rank_subject():
  cfg = gpt.GPTConfig(vocab_size=V, block_size=16, n_layer=1, n_head=1,
                      n_embd=WIDTH, head="lowrank", head_rank=RANK)
  return subjects.Subject(cfg.init_params(0), cfg, None, "lowrank")


class LowRankDTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.subject = low_rank_subject()
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, V, (2, 8, 16))
    cls.pass_ = forward.run(cls.subject, x, y)

  def test_gradient_probe_compares_against_the_heads_rank(self):
    out, _ = gradient.gradient_probe(self.subject, self.pass_,
                                     profile_tokens=128)
    counted = np.sqrt(1.0 - RANK / V)  # 0.9922, not sqrt(1 - 32/257).
    self.assertAlmostEqual(out["random_direction_ratio"], counted)
    self.assertAlmostEqual(out["D_over_V"], RANK / V)
    twin = out["random_head"]
    self.assertAlmostEqual(twin["counted"], counted)
    # Gaussian heads of rank 4 lose about sqrt(1 - 4/257) of the norm; of
    # rank 32 (the width) about 0.936.
    self.assertAlmostEqual(twin["random"], counted, delta=0.01)
    self.assertIn(f"sqrt(1 - D/V) = {counted:.4f}",
                  gradient.destroyed_reading(out))
    self.assertEqual(out["D"], RANK)
    # App. D's cosine per text window (8 windows of 16 positions): their
    # mean is the mean over positions, each the window's own positions'.
    cos_8x16 = np.asarray(self.pass_.cos, np.float64).reshape(8, 16)
    np.testing.assert_allclose(out["cosine_windows"], cos_8x16.mean(1))
    self.assertAlmostEqual(np.mean(out["cosine_windows"]),
                           out["mean_cosine"], places=5)

  def test_encoding_probe_and_subject_say_the_heads_rank(self):
    out, _ = encoding.encoding_probe(self.subject, self.pass_)
    self.assertEqual(out["D"], RANK)
    self.assertEqual(self.subject.describe()["d"], WIDTH)
    self.assertEqual(self.subject.describe()["D"], RANK)


if __name__ == "__main__":
  absltest.main()
