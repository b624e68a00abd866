"""Figure 5 simulation at GPT-2 size: bottleneck.simulate vs plain numpy.

  python benchmarks/simulate_vs_numpy.py --trials=200 --m=20..36 \
      --out=benchmarks/simulate_vs_numpy.json

Four implementations of the same experiment (fraction of random m-subsets
whose row-space embedding keeps every other logit below 1):
  jax_matrix     bottleneck.simulate(method="matrix"): one Gaussian A per
                 trial shared by every m, generated in row blocks, vmapped.
  jax_projected  bottleneck.simulate(method="projected"): exact-law sampling
                 of the other logits (no N x d matrix).
  numpy_plain    the textbook loop: for each m, for each trial, draw A,
                 solve, compare (what a paper's script does).
  numpy_shared   numpy with jax_matrix's algorithm (one A per trial for all
                 m): separates the algorithmic gain from the JAX one.
"""

from __future__ import annotations

import json
import platform
import sys
import time

from absl import app, flags
import jax
import numpy as np

from bottleneck import simulate
from bottleneck.io import cli

flags.DEFINE_integer("N", 50257, "Vocabulary size.")
flags.DEFINE_integer("d", 768, "Width.")
flags.DEFINE_string("m", "20..36", "m values.")
flags.DEFINE_integer("trials", 200, "Trials per m.")
flags.DEFINE_string("run", "jax_matrix,jax_projected,numpy_shared,numpy_plain",
                    "Implementations to time.")
flags.DEFINE_integer("chunk", 16, "Trials per jitted call (JAX runs).")
flags.DEFINE_string("out", None, "Write the JSON results here.")
FLAGS = flags.FLAGS


def numpy_plain(N, d, m_values, trials, seed=0):
  rng = np.random.default_rng(seed)
  ok = np.zeros(len(m_values))
  for j, m in enumerate(m_values):
    for _ in range(trials):
      a = rng.standard_normal((N, d), dtype=np.float32)
      a_s = a[:m]
      x = a_s.T @ np.linalg.solve(a_s @ a_s.T, np.ones(m, np.float32))
      ok[j] += (a[m:] @ x).max() < 1.0
  return ok / trials


def numpy_shared(N, d, m_values, trials, seed=0):
  rng = np.random.default_rng(seed)
  ok = np.zeros(len(m_values))
  for _ in range(trials):
    a = rng.standard_normal((N, d), dtype=np.float32)
    for j, m in enumerate(m_values):
      a_s = a[:m]
      x = a_s.T @ np.linalg.solve(a_s @ a_s.T, np.ones(m, np.float32))
      ok[j] += (a[m:] @ x).max() < 1.0
  return ok / trials


def timed(fn):
  start = time.perf_counter()
  out = fn()
  return out, time.perf_counter() - start


def main(argv):
  del argv
  m_values = cli.parse_int_list("m", FLAGS.m)
  N, d, trials = FLAGS.N, FLAGS.d, FLAGS.trials
  runs = {
      "jax_matrix": lambda t=trials: simulate.simulate(
          N, d, m_values, t, method="matrix", chunk=FLAGS.chunk).fraction(),
      "jax_projected": lambda t=trials: simulate.simulate(
          N, d, m_values, t, method="projected",
          chunk=FLAGS.chunk).fraction(),
      "numpy_shared": lambda: numpy_shared(N, d, m_values, trials),
      "numpy_plain": lambda: numpy_plain(N, d, m_values, trials),
  }
  results = {"command": " ".join(sys.argv), "N": N, "d": d, "m": m_values,
             "trials": trials, "machine": f"{platform.node()} "
             f"{platform.processor() or platform.machine()}",
             "backend": jax.default_backend(),
             "devices": [str(x) for x in jax.devices()],
             "date": time.strftime("%Y-%m-%d"), "runs": {}}
  for name in FLAGS.run.split(","):
    warmup = None
    if name.startswith("jax"):  # Compile outside the timing: one chunk.
      _, warmup = timed(lambda: runs[name](FLAGS.chunk))
    frac, seconds = timed(runs[name])
    results["runs"][name] = {"seconds": seconds, "warmup_seconds": warmup,
                             "fraction": np.asarray(frac).tolist()}
    print(f"{name}: {seconds:.1f} s", flush=True)
  base = results["runs"].get("numpy_plain", {}).get("seconds")
  for name, r in results["runs"].items():
    if base:
      r["speedup_vs_numpy_plain"] = base / r["seconds"]
  print(cli.to_json(results))
  if FLAGS.out:
    with open(FLAGS.out, "w") as f:
      json.dump(results, f, indent=1)


if __name__ == "__main__":
  app.run(main)
