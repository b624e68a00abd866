"""SIGTERM (a preemption notice) saves the step reached and stops; the
rerun resumes there with the uninterrupted run's losses. The stop decision
in a multi-process run (Interrupt's collective mode) without processes:
tests/multihost_test.py runs two."""

import contextlib
import io
import json
import os
import signal
from unittest import mock

from absl.testing import absltest

from train.training import checkpoint, interrupt, trainer
from tests.trainer_test import tiny_config


@contextlib.contextmanager
def _catch(signum):
  """Records `signum` instead of dying of it (if the code under test does
  not handle it, the test process survives and the test fails)."""
  seen = []
  previous = signal.signal(signum, lambda *_: seen.append(signum))
  try:
    yield seen
  finally:
    signal.signal(signum, previous)


class InterruptTest(absltest.TestCase):

  def test_one_process(self):
    with _catch(signal.SIGTERM) as unhandled, interrupt.Interrupt(
        lambda: "", collective=False) as stop:
      self.assertIsNone(stop.check(0))
      os.kill(os.getpid(), signal.SIGTERM)
      self.assertEqual(stop.check(1)[:2], (143, True))  # Save, then stop.
    self.assertEqual(unhandled, [])
    with interrupt.Interrupt(lambda: "", collective=False) as stop:
      os.kill(os.getpid(), signal.SIGINT)
      self.assertEqual(stop.check(1)[:2], (130, False))  # Stop; keep.

  def test_many_processes_stop_where_all_agree(self):
    # JAX's preemption service owns SIGTERM; every process stops at the step
    # `reached` names, wherever a signal landed.
    agreed = lambda step: step == 5
    with _catch(signal.SIGTERM) as forwarded, interrupt.Interrupt(
        lambda: "", agreed, collective=True) as stop:
      self.assertEqual([stop.check(s) for s in range(5)], [None] * 5)
      self.assertEqual(stop.check(5)[:2], (143, True))
      os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: sent on as SIGTERM.
      self.assertEqual(forwarded, [signal.SIGTERM])
      self.assertIsNone(stop.check(4))
      self.assertEqual(stop.check(5)[:2], (130, True))


class SigtermTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")

  def test_sigterm_saves_the_step_reached_and_resumes_exactly(self):
    cfg = tiny_config(**{"train.steps": 20})  # Checkpoints every 10.
    ref = self.create_tempdir().full_path
    trainer.train_and_evaluate(cfg, ref)
    wd = self.create_tempdir().full_path
    real_write = trainer.MetricsLog.write

    def write_then_sigterm(log, row):  # SIGTERM during step 13's logging.
      real_write(log, row)
      if row["step"] == 13:
        os.kill(os.getpid(), signal.SIGTERM)

    err = io.StringIO()
    with _catch(signal.SIGTERM) as unhandled, contextlib.redirect_stderr(
        err), mock.patch.object(trainer.MetricsLog, "write",
                                write_then_sigterm):
      with self.assertRaises(SystemExit) as stopped:
        trainer.train_and_evaluate(cfg, wd)
    self.assertEqual(unhandled, [])
    self.assertEqual(stopped.exception.code, 143)
    self.assertEqual(err.getvalue().splitlines()[-1],
                     f"terminated (SIGTERM); checkpoint at step 13 kept in "
                     f"{wd}")
    self.assertEqual(checkpoint.finished_steps(wd), [10, 13])
    summary = trainer.train_and_evaluate(cfg, wd)
    self.assertEqual(summary["resumed_from"], 13)
    read = lambda d: [json.loads(line) for line in open(
        f"{d}/metrics.jsonl")]
    want, got = read(ref), read(wd)
    self.assertEqual([r["step"] for r in want], [r["step"] for r in got])
    for a, b in zip(want, got):
      for key in ("loss", "val_loss"):
        self.assertAlmostEqual(a.get(key, 0.0), b.get(key, 0.0), places=6,
                               msg=f"step {a['step']} {key}")


if __name__ == "__main__":
  absltest.main()
