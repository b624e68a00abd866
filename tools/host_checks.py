"""The host's INFEASIBLE check alone, replayed: polish.project, then
certificates.check_infeasible_global, on the inputs a Figure-1 sweep
offered them (m = 5..150 step 5, both problems, nested), with the host
checks' BLAS thread count of a CPU run (one) or the given ones.

  PYTHONPATH=. .venv/bin/python tools/host_checks.py \
      --save_calls=/tmp/calls.pkl            # sweep, capture, replay
  PYTHONPATH=OTHER_TREE .venv/bin/python tools/host_checks.py \
      --calls_from=/tmp/calls.pkl            # the same inputs, other code
  ... --threads=1,4,8,16                     # a GPU machine's host
  ... --device=0,1    # also with their products on JAX's first device
                      # (lp.device_checks; a GPU, or the CPU device)

These checks hold the stream where the device iterates faster than the
host checks (benchmarks/RESULTS.md, the H100 runs); on a 2-core CPU the
iterations share the cores with them, so a whole run's time hides their
cost. Prints one JSON line: per-call milliseconds (mean, median) of each
step, the verdicts, and a digest of the outputs (equal digests: the same
floats).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
import time

import numpy as np


def capture(a, trials: int, limit: int) -> list[dict]:
  """The INFEASIBLE claims a nested sweep's checks verify on `a` (m =
  5..150 step 5 below d, both problems), at most `limit` of them."""
  from bottleneck import topm  # pylint: disable=g-import-not-at-top
  from bottleneck.lp import verdicts  # pylint: disable=g-import-not-at-top
  calls, verify = [], verdicts.verify

  def spy(matrix, subset, y, threshold, claim, x, mu, *args, **kwargs):
    if claim == "infeasible" and len(calls) < limit:
      calls.append({"subset": np.array(subset), "y": np.array(y),
                    "threshold": float(threshold),
                    "x": None if x is None else np.array(x),
                    "mu": np.array(mu)})
    return verify(matrix, subset, y, threshold, claim, x, mu, *args,
                  **kwargs)

  verdicts.verify = spy
  try:
    topm.sweeps(a, list(range(5, min(151, a.shape[1]), 5)), trials)
  finally:
    verdicts.verify = verify
  return calls


def replay(facts, calls: list[dict], repeat: int, threads: int = 1) -> dict:
  """Times project + check_infeasible_global on each captured call (facts:
  the swept matrix's MatrixFacts), with `threads` BLAS threads."""
  from threadpoolctl import threadpool_limits  # pylint: disable=g-import-not-at-top
  from bottleneck.lp import certificates, polish  # pylint: disable=g-import-not-at-top
  times, digest, ok = {"project": [], "global": []}, hashlib.sha256(), 0
  with threadpool_limits(threads):
    for round_ in range(repeat):
      for c in calls:
        start = time.perf_counter()
        mu = polish.project(facts, c["subset"], c["mu"], c["x"], 2.0,
                            y=c["y"]).mu
        middle = time.perf_counter()
        cert = certificates.check_infeasible_global(
            facts, c["subset"], c["y"], mu, c["threshold"])
        times["project"].append(middle - start)
        times["global"].append(time.perf_counter() - middle)
        if round_ == 0:
          ok += cert["ok"]
          digest.update(mu.tobytes())
          digest.update(np.float64(cert["t_lower"]).tobytes())
  ms = lambda v: {"mean": round(1e3 * float(np.mean(v)), 1),
                  "median": round(1e3 * float(np.median(v)), 1)}
  return {"calls": len(calls), "repeat": repeat, "threads": threads,
          "certified": ok,
          "project_ms": ms(times["project"]), "global_ms": ms(times["global"]),
          "digest": digest.hexdigest()[:16]}


def main(argv) -> None:
  from bottleneck.io import matrices  # pylint: disable=g-import-not-at-top
  from bottleneck.lp.facts import MatrixFacts  # pylint: disable=g-import-not-at-top
  args = dict(arg.lstrip("-").split("=", 1) for arg in argv[1:])
  n, d = int(args.get("N", 50257)), int(args.get("d", 768))
  a = matrices.random(n, d)  # The sweep's matrix (seed 0), drawn once.
  if "calls_from" in args:
    with open(args["calls_from"], "rb") as f:
      calls = pickle.load(f)
  else:
    calls = capture(a, int(args.get("trials", 10)),
                    int(args.get("calls", 40)))
    if "save_calls" in args:
      with open(args["save_calls"], "wb") as f:
        pickle.dump(calls, f)
  for on in args.get("device", "0").split(","):
    facts = MatrixFacts(a)
    if on == "1":
      import jax  # pylint: disable=g-import-not-at-top
      from bottleneck.lp import device_checks  # pylint: disable=g-import-not-at-top
      facts.device = device_checks.DeviceA(
          facts.source, jax.devices()[0], max(c["subset"].size for c in calls))
      replay(facts, calls[:1], 1)  # Its compiles, outside the timings.
    for threads in args.get("threads", "1").split(","):
      print(json.dumps({"N": n, "d": d, "device": on == "1", **replay(
          facts, calls, int(args.get("repeat", 2)), int(threads))}))


if __name__ == "__main__":
  main(sys.argv)
