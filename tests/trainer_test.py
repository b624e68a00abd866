"""The Flax trainer: configs, data, steps, checkpoints, the loop (a kill and
resume, and generation: trainer_resume_test.py)."""

import contextlib
import json
import os
import signal
import subprocess
import sys
from unittest import mock

from absl.testing import absltest, flagsaver, parameterized
import jax
import numpy as np

from configs import lowrank, spamlang, thesis
from train.text import corpora, data, tokenizers
from train.models import build, gpt as model_lib
from train.training import memory, runs, trainer
import tests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "testdata", "golden_three_steps.json")
STEPS = 3  # Optimizer steps the step tests take (lr > 0 from step 1).


def tiny_config(**overrides):
  """A seconds-sized run: byte-level synthetic stories, 2 x 32 model."""
  c = thesis.get_config("model1,cpu")
  c.model.n_layer, c.model.n_head, c.model.n_embd = 2, 2, 32
  c.model.block_size = 32
  c.data.synthetic_stories = 400
  c.train.batch_size, c.train.steps, c.train.warmup = 8, 30, 3
  c.eval_every = c.checkpoint_every = 10
  c.log_every = 1
  c.eval_batches = 2
  for key, value in overrides.items():
    node = c
    *path, last = key.split(".")
    for part in path:
      node = node[part]
    node[last] = value
  return c


def run_env():
  return tests.one_device_env()  # Subprocess runs use one CPU device.


class ConfigTest(parameterized.TestCase):

  @parameterized.parameters(("model1", 6.69e6), ("model2", 6.89e6),
                            ("model3", 6.69e6), ("model4", 6.89e6),
                            ("model5", 6.69e6), ("model6", 6.89e6),
                            ("model7", 29e6), ("model8", 70e6))
  def test_parameter_counts_match_table_4_1(self, name, paper):
    cfg = build.model_config(thesis.get_config(name).model)
    shapes = jax.eval_shape(lambda: model_lib.init_params(cfg))
    n = sum(x.size for x in jax.tree.leaves(shapes))
    self.assertLess(abs(n / paper - 1), 0.02)

  def test_dry_run_prints_one_json_line(self):
    out = subprocess.run([sys.executable, "-m", "train.main",
                          "--config=configs/thesis.py:model7", "--dry_run"],
                         cwd=ROOT, env=run_env(), capture_output=True,
                         text=True, timeout=300)
    self.assertEqual(out.returncode, 0, out.stderr[-2000:])
    line = json.loads(out.stdout.strip().splitlines()[-1])
    self.assertEqual(line["params"], 28971089)

  @parameterized.parameters(
      ("model.n_head", dict(n_head=3, n_embd=64)),
      ("model.head_rank", dict(head="lowrank", head_rank=65, n_embd=64)),
      ("model.head_rank", dict(head="lowrank", head_rank=0)),
      ("model.head", dict(head="mixture")),
      ("model.dtype", dict(dtype="float16")))
  def test_bad_model_configs(self, name, kwargs):
    with self.assertRaisesRegex(ValueError, f"`{name}`"):
      model_lib.GPTConfig(**kwargs)

  def test_bad_data_and_train_configs(self):
    c = tiny_config(**{"data.source": "wikipedia"})
    with self.assertRaisesRegex(ValueError, "`data.source`"):
      data.make_loaders(c)
    c = tiny_config(**{"data.source": "tinystories", "data.path":
                       "/no/such/TinyStories"})
    with self.assertRaisesRegex(ValueError, "`data.path`"):
      data.make_loaders(c)
    c = tiny_config(**{"data.source": "tinystories"})
    with self.assertRaisesRegex(ValueError, "`data.path`"):
      data.make_loaders(c)
    with self.assertRaisesRegex(ValueError, "`data.tokenizer`"):
      tokenizers.load("sentencepiece")
    with self.assertRaisesRegex(ValueError, "`train.schedule`"):
      trainer.Trainer(tiny_config(**{"train.schedule": "linear"}))
    for steps in ((0, 5), (31,), (2.5,)):
      with self.assertRaisesRegex(ValueError, r"`eval_at` must be an integer "
                                  r"in \[1, 30\] \(steps of this run\)"):
        trainer.check_config(tiny_config(eval_at=steps))
    with self.assertRaisesRegex(ValueError, "`model.vocab_size`"):
      data.make_loaders(tiny_config(**{"data.tokenizer": "gpt2"}))

  def test_experiment_configs_build(self):
    for c in (spamlang.get_config("V=512,D=16,cpu"),
              lowrank.get_config("D=8,cpu"), thesis.get_config("model8")):
      build.model_config(c.model)
    self.assertEqual(spamlang.get_config("V=512,D=16").model.head_rank, 16)
    with self.assertRaises(ValueError):
      thesis.get_config("model9")

  def test_lowrank_head_has_rank_at_most_d(self):
    cfg = model_lib.GPTConfig(vocab_size=300, block_size=8, n_layer=1,
                              n_head=2, n_embd=32, head="lowrank",
                              head_rank=5)
    w = model_lib.head_matrix(model_lib.init_params(cfg), cfg)
    self.assertEqual(w.shape, (300, 32))
    sv = np.linalg.svd(np.asarray(w, np.float64), compute_uv=False)
    # Rank <= D: singular values past D are float32 rounding (~1e-7).
    self.assertLess(sv[5] / sv[0], 1e-5)
    self.assertGreater(sv[4] / sv[0], 1e-3)


