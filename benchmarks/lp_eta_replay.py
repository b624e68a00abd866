"""Replays recorded LP runs through the ETA model (lp.records.CostModel).

A `topm --format=json` file records each instance's m, ADMM iterations and
host seconds. This script streams those instances through `batch` slots in
a shuffled order, as `topm.solve` does (a global iteration costs `tau`
seconds, a slot is noticed finished at the next multiple of 50 iterations,
each failed host check at ages 100 * 2^k costs `check_seconds`, an
instance's own host seconds stall the stream), asks the model for its ETA
after every finish, and scores it against the replay's true remaining time
from the first 10 % of the instances on (points with less than
max(10 s, 5 % of the run) left are not scored). RUN.json: the output of
`python -m bottleneck.topm --matrix=gemma3 --gaussian_twin --format=json`.

  python benchmarks/lp_eta_replay.py --json=RUN.json \
      --matrix=gemma --batch=8 --tau=0.022 --check_seconds=0.4
"""

from __future__ import annotations

import argparse
import json
import math
from unittest import mock

import numpy as np

from bottleneck.lp import records


def replay(insts, batch: int, tau: float, check_seconds: float, cap: int,
           seed: int, first: int = 100, step: int = 50):
  """[(fraction done, ETA, true seconds left)] after every finish."""
  order = np.random.default_rng(seed).permutation(len(insts))
  q = [insts[i] for i in order]
  pending = list(range(len(q)))[::-1]
  slots = [pending.pop() if pending else -1 for _ in range(batch)]
  start = {j: 0 for j in slots if j >= 0}
  next_check = {j: first for j in slots if j >= 0}
  now, clock, events = {"t": 0.0}, 0, []
  with mock.patch.object(records.time, "perf_counter", lambda: now["t"]):
    model = records.CostModel([m for m, _, _ in q], batch, cap)
    while any(j >= 0 for j in slots):
      ends = [math.ceil((start[j] + q[j][1]) / step) * step
              for j in slots if j >= 0]
      live = sum(j >= 0 for j in slots)
      shrunk = not pending and live <= batch // 4  # stream's small batch.
      now["t"] += tau * (0.25 if shrunk else 1.0) * (min(ends) - clock)
      clock = min(ends)
      for j in slots:
        while (j >= 0 and next_check[j] <= clock - start[j] and
               next_check[j] < q[j][1]):
          now["t"] += check_seconds
          next_check[j] *= 2
      # As the stream's host checks see them: every slot still iterating
      # at this clock, those released now included (the model skips each
      # once it has finished; they are released one after another).
      running = tuple((j, clock - start[j]) for j in slots
                      if j >= 0 and start[j] + q[j][1] >= clock)
      for k, j in enumerate(slots):
        if j < 0 or start[j] + q[j][1] > clock:
          continue
        now["t"] += q[j][2]
        model.finished(j, q[j][1], q[j][2], running, clock)
        events.append((now["t"], model.eta()))
        slots[k] = pending.pop() if pending else -1
        if slots[k] >= 0:
          start[slots[k]], next_check[slots[k]] = clock, first
  end = now["t"]
  return [((i + 1) / len(events), eta, end - t)
          for i, (t, eta) in enumerate(events)]


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--json", required=True)
  p.add_argument("--matrix", default="", help="substring of the records' "
                 "`matrix` field ('' = every record)")
  p.add_argument("--batch", type=int, default=8)
  p.add_argument("--tau", type=float, default=0.022,
                 help="seconds per global iteration of the batch")
  p.add_argument("--check_seconds", type=float, default=0.4)
  p.add_argument("--cap", type=int, default=1600)
  p.add_argument("--orders", type=int, default=10, help="shuffles replayed")
  args = p.parse_args()
  with open(args.json) as f:
    recs = json.load(f)
  insts = [(r["m"], t["iterations"], t["verify_seconds"]) for r in recs
           if args.matrix in r.get("matrix", "") for t in r["trials_detail"]]
  errors, worst = [], []
  for seed in range(args.orders):
    points = replay(insts, args.batch, args.tau, args.check_seconds,
                    args.cap, seed)
    total = points[0][2]
    e = [(eta - left) / left for frac, eta, left in points
         if frac >= 0.1 and left > max(10.0, 0.05 * total) and eta]
    errors += e
    worst.append(max(map(abs, e), default=0.0))
  errors = np.abs(errors)
  print(json.dumps({
      "instances": len(insts), "batch": args.batch, "orders": args.orders,
      "scored_points": int(errors.size),
      "within_25pct": round(float(np.mean(errors <= 0.25)), 3),
      "median_abs_error": round(float(np.median(errors)), 3),
      "mean_worst_abs_error_per_run": round(float(np.mean(worst)), 3)}))


if __name__ == "__main__":
  main()
