"""The absl binaries and their shared helpers."""

import json
import os
import subprocess
import sys

from absl.testing import absltest, parameterized
import numpy as np

from bottleneck import topm
from bottleneck.io import cli, matrices
import tests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_module(module, *args):
  # One device is enough for a binary.
  env = tests.one_device_env(JAX_PLATFORMS="cpu")
  return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT,
                        env=env, capture_output=True, text=True, timeout=600)


class HelpersTest(parameterized.TestCase):

  @parameterized.parameters(("5", [5]), ("1,2,8", [1, 2, 8]),
                            ("20..23", [20, 21, 22, 23]),
                            ("5..20:5", [5, 10, 15, 20]),
                            ("3,1..2,3", [1, 2, 3]))
  def test_parse_int_list(self, text, want):
    self.assertEqual(cli.parse_int_list("m", text), want)

  @parameterized.parameters("", "a", "5..2", "1..5:0", "1.5")
  def test_parse_int_list_rejects(self, text):
    with self.assertRaisesRegex(ValueError, "`m`"):
      cli.parse_int_list("m", text)

  def test_formats(self):
    recs = [{"m": 1, "p": 0.5}, {"m": 2, "p": float("nan")}]
    self.assertEqual(json.loads(cli.format_records(recs, "json"))[1]["p"],
                     None)
    self.assertEqual(cli.format_records(recs, "csv").splitlines()[0], "m,p")
    self.assertIn("| 2 | - |", cli.format_records(recs, "markdown"))
    with self.assertRaisesRegex(ValueError, "`format`"):
      cli.format_records(recs, "xml")

  def test_compile_cache_threshold_follows_the_environment(self):
    import jax  # pylint: disable=g-import-not-at-top
    name = "jax_persistent_cache_min_compile_time_secs"
    before = getattr(jax.config, name)
    saved = dict(os.environ)
    try:
      os.environ.pop("BOTTLENECK_JAX_CACHE", None)  # The cache on.
      os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.125"
      jax.config.update(name, 0.125)  # As jax read it at import.
      cli.persistent_compile_cache()
      self.assertEqual(getattr(jax.config, name), 0.125)  # The user's.
      del os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]
      cli.persistent_compile_cache()
      self.assertEqual(getattr(jax.config, name), 0.5)  # The binaries'.
    finally:
      os.environ.clear()
      os.environ.update(saved)
      jax.config.update(name, before)


