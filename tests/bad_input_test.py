"""Every bad input is one clear error naming the argument (issue: trust §4).

In-process cases call the library function a binary calls; the subprocess
cases check what a user of each binary sees: one `error:` line, exit 2
(3 for a diverged training run), no traceback.
"""

import json
import os
import re
import signal
import subprocess
import sys

from absl.testing import absltest, parameterized
import numpy as np

from bottleneck import bounds, simulate, topm
from bottleneck.io import cli, hf, matrices
from bottleneck.lp import admm
from configs import thesis
from train.models import loaders
from train.text import data, tokenizers
from train.training import trainer
import tests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _files(tmp):
  """Broken inputs a user might hand over, written once per test."""
  paths = {}
  def put(name, data):
    paths[name] = os.path.join(tmp, name)
    with open(paths[name], "wb") as f:
      f.write(data)
  put("empty_npy", b"")
  put("text_npy", b"not a numpy file at all")
  put("junk_st", b"junk")
  np.savez(os.path.join(tmp, "w.npz"), w=np.ones((8, 4)))
  paths["npz"] = os.path.join(tmp, "w.npz")
  np.save(os.path.join(tmp, "complex.npy"), np.ones((8, 4)) * (1 + 2j))
  paths["complex_npy"] = os.path.join(tmp, "complex.npy")
  for name, text in (("hf_list", "[1, 2]"), ("hf_bad_json", "{oops"),
                     ("hf_no_key", json.dumps({"model_type": "gpt2"}))):
    os.makedirs(os.path.join(tmp, name))
    with open(os.path.join(tmp, name, "config.json"), "w") as f:
      f.write(text)
    paths[name] = os.path.join(tmp, name)
  return paths


class LibraryTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.tmp = self.create_tempdir().full_path
    self.f = _files(self.tmp)

  @parameterized.named_parameters(
      ("missing_file", "npy:{tmp}/nope.npy", "file not found"),
      ("empty_npy", "npy:{empty_npy}", "not a readable .npy"),
      ("text_npy", "npy:{text_npy}", "not a readable .npy"),
      ("npz_wrong_key", "npy:{npz}:x", "has no array 'x'"),
      ("complex", "npy:{complex_npy}", "must hold real numbers"),
      ("corrupt_safetensors", "safetensors:{junk_st}",
       "not a readable safetensors"),
      ("hf_config_list", "hf:{hf_list}", "must hold a JSON object"),
      ("hf_config_not_json", "hf:{hf_bad_json}", "is not valid JSON"),
      ("unknown_kind", "pickle:x", "must be random"),
  )
  def test_matrix_specs(self, spec, message):
    spec = spec.format(tmp=self.tmp, **self.f)
    with self.assertRaisesRegex(ValueError, message):
      matrices.load(spec)

  def test_lp_arguments(self):
    a = matrices.random(50, 8)
    rng = np.random.default_rng(0)
    for kwargs, message in ((dict(m=0), "`m` must be an integer in"),
                            (dict(m=50), "`m` must be an integer in"),
                            (dict(trials=0), "`trials`")):
      args = dict(N=50, m=3, trials=2, problem="logits", rng=rng)
      args.update(kwargs)
      with self.assertRaisesRegex(ValueError, message):
        topm.make_instances(**args)
    with self.assertRaisesRegex(ValueError, "`batch`"):
      topm.sweep(a, [3], 2, batch=0)
    with self.assertRaisesRegex(ValueError, r"`trials` = 1000000000 .* "
                                r"needs about \d+\.\d GiB"):
      topm.sweep(a, [3], 10**9)
    for field, value in (("max_iters", 0), ("check_every", 0),
                         ("rho", 0.0), ("alpha", 2.0), ("sigma", -1.0),
                         ("rho_eq_ratio", 1.0), ("group", -1)):
      with self.assertRaisesRegex(ValueError, f"`{field}`"):
        admm.Settings(**{field: value})

  def test_simulate_and_bounds_arguments(self):
    with self.assertRaisesRegex(ValueError, "`chunk`"):
      simulate.simulate(100, 16, [4], 4, chunk=0)
    with self.assertRaisesRegex(ValueError, "`trials`"):
      simulate.simulate(100, 16, [4], 0)
    # Vocabularies past int32 (the bug: m* = 0); float64 reference below.
    self.assertEqual(int(bounds.m_star(3_000_000_000, 768)), 15)
    self.assertEqual(int(bounds.m_star(2**31 + 1, 768)), int(
        bounds.m_star(2**31 - 1, 768)))

  def test_training_config(self):
    for key, value, message in (("eval_batches", 0, "`eval_batches`"),
                                ("log_every", 0, "`log_every`"),
                                ("checkpoint_every", 0, "`checkpoint_every`"),
                                ("eval_every", -1, "`eval_every`")):
      c = thesis.get_config("model1,cpu")
      c[key] = value
      with self.assertRaisesRegex(ValueError, message):
        trainer.check_config(c)
    for key, value, message in (("lr", float("nan"), "`train.lr`"),
                                ("lr", 0.0, "`train.lr`"),
                                ("warmup", 10**6, "`train.warmup`"),
                                ("steps", 0, "`train.steps`"),
                                ("min_lr_ratio", 2.0, "min_lr_ratio"),
                                ("weight_decay", -0.1, r"`train.weight_"
                                 r"decay` must be a number in \[0.0, inf\)"),
                                ("b1", -0.5, r"`train.b1` .* \[0.0, 1.0\)"),
                                ("b2", 1.0, r"`train.b2` .* got 1.0"),
                                ("eps", 0.0, r"`train.eps` .* \(0.0, inf\)"),
                                ("grad_clip", float("nan"), "grad_clip")):
      c = thesis.get_config("model1,cpu")
      c.train[key] = value
      with self.assertRaisesRegex(ValueError, message):
        trainer.check_config(c)

  def test_folders(self):
    with self.assertRaisesRegex(ValueError, "is a file, not a folder"):
      cli.writable_dir("outdir", self.f["empty_npy"])
    with self.assertRaisesRegex(ValueError, "lacks the integer field"):
      loaders.load_hf(self.f["hf_no_key"])
    with self.assertRaisesRegex(ValueError, "neither model.safetensors"):
      hf.weight_files(self.f["hf_no_key"], "hf_dir")
    with self.assertRaisesRegex(ValueError, "has no tokenizer files"):
      tokenizers.load("hf:" + self.f["hf_no_key"])


