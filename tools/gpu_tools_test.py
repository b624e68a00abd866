"""The tools that carry a run to a lent GPU machine and bring it back.

tools/pack_head.py splits a head over several calls' transfers;
tools/on_gpu.sh moves each call's parts out of the tree (a call's copy
keeps no ignored file it does not carry), joins them once all have come
and checks their hash; tools/summarize_topm.py keeps a run's per-m
counts; tools/startup_phases.py times the steps before the LP
stream; on_gpu.sh's training and wide-panel stages write what a call
brings back; tools/trace_summary.py says where a traced step's device time
goes. Each is run here as the machine would run it, on small files.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest

from tests import one_device_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import pack_head  # pylint: disable=g-import-not-at-top,wrong-import-position
import summarize_topm  # pylint: disable=g-import-not-at-top,wrong-import-position
import trace_summary  # pylint: disable=g-import-not-at-top,wrong-import-position


class PartsTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.tree = tempfile.mkdtemp()  # The machine's copy of the tree.
    self.parts = tempfile.mkdtemp()  # $PARTS, outside it.
    self.here = tempfile.mkdtemp()  # This machine's .gpu/.
    os.makedirs(os.path.join(self.tree, "tools"))
    shutil.copy(os.path.join(ROOT, "tools", "on_gpu.sh"),
                os.path.join(self.tree, "tools"))
    self.head = os.path.join(self.here, "h.gguf")
    with open(self.head, "wb") as f:
      f.write(os.urandom(100_003))
    pack_head.split(self.head, 3)

  def tearDown(self):
    for path in (self.tree, self.parts, self.here):
      shutil.rmtree(path)
    super().tearDown()

  def call(self, *carried: str) -> str:
    """One call: a fresh .gpu/ holding only the carried files, then the
    script with no stage."""
    gpu = os.path.join(self.tree, ".gpu")
    shutil.rmtree(gpu, ignore_errors=True)
    os.makedirs(gpu)
    for name in carried:
      shutil.copy(os.path.join(self.here, name), gpu)
    env = dict(os.environ, WHEELS="0", PARTS=self.parts,
               OUT=os.path.join(self.tree, "out"))
    run = subprocess.run(["bash", "tools/on_gpu.sh"], cwd=self.tree,
                         env=env, capture_output=True, text=True, check=True)
    return run.stdout

  def joined(self) -> bytes | None:
    path = os.path.join(self.tree, ".gpu", "h.gguf")
    return open(path, "rb").read() if os.path.exists(path) else None

  def test_split_writes_parts_and_hash(self):
    sizes = [os.path.getsize(f"{self.head}.{k}") for k in range(3)]
    self.assertEqual(sum(sizes), 100_003)
    hash_, name, chunks = open(f"{self.head}.sha256").read().split()
    self.assertEqual((name, chunks), ("h.gguf", "3"))
    self.assertLen(hash_, 64)

  def test_parts_over_three_calls_join_to_the_file(self):
    self.assertIn("1 of 3 parts", self.call("h.gguf.0", "h.gguf.sha256"))
    self.assertIsNone(self.joined())
    self.assertIn("2 of 3 parts", self.call("h.gguf.1"))
    self.assertIn("sha256 checked", self.call("h.gguf.2"))
    whole = open(self.head, "rb").read()
    self.assertEqual(self.joined(), whole)
    self.call()  # A later call carries nothing: the head is still there.
    self.assertEqual(self.joined(), whole)

  def test_a_wrong_part_is_refused(self):
    shutil.copy(f"{self.head}.0", f"{self.head}.1")  # Part 1 lost, 0 twice.
    self.call("h.gguf.0", "h.gguf.sha256")
    self.call("h.gguf.1")
    self.assertIn("do not hash to", self.call("h.gguf.2"))
    self.assertIsNone(self.joined())


class SummaryTest(absltest.TestCase):

  def test_counts_sources_iterations_and_check_seconds(self):
    trial = lambda source, its, sec: {"source": source, "iterations": its,
                                      "verify_seconds": sec, "subset": [1]}
    record = {"matrix": "g", "problem": "logits", "m": 60, "trials": 4,
              "feasible": 3, "infeasible": 1, "undecided": 0,
              "fraction": 0.75, "trials_detail": [
                  trial("admm", 300, 0.5), trial("ipm", 900, 2.0),
                  trial("chain", 0, 0.25), trial("admm", 100, None)]}
    got = summarize_topm.summary(record)
    self.assertEqual((got["solved_by_admm"], got["solved_by_ipm"],
                      got["carried_from_chain"]), (2, 1, 1))
    self.assertEqual(got["iterations_total"], 1300)
    self.assertAlmostEqual(got["host_check_seconds"], 2.75)
    self.assertNotIn("trials_detail", got)

  def test_reads_the_stage_from_the_log(self):
    log = os.path.join(tempfile.mkdtemp(), "log.txt")
    with open(log, "w") as f:
      f.write("== other: x\n[timed] other: rc 0, wall 1.0 s, peak RSS 1 KiB\n"
              "== fig: python3 -m bottleneck.topm --N=9\n"
              "[1/2] head (9x2): LP instances 3/3 (100%) elapsed 7.5s ETA 0s\n"
              "[2/2] gaussian 9x2: LP instances 3/3 (100%) elapsed 2.0s ETA 0s"
              "\n[timed] fig: rc 0, wall 12.5 s, peak RSS 2048 KiB\n")
    got = summarize_topm.from_log(log, "fig")
    self.assertEqual(got["command"], "python3 -m bottleneck.topm --N=9")
    self.assertEqual((got["wall_seconds"], got["peak_rss_kib"]), (12.5, 2048))
    self.assertEqual(got["lp_stream_seconds"],
                     {"head (9x2)": 7.5, "gaussian 9x2": 2.0})
    out = os.path.join(os.path.dirname(log), "s.json")
    run = os.path.join(os.path.dirname(log), "run.json")
    with open(run, "w") as f:
      json.dump([{"m": 5, "trials_detail": []}], f)
    summarize_topm.main(["x", run, f"--out={out}", f"--log={log}",
                         "--label=fig", "--date=2026-11-26"])
    self.assertEqual(json.load(open(out))["date"], "2026-11-26")


class StartupPhasesTest(absltest.TestCase):

  def test_times_every_step_before_the_stream(self):
    run = subprocess.run(
        [sys.executable, "tools/startup_phases.py", "--N=600", "--d=32",
         "--m_max=20", "--trials=3"], cwd=ROOT, env=one_device_env(),
        capture_output=True, text=True, check=True)
    got = json.loads(run.stdout)
    self.assertEqual(list(got["steps_s"]), [
        "imports", "backend", "random A", "power_of_two_scaled",
        "24 instances", "MatrixFacts", "check_subsets",
        "DeviceA (none here)", "rotation.prepare", "to_json"])
    self.assertTrue(all(s >= 0 for s in got["steps_s"].values()))


class TrainingStagesTest(absltest.TestCase):
  """Issue 59's GPU stages, run here as the machine would run them, on a
  small model: what comes back is what RESULTS needs (tokens/s, MFU, the
  loss curves), and nothing of a run's checkpoints."""

  def test_train_mfu_and_spamlang_stages(self):
    out = tempfile.mkdtemp()
    env = one_device_env(
        WHEELS="0", OUT=out, PY=sys.executable, SPAM_S="300",
        TRAIN_MFU_ARGS="--models=model1 --batch=1 --steps=1 "
                       "--attention=blocks,xla",
        SPAM_CONFIG="configs/spamlang.py:V=64,cpu",
        SPAM_FLAGS="--config.train.steps=4 --config.train.warmup=1 "
                   "--config.eval_every=2 --config.log_every=2")
    subprocess.run(["bash", "tools/on_gpu.sh", "train_mfu",
                    "spamlang_table3"], cwd=ROOT, env=env,
                   capture_output=True, text=True, check=True)
    runs = json.load(open(os.path.join(out, "train_throughput_gpu.json")))
    self.assertEqual([(r["model"], r["attention"]) for r in runs["runs"]],
                     [("model1", "blocks"), ("model1", "xla")])
    for row in runs["runs"]:
      self.assertGreater(row["tokens_per_s"], 0)
    for rank in (0, 32):
      with open(os.path.join(out, f"spamlang_table3_D{rank}.jsonl")) as f:
        rows = [json.loads(line) for line in f]
      self.assertTrue(any("val_loss" in r for r in rows))
      self.assertTrue(any(r.get("tokens_per_s") for r in rows))
    self.assertTrue(os.path.getsize(os.path.join(out, "spamlang_table3.png")))
    self.assertLessEqual(len(os.listdir(out)), 8)  # What a call brings back.
    self.assertFalse(any(os.path.isdir(os.path.join(out, name))
                         for name in os.listdir(out)))


