"""Bad model and run settings refused before any work (issue at 83a2b3a):
the llama family's fields it has no use for, a rank-0 low-rank head, a
negative vocabulary with model.arch, model.arch on a GPT-2 folder, the
training step's memory estimate (against XLA's own buffer assignment, and
block_size = 16384 refused at once), and train.compare's --models entries
checked before the first model is probed."""

import json
import os
import time
from unittest import mock

from absl.testing import absltest, parameterized
import jax
import jax.numpy as jnp
from safetensors.numpy import save_file

from bottleneck import checks
from configs import thesis
from train.models import build, gpt, loaders
from train.probes import compare, subjects
from train.training import memory, trainer
import tests
from tests import families_reference as fam
from tests import hf_gpt2_test
from tests.bad_input_test import run_module
from tests.train_llama_test import llama_block


def gpt2_folder(folder: str) -> str:
  """A small HF GPT-2 folder (config.json + model.safetensors)."""
  with open(os.path.join(folder, "config.json"), "w") as f:
    json.dump(hf_gpt2_test.CFG, f)
  save_file(hf_gpt2_test.random_gpt2(), os.path.join(folder,
                                                     "model.safetensors"))
  return folder


class LlamaFieldsTest(parameterized.TestCase):

  @parameterized.parameters(("dropout", 0.5, "no dropout"),
                            ("head_bias", True, "no logit bias"),
                            ("activation", "relu", "model.mlp"))
  def test_a_field_the_llama_family_ignores_is_refused(self, key, value,
                                                       why):
    with self.assertRaisesRegex(checks.ArgumentError,
                                f"`model.{key}` is {value!r}: the llama "
                                f"family .*{why}.*only model.{key}="):
      build.model_config(llama_block(**{key: value}))

  def test_qkv_bias_is_used(self):
    cfg = build.model_config(llama_block(qkv_bias=True))
    attn = jax.eval_shape(cfg.init_params)["params"]["layer_0"]["attn"]
    self.assertTrue(cfg.qkv_bias)
    self.assertEqual(attn["q"]["bias"].shape, (cfg.n_head * cfg.head_dim,))

  def test_a_rank_0_low_rank_head_is_refused_as_the_gpt_family_does(self):
    for family in ("llama", "gpt"):
      with self.assertRaisesRegex(ValueError, r"`model.head_rank` \(D\) must "
                                  r"be in \[1, n_embd = 32\]"):
        build.model_config(llama_block(family=family, head="lowrank",
                                       head_rank=0))

  def test_a_negative_vocabulary_with_arch_is_refused(self):
    path = os.path.join(self.create_tempdir().full_path, "m.gguf")
    fam.write_gguf(path, "llama", fam.weights("llama"))
    with self.assertRaisesRegex(checks.ArgumentError,
                                r"`model.vocab_size` must be an integer in "
                                r"\[0, .*0 = the architecture's.*got -5"):
      build.model_config(llama_block(arch=f"gguf:{path}", vocab_size=-5))
    self.assertEqual(build.model_config(llama_block(
        arch=f"gguf:{path}", vocab_size=0)).vocab_size, fam.V)
    self.assertEqual(build.model_config(llama_block(
        arch=f"gguf:{path}", vocab_size=512)).vocab_size, 512)


class DefaultsTest(absltest.TestCase):

  def test_build_defaults_are_the_base_configs(self):
    """A field an old config.json lacks is read as build.DEFAULTS says; the
    base config is what a run that predates the field had."""
    from configs import base  # pylint: disable=g-import-not-at-top
    self.assertEqual(build.DEFAULTS, base.get_config().model.to_dict())


class Gpt2ArchTest(absltest.TestCase):

  def test_the_gpt_family_trains_a_gpt2_folders_architecture(self):
    folder = gpt2_folder(self.create_tempdir().full_path)
    cfg = build.model_config(llama_block(
        family="gpt", arch=f"hf:{folder}", vocab_size=0, head="lowrank",
        head_rank=4, block_size=8))
    want = loaders.config_of(f"hf:{folder}")
    self.assertIsInstance(cfg, gpt.GPTConfig)
    for key in ("vocab_size", "n_layer", "n_head", "n_embd", "qkv_bias",
                "activation", "layer_norm_eps"):
      self.assertEqual(getattr(cfg, key), getattr(want, key), msg=key)
    self.assertEqual((cfg.head, cfg.head_rank, cfg.block_size),
                     ("lowrank", 4, 8))

  def test_the_llama_family_on_a_gpt2_folder_is_one_error_line(self):
    folder = gpt2_folder(self.create_tempdir().full_path)
    with self.assertRaisesRegex(checks.ArgumentError, r"`model.arch` .* is a "
                                r"GPT-2 architecture: set model.family='gpt'"):
      build.model_config(llama_block(arch=f"hf:{folder}", vocab_size=0))
    out = run_module("train.main", "--config=configs/thesis.py:model1,cpu",
                     "--config.model.family=llama",
                     f"--config.model.arch=hf:{folder}",
                     "--config.model.head_bias=false", "--dry_run")
    self.assertEqual(out.returncode, 2, out.stderr[-2000:])
    self.assertNotIn("Traceback", out.stderr)
    self.assertLen([l for l in out.stderr.splitlines()
                    if l.startswith("error:")], 1)
    self.assertIn("model.family='gpt'", out.stderr)