class NewcomerTest(absltest.TestCase):
  """The cases a new user hit (issue 21), at the function each binary calls
  before it computes anything."""

  def test_output_paths_checked_first(self):
    tmp = self.create_tempdir().full_path
    regular = os.path.join(tmp, "file")
    open(regular, "w").close()
    for path in ("/proc/nope/f.png", os.path.join(regular, "f.png"), tmp):
      with self.assertRaisesRegex(ValueError, "`plot`"):
        cli.output_file("plot", path)
    with self.assertRaisesRegex(ValueError, "give a folder"):
      cli.figure_paths("plot", os.path.join(tmp, "g.png"), ["a", "b"])
    self.assertEqual(cli.figure_paths("plot", tmp, ["a"]),
                     {"a": os.path.join(tmp, "a.png")})

  def test_sizes_refused_with_an_estimate(self):
    with self.assertRaisesRegex(ValueError, "`N` must be at most"):
      simulate.simulate(10**12, 64, [4], 4)
    with self.assertRaisesRegex(ValueError, "GiB"):
      simulate.simulate(2**31 - 1, 4096, [4], 4, method="projected")
    # A chunk larger than the trials is capped at them (no 128 TB buffer).
    sim = simulate.simulate(200, 16, [4], 3, chunk=10**8)
    self.assertEqual(sim.trials, 3)
    with self.assertRaisesRegex(ValueError, "`seed`"):
      cli.check_seed("seed", -1)

  def test_sampling_and_windows(self):
    from types import SimpleNamespace  # pylint: disable=g-import-not-at-top
    from train.models import generate  # pylint: disable=g-import-not-at-top
    from train.probes import subjects  # pylint: disable=g-import-not-at-top
    cfg = SimpleNamespace(block_size=16)
    with self.assertRaisesRegex(ValueError, "`temperature`"):
      generate.complete(None, None, cfg, [[1, 2]], 4,
                        temperature=float("nan"))
    with self.assertRaisesRegex(ValueError, "`n` / `new_tokens`: only 1 "
                                "held-out"):
      generate.split_stories(["a b c d e f g h i j k l", "a"],
                             _WordTokenizer(), 5, 3)
    for n, tokens, name in ((0, 3, "`n`"), (1, 0, "`new_tokens`")):
      with self.assertRaisesRegex(ValueError, f"{name} .* must be an integer "
                                  ">= 1"):
        generate.split_stories(["a b c d e f g h i j k l"],
                               _WordTokenizer(), n, tokens)
    with self.assertRaisesRegex(ValueError, "`windows` must be >= 1"):
      subjects.windows(SimpleNamespace(cfg=cfg), "", 0)

  def test_sections_and_one_report_per_folder(self):
    from train.report import runner  # pylint: disable=g-import-not-at-top
    with self.assertRaisesRegex(ValueError, "`sections` names no section"):
      runner.check_sections([])
    with self.assertRaisesRegex(ValueError, "`sections` entry 'figure9'"):
      runner.check_sections(["figure9"])
    from bottleneck.io import lock  # pylint: disable=g-import-not-at-top
    out = self.create_tempdir().full_path
    with lock.FolderLock(out, "report.lock", "outdir"):
      with self.assertRaisesRegex(ValueError, "`outdir`.*in use"):
        with lock.FolderLock(out, "report.lock", "outdir"):
          pass

  def test_training_text_empty(self):
    c = thesis.get_config("model1,cpu")
    empty = os.path.join(self.create_tempdir().full_path, "empty.txt")
    open(empty, "w").close()
    c.data.source, c.data.path = "text", empty
    c.data.cache_dir = self.create_tempdir().full_path
    with self.assertRaisesRegex(ValueError, "`data.path` holds no text"):
      data.make_loaders(c)


