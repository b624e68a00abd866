"""Seed 002 §3.1 / Fig. 1 (Godey & Artzi): the paper's statistic on the
low-rank sweep's rows (train/report/lowrank.py): the smallest D's tokens
over the tokens the largest D needs to reach its final loss (x16 in the
paper), per seed (`speedups`), with its ends over the evaluation grid and
the evaluation noise (`speedup_range`), and against the budget.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from train.report import claim


def _tokens_to(curve, target, tokens_per_step):
  """(training tokens at which a validation curve first reaches `target`,
  by linear interpolation between evaluations, or None; whether the first
  evaluation was already there, so that the tokens are only an upper
  bound)."""
  prev = None
  for step, loss in curve:
    if loss <= target:
      if prev is None:
        return step * tokens_per_step, True
      (s0, l0) = prev
      frac = (l0 - target) / (l0 - loss) if l0 != loss else 1.0
      return (s0 + frac * (step - s0)) * tokens_per_step, False
    prev = (step, loss)
  return None, False


class Speedup(NamedTuple):
  """The paper's statistic on one seed: the smallest D's tokens over the
  tokens the largest D needs to reach the smallest D's final validation
  loss (None: never reached); `at_least`: the largest D was below that loss
  at its first evaluation, so `value` is a lower bound."""
  value: float | None
  at_least: bool


def speedups(rows, steps: int | None = None) -> list[Speedup]:
  """Per seed, the paper's statistic (Speedup) among the runs of `steps`
  steps (None: the longest)."""
  steps = max(r["steps"] for r in rows) if steps is None else steps
  rows = [r for r in rows if r["steps"] == steps]
  ranks = sorted({r["D"] for r in rows})
  out = []
  for seed in sorted({r["seed"] for r in rows}):
    low, top = _pair(rows, ranks, seed, steps)
    need, first = _tokens_to(top["curve"], low["final_val_loss"],
                             top["tokens_per_step"])
    out.append(Speedup(None, False) if not need else
               Speedup(low["steps"] * low["tokens_per_step"] / need, first))
  return out


def _pair(rows, ranks, seed, steps):
  """(smallest D's row, largest D's row) of `seed` among `rows` (all of
  `steps` steps); one missing raises claim.Unread naming it."""
  out = [next((r for r in rows if r["D"] == d and r["seed"] == seed), None)
         for d in (ranks[0], ranks[-1])]
  for d, r in zip((ranks[0], ranks[-1]), out):
    if r is None:
      raise claim.Unread(f"seed {seed} has no D = {d} run of {steps} steps")
  return out


Z95 = 1.96  # The evaluation noise's two-sided 95 % normal quantile.


def speedup_range(rows) -> list[tuple[float, float]]:
  """Per seed at the longest length, the speed-up's (lower, upper) end:
  the largest D's first evaluation at or under the smallest D's final loss
  lowered by Z95 x its evaluation noise (`flatness`'s residual sd over the
  mean loss, read through claim.num), against the evaluation before its
  first one at or under it raised by as much: the evaluation grid and the
  noise (no interpolation). Never reaching the lowered loss: lower end 0;
  never the raised one: upper end the run's own length's (x1 at equal
  lengths); already there at the first evaluation: upper end inf."""
  steps = max(r["steps"] for r in rows)
  rows = [r for r in rows if r["steps"] == steps]
  ranks = sorted({r["D"] for r in rows})
  out = []
  for seed in sorted({r["seed"] for r in rows}):
    low, top = _pair(rows, ranks, seed, steps)
    tokens = low["steps"] * low["tokens_per_step"]
    noise = claim.num(top, "flatness", "noise", at=f"seed {seed}")
    target = low["final_val_loss"]
    curve = [(claim.finite(a, "curve step"), claim.finite(b, "curve loss"))
             for a, b in top["curve"]]
    per = top["tokens_per_step"]
    hard = next((a for a, b in curve if b <= target * (1 - Z95 * noise)),
                None)
    i = next((i for i, (_, b) in enumerate(curve)
              if b <= target * (1 + Z95 * noise)), None)
    lower = tokens / (hard * per) if hard else 0.0
    upper = (tokens / (curve[-1][0] * per) if i is None else math.inf
             if i == 0 else tokens / (curve[i - 1][0] * per))
    out.append((lower, upper))
  return out


def said(speed) -> str:
  """'x1.80, never, >= x2.07': the seeds' speed-ups in words."""
  return ", ".join("never" if x.value is None else
                   f"{'>= ' if x.at_least else ''}x{x.value:.2f}"
                   for x in speed)


def against_budget(rows) -> str:
  """The statistic at every length the smallest and largest D both ran:
  'x1.80, x2.07 (600 steps); ...' (seeds in order)."""
  lengths = sorted({r["steps"] for r in rows})
  ranks = sorted({r["D"] for r in rows})
  return "; ".join(
      f"{said(speedups(rows, n))} ({n} steps)" for n in lengths
      if {ranks[0], ranks[-1]} <= {r["D"] for r in rows if r["steps"] == n})
