"""Where the trainer runs: the cluster an environment describes (a pure
function of env dicts: nothing is initialised), the multi-host flags, and a
workdir on an object store (gs://, through a local stand-in for gcsfs: no
network), including the one error line when its package is missing."""

import contextlib
import importlib
import importlib.util
import io
import json
import os
import subprocess
import sys
from unittest import mock

from absl.testing import absltest, parameterized
from etils import epath
from etils.epath import backend as epath_backend
import fsspec
from fsspec.implementations.local import LocalFileSystem

from train.training import checkpoint, distributed, paths, trainer
import tests
from tests.trainer_test import ROOT, tiny_config

SLURM = {"SLURM_JOB_ID": "7", "SLURM_STEP_NODELIST": "node[001-002]",
         "SLURM_NTASKS": "2", "SLURM_PROCID": "1", "SLURM_LOCALID": "0"}


class ClusterTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ("laptop", {"HOME": "/home/me"}, None),
      ("gke_tpu_pod", {"TPU_WORKER_HOSTNAMES": "h0,h1,h2,h3"}, "tpu"),
      ("tpu_process_addresses", {"TPU_PROCESS_ADDRESSES": "a:1,b:1"}, "tpu"),
      ("one_host_tpu_vm", {"TPU_WORKER_HOSTNAMES": "localhost"}, None),
      ("multislice", {"MEGASCALE_COORDINATOR_ADDRESS": "h0",
                      "MEGASCALE_NUM_SLICES": "2"}, "tpu"),
      ("one_slice", {"MEGASCALE_COORDINATOR_ADDRESS": "h0",
                     "MEGASCALE_NUM_SLICES": "1"}, None),
      ("slurm_srun", SLURM, "slurm"),
      ("slurm_one_task", dict(SLURM, SLURM_NTASKS="1"), None),
      # salloc's shell, before srun: no job step, JAX would not detect it.
      ("slurm_allocation_only", {k: v for k, v in SLURM.items()
                                 if k != "SLURM_STEP_NODELIST"}, None),
      ("slurm_bad_count", dict(SLURM, SLURM_NTASKS="many"), None),
      ("mpirun", {"OMPI_MCA_orte_hnp_uri": "1.0;tcp://10.0.0.1:1",
                  "OMPI_COMM_WORLD_SIZE": "4"}, "ompi"),
      ("mpirun_one", {"OMPI_MCA_orte_hnp_uri": "1.0;tcp://10.0.0.1:1",
                      "OMPI_COMM_WORLD_SIZE": "1"}, None))
  def test_cluster_from_the_environment(self, env, want):
    self.assertEqual(distributed.cluster(env), want)

  def test_explicit_flags_win(self):
    plan = distributed.plan
    self.assertEqual(plan("h:1", 2, 0, env=SLURM), "explicit")
    self.assertEqual(plan(env=SLURM), "auto:slurm")
    self.assertEqual(plan(env={}), "none")
    self.assertEqual(plan(mode="no", env=SLURM), "none")
    self.assertEqual(plan(mode="yes", env={}), "auto:forced")
    for args, field in (((None, 2, 0), "coordinator_address"),
                        (("h:1", 2, None), "process_id"),
                        (("h:1", 2, 2), "process_id"),
                        (("h:1", 0, 0), "num_processes")):
      with self.assertRaisesRegex(ValueError, f"`{field}`"):
        plan(*args, env={})
    with self.assertRaisesRegex(ValueError, "`distributed`"):
      plan(mode="maybe", env={})


class _LocalGCS(LocalFileSystem):
  """gs:// served from a local folder (what gcsfs would do, offline)."""
  protocol = ("gs", "gcs")
  root = ""

  @classmethod
  def _strip_protocol(cls, path):
    path = fsspec.utils.stringify_path(path)
    if path.startswith(cls.root):  # Stripped already (fsspec repeats it).
      return path
    for prefix in ("gs://", "gcs://"):
      path = path.removeprefix(prefix)
    return os.path.join(cls.root, path.lstrip("/"))


class RemoteWorkdirTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    _LocalGCS.root = self.create_tempdir().full_path
    fsspec.register_implementation("gcs", _LocalGCS, clobber=True)
    epath_backend.fsspec_backend._get_filesystem.cache_clear()
    self.addCleanup(epath_backend.fsspec_backend._get_filesystem.cache_clear)
    registry = importlib.import_module("fsspec.registry")._registry
    self.addCleanup(registry.pop, "gcs", None)

  def test_a_gs_workdir_is_not_a_local_folder(self):
    wd = "gs://bucket/run"
    cfg = tiny_config().to_dict()
    checkpoint.check_workdir(wd, cfg)  # Creates it: in the store.
    self.assertTrue(os.path.isdir(os.path.join(_LocalGCS.root, "bucket/run")))
    self.assertFalse(os.path.exists("gs:"))  # Not os.path.abspath'd.
    checkpoint.write_config(paths.resolve(wd), cfg)
    self.assertEqual(json.load(open(os.path.join(
        _LocalGCS.root, "bucket/run/config.json")))["seed"], cfg["seed"])
    for step in (5, 10):  # Finished checkpoints, as orbax leaves them.
      os.makedirs(os.path.join(_LocalGCS.root, f"bucket/run/checkpoints/"
                               f"{step}/state"))
    self.assertEqual(checkpoint.finished_steps(wd), [5, 10])
    with self.assertRaisesRegex(checkpoint.CheckpointError,
                                "created with seed=.*incompatible"):
      checkpoint.check_workdir(wd, dict(cfg, seed=cfg["seed"] + 1))
    aside = checkpoint.aside_path(f"{wd}/corrupt_checkpoints", 10)
    self.assertEqual(aside, f"{wd}/corrupt_checkpoints/10")
    # No flock on an object store: said, not silently skipped.
    err = io.StringIO()
    with contextlib.redirect_stderr(err), checkpoint.workdir_lock(wd):
      pass
    self.assertIn("is an object store: no lock file", err.getvalue())
    # metrics.jsonl is written locally and copied with each checkpoint.
    staging = paths.Staging(paths.resolve(wd))
    self.assertNotIn("bucket", staging.folder)
    with open(staging.path("metrics.jsonl"), "w") as f:
      f.write('{"step": 1}\n')
    staging.push()
    again = paths.Staging(paths.resolve(wd))
    again.fetch()
    self.assertEqual(open(again.path("metrics.jsonl")).read(),
                     '{"step": 1}\n')

  def test_training_on_a_store_without_locks_or_manifests(self):
    # The trainer's object-store path end to end, the store a local folder
    # (orbax's own gs:// writes need the network): no lock, no manifests,
    # metrics and curves staged locally and copied up, fetched on resume.
    os.environ["BOTTLENECK_CACHE"] = os.path.join(
        absltest.get_default_test_tmpdir(), "cache")
    store = self.create_tempdir().full_path
    remote = lambda path: os.fspath(path).startswith(store)
    cfg = lambda steps: tiny_config(**{"train.steps": steps,
                                       "checkpoint_every": 5,
                                       "tensorboard": True})
    err = io.StringIO()
    with mock.patch.object(paths, "is_remote", remote), mock.patch.object(
        paths, "resolve", lambda path, name="workdir": epath.Path(path)), \
        contextlib.redirect_stderr(err):
      trainer.train_and_evaluate(cfg(10), store)
      self.assertIn("is an object store: no lock file", err.getvalue())
      self.assertEqual(checkpoint.finished_steps(store), [5, 10])
      self.assertFalse(os.path.exists(f"{store}/checkpoints/10/sha256.json"))
      self.assertTrue(os.path.isfile(f"{store}/curves.png"))
      summary = trainer.train_and_evaluate(cfg(15), store)
    self.assertEqual(summary["resumed_from"], 10)
    with open(f"{store}/metrics.jsonl") as f:
      self.assertEqual([json.loads(line)["step"] for line in f],
                       list(range(1, 16)))
    # TensorBoard's event files reach the store too (one per writer).
    events = os.listdir(f"{store}/tensorboard")
    self.assertLen([e for e in events if "tfevents" in e], 2)

  def test_a_local_workdir_is_unchanged(self):
    wd = self.create_tempdir().full_path
    self.assertEqual(os.fspath(paths.resolve(os.path.relpath(wd))), wd)
    self.assertEqual(paths.Staging(paths.resolve(wd)).folder, wd)


@absltest.skipIf(importlib.util.find_spec("gcsfs"), "gcsfs is installed")
class MissingPackageTest(absltest.TestCase):

  def test_no_gcsfs_is_one_error_line_naming_the_flag(self):
    with self.assertRaisesRegex(ValueError, "`workdir` 'gs://b/run' is on "
                                r"gs://.*pip install gcsfs"):
      paths.resolve("gs://b/run")
    with self.assertRaisesRegex(ValueError, "memory:// is not a store"):
      paths.resolve("memory://b/run")
    out = subprocess.run(
        [sys.executable, "-m", "train.main", "--workdir=gs://b/run",
         "--config=configs/thesis.py:model1,cpu"], cwd=ROOT,
        env=tests.one_device_env(), capture_output=True, text=True,
        timeout=300)
    self.assertEqual(out.returncode, 2, out.stderr[-2000:])
    lines = out.stderr.strip().splitlines()
    self.assertLen(lines, 1, out.stderr[-2000:])
    self.assertRegex(lines[0], r"^error: `workdir` 'gs://b/run' .* local "
                     "--workdir")
    self.assertFalse(os.path.exists(os.path.join(ROOT, "gs:")))


if __name__ == "__main__":
  absltest.main()
