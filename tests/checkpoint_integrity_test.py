"""A run folder's contents checked on resume: a checkpoint whose bytes
changed since it was saved is moved aside (its manifest), a corpus edited
in place to the same size is refused (its digest), Ctrl-C during the first
save leaves config.json (so a changed seed is refused by name), and a full
disk or a double Ctrl-C is a line, not orbax's tracebacks."""

import contextlib
import io
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from unittest import mock

from absl.testing import absltest
import numpy as np
import orbax.checkpoint as ocp

from train.text import data
from train.training import checkpoint, integrity, trainer
import tests
from tests.trainer_test import ROOT, tiny_config

# tiny_config's run as a binary (one CPU device), for the signal and disk
# tests; --config.train.steps comes last.
ARGS = ["--config=configs/thesis.py:model1,cpu", "--config.model.n_layer=2",
        "--config.model.n_head=2", "--config.model.n_embd=32",
        "--config.model.block_size=32",
        "--config.data.synthetic_stories=400", "--config.train.batch_size=8",
        "--config.train.warmup=3", "--config.eval_every=10",
        "--config.checkpoint_every=10", "--config.eval_batches=2",
        "--config.log_every=100000"]


class IntegrityTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")

  def test_a_changed_checkpoint_is_moved_aside(self):
    run = self.create_tempdir().full_path
    cfg = tiny_config(**{"train.steps": 15, "checkpoint_every": 5})
    trainer.train_and_evaluate(cfg, run)
    ckpts = f"{run}/checkpoints"
    self.assertIsNone(integrity.manifest_problem(f"{ckpts}/15"))
    # Step 5's state in step 15's folder: it restores without an error.
    shutil.rmtree(f"{ckpts}/15/state")
    shutil.copytree(f"{ckpts}/5/state", f"{ckpts}/15/state")
    summary = trainer.train_and_evaluate(cfg, run)
    self.assertEqual(summary["resumed_from"], 10)
    self.assertEqual(os.listdir(f"{run}/corrupt_checkpoints"), ["15"])
    self.assertEqual(checkpoint.finished_steps(run), [5, 10, 15])
    path = f"{ckpts}/15/state/_METADATA"  # A few random bytes, same size.
    with open(path, "r+b") as f:
      f.seek(100)
      f.write(np.random.default_rng(0).bytes(8))
    self.assertRegex(integrity.manifest_problem(f"{ckpts}/15"),
                     "state/_METADATA changed since it was saved")
    os.remove(f"{ckpts}/15/state/_sharding")
    self.assertRegex(integrity.manifest_problem(f"{ckpts}/15"),
                     r"missing or added .*'state/_sharding'")
    # Moved aside again later: beside the first, not over it.
    aside = checkpoint.aside_path(f"{run}/corrupt_checkpoints", 15)
    self.assertEqual(os.path.basename(aside), "15.1")

  def test_a_checkpoint_without_its_manifest_says_so(self):
    run = self.create_tempdir().full_path
    cfg = tiny_config(**{"train.steps": 10, "checkpoint_every": 5})
    trainer.train_and_evaluate(cfg, run)
    os.remove(f"{run}/checkpoints/10/{integrity.MANIFEST}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      summary = trainer.train_and_evaluate(cfg, run)
    self.assertEqual(summary["resumed_from"], 10)
    self.assertIn("checkpoint 10", out.getvalue())
    self.assertIn("restored unverified", out.getvalue())

  def test_a_corpus_edited_in_place_is_refused(self):
    folder = self.create_tempdir().full_path
    corpus = os.path.join(folder, "corpus.txt")
    words = np.random.default_rng(1).choice(
        ["the", "cat", "sat", "on", "a", "mat", "and", "ran"], 12000)
    with open(corpus, "w") as f:
      f.write(" ".join(words))
    cfg = lambda steps: tiny_config(**{"data.source": "text",
                                       "data.path": corpus,
                                       "train.steps": steps})
    wd = os.path.join(folder, "run")
    trainer.train_and_evaluate(cfg(10), wd)
    with open(corpus, "r+") as f:  # Same size, other text.
      f.seek(1000)
      f.write("xyz" * 50)
    with self.assertRaisesRegex(checkpoint.CheckpointError,
                                "same size but other content"):
      trainer.train_and_evaluate(cfg(20), wd)

  def test_ctrl_c_in_the_first_save_keeps_the_config_contract(self):
    wd = self.create_tempdir().full_path
    real_save = ocp.CheckpointManager.save

    def save_then_ctrl_c(manager, step, *args, **kwargs):
      out = real_save(manager, step, *args, **kwargs)
      os.kill(os.getpid(), signal.SIGINT)
      return out

    err = io.StringIO()
    with mock.patch.object(ocp.CheckpointManager, "save", save_then_ctrl_c), \
        contextlib.redirect_stderr(err):
      with self.assertRaises(SystemExit) as stopped:
        trainer.train_and_evaluate(tiny_config(), wd)
    self.assertEqual(stopped.exception.code, 130)
    self.assertEqual(err.getvalue().splitlines()[-1],
                     f"interrupted; checkpoint at step 10 kept in {wd}")
    self.assertTrue(os.path.isfile(os.path.join(wd, "config.json")))
    for key, value, field in (("seed", 1, "seed"), ("data.seed", 5,
                                                    "data.seed"),
                              ("model.dtype", "bfloat16", "model.dtype")):
      with self.assertRaisesRegex(checkpoint.CheckpointError,
                                  f"created with {field}=.*incompatible"):
        trainer.train_and_evaluate(tiny_config(**{key: value}), wd)
    summary = trainer.train_and_evaluate(tiny_config(**{"train.steps": 12}),
                                         wd)
    self.assertEqual(summary["resumed_from"], 10)


class QuietFailureTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")
    self.env = tests.one_device_env()

  def test_a_full_disk_is_one_error_line(self):
    data.make_loaders(tiny_config())  # The token cache, before the limit.
    wd = self.create_tempdir().full_path
    # Files stop at 100 kB (ulimit -f, in KiB; Python ignores SIGXFSZ, so a
    # write past it fails as on a full disk), the checkpoints' among them.
    cmd = shlex.join([sys.executable, "-m", "train.main", f"--workdir={wd}",
                      *ARGS, "--config.train.steps=20"])
    env = dict(self.env, BOTTLENECK_JAX_CACHE="0")  # No compile cache.
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    full = subprocess.run(["bash", "-c", f"ulimit -f 98 && exec {cmd}"],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    self.assertEqual(full.returncode, 2, full.stderr[-3000:])
    lines = [line for line in full.stderr.strip().splitlines()
             if not line.startswith("step ")]  # Progress lines.
    self.assertLen(lines, 1, full.stderr[-3000:])
    self.assertRegex(lines[0], r"^error: checkpoint 10 could not be written "
                     r"to .*\(File too large\); the newest checkpoint kept "
                     r"is step none")
    summary = trainer.train_and_evaluate(tiny_config(**{"train.steps": 12}),
                                         wd)  # What it kept (nothing) resumes.
    self.assertEqual(summary["resumed_from"], 0)

  def test_a_double_ctrl_c_is_a_line_each_and_resumes(self):
    wd = self.create_tempdir().full_path
    proc = subprocess.Popen(
        [sys.executable, "-m", "train.main", f"--workdir={wd}", *ARGS,
         "--config.train.steps=100000"], cwd=ROOT, env=self.env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ckpts, deadline = os.path.join(wd, "checkpoints"), time.time() + 300
    while not (os.path.isdir(ckpts) and os.listdir(ckpts)):
      self.assertLess(time.time(), deadline)  # A save under way.
      time.sleep(0.002)
    for _ in range(2):
      proc.send_signal(signal.SIGINT)
      time.sleep(0.02)
    _, err = proc.communicate(timeout=300)
    self.assertEqual(proc.returncode, 130, err[-3000:])
    lines = err.strip().splitlines()
    self.assertBetween(len(lines), 1, 2, err[-3000:])  # One per Ctrl-C.
    for line in lines:
      self.assertStartsWith(line, "interrupted")
    self.assertRegex(lines[0], r"^interrupted(| again: .*); checkpoint at "
                     r"step (none|\d+) kept in ")
    kept = ([0] + checkpoint.finished_steps(wd))[-1]
    summary = trainer.train_and_evaluate(
        tiny_config(**{"train.steps": kept + 5}), wd)
    self.assertEqual(summary["resumed_from"], kept)


if __name__ == "__main__":
  absltest.main()