class TraceSummaryTest(absltest.TestCase):
  """tools/trace_summary.py on a perfetto trace written in the test: a
  device process with a GEMM, two overlapping fusions and a gap."""

  EVENTS = [
      {"ph": "M", "name": "process_name", "pid": 1,
       "args": {"name": "/device:GPU:0"}},
      {"ph": "M", "name": "process_name", "pid": 7,
       "args": {"name": "/host:CPU"}},
      {"ph": "X", "pid": 1, "name": "nvjet_sm90_tst_128x128", "ts": 0,
       "dur": 40, "args": {"hlo_op": "dot.3"}},
      {"ph": "X", "pid": 1, "name": "loop_exponential_fusion", "ts": 30,
       "dur": 20, "args": {"hlo_op": "fusion.1"}},
      {"ph": "X", "pid": 1, "name": "loop_exponential_fusion", "ts": 100,
       "dur": 10, "args": {"hlo_op": "fusion.1"}},
      {"ph": "X", "pid": 7, "name": "PjitFunction(step)", "ts": 0,
       "dur": 500},
  ]

  def test_device_time_split_into_products_and_the_rest(self):
    got = trace_summary.summarise(self.EVENTS, steps=2)
    self.assertEqual(list(got["devices"]), ["/device:GPU:0"])  # Not host.
    gpu = got["devices"]["/device:GPU:0"]
    self.assertAlmostEqual(gpu["kernel_ms_per_step"], 70 / 2 / 1e3)
    self.assertAlmostEqual(gpu["gemm_ms_per_step"], 40 / 2 / 1e3)
    self.assertAlmostEqual(gpu["busy_ms_per_step"], 60 / 2 / 1e3)  # Union.
    self.assertAlmostEqual(gpu["span_ms_per_step"], 110 / 2 / 1e3)
    self.assertEqual(gpu["top_kernels"][0]["name"], "nvjet_sm90_tst_128x128")
    self.assertEqual(gpu["top_ops"][1], {"name": "fusion",
                                         "ms_per_step": 15e-3,
                                         "calls_per_step": 1.0})

  def test_train_profile_stage_brings_back_summary_and_trace(self):
    out = tempfile.mkdtemp()
    env = one_device_env(
        WHEELS="0", OUT=out, PY=sys.executable,
        TRAIN_PROFILE_ARGS="--models=model1 --batch=1 --steps=1")
    subprocess.run(["bash", "tools/on_gpu.sh", "train_profile"], cwd=ROOT,
                   env=env, capture_output=True, text=True, check=True)
    self.assertEqual(sorted(os.listdir(out)), [
        "log.txt", "trace_model1.json.gz", "trace_summary_model1.json",
        "train_throughput_gpu.json"])
    with open(os.path.join(out, "trace_summary_model1.json")) as f:
      host = json.load(f)["devices"]["/host:CPU"]  # No device here.
    self.assertGreater(host["busy_ms_per_step"], 0)
    with open(os.path.join(out, "train_throughput_gpu.json")) as f:
      row = json.load(f)["runs"][0]
    for phase in ("build_s", "init_s", "first_step_s"):
      self.assertGreater(row[phase], 0)
    with self.assertRaisesRegex(SystemExit, "no perfetto_trace"):
      trace_summary.load(tempfile.mkdtemp())


