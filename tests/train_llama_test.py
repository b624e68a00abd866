"""The trainer on the llama-like Transformer (issue 59): every parameter's
gradient against an independent float64 numpy forward (central differences
along a random direction per tensor), the chunked loss against the naive
one, 8 devices = 1, resume after a kill, continued pretraining from a GGUF.
"""

import dataclasses
import json
import os
import subprocess
import sys

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
import numpy as np

from configs import base
from train.models import build, loaders
from train.text import data
from train.training import init as init_lib, loss as loss_lib, metrics, trainer
import tests
from tests import families_reference as fam

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCH = fam.ARCHS["llama"]  # L=2, H=4, KV=2, HD=8, SwiGLU (families_reference).


def llama_block(**overrides):
  """The `model` block of a tiny llama-like run (V = 300, d = 32)."""
  m = base.get_config().model
  m.family, m.vocab_size, m.block_size = "llama", fam.V, 16
  m.n_layer, m.n_head, m.n_kv_head = ARCH["L"], ARCH["H"], ARCH["KV"]
  m.n_embd, m.ffn_dim, m.head_dim = fam.D, fam.F, ARCH["HD"]
  m.rope_theta, m.layer_norm_eps = ARCH["theta"], ARCH["eps"]
  m.head_bias = False
  for key, value in overrides.items():
    m[key] = value
  return m


def neutral(params, cfg) -> dict:
  """The Transformer's tree in families_reference.reference's layout ([out, in]
  matrices), float64."""
  p = jax.tree.map(lambda x: np.asarray(x, np.float64), params["params"])
  w = {"embed": p["embed"]["embedding"], "norm": p["norm"]["scale"]}
  for i in range(cfg.n_layer):
    layer = p[f"layer_{i}"]
    w.update({f"{i}.attn_norm": layer["attn_norm"]["scale"],
              f"{i}.mlp_norm": layer["mlp_norm"]["scale"]})
    for name in ("q", "k", "v", "o"):
      w[f"{i}.{name}"] = layer["attn"][name]["kernel"].T
    for name in ("gate", "up", "down"):
      w[f"{i}.{name}"] = layer[name]["kernel"].T
  if cfg.head == "untied":
    w["head"] = p["lm_head"]["kernel"].T
  elif cfg.head == "lowrank":
    w["head_a"] = p["lm_head"]["kernel"].T
    w["head_b"] = p["head_b"]["kernel"].T
  return w


def numpy_loss(w, x, y, arch) -> float:
  """Mean cross-entropy of families_reference.reference's float64 logits."""
  total = 0.0
  for xi, yi in zip(x, y):
    z = fam.reference(arch, w, xi)
    z = z - z.max(1, keepdims=True)
    total += np.sum(np.log(np.exp(z).sum(1)) - z[np.arange(len(yi)), yi])
  return total / y.size


class GradientTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("tied", dict(head="tied"), 0.0),
      ("untied", dict(head="untied"), 0.0),
      ("lowrank", dict(head="lowrank", head_rank=5), 0.0),
      ("untied_softcap", dict(head="untied"), 3.0))
  def test_every_gradient_matches_float64_numpy(self, head, cap):
    cfg = build.model_config(llama_block(**head))
    cfg = dataclasses.replace(cfg, final_softcap=cap)
    arch = dict(ARCH, final_cap=cap or None)
    params = cfg.init_params(seed=3)
    params = jax.tree.map(lambda p: p * 5.0, params)  # Away from N(0, .02)'s
    rng = np.random.default_rng(0)  # near-uniform softmax.
    x = rng.integers(0, fam.V, (2, 14)).astype(np.int32)
    y = rng.integers(0, fam.V, (2, 14)).astype(np.int32)
    model = cfg.module()
    value, grads = jax.value_and_grad(trainer.loss_fn)(
        params, model, x, y, jax.random.key(0), True, 5)  # 6 chunks, padded.
    w = neutral(params, cfg)
    self.assertAlmostEqual(float(value) / numpy_loss(w, x, y, arch), 1.0,
                           delta=1e-5)
    g = neutral(grads, cfg)
    self.assertGreater(len(g), 20 if cfg.head != "tied" else 19)
    for name in sorted(w):  # eps: the loss curves sharply along some
      v = rng.standard_normal(w[name].shape)  # directions (0.q: the
      eps = 1e-6  # difference at 1e-4 is off by 45 %, at 1e-6 by 5e-5).
      plus = numpy_loss({**w, name: w[name] + eps * v}, x, y, arch)
      minus = numpy_loss({**w, name: w[name] - eps * v}, x, y, arch)
      numeric = (plus - minus) / (2 * eps)
      self.assertAlmostEqual(float(np.sum(g[name] * v)), numeric,
                             delta=2e-3 * abs(numeric) + 1e-6, msg=name)


  def test_remat_changes_memory_not_gradients(self):
    cfg = build.model_config(llama_block(head="untied"))
    params = cfg.init_params(seed=1)
    x = np.random.default_rng(1).integers(0, fam.V, (2, 9)).astype(np.int32)
    grad = lambda c: jax.grad(trainer.loss_fn)(params, c.module(), x, x,
                                               jax.random.key(0), True)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5,
                                                         atol=1e-8),
                 grad(cfg), grad(dataclasses.replace(cfg, remat=True)))