def _xla_bytes(config) -> int:
  """XLA's buffer assignment of the jitted step on one device: temporaries,
  arguments and outputs."""
  tr = trainer.Trainer(config, devices=jax.devices()[:1])
  a, b, t = (config.train.grad_accum, config.train.batch_size,
             config.model.block_size)
  batch = jax.ShapeDtypeStruct((a, b // a, t), jnp.int32,
                               sharding=tr.batch_sh)
  m = tr.step_fn.lower(tr.restore_target(), batch, batch,
                       jnp.float32(1e-3)).compile().memory_analysis()
  return (m.temp_size_in_bytes + m.argument_size_in_bytes +
          m.output_size_in_bytes)


class MemoryTest(absltest.TestCase):

  def test_the_estimate_is_within_a_factor_of_xlas_buffers(self):
    # Regenerate the 0.8 .. 1.3 ratios of the module docstring's
    # measurements with benchmarks-sized configs if the estimate changes.
    c = thesis.get_config("model1,cpu")
    c.model.n_layer, c.model.block_size, c.train.batch_size = 1, 512, 8
    cfg = build.model_config(c.model)
    n = sum(x.size for x in jax.tree.leaves(jax.eval_shape(
        cfg.init_params)))
    est = memory.estimate(c, n, cfg, 1, remat_saves=False)
    ratio = est.total / _xla_bytes(c)
    self.assertBetween(ratio, 0.67, 1.5)
    self.assertGreater(est.scores, est.stream / 4)  # Attention matters here.

  def test_block_size_16384_is_refused_before_any_step(self):
    c = thesis.get_config("model1,cpu")
    c.model.block_size = 16384
    wd = os.path.join(self.create_tempdir().full_path, "run")
    start = time.perf_counter()
    with mock.patch.object(checks, "memory_bytes", lambda: 63 << 30):
      with self.assertRaisesRegex(
          checks.ArgumentError, r"needs about \d+\.\d GiB per device .* "
          r"attention scores .*lower model.block_size \(16384") as e:
        trainer.check_config(c)
      self.assertLess(time.perf_counter() - start, 10.0)
      with self.assertRaises(checks.ArgumentError):
        trainer.train_and_evaluate(c, wd)
    self.assertEqual(e.exception.name, "model.block_size")
    self.assertFalse(os.path.exists(wd))  # Nothing was started.
    c.model.block_size = 128
    with mock.patch.object(checks, "memory_bytes", lambda: 63 << 30):
      trainer.check_config(c)  # The shipped config fits.

  def test_the_binary_says_it_in_one_line(self):
    wd = os.path.join(self.create_tempdir().full_path, "run")
    out = run_module("train.main", "--config=configs/thesis.py:model1,cpu",
                     "--config.model.block_size=16384",
                     "--config.train.batch_size=4096", f"--workdir={wd}")
    self.assertEqual(out.returncode, 2, out.stderr[-2000:])
    errors = [l for l in out.stderr.splitlines() if l.startswith("error:")]
    self.assertLen(errors, 1)
    self.assertIn("lower model.block_size (16384", errors[0])
    self.assertFalse(os.path.exists(wd))


class CompareModelsTest(absltest.TestCase):

  def test_every_entry_is_checked_before_the_first_is_probed(self):
    path = os.path.join(self.create_tempdir().full_path, "m.gguf")
    fam.write_gguf(path, "llama", fam.weights("llama"))
    subjects.check_spec(f"gguf:{path}")  # Metadata only: passes.
    empty = self.create_tempdir().full_path
    for bad, message in (("typo", "`models` entry 'typo': `model` must be"),
                         (f"hf:{empty}/nope", "nope"),
                         (f"run:{empty}", "no config.json")):
      with mock.patch.object(compare, "probe_model") as probe:
        with self.assertRaisesRegex(ValueError, message):
          compare.run([f"gguf:{path}", bad])
        probe.assert_not_called()


if __name__ == "__main__":
  absltest.main()
