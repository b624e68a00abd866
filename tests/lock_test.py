"""bottleneck.io.lock: a stale lock (its holder SIGKILLed) is taken over by
exactly one of the processes released on it together; a lock file that is
not ours is refused by name, by the lock and by the trainer."""

import json
import os
import socket
import subprocess
import sys

from absl.testing import absltest

from bottleneck.io import lock
from train.training import checkpoint, trainer
from tests.trainer_test import ROOT, tiny_config

# A contender: per line on stdin, "go DIR" tries the lock in DIR and prints
# 1 (held) or 0 (refused, or failed); "release" lets go of a held lock.
CONTENDER = """
import sys
from bottleneck.io import lock
held = None
for line in sys.stdin:
  if line.startswith("go "):
    held = lock.FolderLock(line[3:].strip(), "x.lock", "outdir")
    try:
      held.__enter__()
      print(1, flush=True)
    except Exception:  # pylint: disable=broad-except
      held = None
      print(0, flush=True)
  elif held is not None:
    held.__exit__(None, None, None)
    held = None
"""


def dead_pid() -> int:
  done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                        capture_output=True, text=True, check=True)
  return int(done.stdout)


class StaleTakeoverTest(absltest.TestCase):

  def test_exactly_one_of_many_takes_a_stale_lock(self):
    base = self.create_tempdir().full_path
    env = dict(os.environ, PYTHONPATH=ROOT)
    procs = [subprocess.Popen([sys.executable, "-c", CONTENDER], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True) for _ in range(6)]
    stale = json.dumps({"pid": dead_pid(), "host": socket.gethostname()})
    holders = []
    try:
      for trial in range(40):
        folder = os.path.join(base, str(trial))
        os.makedirs(folder)
        with open(os.path.join(folder, "x.lock"), "w") as f:
          f.write(stale)
        for p in procs:  # Released together: all read one pipe write each.
          p.stdin.write(f"go {folder}\n")
        for p in procs:
          p.stdin.flush()
        holders.append(sum(int(p.stdout.readline()) for p in procs))
        for p in procs:
          p.stdin.write("release\n")
          p.stdin.flush()
    finally:
      for p in procs:
        p.stdin.close()
        p.wait(timeout=60)
    self.assertEqual(holders, [1] * 40)

  def test_released_and_stale_locks_are_taken(self):
    wd = self.create_tempdir().full_path
    path = os.path.join(wd, "x.lock")
    with lock.FolderLock(wd, "x.lock", "outdir"):
      with open(path) as f:
        self.assertEqual(json.load(f)["pid"], os.getpid())
    self.assertFalse(os.path.exists(path))
    open(path, "w").close()  # Created, never written: its holder died.
    with lock.FolderLock(wd, "x.lock", "outdir"):
      pass
    with open(path, "w") as f:  # Held by another host: cannot tell.
      json.dump({"pid": 1, "host": "elsewhere.invalid"}, f)
    with self.assertRaisesRegex(ValueError, "in use by pid 1 on elsewhere"):
      with lock.FolderLock(wd, "x.lock", "outdir"):
        pass


class ForeignLockTest(absltest.TestCase):

  def test_a_lock_file_that_is_not_ours_is_refused_by_name(self):
    wd = self.create_tempdir().full_path
    path = os.path.join(wd, "report.lock")
    for content in ("[1, 2]", '"taken"', "7", '{"pid": "12"}',
                    '{"pid": 3}', "not json"):
      with open(path, "w") as f:
        f.write(content)
      with self.assertRaisesRegex(
          ValueError, f"lock file {path} .* is not a lock of this program"):
        with lock.FolderLock(wd, "report.lock", "outdir"):
          pass
      with open(path) as f:  # Left as it was.
        self.assertEqual(f.read(), content)

  def test_the_trainer_refuses_a_foreign_lock_in_one_error(self):
    wd = self.create_tempdir().full_path
    with open(os.path.join(wd, checkpoint.LOCK), "w") as f:
      f.write("[1, 2]")
    with self.assertRaisesRegex(checkpoint.CheckpointError,
                                "trainer.lock .* is not a lock of this"):
      trainer.train_and_evaluate(tiny_config(), wd)


if __name__ == "__main__":
  absltest.main()
