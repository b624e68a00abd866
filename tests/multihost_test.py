"""Two processes on one machine (jax.distributed + gloo) train like one."""

import json
import os
import socket
import subprocess
import sys

from absl.testing import absltest
import tests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = ["--config=configs/thesis.py:model1,cpu", "--config.train.steps=6",
        "--config.train.warmup=2", "--config.log_every=1",
        "--config.eval_every=3", "--config.checkpoint_every=3",
        "--config.eval_batches=2", "--config.model.n_layer=2"]


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


class MultiHostTest(absltest.TestCase):

  def test_two_processes_match_one(self):
    env = tests.one_device_env(  # One CPU device per process.
        BOTTLENECK_CACHE=self.create_tempdir().full_path)
    base = self.create_tempdir().full_path
    run = lambda extra, wd: [sys.executable, "-m", "train.main", *ARGS,
                             f"--workdir={wd}", *extra]
    coord = f"--coordinator_address=localhost:{_free_port()}"
    procs = [subprocess.Popen(
        run([coord, "--num_processes=2", f"--process_id={i}"], f"{base}/mh"),
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True) for i in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs):
      self.assertEqual(p.returncode, 0, err[-2000:])
    single = subprocess.run(run([], f"{base}/sp"), cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    self.assertEqual(single.returncode, 0, single.stderr[-2000:])
    losses = lambda wd: [r["loss"] for r in map(
        json.loads, open(f"{wd}/metrics.jsonl")) if "loss" in r]
    mh, sp = losses(f"{base}/mh"), losses(f"{base}/sp")
    self.assertLen(mh, 6)
    self.assertLen(sp, 6)
    for a, b in zip(mh, sp):
      self.assertAlmostEqual(a, b, places=5)


if __name__ == "__main__":
  absltest.main()
