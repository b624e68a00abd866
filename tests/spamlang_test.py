"""SpamLang's two variants (train/text/data.py): their batches, their loss
floors against the closed form on a model that has learned the task, and
the configs' bad input (issue 78)."""

import json
import math
import os
from unittest import mock

from absl.testing import absltest, parameterized
import numpy as np

from configs import spamlang
from train.text import data
from train.training import trainer
import tests  # pylint: disable=unused-import


class LoaderTest(parameterized.TestCase):

  def test_repeat_copies_its_first_token(self):
    x, y = data.SpamLangLoader(100, 12, 64, seed=0).batch(4)
    self.assertTrue(np.all(x == x[:, :1]) and np.all(y == x[:, :1]))
    self.assertEqual(set(np.unique(x[:, 0])) - set(range(100)), set())
    self.assertGreater(len(np.unique(x[:, 0])), 20)

  def test_fresh_first_starts_with_token_0_and_counts_the_draw(self):
    x, y = data.SpamLangLoader(100, 12, 512, seed=0,
                               variant="fresh_first").batch(4)
    self.assertTrue(np.all(x[:, 0] == 0))
    self.assertTrue(np.all(x[:, 1:] == y[:, :1]) and np.all(y == y[:, :1]))
    drawn = y[:, 0]  # The counted draw: uniform over tokens 1..99.
    self.assertEqual(drawn.min(), 1)
    self.assertGreater(len(np.unique(drawn)), 90)

  def test_floors(self):
    self.assertEqual(data.spamlang_floor(49152, 64, "repeat"), 0.0)
    # The issue's "about ln V / 64 ~ 0.17" at Table 3's length.
    self.assertAlmostEqual(data.spamlang_floor(49152, 64, "fresh_first"),
                           math.log(49151) / 64)
    self.assertAlmostEqual(data.spamlang_floor(49152, 64, "fresh_first"),
                           0.1688, places=4)

  # V = 4 for 'fresh_first': its floor ln(3) / 4 = 0.275 is 0.07 under
  # ln(4) / 4, so the check below tells the two apart.
  @parameterized.parameters(("repeat", 16), ("fresh_first", 4))
  def test_a_learned_model_sits_on_its_floor(self, variant, v):
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")
    c = spamlang.get_config(f"V={v},cpu,variant={variant}")
    c.train.steps, c.train.warmup, c.train.batch_size = 150, 10, 64
    c.eval_every = c.checkpoint_every = c.log_every = 150
    c.eval_batches = 8
    out = trainer.train_and_evaluate(c, self.create_tempdir().full_path)
    floor = data.spamlang_floor(v, c.model.block_size, variant)
    # Within 0.02 nats of the floor (no predictor beats it): 0 for 'repeat'
    # (an unlearned model sits near ln V), ln(3) / 4 for 'fresh_first'.
    self.assertLess(abs(out["final_val_loss"] - floor), 0.02)