class ChunkedLossTest(parameterized.TestCase):

  @parameterized.product(chunk=[1, 7, 37, 64, 1000], cap=[0.0, 2.5],
                         rank=[0, 4], bias=[False, True])
  def test_fused_chunks_equal_the_naive_loss(self, chunk, cap, rank, bias):
    rng = np.random.default_rng(chunk)
    f32 = lambda *s: jnp.asarray(rng.standard_normal(s), jnp.float32)
    h, y = f32(37, 16), jnp.asarray(rng.integers(0, 300, 37))
    params = {"k": f32(rank or 16, 300), "b": f32(300) if bias else None,
              "proj": f32(16, rank) if rank else None}

    def parts(p):
      project = (lambda h_: h_ @ p["proj"]) if rank else None
      return project, p["k"], p["b"], cap

    def fused(p, h_):
      project, k, b, c = parts(p)
      return loss_lib.linear_xent(h_ if project is None else project(h_), k,
                                  b, y, chunk, c)

    def naive(p, h_):
      project, k, b, c = parts(p)

      def head(hc):
        z = (hc if project is None else project(hc)) @ k
        z = z if b is None else z + b[None, :]
        return c * jnp.tanh(z / c) if c else z
      return loss_lib.naive_xent(head, h_, y)

    got, (gp, gh) = jax.value_and_grad(fused, argnums=(0, 1))(params, h)
    want, (wp, wh) = jax.value_and_grad(naive, argnums=(0, 1))(params, h)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(gh, wh, rtol=1e-5, atol=1e-6)  # float32
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5,
                                                         atol=1e-6), gp, wp)
    # Without a gradient asked for, the same value (the loss-only scan).
    np.testing.assert_allclose(fused(params, h), want, rtol=1e-6)

  @parameterized.product(cap=[0.0, 2.5], bias=[False, True])
  def test_padded_vocabulary_equals_the_naive_loss(self, cap, bias):
    # V = 300 padded to 384 (an accelerator's default multiple, 128): the
    # masked columns add nothing to the loss or to any gradient.
    rng = np.random.default_rng(3)
    f32 = lambda *s: jnp.asarray(rng.standard_normal(s), jnp.float32)
    h, k, b = f32(37, 16), f32(16, 300), f32(300) if bias else None
    y = jnp.asarray(rng.integers(0, 300, 37))

    def naive(h_, k_, b_):
      z = h_ @ k_ + (0.0 if b_ is None else b_[None, :])
      return loss_lib.naive_xent(
          lambda _: cap * jnp.tanh(z / cap) if cap else z, h_, y)

    fused = lambda h_, k_, b_: loss_lib.linear_xent(h_, k_, b_, y, 7, cap,
                                                    multiple=128)
    args = (0, 1, 2) if bias else (0, 1)
    got, g_got = jax.value_and_grad(fused, args)(h, k, b)
    want, g_want = jax.value_and_grad(naive, args)(h, k, b)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for a, w in zip(g_got, g_want):
      self.assertEqual(a.shape, w.shape)
      np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-7)
    with self.assertRaisesRegex(ValueError, "`multiple`"):
      loss_lib.linear_xent(h, k, b, y, multiple=-1)

  def test_bfloat16_products_stay_near_the_float32_loss(self):
    # Mixed precision: bfloat16 operands, float32 accumulation and
    # log-sum-exp; within bfloat16's ~3 significant digits of float32.
    rng = np.random.default_rng(4)
    h = jnp.asarray(rng.standard_normal((64, 32)), jnp.float32)
    k = jnp.asarray(rng.standard_normal((32, 500)) * 0.2, jnp.float32)
    y = jnp.asarray(rng.integers(0, 500, 64))
    loss = lambda dtype: jax.value_and_grad(
        lambda k_: loss_lib.linear_xent(h, k_, None, y, 16, dtype=dtype))(k)
    (lo, glo), (hi, ghi) = loss(jnp.bfloat16), loss(jnp.float32)
    self.assertEqual(glo.dtype, jnp.float32)
    np.testing.assert_allclose(lo, hi, rtol=2e-3)
    self.assertLess(float(jnp.abs(glo - ghi).max() / jnp.abs(ghi).max()),
                    2e-2)
    self.assertGreater(float(jnp.abs(glo - ghi).max()), 0.0)  # bf16 ran.

  def test_chunks_by_logit_bytes(self):
    self.assertEqual(loss_lib.chunk_tokens(131072, 8192), 64)  # 32 MiB.
    self.assertEqual(loss_lib.chunk_tokens(257, 2048), 2048)
    self.assertEqual(loss_lib.chunk_tokens(50257, 512), 128)  # Even parts.
    self.assertEqual(loss_lib.chunk_tokens(50257, 500), 125)
    self.assertEqual(loss_lib.chunk_tokens(300, 100, chunk=7), 7)
    with self.assertRaisesRegex(ValueError, "`train.loss_chunk`"):
      loss_lib.chunk_tokens(300, 100, chunk=-1)


