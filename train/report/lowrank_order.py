"""Seed 002 §3.1's ordering claim on the low-rank sweep's rows (train/report/
lowrank.py): "The validation loss of all models is separated by consistent
and non-negligible gaps along training" (D = 2^5 .. 2^12). Every D is
compared with its neighbour at the longest length the sweep ran, seed by
seed, each gap bracketed by the evaluation noise the sweep measured.
"""

from __future__ import annotations

import math

from train.report import claim
from train.report.claim import DISAGREES, REPRODUCED, TOO_SMALL, Row
from train.report.lowrank_speed import Z95

PAPER_ORDER = ("seed 002 §3.1: every D's validation loss separated from the "
               "next by consistent and non-negligible gaps")


def gaps(rows) -> tuple[list[dict], float]:
  """([{D, next D, seed, gap, lo, hi}], relative noise): per neighbouring
  pair of ranks and per seed at the longest length, the smaller D's final
  validation loss minus the larger's, with a 95 % bracket of +-1.96 x
  sqrt(2) x the evaluation noise (the largest, over the sweep's runs, of
  a run's residual sd about its flatness line over its mean loss: the
  scatter of one evaluation) x the pair's mean loss."""
  steps = max(r["steps"] for r in rows)
  last = [r for r in rows if r["steps"] == steps]
  ranks = sorted({r["D"] for r in last})
  noise = max(float(r.get("flatness", {}).get("noise", 0.0)) for r in last)
  if not math.isfinite(noise) or noise <= 0:
    raise claim.Unread(f"no evaluation noise measured ({noise}): no gap "
                       "can be bracketed")
  loss = {(r["D"], r["seed"]): float(r["final_val_loss"]) for r in last}
  out = []
  for small, large in zip(ranks, ranks[1:]):
    for seed in sorted({s for d, s in loss if d == small}):
      if (large, seed) not in loss:
        raise claim.Unread(f"seed {seed} lacks D = {large} at {steps} steps")
      a, b = loss[small, seed], loss[large, seed]
      half = Z95 * math.sqrt(2.0) * noise * (a + b) / 2
      out.append({"D": small, "next": large, "seed": seed, "gap": a - b,
                  "lo": a - b - half, "hi": a - b + half})
  return out, noise


def order_row(rows) -> Row:
  """Reproduced when every neighbouring pair's gap lies above 0 on every
  seed, clear of the evaluation noise; disagrees when some pair's lies
  below 0 on every seed (the larger D clearly worse); else too small to
  speak (a gap inside the noise, or seeds on both sides)."""
  if len({r["D"] for r in rows}) < 2:
    raise claim.Unread("fewer than two ranks")
  found, noise = gaps(rows)
  steps = max(r["steps"] for r in rows)
  pairs = sorted({(g["D"], g["next"]) for g in found})
  seeds = sorted({g["seed"] for g in found})
  said = "; ".join(
      f"D = {a} - D = {b}: " + ", ".join(
          f"{g['gap']:+.4f}" for g in found if (g["D"], g["next"]) == (a, b))
      for a, b in pairs)
  ours = f"final validation loss gaps at {steps} steps (per seed): {said}"
  stat = ("per neighbouring pair of D, the smaller D's final validation "
          "loss minus the larger's, per seed: a gap above 0 clear of the "
          "evaluation noise on every seed and pair")
  n = (f"{len(seeds)} seed(s); {len(pairs)} neighbouring pair(s) of D = "
       f"{', '.join(str(d) for d in sorted({p for q in pairs for p in q}))}")
  unc = (f"+-{Z95} x sqrt(2) x the evaluation noise ({noise:.2%} of the "
         "loss per evaluation) per gap: " + "; ".join(
             f"D = {g['D']} seed {g['seed']}: {g['lo']:+.4f} .. "
             f"{g['hi']:+.4f}" for g in found))
  devs = ("the pairs are the sweep's ranks (configs/report.py: lowrank), not "
          "the paper's D = 32 .. 4096 in factors of 2",
          f"read at the final evaluation of {steps}-step runs (the paper: "
          "'along training', 11B tokens)",
          "the evaluation noise is one run's scatter about its flatness line "
          "(lowrank.flatness), not the validation set's sampling noise",
          "'non-negligible' read as clear of that noise (our reading: the "
          "paper gives no size)")
  clear = [g["lo"] > 0 for g in found]
  wrong = [p for p in pairs if all(g["hi"] < 0 for g in found
                                   if (g["D"], g["next"]) == p)]
  if wrong:
    return Row(DISAGREES, ours, stat, n, unc, deviations=devs, why="")
  if all(clear):
    return Row(REPRODUCED, ours, stat, n, unc, deviations=devs)
  return Row(TOO_SMALL, ours, stat, n, unc, why=(
      "a gap within the evaluation noise, or seeds on both sides of 0: "
      "more seeds (lowrank.seeds) or a larger validation set "
      "(lowrank.val_batches) would decide"), deviations=devs)


def read(s, cfg):
  del cfg
  r = claim.records(s, "rows", need=("D", "seed", "steps", "final_val_loss"))
  return order_row(r)