class SweepTest(absltest.TestCase):
  """The report's sweep plans its arms (train/report/spamlang.py), runs
  faked: which (arm, V, D, lr, settings) it trains."""

  def test_arms_lrs_and_ranks(self):
    from train.report import spamlang as section  # pylint: disable=g-import-not-at-top
    from configs import report  # pylint: disable=g-import-not-at-top
    c = report.get_config("tiny").spamlang
    c.lrs = (1e-3, 3e-3)
    seen = []

    def fake_run(cfg, outdir, arm=""):
      del outdir
      seen.append((arm, cfg.data.spamlang_vocab, cfg.model.head,
                   cfg.model.get("head_rank", 0), cfg.train.lr, cfg.train.b2,
                   cfg.data.spamlang_variant))
      return {"accuracy": 1.0}

    with mock.patch.object(section, "run", fake_run):
      rows = section.sweep(c, "o")
    self.assertLen(rows, len(seen))
    self.assertTrue(all(r["control_learned"] for r in rows))  # The gate's.
    # lr_arms '' and 'tied' at both lrs, arms at the first; the tied arm
    # without the rank-8 head; two V each.
    self.assertLen(seen, 2 * (2 * 2 + 2 * 1) + 2 * 2 * 1 * 2)
    tied = [s for s in seen if s[0] == "tied"]
    self.assertEqual({s[2] for s in tied}, {"tied"})
    self.assertEqual({s[4] for s in tied}, {1e-3, 3e-3})
    b2 = [s for s in seen if s[0] == "b2=0.95"]
    self.assertEqual({(s[4], s[5]) for s in b2}, {(1e-3, 0.95)})
    self.assertEqual({s[3] for s in b2}, {0, 8})
    fresh = [s for s in seen if s[0] == "variant=fresh_first"]
    self.assertEqual({s[6] for s in fresh}, {"fresh_first"})
    self.assertEqual({s[5] for s in seen if s[0] == ""}, {0.999})

  def test_lrs_past_the_first_stop_at_the_grid_vocab(self):
    from train.report import spamlang as section  # pylint: disable=g-import-not-at-top
    from configs import report  # pylint: disable=g-import-not-at-top
    c = report.get_config("tiny").spamlang
    c.lrs, c.lr_grid_vocab = (3e-3, 1e-3), 64
    seen = []

    def fake_run(cfg, outdir, arm=""):
      del outdir
      seen.append((arm, cfg.data.spamlang_vocab, cfg.train.lr))
      return {"accuracy": 1.0}

    with mock.patch.object(section, "run", fake_run):
      section.sweep(c, "o")
    # V = 256 at the first lr alone, in every arm; V = 64 at both.
    self.assertEqual({s[2] for s in seen if s[1] == 256}, {3e-3})
    self.assertEqual({s[2] for s in seen if s[1] == 64}, {3e-3, 1e-3})
    self.assertIn("V = 256 at the first alone", section.grid_said(c))
    c.lr_grid_vocab = 0
    self.assertEqual(section.vocabs_at(c, 1e-3), [64, 256])
    self.assertEqual(section.grid_said(c), "")

  def test_a_bad_arm_is_refused_by_name(self):
    from train.report import spamlang as section  # pylint: disable=g-import-not-at-top
    with self.assertRaisesRegex(ValueError, r"`spamlang.arms` entry "
                                r"'beta2=0.9'"):
      section.parse_arm("beta2=0.9")
    self.assertEqual(section.parse_arm("b2=0.95,tied"),
                     {"b2": 0.95, "tied": True})
    self.assertEqual(section.parse_arm(""), {})
    self.assertEqual(section.parse_arm("b2=0.05"), {"b2": 0.05})
    with self.assertRaisesRegex(ValueError, r"`b2` 0 is the base's"):
      section.parse_arm("b2=0")  # Would silently duplicate the base arm.


class BadInputTest(parameterized.TestCase):

  def test_a_resume_with_the_other_variant_is_refused(self):
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")
    workdir = self.create_tempdir().full_path

    def config(variant, steps):
      c = spamlang.get_config(f"V=16,cpu,variant={variant}")
      c.train.steps, c.train.warmup, c.train.batch_size = steps, 1, 8
      c.eval_every = c.checkpoint_every = c.log_every = 2
      c.eval_batches = 1
      return c

    trainer.train_and_evaluate(config("repeat", 2), workdir)
    with self.assertRaisesRegex(ValueError, r"data.spamlang_variant='repeat'"
                                r", this run has data.spamlang_variant="
                                r"'fresh_first'"):
      trainer.train_and_evaluate(config("fresh_first", 4), workdir)
    # A workdir written before the variant existed resumes as 'repeat'.
    path = os.path.join(workdir, "config.json")
    with open(path) as f:
      saved = json.load(f)
    del saved["data"]["spamlang_variant"]
    with open(path, "w") as f:
      json.dump(saved, f)
    out = trainer.train_and_evaluate(config("repeat", 4), workdir)
    self.assertEqual((out["resumed_from"], out["steps"]), (2, 4))

  def test_an_unknown_variant_is_refused_by_name(self):
    c = spamlang.get_config("V=64,cpu,variant=bos")
    with self.assertRaisesRegex(ValueError, r"`data.spamlang_variant` must "
                                r"be one of .*repeat.*fresh_first"):
      trainer.check_config(c)
    with self.assertRaisesRegex(ValueError, "`data.spamlang_variant`"):
      data.SpamLangLoader(64, 4, 8, 0, variant="bos")

  def test_fresh_first_needs_three_tokens(self):
    with self.assertRaisesRegex(ValueError, r"`data.spamlang_vocab` must be "
                                r"an integer in \[3, "):
      trainer.check_config(spamlang.get_config("V=2,cpu,variant=fresh_first"))

  @parameterized.parameters((1.0,), (0.0,), (-0.5,), (1.5,))
  def test_beta2_outside_the_open_unit_interval(self, b2):
    c = spamlang.get_config("V=64,cpu")
    c.train.b2 = b2
    with self.assertRaisesRegex(ValueError,
                                r"`train.b2` must be a number in \(0.0, 1.0\)"):
      trainer.check_config(c)

  def test_a_tied_head_has_no_rank(self):
    with self.assertRaisesRegex(ValueError, "`tied` and `D`"):
      spamlang.get_config("V=64,tied,D=8,cpu")
    c = spamlang.get_config("V=64,tied,cpu")
    self.assertEqual(c.model.head, "tied")
    c.model.head_rank = 8
    with self.assertRaisesRegex(ValueError, "`model.head_rank`"):
      trainer.check_config(c)


if __name__ == "__main__":
  absltest.main()