def llama_config(**overrides):
  """A seconds-sized llama-like run on generated stories (byte tokens)."""
  from tests.trainer_test import tiny_config  # pylint: disable=g-import-not-at-top
  c = tiny_config()
  c.model = llama_block(vocab_size=257, block_size=32)
  for key, value in overrides.items():
    node = c
    *path, last = key.split(".")
    for part in path:
      node = node[part]
    node[last] = value
  return c


class LlamaTrainingTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")

  def _steps(self, config, devices=None, n=4):
    tr = trainer.Trainer(config, devices)
    loader, _, _ = data.make_loaders(config)
    state = tr.init_fn()
    losses = []
    for step in range(n):
      state, metrics = tr.step_fn(state, *tr.global_batch(*loader.batch(step)),
                                  tr.learning_rates[step])
      losses.append(float(metrics["loss"]))
    return losses, jax.device_get(state.params)

  @parameterized.parameters("tied", "untied", "lowrank")
  def test_eight_devices_equal_one(self, head):
    config = llama_config(**{"model.head": head, "model.head_rank":
                             8 if head == "lowrank" else 0,
                             "train.loss_chunk": 50})
    loss1, p1 = self._steps(config, jax.devices()[:1])
    loss8, p8 = self._steps(config)
    np.testing.assert_allclose(loss8, loss1, rtol=1e-5)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5),
                 p1, p8)

  def test_loss_falls_and_bfloat16_keeps_float32_parameters(self):
    wd = self.create_tempdir().full_path
    summary = trainer.train_and_evaluate(
        llama_config(**{"train.steps": 40, "train.lr": 3e-3}), wd)
    rows = metrics.read_metrics(f"{wd}/metrics.jsonl")
    losses = [r["loss"] for r in rows if "loss" in r]
    self.assertLess(np.mean(losses[-5:]), np.mean(losses[:5]) - 0.5)
    self.assertLess(summary["final_val_loss"], np.log(257) - 0.5)
    loss16, p16 = self._steps(llama_config(**{"model.dtype": "bfloat16"}),
                              jax.devices()[:1])
    loss32, _ = self._steps(llama_config(), jax.devices()[:1])
    np.testing.assert_allclose(loss16, loss32, rtol=2e-2)
    self.assertTrue(all(x.dtype == np.float32 for x in jax.tree.leaves(p16)))

  def test_continued_pretraining_starts_at_the_checkpoints_own_loss(self):
    tmp = self.create_tempdir().full_path
    path = os.path.join(tmp, "m.gguf")
    w = fam.weights("llama", 5)
    fam.write_gguf(path, "llama", w, meta={"llama.context_length": 64})
    text = os.path.join(tmp, "t.txt")
    with open(text, "w") as f:
      f.write("the then than at an on in there other three " * 60)
    config = llama_config(**{
        "model.arch": f"gguf:{path}", "model.vocab_size": 0,
        "model.head": "tied", "model.block_size": 16,
        "train.init": f"gguf:{path}", "data.source": "text",
        "data.path": text, "data.tokenizer": f"gguf:{path}",
        "train.steps": 2, "train.warmup": 1})
    wd = os.path.join(tmp, "run")
    trainer.train_and_evaluate(config, wd)
    first = metrics.read_metrics(f"{wd}/metrics.jsonl")[0]["loss"]
    loader, _, _ = data.make_loaders(config)
    x, y = loader.batch(0)
    params, cfg, _ = loaders.load_gguf(path)
    logits = np.asarray(cfg.module().apply(params, x), np.float64)
    logits -= logits.max(-1, keepdims=True)
    own = np.mean(np.log(np.exp(logits).sum(-1)) - np.take_along_axis(
        logits, y[..., None], -1)[..., 0])
    self.assertAlmostEqual(first, own, delta=1e-4 * own)

  def test_model_arch_metadata_is_read_once_per_run(self):
    from tests.trainer_test import ONCE, counting  # pylint: disable=g-import-not-at-top
    from train.training import runs  # pylint: disable=g-import-not-at-top
    tmp = self.create_tempdir().full_path
    path = os.path.join(tmp, "m.gguf")
    fam.write_gguf(path, "llama", fam.weights("llama", 7))
    config = llama_config(**{
        "model.arch": f"gguf:{path}", "model.vocab_size": 0,
        "model.block_size": 16, "train.steps": 2, "train.warmup": 1,
        "eval_every": 2, "checkpoint_every": 2})
    wd = os.path.join(tmp, "run")
    with counting(*ONCE, (loaders, "_gguf_meta")) as counted:
      trainer.train_and_evaluate(config, wd)
    self.assertEqual({k: m.call_count for k, m in counted.items()},
                     {"check_config": 1, "check": 1, "model_config": 1,
                      "_gguf_meta": 1})
    with counting((build, "model_config"), (loaders, "_gguf_meta"),
                  (runs, "restore_params")) as counted:
      _, cfg, _, _ = runs.load(wd)
    self.assertEqual({k: m.call_count for k, m in counted.items()},
                     {"model_config": 1, "_gguf_meta": 1,
                      "restore_params": 1})
    self.assertEqual(cfg.vocab_size, fam.V)

  def test_a_low_rank_head_from_the_checkpoints_svd(self):
    tmp = self.create_tempdir().full_path
    path = os.path.join(tmp, "m.gguf")
    w = fam.weights("llama", 6)
    fam.write_gguf(path, "llama", w)
    m = llama_block(arch=f"gguf:{path}", vocab_size=0, head="lowrank",
                    head_rank=6)
    cfg = build.model_config(m)
    t = base.get_config().train
    t.init = f"gguf:{path}"
    params = init_lib.params(t, cfg, cfg.init_params())
    u, s, vt = np.linalg.svd(w["embed"].astype(np.float64),
                             full_matrices=False)
    best = (u[:, :6] * s[:6]) @ vt[:6]
    np.testing.assert_allclose(cfg.head_weights(params)[0], best, atol=1e-5)
    np.testing.assert_array_equal(params["params"]["embed"]["embedding"],
                                  w["embed"])
    m.n_layer = 3  # The model's architecture no longer the checkpoint's.
    with self.assertRaisesRegex(ValueError, "the checkpoint's n_layer is 2, "
                                "the model's .* 3"):
      init_lib.check(t, build.model_config(llama_block(head="untied",
                                                       n_layer=3)))

  def test_bad_head_rank_names_the_field(self):
    with self.assertRaisesRegex(ValueError, r"`model.head_rank` .* \[1, "
                                r"n_embd = 32\]"):
      build.model_config(llama_block(head="lowrank", head_rank=33))
    with self.assertRaisesRegex(ValueError, "`model.family`"):
      build.model_config(llama_block(family="mamba"))