class _WordTokenizer:
  def encode(self, text):
    return list(range(len(text.split())))


class WorkdirLockTest(absltest.TestCase):

  def test_one_trainer_per_workdir_and_stale_locks(self):
    from train.training import checkpoint  # pylint: disable=g-import-not-at-top
    wd = self.create_tempdir().full_path
    with checkpoint.WorkdirLock(wd):
      with self.assertRaisesRegex(ValueError, "is in use by pid"):
        with checkpoint.WorkdirLock(wd):
          pass
    self.assertFalse(os.path.exists(os.path.join(wd, checkpoint.LOCK)))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    with open(os.path.join(wd, checkpoint.LOCK), "w") as f:
      json.dump({"pid": int(dead.stdout), "host": os.uname().nodename}, f)
    with checkpoint.WorkdirLock(wd):  # Stale: its process is gone.
      pass


def run_module(module, *args, cwd=ROOT):
  env = tests.one_device_env(JAX_PLATFORMS="cpu")
  return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd,
                        env=env, capture_output=True, text=True, timeout=600)


class BinaryTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("flag_type", "bottleneck.topm", ["--trials=abc"], "flag --trials"),
      ("max_iters_0", "bottleneck.topm",
       ["--N=100", "--d=16", "--m=4", "--max_iters=0"], "`max_iters`"),
      ("missing_subsets", "bottleneck.topm",
       ["--N=100", "--d=16", "--subsets=npy:/nonexistent.npy"],
       "`subsets` file not found"),
      ("objective_typo", "bottleneck.topm",
       ["--N=100", "--d=16", "--m=4", "--objective=solv"], "--objective"),
      ("tolerance_0", "bottleneck.topm",
       ["--N=100", "--d=16", "--m=4", "--tolerance=0"], "`tolerance`"),
      ("working_set_over_n", "bottleneck.topm",
       ["--N=100", "--d=16", "--m=4", "--working_set=200"],
       "`working_set` must be in"),
      ("finish_after_negative", "bottleneck.topm",
       ["--N=100", "--d=16", "--m=4", "--finish_after=-5"],
       "`finish_after`"),
      ("first_check_typo", "bottleneck.topm",
       ["--N=100", "--d=16", "--m=4", "--first_check=soon"],
       "`first_check` must be 'auto' or an integer"),
      ("chunk_0", "bottleneck.simulate",
       ["--N=100", "--d=16", "--m=4", "--chunk=0"], "`chunk`"),
      ("config_typo", "train.main",
       ["--config=configs/lowrank.py:d=32", "--dry_run"], "allowed keys"),
      ("config_override_typo", "train.main",
       ["--config=configs/thesis.py:model1,cpu", "--config.foo=1",
        "--dry_run"], "does not have"),
      ("huge_trials", "bottleneck.topm",
       ["--N=100", "--d=16", "--m=4", "--trials=1000000000"], "GiB"),
      ("plot_unwritable", "bottleneck.bounds",
       ["--models=GPT2", "--plot=/proc/nope/f.png"], "`plot`"),
      ("positional_arg", "bottleneck.bounds", ["GPT2"], "GPT2"),
      ("config_missing", "train.main",
       ["--config=configs/nonexistent.py", "--dry_run"], "nonexistent.py"),
      ("m_over_n", "bottleneck.topm",
       ["--N=100", "--d=16", "--m=1000000000"], "`m` must be < min(N, d)"),
      ("targets_not_read", "bottleneck.topm",
       ["--N=100", "--d=16", "--m=4", "--problem=logits",
        "--targets=npy:/nope.npy"], "`targets` is only read"),
      ("seed_negative", "bottleneck.simulate",
       ["--N=100", "--d=16", "--m=4", "--seed=-1"], "`seed`"),
      ("n_overflow", "bottleneck.simulate",
       ["--N=1000000000000", "--d=16", "--m=4"], "`N` must be at most"),
      ("sections_empty", "train.report", ["--sections=,"], "`sections`"),
      ("prompt_and_stories", "train.sample",
       ["--workdir=/nonexistent", "--story_completion", "--prompt=Hi"],
       "give one of"),
      ("sample_n_0", "train.sample",
       ["--workdir=/nonexistent", "--story_completion", "--n=0"], "`n`"),
      ("layer_norm_eps_negative", "train.main",
       ["--config=configs/thesis.py:model1,cpu",
        "--config.model.layer_norm_eps=-1e-5", "--dry_run"],
       "`model.layer_norm_eps` must be a number in (0.0, inf)"),
      ("b2_one", "train.main",
       ["--config=configs/thesis.py:model1,cpu", "--config.train.b2=1.0",
        "--dry_run"], "`train.b2` must be a number in (0.0, 1.0)"),
  )
  def test_one_error_line(self, module, args, message):
    out = run_module(module, *args)
    self.assertEqual(out.returncode, 2, out.stderr[-2000:])
    self.assertIn(message, out.stderr)
    self.assertNotIn("Traceback", out.stderr)
    self.assertLen([l for l in out.stderr.splitlines()
                    if l.startswith("error:")], 1)

  def test_ctrl_c_is_one_line_and_exit_130(self):
    env = tests.one_device_env(JAX_PLATFORMS="cpu")
    wd = self.create_tempdir().full_path
    cmds = {
        "topm": ([sys.executable, "-m", "bottleneck.topm", "--N=20000",
                  "--d=64", "--m=10..50:10", "--trials=400"], "LP instances",
                 "interrupted"),
        "train": ([sys.executable, "-m", "train.main",
                   "--config=configs/thesis.py:model1,cpu",
                   f"--workdir={wd}", "--config.train.steps=100000",
                   "--config.checkpoint_every=5", "--config.log_every=1"],
                  "step 6/", "interrupted; checkpoint at step")}
    for name, (cmd, ready, message) in cmds.items():
      # A terminal's default SIGINT disposition: a parent that ignores
      # SIGINT (a test-runner worker may) would hand SIG_IGN down, and
      # Python then installs no KeyboardInterrupt handler at all. Set here
      # around the start, not in a preexec_fn (which runs the parent's
      # fork hooks: JAX's warns of forking a multithreaded process).
      before = signal.signal(signal.SIGINT, signal.SIG_DFL)
      try:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
      finally:
        signal.signal(signal.SIGINT, before)
      seen = []
      for line in proc.stdout:  # Interrupt once it is computing.
        seen.append(line)
        if ready in line:
          proc.send_signal(signal.SIGINT)
          break
      rest = proc.communicate(timeout=120)[0]
      self.assertEqual(proc.returncode, 130, name + "".join(seen) + rest)
      self.assertNotIn("Traceback", rest, name)
      self.assertIn(message, rest.strip().splitlines()[-1], name)

  def diverge(self, every: int):
    """A run at lr 1000 that logs and checkpoints every `every` steps:
    (its workdir, the step its error names)."""
    wd = self.create_tempdir().full_path
    out = run_module("train.main", "--config=configs/thesis.py:model1,cpu",
                     "--config.train.lr=1000", "--config.train.steps=40",
                     "--config.train.warmup=1",
                     f"--config.checkpoint_every={every}",
                     "--config.keep_checkpoints=2",
                     f"--config.log_every={every}",
                     "--config.eval_every=40", f"--workdir={wd}")
    self.assertEqual(out.returncode, 3, out.stderr[-2000:])
    self.assertNotIn("Traceback", out.stderr)
    found = re.search(r"training diverged at step (\d+)", out.stderr)
    self.assertIsNotNone(found, out.stderr[-2000:])
    return wd, int(found.group(1))

  def test_divergence_stops_and_saves_nothing_non_finite(self):
    wd, step = self.diverge(every=1)
    # Between logs and checkpoints the loop reads a step's finite flag
    # while the next step runs: the error still names the step itself.
    self.assertEqual(self.diverge(every=40)[1], step)
    self.assertFalse(os.path.exists(os.path.join(wd, "trainer.lock")))
    steps = sorted(int(s) for s in os.listdir(os.path.join(wd,
                                                           "checkpoints")))
    # Whatever was saved is finite and restorable (checked on restart).
    if steps:
      params, _, _ = trainer.load_params(wd)
      self.assertTrue(bool(trainer.all_finite(params)))


if __name__ == "__main__":
  absltest.main()
