"""The expressivity controls of seed 002's training experiments
(train/report/controls.py, issue 78): the share of a gap they explain, the
SpamLang control on the sweep's rows, the low-rank control on a real run's
frozen features."""

import math
import os

from absl.testing import absltest
import numpy as np

from train.report import controls, lowrank, spamlang
from train.training import free_context
import tests  # pylint: disable=unused-import


class ExplainedTest(absltest.TestCase):

  def test_share_of_the_gap(self):
    self.assertAlmostEqual(controls.explained(1.0, 3.0, 0.0), 1 / 3)
    self.assertEqual(controls.explained(4.0, 3.0, 0.0), 1.0)  # Clipped.
    self.assertEqual(controls.explained(-1.0, 3.0, 0.0), 0.0)
    self.assertTrue(math.isnan(controls.explained(1.0, 0.5, 0.5)))  # No gap.


def _spam_rows(v=16, steps=40):
  common = {"V": v, "seed": 0, "steps": steps, "b2": 0.999, "arm": "",
            "variant": "repeat", "tied": False, "sequences": 256}
  return [dict(common, D=128, full_rank=True, lr=3e-3, final_val_loss=0.05,
               accuracy=1.0),
          dict(common, D=2, full_rank=False, lr=3e-3, final_val_loss=2.0,
               accuracy=0.3),
          dict(common, D=2, full_rank=False, lr=1e-2, final_val_loss=2.5,
               accuracy=0.2)]


class SpamLangControlTest(absltest.TestCase):

  def test_the_control_runs_the_trained_heads_settings(self):
    got = controls.spamlang(_spam_rows(), lambda *a: spamlang.run_config(
        *a, cpu=True))
    c, = got  # One (V, D), at the low rank's best lr (3e-3), one seed.
    # CEILING_STEPS x the trained run's 40 steps.
    self.assertEqual((c["V"], c["D"], c["lr"], c["steps"]),
                     (16, 2, 3e-3, controls.CEILING_STEPS * 40))
    self.assertEqual((c["b2"], c["weight_decay"]), (0.999, 0.01))
    # The same fit, called directly: the numbers are the control's own.
    s = free_context.Settings.from_train(spamlang.run_config(
        16, 2, 40, 3e-3, 0, cpu=True).train)
    direct = free_context.spamlang_ceiling(
        16, 2, 128, s, steps=controls.CEILING_STEPS * 40)
    self.assertAlmostEqual(c["final_loss"], direct["final_loss"], places=5)
    self.assertAlmostEqual(c["explained"], controls.explained(
        c["final_loss"], 2.0, 0.05))
    said = controls.spamlang_said(got)
    self.assertIn("V = 16, D = 2: trained 2.000 nats against the full "
                  "rank's 0.050", said)
    self.assertIn(f"reach {c['final_loss']:.3f}", said)

  def test_no_low_rank_no_control(self):
    self.assertEqual(controls.spamlang(_spam_rows()[:1], None), [])
    self.assertIn("not run", controls.spamlang_said([]))

  def test_a_control_above_the_trained_head_is_said(self):
    c = {"V": 16, "D": 2, "trained_loss": 1.0, "full_rank_loss": 0.1,
         "final_loss": 1.5, "accuracy": 0.2, "explained": 1.0}
    self.assertIn("all of the gap: the control ends no lower than the "
                  "trained head",
                  controls.spamlang_said([c]))
    c.update(final_loss=0.4, explained=controls.explained(0.4, 1.0, 0.1))
    self.assertIn("explains 33% of the gap", controls.spamlang_said([c]))


class LowRankControlTest(absltest.TestCase):

  def test_a_rank_d_head_on_the_largest_ds_features(self):
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")
    out = self.create_tempdir().full_path
    rows = []
    for d in (4, 16):
      info, metrics = lowrank.run(d, 0, 6, out, "hamlet*", window=False)
      rows.append(dict(info, final_val_loss=[
          m["val_loss"] for m in metrics if "val_loss" in m][-1]))
    got, = controls.lowrank(rows, batches=2)
    self.assertEqual((got["D"], got["features_of"], got["steps"]), (4, 16, 6))
    self.assertEqual(got["train_tokens"], 2 * 16 * 64)
    fx, fy, hx, hy = controls.features(rows[1]["workdir"], 2)
    self.assertEqual(fx.shape, (2 * 16 * 64, 256))
    self.assertEqual(len(hy), got["heldout_tokens"])
    self.assertTrue(np.isfinite(fx).all())
    # A different head rank on the same features gives another loss: the
    # number is the fit's, not a constant.
    s = free_context.Settings.from_train(
        lowrank_config_train(rows[1]["workdir"]), batch_size=16 * 64,
        steps=6)
    fit8 = free_context.fit_frozen_features(fx, fy, 8, vocab=4096,
                                            settings=s, heldout=(hx, hy))
    fit4 = free_context.fit_frozen_features(fx, fy, 4, vocab=4096,
                                            settings=s, heldout=(hx, hy))
    self.assertAlmostEqual(got["loss"], float(fit4.loss), places=5)
    self.assertNotAlmostEqual(float(fit8.loss), float(fit4.loss), places=5)
    self.assertIn("a rank-4 head on D = 16's frozen features",
                  controls.lowrank_said([got]))


def lowrank_config_train(workdir):
  from train.training import runs  # pylint: disable=g-import-not-at-top
  return runs.read_config(workdir).train


if __name__ == "__main__":
  absltest.main()
