"""What a run meets and must survive: an all-zero row in an LP subset, a
checkpoint that does not restore (moved aside, the previous one resumed), an
output folder already in use or holding a comparison."""

import json
import os
import subprocess
import sys

from absl.testing import absltest
import numpy as np
import scipy.optimize

from bottleneck import topm
from bottleneck.io import matrices
from bottleneck.lp.instances import Instance
from train.probes import compare
from train.report import runner
from train.training import metrics, trainer
import tests
from tests.trainer_test import tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def highs_t_star(a, subset) -> float:
  """min t s.t. A_S x = 1, A_R x <= t, by scipy's HiGHS (inf: infeasible)."""
  n, d = a.shape
  rest = np.setdiff1d(np.arange(n), subset)
  c = np.r_[np.zeros(d), 1.0]
  a_ub = np.c_[a[rest], -np.ones(len(rest))]
  a_eq = np.c_[a[subset], np.zeros(len(subset))]
  res = scipy.optimize.linprog(c, a_ub, np.zeros(len(rest)), a_eq,
                               np.ones(len(subset)), bounds=(None, None),
                               method="highs")
  return {0: res.fun, 2: np.inf, 3: -np.inf}[res.status]


class ZeroRowTest(absltest.TestCase):
  """A padded vocabulary's all-zero rows: a subset holding one is certified
  INFEASIBLE, the others are decided as usual (= HiGHS)."""

  def test_zero_rows_in_the_head(self):
    a = matrices.random(240, 12, seed=3).astype(np.float64)
    zero = [5, 17, 100]
    a[zero] = 0.0
    rng = np.random.default_rng(0)
    subsets = [rng.choice(240, 3, replace=False) for _ in range(10)]
    subsets += [np.array([5, 40, 41]), np.array([17, 100, 7])]
    out = topm.solve(a, [Instance(s, np.ones(3), 1.0) for s in subsets])
    for s, rec in zip(subsets, out):
      if np.intersect1d(s, zero).size:
        self.assertEqual((rec["verdict"], rec["certificate"]),
                         ("infeasible", "zero_row"))
        self.assertEqual(rec["lower_bound"], np.inf)
        self.assertEqual(highs_t_star(a, s), np.inf)
      else:
        t = highs_t_star(a, s)
        self.assertEqual(rec["verdict"], "feasible" if t < 1 else
                         "infeasible", (s, t))
    self.assertGreater(sum(r["certificate"] != "zero_row" for r in out), 5)
    sweep = topm.sweep(a, [2, 4], 20, seed=1)  # Nested chains go on too.
    self.assertEqual([r["feasible"] + r["infeasible"] for r in sweep],
                     [20, 20])

  def test_tiny_entries_decide_as_the_matrix_they_scale(self):
    # Entries with 12 significant bits, so that 2^-130 scales them exactly
    # into float32's subnormal range (below 2^-126), where 2^130 is no
    # float32: the rescaling to unit size must go through float64.
    a = np.round(matrices.random(200, 10, seed=4) * 2**10) / 2**10
    rng = np.random.default_rng(1)
    inst = [Instance(rng.choice(200, 3, replace=False), np.ones(3), 1.0)
            for _ in range(6)]
    tiny = (a.astype(np.float64) * 2.0**-130).astype(np.float32)
    np.testing.assert_array_equal(tiny.astype(np.float64) * 2.0**130, a)
    self.assertLess(np.abs(tiny).max(), np.finfo(np.float32).tiny)
    want = [r["verdict"] for r in topm.solve(a, inst)]
    self.assertEqual([r["verdict"] for r in topm.solve(tiny, inst)], want)


class RecoverTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")

  def test_a_cut_off_metrics_line_is_dropped_with_a_warning(self):
    path = os.path.join(self.create_tempdir().full_path, "metrics.jsonl")
    with open(path, "w") as f:
      f.write('{"step": 1, "loss": 2.0}\n{"loss": 1.0}\n'
              '{"step": 2, "loss": 1.5}\n{"step": 3, "lo')
    log = metrics.MetricsLog(path, 2, True)
    self.assertEqual([r["step"] for r in log.rows()], [1, 2])
    with open(path) as f:
      self.assertLen(f.readlines(), 2)

  def test_a_corrupt_checkpoint_falls_back_to_the_previous_one(self):
    base = self.create_tempdir().full_path
    cfg = tiny_config(**{"train.steps": 15, "checkpoint_every": 5})
    trainer.train_and_evaluate(cfg, f"{base}/ref")
    trainer.train_and_evaluate(cfg, f"{base}/run")
    for step in ("10", "15"):  # The two newest, garbled.
      state = os.path.join(base, "run", "checkpoints", step, "state")
      for root, _, files in os.walk(state):
        for name in files:
          with open(os.path.join(root, name), "wb") as f:
            f.write(b"garbage")
    summary = trainer.train_and_evaluate(cfg, f"{base}/run")
    self.assertEqual(summary["resumed_from"], 5)
    self.assertEqual(sorted(os.listdir(f"{base}/run/corrupt_checkpoints")),
                     ["10", "15"])
    losses = lambda wd: [r["loss"] for r in metrics.read_metrics(
        f"{wd}/metrics.jsonl") if "loss" in r]
    np.testing.assert_allclose(losses(f"{base}/run"), losses(f"{base}/ref"),
                               rtol=1e-6)

  def test_no_restorable_checkpoint_is_one_line_and_moves_nothing(self):
    wd = self.create_tempdir().full_path
    cmd = [sys.executable, "-m", "train.main",
           "--config=configs/thesis.py:model1,cpu", f"--workdir={wd}",
           "--config.model.n_layer=1", "--config.model.block_size=32",
           "--config.data.synthetic_stories=400", "--config.train.steps=4",
           "--config.train.warmup=1", "--config.checkpoint_every=2",
           "--config.eval_every=4", "--config.train.batch_size=4"]
    env = tests.one_device_env()
    first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=300)
    self.assertEqual(first.returncode, 0, first.stderr[-2000:])
    for root, _, files in os.walk(os.path.join(wd, "checkpoints")):
      for name in files:
        if "ocdbt.process" in root:
          open(os.path.join(root, name), "wb").close()  # Zeroed.
    again = subprocess.run(cmd[:-5] + ["--config.train.steps=6"] + cmd[-4:],
                           cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
    self.assertEqual(again.returncode, 2, again.stderr[-2000:])
    self.assertNotIn("Traceback", again.stderr)
    self.assertNotIn("Event loop", again.stderr)
    lines = again.stderr.strip().splitlines()
    self.assertLen(lines, 1, again.stderr[-3000:])
    self.assertRegex(lines[0], r"^error: none of the checkpoints \[2, 4\]")
    self.assertEqual(sorted(os.listdir(os.path.join(wd, "checkpoints"))),
                     ["2", "4"])


class OutputFolderTest(absltest.TestCase):

  def test_a_comparison_folder_is_refused_when_taken(self):
    out = self.create_tempdir().full_path
    open(os.path.join(out, "compare.md"), "w").close()
    run = lambda *args: subprocess.run(
        [sys.executable, "-m", "train.compare", "--models=gguf:/nonexistent",
         f"--outdir={out}", *args], cwd=ROOT, env=tests.one_device_env(),
        capture_output=True, text=True, timeout=300)
    taken = run()
    self.assertEqual(taken.returncode, 2, taken.stderr[-2000:])
    self.assertIn("already holds a comparison (compare.md)", taken.stderr)
    self.assertNotIn("Traceback", taken.stderr)
    replaced = run("--overwrite")  # Gets as far as the model.
    self.assertIn("`model` GGUF file not found", replaced.stderr)

  def test_subjects_of_one_name_stay_apart(self):
    taken = {}
    for name in ("ref", "ref", "other", "ref"):
      taken[compare.unique_name(name, taken)] = name
    self.assertEqual(list(taken), ["ref", "ref-2", "other", "ref-3"])

  def test_a_report_folder_with_foreign_results_is_refused_first(self):
    out = self.create_tempdir().full_path
    path = os.path.join(out, "results.json")
    for content, message in (
        ([1, 2], "a JSON list, not an object"),
        ({"config": {"scale": "tiny"}, "sections": {
            "table1": {"markdown": "x", "seconds": 1.0}}},
         "section 'table1' has no 'title'"),
        ({"config": {"scale": "tiny"}}, "no 'config' and 'sections'")):
      with open(path, "w") as f:
        json.dump(content, f)
      with self.assertRaisesRegex(ValueError, message):
        runner._load(out, "tiny")  # pylint: disable=protected-access

  def test_the_probes_text_is_checked_before_the_model_loads(self):
    for spec, message in (("text:/nowhere/*.txt", "matched no files"),
                          ("shakespear", "the source must be one of")):
      with self.assertRaisesRegex(ValueError, f"`ood_data` .*{message}"):
        from train.probes import registry  # pylint: disable=g-import-not-at-top
        registry.run("prune", model="gguf:/nonexistent", ood_data=spec)


if __name__ == "__main__":
  absltest.main()