class PrepareTest(absltest.TestCase):
  """python -m train.prepare: .txt / .jsonl / .parquet -> token shards."""

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")

  def _folder(self):
    import pyarrow as pa  # pylint: disable=g-import-not-at-top
    import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
    folder = self.create_tempdir().full_path
    stories = [f"Story {i}: the cat {'sat ' * (i % 5)}on mat {i}."
               for i in range(60)]
    os.makedirs(os.path.join(folder, "a"))  # Read recursively, in the
    with open(os.path.join(folder, "a", "a.txt"), "w") as f:  # paths' order.
      f.write("<|endoftext|>".join(stories[:20]))
    with open(os.path.join(folder, "b.jsonl"), "w") as f:
      f.writelines(json.dumps({"text": s, "id": i}) + "\n"
                   for i, s in enumerate(stories[20:40]))
    pq.write_table(pa.table({"text": stories[40:], "n": list(range(20))}),
                   os.path.join(folder, "c.parquet"))
    return folder, stories

  def test_every_format_in_order_with_every_kth_document_held_out(self):
    from train.text import prepare, tokenizers  # pylint: disable=g-import-not-at-top
    folder, stories = self._folder()
    tok = tokenizers.load("gpt2")
    out = os.path.join(self.create_tempdir().full_path, "shards")
    meta = prepare.prepare(folder, tok, out, val_every=4)
    self.assertEqual(meta["documents"], 60)
    want = {"train": [], "val": []}
    for i, story in enumerate(stories):
      want["val" if i % 4 == 3 else "train"] += tok.encode(story) + [
          tok.eot_id]
    for split in ("train", "val"):
      got = np.fromfile(os.path.join(out, f"{split}.bin"), meta["dtype"])
      self.assertEqual(got.tolist(), want[split], split)
    with self.assertRaisesRegex(ValueError, "holds a preparation already"):
      prepare.prepare(folder, tok, out)
    c = llama_config(**{"data.source": "shards", "data.path": out,
                        "data.tokenizer": "gpt2", "model.vocab_size": 50257,
                        "model.block_size": 8, "train.batch_size": 8})
    loader, val, _ = data.make_loaders(c)
    self.assertEqual(len(loader.tokens), len(want["train"]))
    self.assertEqual(len(val.tokens), len(want["val"]))
    with self.assertRaisesRegex(ValueError, "prepared with tokenizer 'gpt2'; "
                                "`data.tokenizer` 'byte' is another"):
      data.make_loaders(llama_config(**{"data.source": "shards",
                                        "data.path": out}))

  def test_bad_inputs_are_one_line(self):
    from train.text import prepare, tokenizers  # pylint: disable=g-import-not-at-top
    folder = self.create_tempdir().full_path
    tok = tokenizers.load("byte")
    out = lambda: os.path.join(self.create_tempdir().full_path, "o")
    with self.assertRaisesRegex(ValueError, "holds no .txt/.jsonl/.parquet"):
      prepare.prepare(folder, tok, out())
    with open(os.path.join(folder, "x.jsonl"), "w") as f:
      f.write('{"body": "no text field"}\n')
    with self.assertRaisesRegex(ValueError, "line 1 has no string field "
                                "'text'"):
      prepare.prepare(folder, tok, out())
    with self.assertRaisesRegex(ValueError, "not a prepared folder"):
      prepare.read(folder, tok)
    run = subprocess.run(
        [sys.executable, "-m", "train.prepare", f"--input={folder}",
         "--tokenizer=byte", f"--outdir={out()}", "--field=body"], cwd=ROOT,
        env=tests.one_device_env(), capture_output=True, text=True,
        timeout=300)  # One document: too few for a held-out split.
    self.assertEqual(run.returncode, 2, run.stderr[-2000:])
    self.assertIn("too few for a validation split", run.stderr)
    self.assertNotIn("Traceback", run.stderr)


