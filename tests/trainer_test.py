"""The Flax trainer: configs, data, steps, checkpoints, resume, generation."""

import json
import os
import signal
import subprocess
import sys
import time

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np
import optax

from configs import lowrank, spamlang, thesis
from train.text import corpora, data, tokenizers
from train.models import build, generate, gpt as model_lib
from train.training import optim
from train.training import trainer
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


class OptimizerTest(parameterized.TestCase):
  """The schedule, the decay mask and clipping against closed forms."""

  def _train(self, **kw):
    t = thesis.get_config("model1,cpu").train
    t.update(kw)
    return t

  def test_schedules_at_key_steps(self):
    t = self._train(lr=1e-3, warmup=10, steps=100, min_lr_ratio=0.1)
    for name, want in (
        ("cosine", {0: 0.0, 5: 5e-4, 10: 1e-3, 55: 1e-4 + 0.9e-3 * 0.5,
                    100: 1e-4}),
        ("constant", {0: 0.0, 5: 5e-4, 10: 1e-3, 99: 1e-3}),
        # wsd: decay = 10 steps (decay_fraction 0.1), stable until 90.
        ("wsd", {0: 0.0, 10: 1e-3, 89: 1e-3, 95: 1e-4 + 0.9e-3 * 0.5,
                 100: 1e-4})):
      t.schedule = name
      sched = optim.schedule(t)
      for step, lr in want.items():
        self.assertAlmostEqual(float(sched(step)), lr, delta=1e-9,
                               msg=f"{name} step {step}")

  def test_weight_decay_only_on_matrices(self):
    t = self._train(lr=1e-2, warmup=0, weight_decay=0.5, grad_clip=0.0,
                    schedule="constant")
    tx = optim.optimizer(t)
    params = {"kernel": jnp.ones((3, 4)), "bias": jnp.ones(4),
              "scale": jnp.ones(4)}
    zeros = jax.tree.map(jnp.zeros_like, params)
    direction, _ = tx.update(zeros, tx.init(params), params)
    # AdamW with zero gradients: only the decoupled decay, -lr * wd * p.
    lr0 = optim.learning_rates(t)[0]
    moved = optim.apply(params, direction, lr0)
    np.testing.assert_allclose(moved["kernel"], 1.0 - lr0 * 0.5, rtol=1e-6)
    np.testing.assert_array_equal(moved["bias"], 1.0)
    np.testing.assert_array_equal(moved["scale"], 1.0)
    self.assertGreater(lr0, 0.0)

  @parameterized.parameters("cosine", "wsd")
  def test_host_learning_rates_reproduce_optax_adamw(self, name):
    # The step scales the direction by lr read on the host; optax.adamw
    # evaluates the schedule inside: the parameters must agree step by step.
    t = self._train(lr=1e-2, warmup=2, steps=12, weight_decay=0.1,
                    grad_clip=1.0, schedule=name)
    lrs = optim.learning_rates(t)
    self.assertEqual(lrs.shape, (12,))
    np.testing.assert_allclose(  # Up to float32 rounding (fused or not).
        lrs, [float(optim.schedule(t)(k)) for k in range(12)], rtol=1e-6)
    reference = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(
        optim.schedule(t), b1=t.b1, b2=t.b2, eps=t.eps, weight_decay=0.1,
        mask=lambda p: jax.tree.map(lambda x: x.ndim >= 2, p)))
    tx = optim.optimizer(t)
    rng = np.random.default_rng(0)
    params = {"kernel": jnp.asarray(rng.standard_normal((4, 3)), jnp.float32),
              "bias": jnp.asarray(rng.standard_normal(3), jnp.float32)}
    ours, theirs = params, params
    s_ours, s_theirs = tx.init(params), reference.init(params)
    for step in range(12):
      grads = jax.tree.map(
          lambda p: jnp.asarray(rng.standard_normal(p.shape), jnp.float32),
          params)
      direction, s_ours = tx.update(grads, s_ours, ours)
      ours = optim.apply(ours, direction, lrs[step])
      updates, s_theirs = reference.update(grads, s_theirs, theirs)
      theirs = optax.apply_updates(theirs, updates)
    for key in params:
      np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-6,
                                 atol=1e-7, err_msg=key)
    self.assertGreater(float(jnp.abs(ours["kernel"] - params["kernel"]).max()),
                       1e-3)

  def test_clipping_bounds_the_gradient_adam_sees(self):
    t = self._train(grad_clip=1.0, b1=0.9)
    tx = optim.optimizer(t)
    params = {"w": jnp.zeros((10, 10))}
    grads = {"w": jnp.full((10, 10), 100.0)}  # Global norm 1000.
    _, state = tx.update(grads, tx.init(params), params)
    adam_mu = [s for s in jax.tree.leaves(state) if s.shape == (10, 10)][0]
    # mu = (1 - b1) * clipped g: norm (1 - 0.9) * 1.
    self.assertAlmostEqual(float(jnp.linalg.norm(adam_mu)), 0.1, places=5)
    unclipped = optim.optimizer(self._train(grad_clip=0.0, b1=0.9))
    _, state = unclipped.update(grads, unclipped.init(params), params)
    adam_mu = [s for s in jax.tree.leaves(state) if s.shape == (10, 10)][0]
    self.assertAlmostEqual(float(jnp.linalg.norm(adam_mu)), 100.0, places=3)


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
    # The probes register from outside the trainer (as train.main does).
    probed = trainer.train_and_evaluate(tiny_config(probes=spec),
                                        f"{base}/probed", hooks.factory(spec))
    rows = [json.loads(line) for line in open(f"{base}/plain/metrics.jsonl")]
    losses = [r["loss"] for r in rows if "loss" in r]
    self.assertLess(np.mean(losses[-5:]), np.mean(losses[:5]) - 0.5)
    probed_rows = [json.loads(line)
                   for line in open(f"{base}/probed/metrics.jsonl")]
    self.assertEqual(losses, [r["loss"] for r in probed_rows if "loss" in r])
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


