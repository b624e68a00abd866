"""The report's training runs (train/report/training_runs.py and the
experiment modules lowrank, spamlang, seed004): a run folder is reused only
by the config that made it."""

from unittest import mock

from absl.testing import absltest

from configs import spamlang as spamlang_config
from train.report import lowrank, seed004, spamlang, training_runs
from train.training import trainer


class RunDirTest(absltest.TestCase):

  def test_a_folder_names_its_whole_config(self):
    base = spamlang_config.get_config("V=256,cpu")
    same = training_runs.run_dir("out", "spam",
                                 spamlang_config.get_config("V=256,cpu"))
    self.assertEqual(training_runs.run_dir("out", "spam", base), same)
    self.assertStartsWith(same, "out/runs/spam_")
    # What the folder name's readable part does not say still changes it:
    # another lr, Adam's beta2, schedule, warm-up, width or data seed.
    for field, value in (("train.lr", 0.01), ("train.b2", 0.98),
                         ("train.schedule", "constant"), ("train.warmup", 7),
                         ("model.n_embd", 64), ("data.seed", 1)):
      cfg = spamlang_config.get_config("V=256,cpu")
      section, key = field.split(".")
      cfg[section][key] = value
      self.assertNotEqual(training_runs.run_dir("out", "spam", cfg), same,
                          field)

  def test_each_experiment_trains_in_its_configs_folder(self):
    seen, configs = [], []

    class Stop(Exception):
      pass

    def fake_train(cfg, workdir):  # The config's digest ends the name.
      configs.append(cfg)
      digest = training_runs.run_dir("o", "any", cfg).rsplit("_", 1)[1]
      seen.append(workdir.startswith("o/runs/") and
                  workdir.endswith("_" + digest))
      raise Stop

    calls = (lambda: seed004.thesis_run("model1,cpu", 5, "o"),
             lambda: training_runs.probe_model_run(5, "o"),
             lambda: lowrank.run(8, 0, 5, "o"),
             lambda: spamlang.runs([64], [0], 5, "o"))
    with mock.patch.object(trainer, "train_and_evaluate",
                           fake_train):
      for call in calls:
        with self.assertRaises(Stop):
          call()
    self.assertEqual(seen, [True] * 4)
    # The low-rank run's early grid: at 38400 steps, L/64 .. L/16, so that
    # the paper's x16 (a crossing at step 2400) is read, not bounded by the
    # first of the evaluations every L/12 (3200).
    with mock.patch.object(trainer, "train_and_evaluate",
                           fake_train), self.assertRaises(Stop):
      lowrank.run(256, 1, 38400, "o")
    # Then the flatness criterion's six evaluations over the last quarter
    # of the stable phase (to step 34560, where the WSD decay starts).
    self.assertEqual(tuple(configs[-1].eval_at),
                     (600, 800, 1200, 1600, 2400, 25920, 27648, 29376, 31104,
                      32832, 34560))
    self.assertEqual(configs[-1].eval_every, 3200)
    with mock.patch.object(trainer, "train_and_evaluate",
                           fake_train), self.assertRaises(Stop):
      lowrank.run(8, 1, 38400, "o", window=False)
    self.assertEqual(tuple(configs[-1].eval_at), (600, 800, 1200, 1600, 2400))

if __name__ == "__main__":
  absltest.main()
