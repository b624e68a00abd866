"""`python -m train.export`: a trained run as an HF folder that the
project's own `hf:` loader reads back with the same logits, for both
families and every head (a low-rank head as its product), with the run's
tokenizer; bad inputs as one `error:` line naming the flag."""

import json
import os
import subprocess
import sys

from absl.testing import absltest, parameterized
import numpy as np

from train.models import loaders
from train.text import data
from train.training import export, trainer
from tests.train_llama_test import llama_config
from tests.trainer_test import ROOT, run_env, tiny_config

TEXT = "Once upon a time, a cat saw 3 birds. <|endoftext|>Héllo!"


def gpt_config(**overrides):
  """A seconds-sized thesis GPT run (byte tokens, logit bias on)."""
  return tiny_config(**{"train.steps": 4, "train.warmup": 1,
                        "checkpoint_every": 4, "eval_every": 4, **overrides})


def llama_run_config(**overrides):
  return llama_config(**{"train.steps": 4, "train.warmup": 1,
                         "checkpoint_every": 4, "eval_every": 4, **overrides})


class ExportTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")

  def _round_trip(self, config):
    run = self.create_tempdir().full_path
    out = os.path.join(self.create_tempdir().full_path, "hf")
    trainer.train_and_evaluate(config, run)
    summary = export.export(run, out)
    params, cfg, _ = trainer.load_params(run)
    got_params, got_cfg, tok = loaders.load("hf:" + out)
    ids = np.random.default_rng(0).integers(
        0, cfg.vocab_size, (2, config.model.block_size)).astype(np.int32)
    want = np.asarray(cfg.module().apply(params, ids))
    got = np.asarray(got_cfg.module().apply(got_params, ids))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    run_tok = data.tokenizer_for(config.data)
    self.assertEqual(tok.encode(TEXT), run_tok.encode(TEXT))
    self.assertEqual(tok.eot_id, run_tok.eot_id)
    # transformers reads the config (its models need torch, not installed
    # here, and it has no Flax models since v5: the weights are not run).
    from transformers import AutoConfig  # pylint: disable=g-import-not-at-top
    hf_cfg = AutoConfig.from_pretrained(out, local_files_only=True)
    self.assertEqual(hf_cfg.vocab_size, cfg.vocab_size)
    self.assertEqual(hf_cfg.tie_word_embeddings, cfg.head == "tied")
    # The run's end-of-text id, not transformers' defaults (50256; 1, 2).
    self.assertEqual((hf_cfg.bos_token_id, hf_cfg.eos_token_id),
                     (run_tok.eot_id, run_tok.eot_id))
    # An outdir that cannot be made names `outdir`, not a temporary path.
    with self.assertRaisesRegex(ValueError, r"^`outdir` .*cannot be created"):
      export.export(run, os.path.join(out, "config.json", "sub"))
    with open(os.path.join(out, "config.json")) as f:
      return summary, json.load(f), got_cfg

  @parameterized.named_parameters(
      ("gpt_untied_bias", "gpt", {"model.head": "untied"}),
      ("gpt_tied_bias", "gpt", {"model.head": "tied"}),
      ("gpt_tied_nobias_qkv", "gpt", {"model.head": "tied",
                                      "model.head_bias": False,
                                      "model.qkv_bias": True}),
      ("gpt_lowrank", "gpt", {"model.head": "lowrank",
                              "model.head_rank": 4}),
      ("llama_tied", "llama", {"model.head": "tied"}),
      ("llama_untied", "llama", {"model.head": "untied"}),
      ("llama_lowrank", "llama", {"model.head": "lowrank",
                                  "model.head_rank": 5}))
  def test_hf_loader_reads_back_the_same_logits(self, family, overrides):
    config = (gpt_config if family == "gpt" else llama_run_config)(
        **overrides)
    summary, hf_config, got_cfg = self._round_trip(config)
    head = config.model.head
    self.assertEqual(hf_config["model_type"],
                     "gpt2" if family == "gpt" else "llama")
    self.assertEqual(hf_config["bottleneck_head"]["kind"], head)
    self.assertEqual(hf_config["tie_word_embeddings"], head == "tied")
    self.assertEqual(got_cfg.head, "untied" if head == "lowrank" else head)
    if head == "lowrank":
      self.assertEqual(hf_config["bottleneck_head"]["rank"],
                       config.model.head_rank)
      self.assertEqual(hf_config["bottleneck_head"]["exported_as"],
                       "product")
    self.assertEqual(summary["step"], 4)
    self.assertIn("tokenizer.json", summary["tokenizer"])

  def test_bpe_tokenizer_is_written(self):
    summary, _, _ = self._round_trip(gpt_config(**{
        "data.tokenizer": "bpe:300", "model.vocab_size": 300}))
    self.assertIn("bpe:300", summary["tokenizer"])

  def test_a_llama_mlp_hf_llama_cannot_hold_is_refused(self):
    run = self.create_tempdir().full_path
    out = os.path.join(self.create_tempdir().full_path, "hf")
    trainer.train_and_evaluate(llama_run_config(**{"model.mlp": "geglu"}),
                               run)
    with self.assertRaisesRegex(ValueError, r"its mlp is 'geglu'.*model\.mlp"):
      export.export(run, out)
    self.assertFalse(os.path.exists(out))
    self.assertEqual(os.listdir(os.path.dirname(out)), [])  # No temporary.


class ExportBinaryTest(absltest.TestCase):

  def _run(self, *flags):
    return subprocess.run([sys.executable, "-m", "train.export", *flags],
                          cwd=ROOT, env=run_env(), capture_output=True,
                          text=True, timeout=300)

  def test_bad_inputs_are_one_error_line_naming_the_flag(self):
    tmp = self.create_tempdir().full_path
    no_ckpt = os.path.join(tmp, "no_ckpt")
    os.makedirs(no_ckpt)
    with open(os.path.join(no_ckpt, "config.json"), "w") as f:
      json.dump(gpt_config().to_dict(), f)
    full = os.path.join(tmp, "full")
    os.makedirs(full)
    open(os.path.join(full, "x"), "w").close()
    cases = {
        "missing workdir": ((f"--workdir={tmp}/nope", f"--outdir={tmp}/o"),
                            "`workdir`.*is not a folder"),
        "no checkpoint": ((f"--workdir={no_ckpt}", f"--outdir={tmp}/o"),
                          "`workdir`.*has no checkpoint"),
        "not a run": ((f"--workdir={full}", f"--outdir={tmp}/o"),
                      "`workdir`.*has no config.json"),
        "outdir not empty": ((f"--workdir={no_ckpt}", f"--outdir={full}"),
                             "`outdir`.*exists and is not empty"),
        "no outdir": ((f"--workdir={no_ckpt}",), "`outdir` is required"),
    }
    for name, (flags, pattern) in cases.items():
      with self.subTest(name):
        proc = self._run(*flags)
        self.assertEqual(proc.returncode, 2, proc.stderr[-1000:])
        lines = proc.stderr.strip().splitlines()
        self.assertLen(lines, 1, proc.stderr[-1000:])
        self.assertRegex(lines[0], "^error: " + pattern)
    self.assertFalse(os.path.exists(f"{tmp}/o"))


if __name__ == "__main__":
  absltest.main()
