"""The trainer killed and resumed (SIGKILL mid-run reproduces the losses),
and generation from a trained run."""

import json
import os
import signal
import subprocess
import sys
import time

from absl.testing import absltest
import jax
import jax.numpy as jnp

from train.models import generate, gpt as model_lib
from tests.trainer_test import ROOT, run_env


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