class BinariesTest(absltest.TestCase):

  def test_bounds_json_reproduces_table1(self):
    out = run_module("bottleneck.bounds", "--models=all", "--format=json")
    self.assertEqual(out.returncode, 0, out.stderr)
    rows = json.loads(out.stdout)
    self.assertLen(rows, 22)
    self.assertTrue(all(r["m"] == r["m_paper"] for r in rows))
    for key in ("model", "N", "d", "m"):
      self.assertIn(key, rows[0])

  def test_bounds_custom_size_and_plot(self):
    plot = os.path.join(self.create_tempdir().full_path, "f2.png")
    out = run_module("bottleneck.bounds", "--N=50257", "--d=768",
                     "--form=rowspace_exact", "--format=csv", f"--plot={plot}")
    self.assertEqual(out.returncode, 0, out.stderr)
    self.assertEqual(out.stdout.splitlines()[1].split(",")[3], "28")
    self.assertTrue(os.path.getsize(plot) > 1000)

  def test_simulate_json(self):
    out = run_module("bottleneck.simulate", "--N=400", "--d=32", "--m=2..4",
                     "--trials=20", "--format=json")
    self.assertEqual(out.returncode, 0, out.stderr)
    recs = json.loads(out.stdout)
    self.assertEqual([r["m"] for r in recs], [2, 3, 4])
    for key in ("m", "trials", "fraction", "bound"):
      self.assertIn(key, recs[0])
    self.assertIn("trials 20/", out.stderr)  # Progress line.

  def test_topm_json_fields(self):
    tmp = self.create_tempdir().full_path
    subsets = np.array([[0, 1, 2], [5, 6, 7]])
    np.save(os.path.join(tmp, "s.npy"), subsets)
    out = run_module("bottleneck.topm", "--matrix=random", "--N=300",
                     "--d=20", "--m=3", f"--subsets=npy:{tmp}/s.npy",
                     "--format=json", f"--plot={tmp}/f1.png")
    self.assertEqual(out.returncode, 0, out.stderr)
    rec = json.loads(out.stdout)[0]
    for key in ("m", "trials", "feasible", "infeasible", "undecided",
                "fraction", "trials_detail"):
      self.assertIn(key, rec)
    self.assertEqual([t["subset"] for t in rec["trials_detail"]],
                     subsets.tolist())
    for key in ("subset", "verdict", "lower_bound", "upper_bound", "margin",
                "certificate_ok"):
      self.assertIn(key, rec["trials_detail"][0])
    self.assertTrue(os.path.exists(f"{tmp}/f1.png"))

  def test_topm_gaussian_twin(self):
    # A head plus a Gaussian of its shape, same m / trials / seed: one
    # curve each; the twin's verdicts are those of a direct sweep.
    tmp = self.create_tempdir().full_path
    head = np.random.default_rng(5).standard_normal((300, 20)) + 0.5
    np.save(os.path.join(tmp, "h.npy"), head.astype(np.float32))
    out = run_module("bottleneck.topm", f"--matrix=npy:{tmp}/h.npy",
                     "--m=2,4", "--trials=3", "--seed=2", "--gaussian_twin",
                     "--format=json")
    self.assertEqual(out.returncode, 0, out.stderr)
    recs = json.loads(out.stdout)
    names = sorted({r["matrix"] for r in recs})
    self.assertLen(names, 2)
    self.assertIn("gaussian 300x20", names)
    self.assertIn("[2/2] gaussian 300x20: LP instances 6/6", out.stderr)
    twin = topm.sweep(matrices.random(300, 20, seed=2), [2, 4], 3, seed=2)
    self.assertEqual(
        [t["verdict"] for r in recs if r["matrix"] == "gaussian 300x20"
         for t in r["trials_detail"]],
        [t["verdict"] for r in twin for t in r["trials_detail"]])

  def test_topm_natural_targets(self):
    tmp = self.create_tempdir().full_path
    p = np.random.default_rng(0).dirichlet(np.ones(50), size=5)
    np.save(os.path.join(tmp, "p.npy"), p)
    out = run_module("bottleneck.topm", "--matrix=random", "--N=300",
                     "--d=20", "--m=2,4", "--trials=3", "--problem=natural",
                     f"--targets=npy:{tmp}/p.npy", "--format=table")
    self.assertEqual(out.returncode, 0, out.stderr)
    self.assertIn("fraction", out.stdout)
    # Figure 1's two problems (plus App. D's) in one run: a record per
    # (problem, m), with an ETA on stderr.
    out = run_module("bottleneck.topm", "--matrix=random", "--N=300",
                     "--d=20", "--m=2,4", "--trials=3",
                     "--problem=logits,probs,natural",
                     f"--targets=npy:{tmp}/p.npy", "--format=json")
    self.assertEqual(out.returncode, 0, out.stderr)
    self.assertEqual([(r["problem"], r["m"]) for r in json.loads(out.stdout)],
                     [(p, m) for p in ("logits", "probs", "natural")
                      for m in (2, 4)])
    self.assertIn("LP instances 18/18", out.stderr)
    self.assertIn("ETA", out.stderr)
    out = run_module("bottleneck.topm", "--N=300", "--d=20", "--m=2",
                     "--problem=logits,prob")
    self.assertEqual(out.returncode, 2)
    self.assertIn("`problem` must be a comma list", out.stderr)
    self.assertIn("'prob'", out.stderr)
    out = run_module("bottleneck.topm", "--matrix=random", "--N=300",
                     "--d=20", "--m=2", "--problem=natural")
    self.assertEqual(out.returncode, 2)
    self.assertIn("`targets`", out.stderr)

  def test_bad_input_is_one_clear_line(self):
    out = run_module("bottleneck.simulate", "--N=100", "--d=10", "--m=10",
                     "--trials=2")
    self.assertEqual(out.returncode, 2)
    self.assertIn("error: `m` must be an integer in", out.stderr)
    self.assertNotIn("Traceback", out.stderr)
    out = run_module("bottleneck.bounds", "--threshold=1.5")
    self.assertEqual(out.returncode, 2)
    self.assertIn("`threshold`", out.stderr)
    out = run_module("bottleneck.topm", "--N=100", "--d=10", "--m=10")
    self.assertEqual(out.returncode, 2)
    self.assertIn("`m`", out.stderr)


if __name__ == "__main__":
  absltest.main()