class KillResumeTest(absltest.TestCase):

  def test_sigkill_then_restart_reproduces_the_losses(self):
    from tests.trainer_test import run_env  # pylint: disable=g-import-not-at-top
    env = run_env()
    env["BOTTLENECK_CACHE"] = self.create_tempdir().full_path
    base_dir = self.create_tempdir().full_path
    cmd = lambda wd: [
        sys.executable, "-m", "train.main",
        "--config=configs/thesis.py:model1,cpu", f"--workdir={wd}",
        "--config.model.family=llama", "--config.model.n_layer=2",
        "--config.model.n_head=2", "--config.model.n_embd=32",
        "--config.model.head=untied", "--config.model.head_bias=false",
        "--config.model.block_size=32", "--config.data.synthetic_stories=400",
        "--config.train.batch_size=8", "--config.train.steps=30",
        "--config.train.warmup=3", "--config.log_every=1",
        "--config.checkpoint_every=10", "--config.eval_every=10",
        "--config.eval_batches=2", "--config.async_checkpoint=false"]
    ref = subprocess.run(cmd(f"{base_dir}/ref"), cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    self.assertEqual(ref.returncode, 0, ref.stderr[-2000:])
    proc = subprocess.Popen(cmd(f"{base_dir}/run"), cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:  # Kill it once step 15 is logged.
      if line.startswith("step 15/"):
        proc.kill()
        break
    proc.wait()
    again = subprocess.run(cmd(f"{base_dir}/run"), cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    self.assertEqual(again.returncode, 0, again.stderr[-2000:])
    self.assertEqual(json.loads(again.stdout.splitlines()[-1])[
        "resumed_from"], 10)
    losses = lambda wd: [r["loss"] for r in metrics.read_metrics(
        f"{wd}/metrics.jsonl") if "loss" in r]
    np.testing.assert_allclose(losses(f"{base_dir}/run"),
                               losses(f"{base_dir}/ref"), rtol=1e-6)


if __name__ == "__main__":
  absltest.main()