class KillResumeTest(absltest.TestCase):

  def _cmd(self, workdir):
    return [sys.executable, "-m", "train.main",
            "--config=configs/thesis.py:model1,cpu", f"--workdir={workdir}",
            "--config.model.n_layer=2", "--config.model.n_embd=32",
            "--config.model.block_size=32", "--config.data.synthetic_stories=400",
            "--config.train.batch_size=8", "--config.train.steps=60",
            "--config.train.warmup=3", "--config.log_every=1",
            "--config.checkpoint_every=10", "--config.eval_every=20",
            "--config.eval_batches=2", "--config.model.dropout=0.1"]

  def test_sigkill_then_restart_reproduces_the_losses(self):
    env = run_env()
    env["BOTTLENECK_CACHE"] = self.create_tempdir().full_path
    base = self.create_tempdir().full_path
    ref = subprocess.run(self._cmd(f"{base}/ref"), cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    self.assertEqual(ref.returncode, 0, ref.stderr[-2000:])
    proc = subprocess.Popen(self._cmd(f"{base}/run"), cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    ckpts = f"{base}/run/checkpoints"
    deadline = time.time() + 300
    while time.time() < deadline:  # Kill after >= 2 finished checkpoints.
      done = [d for d in (os.listdir(ckpts) if os.path.isdir(ckpts) else [])
              if d.isdigit()]
      if len(done) >= 2:
        break
      time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    again = subprocess.run(self._cmd(f"{base}/run"), cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    self.assertEqual(again.returncode, 0, again.stderr[-2000:])
    summary = json.loads(again.stdout.strip().splitlines()[-1])
    self.assertGreater(summary["resumed_from"], 0)
    self.assertLess(summary["resumed_from"], 60)
    read = lambda d: {r["step"]: r for r in map(
        json.loads, open(f"{d}/metrics.jsonl")) if "loss" in r}
    want, got = read(f"{base}/ref"), read(f"{base}/run")
    self.assertEqual(sorted(want), sorted(got))
    for step in want:
      self.assertAlmostEqual(want[step]["loss"], got[step]["loss"], places=6,
                             msg=f"step {step}")


class GenerationTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.cfg = model_lib.GPTConfig(vocab_size=50, block_size=16, n_layer=1,
                                   n_head=2, n_embd=16)
    self.model = model_lib.GPT(self.cfg)
    self.params = model_lib.init_params(self.cfg, seed=1)

  def test_greedy_equals_step_by_step_argmax(self):
    prompts = [[3, 7, 1], [5]]
    got = generate.complete(self.params, self.model, self.cfg, prompts, 4)
    apply = jax.jit(self.model.apply)
    for prompt, new in zip(prompts, got):
      seq = list(prompt)
      for _ in range(4):
        logits = apply(self.params, jnp.asarray([seq]))
        seq.append(int(jnp.argmax(logits[0, -1])))
      self.assertEqual(seq[len(prompt):], new)

  def test_sampling_options(self):
    p = [[3, 7, 1]]
    greedy = generate.complete(self.params, self.model, self.cfg, p, 5)
    top1 = generate.complete(self.params, self.model, self.cfg, p, 5,
                             temperature=1.0, top_k=1)
    self.assertEqual(greedy, top1)
    a = generate.complete(self.params, self.model, self.cfg, p, 5, seed=4,
                          temperature=1.0, top_p=0.9)
    b = generate.complete(self.params, self.model, self.cfg, p, 5, seed=4,
                          temperature=1.0, top_p=0.9)
    self.assertEqual(a, b)
    long_prompt = [list(range(1, 40))]  # Longer than block_size: cropped.
    self.assertLen(generate.complete(self.params, self.model, self.cfg,
                                     long_prompt, 4)[0], 4)
    with self.assertRaisesRegex(ValueError, "`tokens`"):
      generate.complete(self.params, self.model, self.cfg, p, 16)
    with self.assertRaisesRegex(ValueError, "`temperature`"):
      generate.complete(self.params, self.model, self.cfg, p, 2,
                        temperature=-1.0)


if __name__ == "__main__":
  absltest.main()
