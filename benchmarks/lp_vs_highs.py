"""Top-m LP: bottleneck's batched ADMM vs HiGHS on the same instances.

  python benchmarks/lp_vs_highs.py --sizes=4096x256,16384x512,50257x768 \
      --admm_trials=32 --highs_trials=2 --out=benchmarks/lp_vs_highs.json

For each random N x d matrix and m in {d/10, d/8, d/5} (mostly feasible,
borderline, mostly infeasible), every solver runs in its own subprocess (so
peak memory is its own, ru_maxrss):
  admm          bottleneck.topm.solve on admm_trials subsets per m: all fixed
                costs included (rotation, compile, float64 certificates).
  highs-rowgen  bottleneck.lp.exact rowgen (IPM, no presolve) on the first
                highs_trials subsets per m.
  highs-full    the whole LP through highspy (IPM, no presolve, crossover).
Throughput = instances per second; agreement = same verdict on every
instance both solved (ADMM undecided counted separately).
"""

from __future__ import annotations

import json
import platform
import resource
import subprocess
import sys
import time

import numpy as np

SOLVERS = ("admm", "highs-rowgen", "highs-full")


def _instances(n, d, trials, seed=0):
  from bottleneck import topm  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  a = rng.standard_normal((n, d)).astype(np.float32)
  ms = [max(2, d // 10), d // 8, d // 5]
  return a, ms, {m: topm.make_instances(n, m, trials, "logits", rng)
                 for m in ms}


def child(solver: str, n: int, d: int, trials: int, highs_trials: int):
  """Runs one solver on one size; prints a JSON line."""
  from bottleneck import topm  # pylint: disable=g-import-not-at-top
  from bottleneck.lp import exact as lp_exact  # pylint: disable=g-import-not-at-top
  a, ms, per_m = _instances(n, d, trials)
  out = {"solver": solver, "N": n, "d": d, "per_m": {}}
  start = time.perf_counter()
  if solver == "admm":
    flat = [it for m in ms for it in per_m[m]]
    details = topm.solve(a, flat, batch=32)
    for j, m in enumerate(ms):
      out["per_m"][m] = [x["verdict"] for x in details[j * trials:
                                                       (j + 1) * trials]]
    out["instances"] = len(flat)
  else:
    method = solver.split("-")[1]
    a64 = a.astype(np.float64)
    count = 0
    for m in ms:
      verdicts = []
      for it in per_m[m][:highs_trials]:
        sol = lp_exact.solve(a64, it.subset, it.y, method=method)
        verdicts.append("feasible" if sol["t"] < 1.0 else "infeasible")
        count += 1
      out["per_m"][m] = verdicts
    out["instances"] = count
  out["seconds"] = time.perf_counter() - start
  out["peak_rss_gb"] = resource.getrusage(  # GB (ru_maxrss: KiB)
      resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
  print(json.dumps(out))


def main():
  args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:])
  if "child" in args:
    child(args["child"], int(args["N"]), int(args["d"]), int(args["trials"]),
          int(args["highs_trials"]))
    return
  sizes = [tuple(map(int, s.split("x"))) for s in args.get(
      "sizes", "4096x256,16384x512,50257x768").split(",")]
  trials, highs_trials = int(args.get("admm_trials", 32)), int(
      args.get("highs_trials", 2))
  solvers = args.get("solvers", ",".join(SOLVERS)).split(",")
  results = {"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d"),
             "machine": f"{platform.node()} {platform.machine()}", "runs": []}
  for n, d in sizes:
    runs = {}
    for solver in solvers:
      proc = subprocess.run(
          [sys.executable, __file__, f"--child={solver}", f"--N={n}",
           f"--d={d}", f"--trials={trials}", f"--highs_trials={highs_trials}"],
          capture_output=True, text=True, check=True)
      runs[solver] = json.loads(proc.stdout.strip().splitlines()[-1])
      r = runs[solver]
      print(f"{n}x{d} {solver}: {r['instances']} instances in "
            f"{r['seconds']:.1f} s, peak {r['peak_rss_gb']:.2f} GB",
            flush=True)
    summary = {"N": n, "d": d, "runs": runs}
    if "admm" in runs:
      admm_rate = runs["admm"]["instances"] / runs["admm"]["seconds"]
      for solver in solvers[1:] if solvers[0] == "admm" else []:
        h = runs[solver]
        agree = disagree = undecided = 0
        for m, verdicts in h["per_m"].items():
          for ours, theirs in zip(runs["admm"]["per_m"][m], verdicts):
            if ours == "undecided":
              undecided += 1
            elif ours == theirs:
              agree += 1
            else:
              disagree += 1
        summary[solver] = {
            "seconds_per_instance": h["seconds"] / h["instances"],
            "throughput_ratio": admm_rate * h["seconds"] / h["instances"],
            "agree": agree, "disagree": disagree,
            "admm_undecided": undecided}
      summary["admm_seconds_per_instance"] = 1 / admm_rate
      summary["admm_verdicts"] = {
          m: {v: vs.count(v) for v in ("feasible", "infeasible", "undecided")}
          for m, vs in runs["admm"]["per_m"].items()}
    results["runs"].append(summary)
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}),
          flush=True)
  if "out" in args:
    with open(args["out"], "w") as f:
      json.dump(results, f, indent=1)


if __name__ == "__main__":
  main()