class TokenizerTest(absltest.TestCase):

  def test_gpt2_ids_equal_gpt2s(self):
    tok = tokenizers.load("gpt2")
    self.assertEqual(tok.vocab_size, 50257)
    self.assertEqual(tok.encode("Hello world"), [15496, 995])
    self.assertEqual(tok.encode("Hello, my dog is cute"),
                     [15496, 11, 616, 3290, 318, 13779])
    ids = tok.encode("The end.<|endoftext|>Once")
    self.assertIn(50256, ids)
    self.assertEqual(tok.decode(ids), "The end.<|endoftext|>Once")

  def test_byte_round_trip(self):
    tok = tokenizers.load("byte")
    text = "Héllo<|endoftext|>wörld"
    self.assertEqual(tok.decode(tok.encode(text)), text)
    self.assertEqual(tok.encode("A<|endoftext|>")[-1], 256)


class DataTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = self.create_tempdir().full_path

  def test_loader_is_deterministic_resumable_and_shards_by_process(self):
    tokens = np.arange(10_000, dtype=np.uint16)
    a = data.WindowLoader(tokens, 16, 8, seed=3)
    b = data.WindowLoader(tokens, 16, 8, seed=3)
    for step in (7, 0, 7, 123):
      np.testing.assert_array_equal(a.batch(step)[0], b.batch(step)[0])
    x, y = a.batch(5)
    np.testing.assert_array_equal(x[:, 1:], y[:, :-1])  # Shifted targets.
    p0 = data.WindowLoader(tokens, 16, 8, 3, process_index=0, process_count=2)
    p1 = data.WindowLoader(tokens, 16, 8, 3, process_index=1, process_count=2)
    np.testing.assert_array_equal(
        np.concatenate([p0.batch(9)[0], p1.batch(9)[0]]), a.batch(9)[0])
    # One epoch visits every window exactly once.
    n = a.n_windows
    firsts = np.concatenate([a.batch(s)[0][:, 0] for s in range(n // 8)])
    self.assertEqual(len(set(firsts.tolist())), n // 8 * 8)
    self.assertEqual(a.position(n // 8 + 1)["epoch"], 1)

  def test_spamlang_repeats_the_first_token(self):
    loader = data.SpamLangLoader(100, 12, 16, seed=0)
    x, y = loader.batch(4)
    self.assertTrue(np.all(x == x[:, :1]) and np.all(y == x[:, :1]))
    self.assertTrue(np.all((x >= 0) & (x < 100)))
    self.assertGreater(len(np.unique(x[:, 0])), 5)

  def test_tinystories_txt_files_and_cache(self):
    folder = self.create_tempdir().full_path
    stories = [f"Story {i}: Lily had a red ball." for i in range(30)]
    for split, part in (("train", stories[:25]), ("valid", stories[25:])):
      with open(os.path.join(folder, f"TinyStories-{split}.txt"), "w") as f:
        f.write("\n<|endoftext|>\n".join(part))
    c = tiny_config(**{"data.source": "tinystories", "data.path": folder})
    tr, va, tok = data.make_loaders(c)
    meta = data.build_shards(c.data, tok)
    self.assertEqual(meta, data.build_shards(c.data, tok))  # Cached.
    text = tok.decode(np.asarray(va.tokens).tolist())
    self.assertIn("Story 27", text)
    self.assertNotIn("Story 3:", text)
    self.assertEqual(text.count("<|endoftext|>"), 5)
    self.assertEqual(data.heldout_documents(c.data, tok)[0], stories[25])
    self.assertGreater(tr.n_windows, 5)

  def test_shakespeare_and_text_sources(self):
    c = tiny_config(**{"data.source": "shakespeare"})
    meta = data.build_shards(c.data, tokenizers.load("byte"))
    self.assertGreater(meta["tokens"]["train"], 5_000_000)
    files = corpora.shakespeare_files()
    self.assertLen(files, 77)  # The package's metadata.txt is not text.
    self.assertNotIn("metadata.txt", [os.path.basename(f) for f in files])
    self.assertEqual([os.path.basename(f) for f in corpora.shakespeare_files(
        "hamlet*,lear_gut.txt")], ["hamlet_gut.txt", "hamlet_gut_f.txt",
                                   "lear_gut.txt"])
    c.data.path = "hamlet*"  # Globs pick texts; the cache keeps them apart.
    hamlet = data.build_shards(c.data, tokenizers.load("byte"))
    self.assertBetween(hamlet["tokens"]["train"], 250_000, 400_000)
    c.data.path = "hamlet"
    with self.assertRaisesRegex(ValueError, "`data.path` 'hamlet' matches "
                                "none of the shakespeare texts"):
      data.build_shards(c.data, tokenizers.load("byte"))
    path = os.path.join(self.create_tempdir().full_path, "a.txt")
    with open(path, "w") as f:
      f.write("some local text " * 200)
    c = tiny_config(**{"data.source": "text", "data.path": path})
    self.assertGreater(data.make_loaders(c)[0].n_windows, 10)


class TrainingTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")

  def _steps(self, config, devices=None, n=STEPS):
    """n optimizer steps: (losses, grad norms, params before, params after).

    warm-up 3 gives lr = 0, lr/3, 2 lr/3 at steps 0, 1, 2: from step 1 on
    the optimizer, schedule, decay mask and clipping all move parameters.
    """
    tr = trainer.Trainer(config, devices)
    loader, _, _ = data.make_loaders(config)
    state = tr.init_fn()
    before = jax.device_get(state.params)
    losses, norms = [], []
    for step in range(n):
      state, metrics = tr.step_fn(state, *tr.global_batch(*loader.batch(step)),
                                  tr.learning_rates[step])
      losses.append(float(metrics["loss"]))
      norms.append(float(metrics["grad_norm"]))
    return losses, norms, before, jax.device_get(state.params)

  def _assert_moved(self, before, after):
    moved = max(float(np.max(np.abs(a - b))) for a, b in zip(
        jax.tree.leaves(before), jax.tree.leaves(after)))
    self.assertGreater(moved, 1e-3)  # The compared parameters did change.

  def test_golden_values_after_three_steps(self):
    # Regenerate (after an intended change of model, data or optimizer):
    #   REGENERATE_GOLDEN=1 python -m pytest tests/trainer_test.py -k golden
    losses, norms, before, params = self._steps(tiny_config())
    self._assert_moved(before, params)
    leaves = jax.tree.leaves(params)
    got = {"losses": losses, "grad_norms": norms,
           "param_sum": float(sum(np.sum(x) for x in leaves)),
           "param_abs_sum": float(sum(np.abs(x).sum() for x in leaves))}
    if os.environ.get("REGENERATE_GOLDEN"):
      with open(GOLDEN, "w") as f:
        json.dump(got, f, indent=1)
    with open(GOLDEN) as f:
      want = json.load(f)
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-5)
    np.testing.assert_allclose(got["grad_norms"], want["grad_norms"],
                               rtol=1e-4)
    for key in ("param_sum", "param_abs_sum"):
      self.assertAlmostEqual(got[key] / want[key], 1.0, delta=1e-5, msg=key)

  def test_sharded_step_equals_unsharded(self):
    self.assertEqual(jax.device_count(), 8)
    config = tiny_config()
    loss1, norm1, before, p1 = self._steps(config, jax.devices()[:1])
    self._assert_moved(before, p1)
    loss8, norm8, _, p8 = self._steps(config)
    config.train.fsdp = True
    loss_f, norm_f, _, pf = self._steps(config)
    for losses, norms in ((loss8, norm8), (loss_f, norm_f)):
      np.testing.assert_allclose(losses, loss1, rtol=1e-5)
      np.testing.assert_allclose(norms, norm1, rtol=1e-4)
    for other in (p8, pf):
      jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5),
                   p1, other)

  def test_gradient_accumulation_equals_full_batch(self):
    loss1, norm1, before, p1 = self._steps(tiny_config(), jax.devices()[:1])
    self._assert_moved(before, p1)
    loss2, norm2, _, p2 = self._steps(
        tiny_config(**{"train.grad_accum": 2}), jax.devices()[:1])
    np.testing.assert_allclose(loss1, loss2, rtol=1e-5)
    np.testing.assert_allclose(norm1, norm2, rtol=1e-4)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5),
                 p1, p2)

  def test_bfloat16_path_trains_close_to_float32(self):
    with open(GOLDEN) as f:  # The float32 run's losses (golden test).
      loss32 = json.load(f)["losses"]
    loss16, _, before, p16 = self._steps(
        tiny_config(**{"model.dtype": "bfloat16"}), jax.devices()[:1])
    self._assert_moved(before, p16)
    self.assertTrue(all(np.isfinite(loss16)))
    np.testing.assert_allclose(loss16, loss32, rtol=2e-2)
    # Parameters stay float32 (mixed precision computes in bf16).
    self.assertTrue(all(x.dtype == np.float32 for x in jax.tree.leaves(p16)))


class TrainingLoopTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")

  def test_loss_decreases_and_probes_do_not_change_training(self):
    base = self.create_tempdir().full_path
    plain = trainer.train_and_evaluate(tiny_config(), f"{base}/plain")
    from train.probes import hooks  # pylint: disable=g-import-not-at-top
    spec = "head:5,gradient:5"
    with self.assertRaisesRegex(ValueError, "no hooks were given"):
      trainer.train_and_evaluate(tiny_config(probes=spec), f"{base}/none")
    # The probes register from outside the trainer (as train.main does);
    # the probed run also evaluates at steps 3 and 7 (`eval_at`).
    probed = trainer.train_and_evaluate(
        tiny_config(probes=spec, eval_at=(3, 7)), f"{base}/probed",
        hooks.factory(spec))
    rows = [json.loads(line) for line in open(f"{base}/plain/metrics.jsonl")]
    losses = [r["loss"] for r in rows if "loss" in r]
    self.assertLess(np.mean(losses[-5:]), np.mean(losses[:5]) - 0.5)
    probed_rows = [json.loads(line)
                   for line in open(f"{base}/probed/metrics.jsonl")]
    self.assertEqual(losses, [r["loss"] for r in probed_rows if "loss" in r])
    self.assertEqual([r["step"] for r in probed_rows if "val_loss" in r],
                     [3, 7, 10, 20, 30])
    self.assertTrue(any("head/row_norm_mean" in r for r in probed_rows))
    self.assertTrue(any("gradient/destroyed_norm_ratio" in r
                        for r in probed_rows))
    self.assertEqual(plain["final_val_loss"], probed["final_val_loss"])
    self.assertTrue(os.path.isfile(f"{base}/plain/curves.png"))

  def test_corrupt_or_incompatible_checkpoint_is_an_error(self):
    workdir = self.create_tempdir().full_path
    trainer.train_and_evaluate(tiny_config(**{"train.steps": 10}), workdir)
    with self.assertRaisesRegex(ValueError, "incompatible"):
      trainer.train_and_evaluate(tiny_config(**{"model.n_embd": 64}), workdir)
    with self.assertRaisesRegex(ValueError, "data.synthetic_stories"):
      trainer.train_and_evaluate(
          tiny_config(**{"data.synthetic_stories": 399}), workdir)
    self.assertFalse(os.path.exists(os.path.join(workdir, "trainer.lock")))
    tokens_json = os.path.join(workdir, "tokens.json")
    with open(tokens_json) as f:
      counts = json.load(f)
    with open(tokens_json, "w") as f:
      json.dump(dict(counts, train=counts["train"] + 1), f)
    with self.assertRaisesRegex(ValueError, "token cache"):
      trainer.train_and_evaluate(tiny_config(**{"train.steps": 20}), workdir)
    with open(tokens_json, "w") as f:
      json.dump(counts, f)
    state_dir = os.path.join(workdir, "checkpoints", "10", "state")
    for root, _, files in os.walk(state_dir):
      for name in files:
        with open(os.path.join(root, name), "wb") as f:
          f.write(b"garbage")
    with self.assertRaisesRegex(ValueError, "could not be restored"):
      trainer.train_and_evaluate(tiny_config(**{"train.steps": 20}), workdir)


@contextlib.contextmanager
def counting(*targets):
  """{name: mock} of (module, name) pairs, each wrapping the real function:
  `.call_count` is how often it ran."""
  with contextlib.ExitStack() as stack:
    yield {name: stack.enter_context(mock.patch.object(
        module, name, wraps=getattr(module, name)))
           for module, name in targets}


# What a run does once (issue 76): the config's check (and in it the step's
# memory estimate) and the model config.
ONCE = ((trainer, "check_config"), (memory, "check"), (build, "model_config"))


class OncePerRunTest(absltest.TestCase):
  """One check, one model config and one memory estimate per run, through
  python -m train.main (in process) or train_and_evaluate; parameters
  restored from a run folder one way (runs.restore_params)."""

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")
    # train.main ignores SIGINT on its way out: give the test runner its own
    # handler back.
    self.addCleanup(signal.signal, signal.SIGINT,
                    signal.getsignal(signal.SIGINT))

  def config(self):
    return tiny_config(**{"train.steps": 4, "train.warmup": 1,
                          "eval_every": 2, "checkpoint_every": 2})

  def calls(self, counted):
    return {name: m.call_count for name, m in counted.items()}

  def test_train_main_checks_and_builds_once(self):
    from train import main as train_main  # pylint: disable=g-import-not-at-top
    wd = self.create_tempdir().full_path
    for dry_run in (True, False):
      with counting(*ONCE) as counted, flagsaver.flagsaver(
          config=self.config(), workdir=wd, dry_run=dry_run):
        train_main.main([])
      self.assertEqual(self.calls(counted), {"check_config": 1, "check": 1,
                                             "model_config": 1},
                       f"dry_run={dry_run}")
    self.assertEqual(runs.steps(wd), [2, 4])

  def test_a_resumed_run_and_its_parameters_once(self):
    wd = self.create_tempdir().full_path
    trainer.train_and_evaluate(tiny_config(**{
        "train.steps": 2, "train.warmup": 1, "eval_every": 2,
        "checkpoint_every": 2}), wd)
    with counting(*ONCE) as counted:
      summary = trainer.train_and_evaluate(self.config(), wd)
    self.assertEqual(summary["resumed_from"], 2)
    self.assertEqual(self.calls(counted), {"check_config": 1, "check": 1,
                                           "model_config": 1})
    with counting((build, "model_config"),
                  (runs, "restore_params")) as counted:
      params, cfg, step = trainer.load_params(wd)
    self.assertEqual(self.calls(counted), {"model_config": 1,
                                           "restore_params": 1})
    want, _ = runs.restore_params(wd, runs.read_config(wd))
    self.assertEqual((step, cfg), (4, build.model_config(
        runs.read_config(wd).model)))
    jax.tree.map(np.testing.assert_array_equal, params, want)


if __name__ == "__main__":
  absltest.main()
