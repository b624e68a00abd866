"""metrics.jsonl's TensorBoard twin (`config.tensorboard`): the event files
hold every logged scalar at its step, read back by an independent TFRecord
parser (tensorboardX writes them; this reads the bytes and checks each
record's masked CRC32C), and a resume hides the steps it redoes."""

import glob
import os
import struct

from absl.testing import absltest

from train.training import metrics, trainer
from tests.trainer_test import tiny_config


def _masked_crc(data: bytes) -> int:
  """TFRecord's masked CRC32C (Castagnoli, bit by bit: no library's)."""
  crc = 0xFFFFFFFF
  for byte in data:
    crc ^= byte
    for _ in range(8):
      crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
  crc ^= 0xFFFFFFFF
  return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(logdir: str) -> list:
  """Every Event proto of a folder's event files, in file order (TFRecord:
  u64 length, u32 masked CRC of it, the bytes, u32 masked CRC of them)."""
  from tensorboardX.proto import event_pb2  # pylint: disable=g-import-not-at-top
  events = []
  for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
    with open(path, "rb") as f:
      blob = f.read()
    at = 0
    while at < len(blob):
      header = blob[at:at + 8]
      (n,), (crc,) = struct.unpack("<Q", header), struct.unpack(
          "<I", blob[at + 8:at + 12])
      assert crc == _masked_crc(header), path
      body = blob[at + 12:at + 12 + n]
      (crc,) = struct.unpack("<I", blob[at + 12 + n:at + 16 + n])
      assert crc == _masked_crc(body), path
      events.append(event_pb2.Event.FromString(body))
      at += 16 + n
  return events


def scalars(logdir: str) -> dict:
  """tag -> {step: value} of the scalar summaries."""
  out = {}
  for e in read_events(logdir):
    for v in e.summary.value:
      out.setdefault(v.tag, {})[e.step] = v.simple_value
  return out


class TensorBoardTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")

  def test_off_by_default(self):
    run = self.create_tempdir().full_path
    self.assertFalse(tiny_config().tensorboard)
    trainer.train_and_evaluate(tiny_config(**{"train.steps": 4,
                                              "train.warmup": 1}), run)
    self.assertFalse(os.path.exists(os.path.join(run, "tensorboard")))

  def test_a_run_writes_its_rows_as_scalars(self):
    run = self.create_tempdir().full_path
    trainer.train_and_evaluate(tiny_config(**{
        "train.steps": 6, "train.warmup": 1, "eval_every": 3,
        "tensorboard": True}), run)
    logdir = os.path.join(run, metrics.TENSORBOARD_DIR)
    self.assertNotEmpty(glob.glob(f"{logdir}/events.out.tfevents.*"))
    got = scalars(logdir)
    rows = metrics.read_metrics(os.path.join(run, "metrics.jsonl"))
    self.assertEqual([r["step"] for r in rows], list(range(1, 7)))
    for key in ("loss", "grad_norm", "lr", "val_loss"):
      want = {r["step"]: r[key] for r in rows if r.get(key) is not None}
      self.assertNotEmpty(want, key)
      self.assertEqual(sorted(got[key]), sorted(want), key)
      for step, value in want.items():
        self.assertAlmostEqual(got[key][step], value, places=5,
                               msg=f"{key} at step {step}")
    self.assertEqual(sorted(got["val_loss"]), [3, 6])
    self.assertNotIn("step", got)

  def test_a_resume_purges_the_steps_it_redoes(self):
    logdir = self.create_tempdir().full_path
    path = os.path.join(logdir, "metrics.jsonl")
    log = metrics.MetricsLog(path, 0, True, tensorboard=True)
    for step in (1, 2, 3):
      log.write({"step": step, "loss": float(step), "mfu": None})
    log.close()
    log = metrics.MetricsLog(path, 2, True, tensorboard=True)  # From 2.
    log.write({"step": 3, "loss": 30.0})
    log.close()
    self.assertEqual([r["step"] for r in metrics.read_metrics(path)], [1, 2, 3])
    starts = [e.step for e in read_events(os.path.join(logdir, "tensorboard"))
              if e.HasField("session_log")]
    self.assertEqual(starts, [1, 3])  # TensorBoard drops steps >= 3 before.
    self.assertNotIn("mfu", scalars(os.path.join(logdir, "tensorboard")))


if __name__ == "__main__":
  absltest.main()