class WidePanelStageTest(absltest.TestCase):
  """on_gpu.sh fig1_4096 on a small random head (WIDE_* overrides)."""

  def stage(self, **overrides):
    out = tempfile.mkdtemp()
    env = one_device_env(**{"WHEELS": "0", "OUT": out, "PY": sys.executable,
                            "WIDE_N": "600", "WIDE_D": "32",
                            "WIDE_TRIALS": "2", "WIDE_S": "300", **overrides})
    subprocess.run(["bash", "tools/on_gpu.sh", "fig1_4096"], cwd=ROOT,
                   env=env, capture_output=True, text=True, check=True)
    return out, sorted(n for n in os.listdir(out) if n.endswith(".json"))

  def test_one_json_per_m_and_none_for_a_run_that_stopped(self):
    # m = 900 > N: that run stops with an error; the other m keeps its JSON.
    out, written = self.stage(WIDE_M="4 900 8")
    self.assertEqual(written, ["fig1_4096_m4.json", "fig1_4096_m8.json"])
    with open(os.path.join(out, "fig1_4096_m8.json")) as f:
      self.assertEqual(json.load(f)[0]["m"], 8)

  def test_no_run_starts_without_ten_seconds_left(self):
    self.assertEqual(self.stage(WIDE_M="4", WIDE_S="5")[1], [])


if __name__ == "__main__":
  absltest.main()
